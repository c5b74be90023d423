// Lowercase hex names: the one check that a name is the hex digest it
// claims to be (a SHA-256 naming a published object, a partition or a
// cached snapshot; an MD5 in an ETag; the hash ending a frame file's stem),
// so that a name read from a bucket, a manifest or a cache directory never
// becomes a path unless it is only hex digits.
//
// Thread safety: pure functions.
#ifndef GULPDB_UTIL_HEX_H_
#define GULPDB_UTIL_HEX_H_

#include <cstddef>
#include <string_view>

namespace gulpdb::util {

inline bool IsLowerHexDigit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// True when `s` is exactly `length` lowercase hex digits.
inline bool IsLowerHex(std::string_view s, size_t length) {
  if (s.size() != length) return false;
  for (const char c : s) {
    if (!IsLowerHexDigit(c)) return false;
  }
  return true;
}

// True when `s` is a SHA-256 as util/sha256.h writes it: 64 lowercase hex
// digits.
inline bool IsSha256Hex(std::string_view s) { return IsLowerHex(s, 64); }

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_HEX_H_
