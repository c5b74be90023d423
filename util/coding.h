// Fixed-width integer coding, as LevelDB's util/coding.h: big-endian for LMDB
// keys (so that byte order is numeric order, docs/format/index_format.md) and
// little-endian for the record seals (index/seal.h). The one copy of these
// loops; index/ and whoever else lays out bytes use it.
//
// Thread safety: pure functions.
#ifndef GULPDB_UTIL_CODING_H_
#define GULPDB_UTIL_CODING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gulpdb::util {

// Appends the low `bytes` bytes of `value` to `*out`, most significant first.
inline void PutFixedBig(std::string* out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
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

// Appends `value` as four bytes, least significant first.
inline void PutFixed32Little(std::string* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// The four-byte little-endian number at `in[pos]` (pos + 4 <= in.size()).
inline uint32_t GetFixed32Little(std::string_view in, size_t pos) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value |= uint32_t{static_cast<uint8_t>(in[pos + i])} << (8 * i);
  return value;
}

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_CODING_H_
