#include "index/crc32c.h"

#include <array>
#include <cstring>

namespace gulpdb::index {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78;  // reflected Castagnoli polynomial

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

uint32_t Software(const uint8_t* p, size_t size, uint32_t crc) {
  for (size_t i = 0; i < size; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Hardware(const uint8_t* p, size_t size, uint32_t crc) {
  uint64_t c = crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
    p += 8;
    size -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (size > 0) {
    c32 = __builtin_ia32_crc32qi(c32, *p++);
    --size;
  }
  return c32;
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  crc = kHaveSse42 ? Hardware(p, size, crc) : Software(p, size, crc);
#else
  crc = Software(p, size, crc);
#endif
  return ~crc;
}

uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc) {
  return ~Software(static_cast<const uint8_t*>(data), size, ~crc);
}

bool Crc32cUsesHardware() {
#if defined(__x86_64__)
  return kHaveSse42;
#else
  return false;
#endif
}

}  // namespace gulpdb::index
