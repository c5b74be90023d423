// CRC-32C (Castagnoli), the checksum stored per frame in the index. Uses the
// SSE4.2 instruction when the CPU has it, a table otherwise; both give the
// same values. Thread-safe.
#ifndef GULPDB_ENGINE_CRC32C_H_
#define GULPDB_ENGINE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace gulpdb::engine {

// Extends `crc` (0 for a new checksum) over `size` bytes at `data`.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CRC32C_H_
