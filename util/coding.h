// Fixed-width integer coding, as LevelDB's util/coding.h: big-endian for LMDB
// keys (so that byte order is numeric order, docs/format/index_format.md)
// and the partitions' order entries; little-endian for the record seals
// (index/seal.h), the journal (docs/format/journal_format.md) and its
// records' payloads. The one copy of these loops: whoever lays out bytes
// uses it, and whoever reads bytes that may be short reads them through a
// ByteReader instead of offset arithmetic of its own.
//
// Errors: a ByteReader asked for more bytes than are left throws
// CorruptionError naming what it was decoding and the byte where it ended;
// the Get* functions check nothing (their callers have).
//
// Thread safety: pure functions; a ByteReader belongs to one thread.
#ifndef GULPDB_UTIL_CODING_H_
#define GULPDB_UTIL_CODING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "gulpdb/error.h"

namespace gulpdb::util {

// Appends the low `bytes` bytes of `value` to `*out`, most significant first.
inline void PutFixedBig(std::string* out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// The low `bytes` bytes of `value`, most significant first: a key whose byte
// order is the numbers' order.
inline std::string FixedBig(uint64_t value, int bytes) {
  std::string out;
  PutFixedBig(&out, value, bytes);
  return out;
}

// The `bytes`-byte big-endian number at `in[pos]`. The caller has checked
// that `in` holds pos + bytes bytes.
inline uint64_t GetFixedBig(std::string_view in, size_t pos, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value = (value << 8) | static_cast<uint8_t>(in[pos + static_cast<size_t>(i)]);
  }
  return value;
}

// Appends the low `bytes` bytes of `value`, least significant first.
inline void PutFixedLittle(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
inline void PutFixed32Little(std::string* out, uint32_t value) { PutFixedLittle(out, value, 4); }
inline void PutFixed64Little(std::string* out, uint64_t value) { PutFixedLittle(out, value, 8); }

// The `bytes`-byte little-endian number at `in[pos]` (pos + bytes <=
// in.size()).
inline uint64_t GetFixedLittle(std::string_view in, size_t pos, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<uint8_t>(in[pos + static_cast<size_t>(i)]);
  }
  return value;
}
inline uint32_t GetFixed32Little(std::string_view in, size_t pos) {
  return static_cast<uint32_t>(GetFixedLittle(in, pos, 4));
}
inline uint64_t GetFixed64Little(std::string_view in, size_t pos) {
  return GetFixedLittle(in, pos, 8);
}

// Reads little-endian numbers and byte strings from the front of `in`,
// checking each against what is left. `what` names the bytes in errors
// ("<what>: the bytes end at byte 12, 4 short of a 32-bit number"). The
// views it returns point into `in`.
class ByteReader {
 public:
  ByteReader(std::string_view in, std::string what) : in_(in), what_(std::move(what)) {}

  // The next `bytes` (1 to 8) bytes as a little-endian number.
  uint64_t Fixed(int bytes) {
    Need(static_cast<uint64_t>(bytes), "number");
    const uint64_t value = GetFixedLittle(in_, pos_, bytes);
    pos_ += static_cast<size_t>(bytes);
    return value;
  }
  uint32_t Fixed32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t Fixed64() { return Fixed(8); }
  // The next `size` bytes.
  std::string_view Bytes(uint64_t size) {
    Need(size, "byte string");
    std::string_view out = in_.substr(pos_, static_cast<size_t>(size));
    pos_ += static_cast<size_t>(size);
    return out;
  }
  // A byte string stored as its 32-bit length, then its bytes.
  std::string_view Sized() { return Bytes(Fixed32()); }

  size_t position() const { return pos_; }
  size_t remaining() const { return in_.size() - pos_; }
  const std::string& what() const { return what_; }

 private:
  void Need(uint64_t size, const char* kind) const {
    if (size > in_.size() - pos_) {
      throw CorruptionError(what_ + ": the bytes end at byte " + std::to_string(in_.size()) + ", " +
                            std::to_string(size - (in_.size() - pos_)) + " short of a " +
                            std::to_string(size) + "-byte " + kind + " at byte " +
                            std::to_string(pos_));
    }
  }

  std::string_view in_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_CODING_H_
