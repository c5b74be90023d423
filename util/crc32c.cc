#include "util/crc32c.h"

#include <cstring>

namespace gulpdb::util {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78;  // reflected Castagnoli polynomial

// Slicing-by-8: t[k][b] is the CRC register after byte b followed by k zero
// bytes, so eight table lookups advance the register over eight bytes.
struct SliceTables {
  uint32_t t[8][256];
};

constexpr SliceTables MakeSliceTables() {
  SliceTables s{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ kPolynomial : c >> 1;
    s.t[0][i] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) {
      s.t[k][i] = (s.t[k - 1][i] >> 8) ^ s.t[0][s.t[k - 1][i] & 0xff];
    }
  }
  return s;
}

constexpr SliceTables kSlice = MakeSliceTables();

uint32_t Load32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// The register `crc` (not inverted) advanced over `size` bytes.
uint32_t Portable(const uint8_t* p, size_t size, uint32_t crc) {
  const auto& t = kSlice.t;
  for (; size >= 8; p += 8, size -= 8) {
    const uint32_t lo = crc ^ Load32(p);
    const uint32_t hi = Load32(p + 4);
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
  }
  for (; size > 0; ++p, --size) crc = t[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)

// Three streams: the crc32 instruction takes three cycles but starts one
// every cycle, so three independent registers, each over its own block of a
// buffer, keep it busy. Block 0 continues the running register, blocks 1 and
// 2 start from zero; the register is linear, so the whole is
// Shift(Shift(c0) ^ c1) ^ c2, where Shift(c) appends a block's length of zero
// bytes to c: a multiplication by x^(8 * block) modulo the polynomial, done
// with four lookups in a table made for that length.
constexpr size_t kLongBlock = 4096;
constexpr size_t kShortBlock = 256;

// a * b modulo the polynomial (reflected: bit 31 is x^0).
constexpr uint32_t MultModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = uint32_t{1} << 31; m != 0; m >>= 1) {
    if ((a & m) != 0) product ^= b;
    b = (b & 1) != 0 ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

struct ShiftTable {
  uint32_t t[4][256];
};

// The table that appends `bytes` zero bytes to a register.
constexpr ShiftTable MakeShiftTable(size_t bytes) {
  uint32_t x_power = uint32_t{1} << 31;  // x^0, then x^(8 * bytes)
  for (size_t i = 0; i < bytes; ++i) x_power = kSlice.t[0][x_power & 0xff] ^ (x_power >> 8);
  ShiftTable s{};
  for (uint32_t k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) s.t[k][b] = MultModP(x_power, b << (8 * k));
  }
  return s;
}

constexpr ShiftTable kShiftLong = MakeShiftTable(kLongBlock);
constexpr ShiftTable kShiftShort = MakeShiftTable(kShortBlock);

uint32_t Shift(const ShiftTable& s, uint32_t crc) {
  return s.t[0][crc & 0xff] ^ s.t[1][(crc >> 8) & 0xff] ^ s.t[2][(crc >> 16) & 0xff] ^
         s.t[3][crc >> 24];
}

uint64_t Load64(const uint8_t* p) {
  uint64_t word;
  std::memcpy(&word, p, sizeof(word));
  return word;
}

// Runs three streams over blocks of `block` bytes while three of them fit.
__attribute__((target("sse4.2"))) uint64_t ThreeStreams(const uint8_t** data, size_t* size,
                                                        uint64_t crc, size_t block,
                                                        const ShiftTable& shift) {
  const uint8_t* p = *data;
  size_t n = *size;
  for (; n >= 3 * block; n -= 3 * block) {
    uint64_t c0 = crc, c1 = 0, c2 = 0;
    for (const uint8_t* end = p + block; p < end; p += 8) {
      c0 = __builtin_ia32_crc32di(c0, Load64(p));
      c1 = __builtin_ia32_crc32di(c1, Load64(p + block));
      c2 = __builtin_ia32_crc32di(c2, Load64(p + 2 * block));
    }
    crc = Shift(shift, static_cast<uint32_t>(c0)) ^ c1;
    crc = Shift(shift, static_cast<uint32_t>(crc)) ^ c2;
    p += 2 * block;
  }
  *data = p;
  *size = n;
  return crc;
}

__attribute__((target("sse4.2"))) uint32_t Hardware(const uint8_t* p, size_t size, uint32_t crc32) {
  uint64_t crc = crc32;
  // Eight-byte loads from aligned addresses.
  for (; size > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0; ++p, --size) {
    crc = __builtin_ia32_crc32qi(static_cast<uint32_t>(crc), *p);
  }
  crc = ThreeStreams(&p, &size, crc, kLongBlock, kShiftLong);
  crc = ThreeStreams(&p, &size, crc, kShortBlock, kShiftShort);
  for (; size >= 8; p += 8, size -= 8) crc = __builtin_ia32_crc32di(crc, Load64(p));
  uint32_t c = static_cast<uint32_t>(crc);
  for (; size > 0; ++p, --size) c = __builtin_ia32_crc32qi(c, *p);
  return c;
}

bool DetectSse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}

#endif  // __x86_64__

}  // namespace

bool Crc32cUsesHardware() {
#if defined(__x86_64__)
  static const bool have = DetectSse42();
  return have;
#else
  return false;
#endif
}

uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc) {
  return ~Portable(static_cast<const uint8_t*>(data), size, ~crc);
}

uint32_t Crc32cHardware(const void* data, size_t size, uint32_t crc) {
#if defined(__x86_64__)
  if (Crc32cUsesHardware()) return ~Hardware(static_cast<const uint8_t*>(data), size, ~crc);
#endif
  return Crc32cPortable(data, size, crc);
}

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  return Crc32cHardware(data, size, crc);
}

}  // namespace gulpdb::util
