// SHA-256 (FIPS 180-4) for tests: the fixtures record the sha256 of JPEG bytes
// and of decoded pixels.
//
// Thread safety: a pure function.
#ifndef GULPDB_TESTS_SUPPORT_SHA256_H_
#define GULPDB_TESTS_SUPPORT_SHA256_H_

#include <cstddef>
#include <string>

namespace gulpdb::test {

// Returns the SHA-256 digest of `size` bytes at `data` as 64 lowercase hex
// digits. `data` may be null when `size` is 0.
std::string Sha256Hex(const void* data, size_t size);

}  // namespace gulpdb::test

#endif  // GULPDB_TESTS_SUPPORT_SHA256_H_
