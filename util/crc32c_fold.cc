#include "util/crc32c_fold.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

namespace gulpdb::util::crc32c_fold {
namespace {

#define GULPDB_PCLMUL __attribute__((target("pclmul,sse4.2")))
#define GULPDB_VPCLMUL __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

constexpr FoldConstants kFold128 = FoldConstantsFor(128);
constexpr FoldConstants kFold256 = FoldConstantsFor(256);
constexpr FoldConstants kFold384 = FoldConstantsFor(384);
constexpr FoldConstants kFold512 = FoldConstantsFor(512);
constexpr FoldConstants kFold2048 = FoldConstantsFor(2048);

GULPDB_PCLMUL __m128i Constants128(const FoldConstants& k) {
  return _mm_set_epi64x(static_cast<long long>(k.second), static_cast<long long>(k.first));
}

GULPDB_PCLMUL __m128i Load128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// `x` moved forward by the distance `k` was made for.
GULPDB_PCLMUL __m128i Fold(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

// The register after the 16 bytes of `x` (from zero) and then `size` < 16
// more bytes at `p`.
GULPDB_PCLMUL uint32_t Finish(__m128i x, const uint8_t* p, size_t size) {
  uint64_t crc = __builtin_ia32_crc32di(0, static_cast<uint64_t>(_mm_cvtsi128_si64(x)));
  crc = __builtin_ia32_crc32di(crc, static_cast<uint64_t>(_mm_extract_epi64(x, 1)));
  if (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    crc = __builtin_ia32_crc32di(crc, word);
    p += 8;
    size -= 8;
  }
  auto c = static_cast<uint32_t>(crc);
  for (; size > 0; ++p, --size) c = __builtin_ia32_crc32qi(c, *p);
  return c;
}

// Folds the 16-byte blocks of [p, p + size) left after the wide loops onto
// `x`, then finishes.
GULPDB_PCLMUL uint32_t FoldTail(__m128i x, const uint8_t* p, size_t size) {
  const __m128i k128 = Constants128(kFold128);
  for (; size >= 16; p += 16, size -= 16) x = _mm_xor_si128(Fold(x, k128), Load128(p));
  return Finish(x, p, size);
}

// The multipliers of each 16-byte lane of a 512-bit register, loaded from
// memory: GCC 12 warns (-Wuninitialized, a false alarm) about the
// intrinsics that would broadcast them or pick a lane with an undefined
// register as their base, so none of those is used here.
struct alignas(64) Lanes {
  uint64_t q[8];
};
constexpr Lanes LanesOf(const FoldConstants& k0, const FoldConstants& k1, const FoldConstants& k2,
                        const FoldConstants& k3) {
  return {{k0.first, k0.second, k1.first, k1.second, k2.first, k2.second, k3.first, k3.second}};
}
constexpr Lanes kLanes2048 = LanesOf(kFold2048, kFold2048, kFold2048, kFold2048);
constexpr Lanes kLanes512 = LanesOf(kFold512, kFold512, kFold512, kFold512);
// Lanes 0, 1 and 2 of a register are 48, 32 and 16 bytes before lane 3,
// which stays (multipliers of zero drop it from the product).
constexpr Lanes kLanesOnto3 = LanesOf(kFold384, kFold256, kFold128, FoldConstants{0, 0});

GULPDB_VPCLMUL __m512i Constants512(const Lanes& lanes) { return _mm512_load_si512(lanes.q); }

GULPDB_VPCLMUL __m512i Load512(const uint8_t* p) { return _mm512_loadu_si512(p); }

// Each 16-byte lane of `x` moved forward by the distance `k` was made for,
// and `data` added.
GULPDB_VPCLMUL __m512i Fold512(__m512i x, __m512i k, __m512i data) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                   _mm512_clmulepi64_epi128(x, k, 0x11), data, 0x96);
}

}  // namespace

// Four accumulators of 16 bytes, 64 bytes apart: their multiplications are
// independent, so they overlap in the multiplier.
GULPDB_PCLMUL uint32_t Pclmul(const uint8_t* p, size_t size, uint32_t crc) {
  __m128i x0 = _mm_xor_si128(Load128(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x1 = Load128(p + 16), x2 = Load128(p + 32), x3 = Load128(p + 48);
  p += 64;
  size -= 64;
  const __m128i k512 = Constants128(kFold512);
  for (; size >= 64; p += 64, size -= 64) {
    x0 = _mm_xor_si128(Fold(x0, k512), Load128(p));
    x1 = _mm_xor_si128(Fold(x1, k512), Load128(p + 16));
    x2 = _mm_xor_si128(Fold(x2, k512), Load128(p + 32));
    x3 = _mm_xor_si128(Fold(x3, k512), Load128(p + 48));
  }
  const __m128i k128 = Constants128(kFold128);
  x1 = _mm_xor_si128(x1, Fold(x0, k128));
  x2 = _mm_xor_si128(x2, Fold(x1, k128));
  x3 = _mm_xor_si128(x3, Fold(x2, k128));
  return FoldTail(x3, p, size);
}

// Four accumulators of 64 bytes (four 16-byte lanes each), 256 bytes apart;
// then one, folded 64 bytes at a time; then its lanes onto the last one.
GULPDB_VPCLMUL uint32_t Vpclmul(const uint8_t* p, size_t size, uint32_t crc) {
  __m512i z0 = _mm512_xor_si512(Load512(p), _mm512_maskz_set1_epi32(1, static_cast<int>(crc)));
  __m512i z1 = Load512(p + 64), z2 = Load512(p + 128), z3 = Load512(p + 192);
  p += 256;
  size -= 256;
  const __m512i k2048 = Constants512(kLanes2048);
  for (; size >= 256; p += 256, size -= 256) {
    z0 = Fold512(z0, k2048, Load512(p));
    z1 = Fold512(z1, k2048, Load512(p + 64));
    z2 = Fold512(z2, k2048, Load512(p + 128));
    z3 = Fold512(z3, k2048, Load512(p + 192));
  }
  const __m512i k512 = Constants512(kLanes512);
  z1 = Fold512(z0, k512, z1);
  z2 = Fold512(z1, k512, z2);
  z3 = Fold512(z2, k512, z3);
  for (; size >= 64; p += 64, size -= 64) z3 = Fold512(z3, k512, Load512(p));
  const __m512i z = Fold512(z3, Constants512(kLanesOnto3), _mm512_maskz_mov_epi64(0xc0, z3));
  __m128i x = _mm_xor_si128(_mm512_maskz_extracti32x4_epi32(0xf, z, 0),
                            _mm512_maskz_extracti32x4_epi32(0xf, z, 1));
  x = _mm_xor_si128(x, _mm512_maskz_extracti32x4_epi32(0xf, z, 2));
  x = _mm_xor_si128(x, _mm512_maskz_extracti32x4_epi32(0xf, z, 3));
  return FoldTail(x, p, size);
}

}  // namespace gulpdb::util::crc32c_fold

#endif  // __x86_64__
