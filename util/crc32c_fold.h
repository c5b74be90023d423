// CRC-32C by folding with carry-less multiplication (util/crc32c.h's fastest
// paths): the buffer is read as a polynomial over GF(2) in 16-byte blocks,
// and a block is moved forward by D bits, onto a block D bits later, by
// multiplying its two 8-byte halves by x^(D+63) and x^(D-1) modulo the
// Castagnoli polynomial (the extra x^63 / x^-1 place the product where the
// later block's bits are, as PCLMULQDQ leaves it one bit short of 128). What
// remains after the last fold is one 16-byte block whose CRC-32C, continued
// over the last bytes, is the buffer's; the crc32 instruction computes that.
//
// The constants come from FoldConstantsFor at compile time;
// tests/crc32c_test.cc derives them again another way. Internal to util/.
//
// Thread-safe: pure functions over constants.
#ifndef GULPDB_UTIL_CRC32C_FOLD_H_
#define GULPDB_UTIL_CRC32C_FOLD_H_

#include <cstddef>
#include <cstdint>

namespace gulpdb::util::crc32c_fold {

inline constexpr uint32_t kPolynomial = 0x82f63b78;  // reflected: bit 31 is x^0

// x^n modulo the polynomial, reflected (bit 31 is x^0, bit 0 is x^31).
constexpr uint32_t XPowModP(uint64_t n) {
  uint32_t v = uint32_t{1} << 31;  // x^0
  for (uint64_t i = 0; i < n; ++i) v = (v & 1) != 0 ? (v >> 1) ^ kPolynomial : v >> 1;
  return v;
}

// The two multipliers that fold a 16-byte block `bits` bits forward, as the
// 64-bit operands of a carry-less multiplication: `first` for the block's
// first 8 bytes (its high-order half), `second` for its last 8. The 32-bit
// remainder sits in the operand's high half, where the reflected product
// lines up with the block it is added to.
struct FoldConstants {
  uint64_t first;
  uint64_t second;
};
constexpr FoldConstants FoldConstantsFor(uint64_t bits) {
  return {uint64_t{XPowModP(bits + 63)} << 32, uint64_t{XPowModP(bits - 1)} << 32};
}

// The distances the paths fold by: one block, the lanes of a 512-bit
// register (128, 256, 384), four 128-bit accumulators (512) and four 512-bit
// accumulators (2048).
inline constexpr uint64_t kFoldDistances[] = {128, 256, 384, 512, 2048};

#if defined(__x86_64__)
// The smallest buffer each path takes; a shorter one goes to the crc32
// instruction's path. Both return the register (not inverted) advanced over
// `size` bytes from `crc`. Call only where the CPU has the instructions
// (util/crc32c.h's Crc32cHas): PCLMULQDQ and SSE4.2; and for the 512-bit
// path also AVX-512F and VPCLMULQDQ.
inline constexpr size_t kPclmulMinBytes = 64;
inline constexpr size_t kVpclmulMinBytes = 256;
uint32_t Pclmul(const uint8_t* p, size_t size, uint32_t crc);
uint32_t Vpclmul(const uint8_t* p, size_t size, uint32_t crc);
#endif

}  // namespace gulpdb::util::crc32c_fold

#endif  // GULPDB_UTIL_CRC32C_FOLD_H_
