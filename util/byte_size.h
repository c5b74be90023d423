// Sizes written as people write them in environment variables and options:
// a number of bytes, or a number with a K, M, G or T suffix (powers of 1024;
// "KiB", "MiB", ... and a trailing "B" are accepted too). The one parser of
// GULPDB_CACHE_BYTES, GULPDB_FRAME_CACHE_BYTES and their friends.
//
// Thread safety: pure functions.
#ifndef GULPDB_UTIL_BYTE_SIZE_H_
#define GULPDB_UTIL_BYTE_SIZE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace gulpdb::util {

// The size `text` gives, or nullopt when it is not one (empty, a sign, a
// fraction, another unit, or more than 2^60 bytes).
std::optional<uint64_t> ParseByteSize(std::string_view text);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_BYTE_SIZE_H_
