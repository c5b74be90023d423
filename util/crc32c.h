// CRC-32C (Castagnoli, RFC 3720): the checksum of every frame a dataset
// stores (checked on every read, engine/core/chunk_reader.h), of index record
// seals (index/seal.h), of journal entries and of .gmeta content stamps.
//
// Two paths give the same values. On x86-64 CPUs with SSE4.2 (found at run
// time, so the build stays generic x86-64) the crc32 instruction runs three
// independent streams over three blocks of a buffer and joins them with
// shift-by-zeros tables; elsewhere a portable slicing-by-8 table loop runs.
// Why by hand, and the speed of each path: bench/README.md, "CRC-32C".
// tests/crc32c_test.cc checks both against RFC 3720's known answers and
// against each other on random lengths and alignments.
//
// Thread-safe: pure functions over constant tables.
#ifndef GULPDB_UTIL_CRC32C_H_
#define GULPDB_UTIL_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace gulpdb::util {

// Extends `crc` (0 for a new checksum) over `size` bytes at `data`: the CRC
// of the concatenation, so Crc32c(b, nb, Crc32c(a, na)) == Crc32c(a + b).
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

// The portable slicing-by-8 path alone, whatever the CPU.
uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc = 0);
// The SSE4.2 path alone (three interleaved streams); the portable path on a
// CPU without SSE4.2 or outside x86-64 (see Crc32cUsesHardware).
uint32_t Crc32cHardware(const void* data, size_t size, uint32_t crc = 0);
// True when Crc32c takes the SSE4.2 path on this CPU.
bool Crc32cUsesHardware();

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_CRC32C_H_
