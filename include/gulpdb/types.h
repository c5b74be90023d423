// Plain value types shared by the public API.
#ifndef GULPDB_TYPES_H_
#define GULPDB_TYPES_H_

#include <cstdint>

namespace gulpdb {

// Where one frame lives in its chunk file, exactly as GulpIO's frame_info
// triple: the frame's bytes start at `offset`, `length` counts the JPEG bytes
// plus `pad` zero bytes, so the JPEG is [offset, offset + length - pad).
// See docs/format/chunk_format.md.
struct FrameInfo {
  uint64_t offset = 0;
  uint32_t pad = 0;
  uint32_t length = 0;

  uint32_t jpeg_size() const { return length - pad; }
  friend bool operator==(const FrameInfo& a, const FrameInfo& b) {
    return a.offset == b.offset && a.pad == b.pad && a.length == b.length;
  }
  friend bool operator!=(const FrameInfo& a, const FrameInfo& b) { return !(a == b); }
};

// GulpIO's padding rule: the number of zero bytes after a JPEG of `size` bytes.
constexpr uint32_t PadFor(uint64_t size) { return static_cast<uint32_t>((4 - size % 4) % 4); }

}  // namespace gulpdb

#endif  // GULPDB_TYPES_H_
