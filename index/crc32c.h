// CRC-32C (Castagnoli, RFC 3720), the checksum of index record seals
// (index/seal.h) and of frames (stored per frame by the engine). Uses the
// SSE4.2 instruction when the CPU has it, a table otherwise; both give the
// same values (tests/crc32c_test.cc checks the published vectors and that
// the two agree). Thread-safe.
#ifndef GULPDB_INDEX_CRC32C_H_
#define GULPDB_INDEX_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace gulpdb::index {

// Extends `crc` (0 for a new checksum) over `size` bytes at `data`.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

// The table-driven path alone, whatever the CPU (for tests).
uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc = 0);
// True when Crc32c uses the SSE4.2 instruction on this CPU.
bool Crc32cUsesHardware();

}  // namespace gulpdb::index

#endif  // GULPDB_INDEX_CRC32C_H_
