// CRC-32C (Castagnoli, RFC 3720): the checksum of every frame a dataset
// stores (checked on every read, engine/core/chunk_reader.h), of index record
// seals (index/seal.h), of journal entries and of .gmeta content stamps.
//
// Four paths give the same values; Crc32c takes the fastest this CPU has,
// found at run time, so the build stays generic x86-64 and builds elsewhere:
// - kVpclmul512 (AVX-512 with VPCLMULQDQ): four 512-bit accumulators fold
//   256 bytes at a time by carry-less multiplication (util/crc32c_fold.h);
// - kPclmul (PCLMULQDQ): four 128-bit accumulators, 64 bytes at a time;
// - kSse42: the crc32 instruction in three streams over three blocks of a
//   buffer, joined with shift-by-zeros tables;
// - kPortable: a slicing-by-8 table loop.
// A folding path hands buffers too short for its loop (under 256 and 64
// bytes) to the crc32 instruction. Why by hand, and the speed of each path:
// bench/README.md, "CRC-32C". tests/crc32c_test.cc checks every path the CPU
// has against RFC 3720's known answers, a bit-at-a-time reference and each
// other, and reports the paths it could not run.
//
// Thread-safe: pure functions over constant tables.
#ifndef GULPDB_UTIL_CRC32C_H_
#define GULPDB_UTIL_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace gulpdb::util {

// Extends `crc` (0 for a new checksum) over `size` bytes at `data`: the CRC
// of the concatenation, so Crc32c(b, nb, Crc32c(a, na)) == Crc32c(a + b).
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

// `crc` as messages write it: "0x" and eight lowercase hex digits.
std::string Crc32cHex(uint32_t crc);

enum class Crc32cPath { kPortable, kSse42, kPclmul, kVpclmul512 };
inline constexpr Crc32cPath kCrc32cPaths[] = {Crc32cPath::kPortable, Crc32cPath::kSse42,
                                              Crc32cPath::kPclmul, Crc32cPath::kVpclmul512};

// "portable", "sse4.2", "pclmulqdq", "vpclmulqdq-512".
const char* Crc32cPathName(Crc32cPath path);
// Whether this CPU (and build) can run `path`.
bool Crc32cHas(Crc32cPath path);
// The path Crc32c takes: the last of kCrc32cPaths this CPU has.
Crc32cPath Crc32cBestPath();
// Crc32c on `path` whatever the CPU's best; InvalidArgumentError when the
// CPU lacks it (Crc32cHas).
uint32_t Crc32cOn(Crc32cPath path, const void* data, size_t size, uint32_t crc = 0);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_CRC32C_H_
