// CRC-32C against published known answers (RFC 3720, appendix B.4, and the
// common "123456789" check value), and every path of util/crc32c.h (the
// VPCLMULQDQ and PCLMULQDQ folds, the three SSE4.2 streams, slicing-by-8)
// against a bit-at-a-time reference and each other on every length up to 600
// bytes at every alignment within 64 bytes, around the lengths where the
// folds' and the streams' blocks begin and end, and on random lengths up to
// 1 MiB. The folding constants are derived again here another way. A path
// this CPU lacks is a skipped test case, named as such in the output.
#include "util/crc32c.h"

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gulpdb/error.h"
#include "support/test_util.h"
#include "util/crc32c_fold.h"

namespace gulpdb::util {
namespace {

struct Vector {
  const char* name;
  std::vector<uint8_t> bytes;
  uint32_t crc;
};

std::vector<Vector> KnownAnswers() {
  std::vector<Vector> v;
  v.push_back({"32 zero bytes", std::vector<uint8_t>(32, 0x00), 0x8a9136aa});
  v.push_back({"32 0xff bytes", std::vector<uint8_t>(32, 0xff), 0x62a8ab43});
  std::vector<uint8_t> up(32), down(32);
  for (uint8_t i = 0; i < 32; ++i) {
    up[i] = i;
    down[i] = static_cast<uint8_t>(31 - i);
  }
  v.push_back({"32 incrementing bytes", up, 0x46dd794e});
  v.push_back({"32 decrementing bytes", down, 0x113fdb5c});
  // An iSCSI SCSI Read (10) command PDU.
  v.push_back({"iSCSI read PDU",
               {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
                0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
                0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
               0xd9963a56});
  const std::string digits = "123456789";
  v.push_back({"123456789", std::vector<uint8_t>(digits.begin(), digits.end()), 0xe3069283});
  return v;
}

// A precondition: the CPU has `path` (else the test case is skipped, and
// says why).
struct CpuHas {
  Crc32cPath path;
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result has(Crc32cHas(path));
    if (!has) has.message() << "this CPU lacks the " << Crc32cPathName(path) << " path";
    return has;
  }
};

// The paths this CPU has; a message names each one it lacks.
std::vector<Crc32cPath> PathsHere() {
  std::vector<Crc32cPath> out;
  for (Crc32cPath path : kCrc32cPaths) {
    if (Crc32cHas(path)) {
      out.push_back(path);
    } else {
      BOOST_TEST_MESSAGE("CRC-32C path " << Crc32cPathName(path) << ": not on this CPU, untested");
    }
  }
  return out;
}

// x^n modulo the Castagnoli polynomial computed in the other bit order
// (bit i is x^i; the polynomial is 0x1EDC6F41 and x^32), then reflected.
uint32_t XPowModPByDivision(uint64_t n) {
  uint64_t v = 1;
  for (uint64_t i = 0; i < n; ++i) {
    v <<= 1;
    if ((v >> 32) != 0) v ^= 0x11edc6f41;
  }
  uint32_t reflected = 0;
  for (int i = 0; i < 32; ++i) reflected |= static_cast<uint32_t>((v >> i) & 1) << (31 - i);
  return reflected;
}

// Checks `path` against the bit-at-a-time reference.
void CheckAgainstReference(Crc32cPath path) {
  std::mt19937 rng(20261207);
  std::vector<uint8_t> buffer((size_t{1} << 20) + 128);
  for (uint8_t& b : buffer) b = static_cast<uint8_t>(rng());
  size_t checked = 0, failed = 0;
  const auto check = [&](size_t offset, size_t length, uint32_t seed) {
    const uint8_t* p = buffer.data() + offset;
    const uint32_t want = test::ReferenceCrc32c(p, length, seed);
    if (Crc32cOn(path, p, length, seed) != want && ++failed <= 10) {
      BOOST_ERROR(Crc32cPathName(path) << " differs from the reference at offset " << offset
                                       << ", length " << length << ", seed " << seed);
    }
    ++checked;
  };
  // Every length to 600 at every alignment a 512-bit load can see.
  for (size_t offset = 0; offset < 64; ++offset) {
    for (size_t length = 0; length <= 600; ++length) {
      check(offset, length, length % 3 == 0 ? 0 : static_cast<uint32_t>(rng()));
    }
  }
  // Where a loop starts, takes one more round or leaves a tail: the folds'
  // 256- and 64-byte strides and 16-byte blocks, the streams' 3 x 256 and
  // 3 x 4096 bytes.
  for (size_t edge :
       {size_t{1024}, size_t{1280}, size_t{2048}, size_t{3 * 4096}, size_t{6 * 4096}}) {
    for (size_t length = edge - 33; length <= edge + 33; ++length) {
      for (size_t offset : {size_t{0}, size_t{63}})
        check(offset, length, static_cast<uint32_t>(rng()));
    }
  }
  for (int i = 0; i < 16; ++i) {
    const size_t length = rng() % ((size_t{1} << 20) + 1);
    check(rng() % 128, length, i % 2 == 0 ? 0 : static_cast<uint32_t>(rng()));
  }
  check(0, size_t{1} << 20, 0);
  BOOST_TEST(checked == 64u * 601u + 5u * 67u * 2u + 17u);
  BOOST_TEST(failed == 0u);
}

BOOST_AUTO_TEST_SUITE(crc32c_test)

BOOST_AUTO_TEST_CASE(rfc3720_known_answers_on_every_path) {
  for (const Vector& v : KnownAnswers()) {
    BOOST_TEST_CONTEXT(v.name) {
      BOOST_TEST(test::ReferenceCrc32c(v.bytes.data(), v.bytes.size()) == v.crc);
      BOOST_TEST(Crc32c(v.bytes.data(), v.bytes.size()) == v.crc);
      for (Crc32cPath path : PathsHere()) {
        BOOST_TEST_CONTEXT(Crc32cPathName(path)) {
          BOOST_TEST(Crc32cOn(path, v.bytes.data(), v.bytes.size(), 0) == v.crc);
          // Extending a checksum piecewise gives the checksum of the whole.
          const size_t half = v.bytes.size() / 2;
          BOOST_TEST(Crc32cOn(path, v.bytes.data() + half, v.bytes.size() - half,
                              Crc32cOn(path, v.bytes.data(), half, 0)) == v.crc);
        }
      }
    }
  }
  BOOST_TEST(Crc32c("", 0) == 0u);
  for (Crc32cPath path : PathsHere()) BOOST_TEST(Crc32cOn(path, "", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(crc32c_takes_the_fastest_path_the_cpu_has) {
  BOOST_TEST(Crc32cHas(Crc32cPath::kPortable));
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool sse42 = __builtin_cpu_supports("sse4.2") != 0;
  const bool pclmul = sse42 && __builtin_cpu_supports("pclmul") != 0;
  const bool vpclmul =
      pclmul && __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("vpclmulqdq") != 0;
  BOOST_TEST(Crc32cHas(Crc32cPath::kSse42) == sse42);
  BOOST_TEST(Crc32cHas(Crc32cPath::kPclmul) == pclmul);
  BOOST_TEST(Crc32cHas(Crc32cPath::kVpclmul512) == vpclmul);
  const Crc32cPath best = vpclmul  ? Crc32cPath::kVpclmul512
                          : pclmul ? Crc32cPath::kPclmul
                          : sse42  ? Crc32cPath::kSse42
                                   : Crc32cPath::kPortable;
  BOOST_TEST(std::string(Crc32cPathName(Crc32cBestPath())) == Crc32cPathName(best));
#else
  BOOST_TEST(std::string(Crc32cPathName(Crc32cBestPath())) == "portable");
#endif
  for (Crc32cPath path : kCrc32cPaths) {
    if (!Crc32cHas(path)) BOOST_CHECK_THROW(Crc32cOn(path, "x", 1), InvalidArgumentError);
  }
}

// The folding multipliers are x^(D+63) and x^(D-1) modulo the polynomial,
// for each distance D the paths fold by.
BOOST_AUTO_TEST_CASE(folding_constants_are_powers_of_x_modulo_the_polynomial) {
  BOOST_TEST(XPowModPByDivision(0) == 0x80000000u);
  BOOST_TEST(XPowModPByDivision(32) == crc32c_fold::kPolynomial);
  for (uint64_t bits : crc32c_fold::kFoldDistances) {
    BOOST_TEST_CONTEXT("fold by " << bits << " bits") {
      const crc32c_fold::FoldConstants k = crc32c_fold::FoldConstantsFor(bits);
      BOOST_TEST(k.first == uint64_t{XPowModPByDivision(bits + 63)} << 32);
      BOOST_TEST(k.second == uint64_t{XPowModPByDivision(bits - 1)} << 32);
    }
  }
  for (uint64_t n : {0u, 1u, 31u, 32u, 33u, 100u, 2111u, 32768u}) {
    BOOST_TEST(crc32c_fold::XPowModP(n) == XPowModPByDivision(n));
  }
}

BOOST_AUTO_TEST_CASE(portable_path_matches_the_reference) {
  CheckAgainstReference(Crc32cPath::kPortable);
}

BOOST_AUTO_TEST_CASE(sse42_path_matches_the_reference,
                     *boost::unit_test::precondition(CpuHas{Crc32cPath::kSse42})) {
  CheckAgainstReference(Crc32cPath::kSse42);
}

BOOST_AUTO_TEST_CASE(pclmul_path_matches_the_reference,
                     *boost::unit_test::precondition(CpuHas{Crc32cPath::kPclmul})) {
  CheckAgainstReference(Crc32cPath::kPclmul);
}

BOOST_AUTO_TEST_CASE(vpclmul512_path_matches_the_reference,
                     *boost::unit_test::precondition(CpuHas{Crc32cPath::kVpclmul512})) {
  CheckAgainstReference(Crc32cPath::kVpclmul512);
}

// Every path the CPU has gives the same checksum as the others and as
// Crc32c, on random lengths and alignments up to 1 MiB.
BOOST_AUTO_TEST_CASE(every_path_agrees_with_the_others) {
  const std::vector<Crc32cPath> paths = PathsHere();
  std::mt19937 rng(3720);
  std::vector<uint8_t> buffer((size_t{1} << 20) + 128);
  for (uint8_t& b : buffer) b = static_cast<uint8_t>(rng());
  size_t compared = 0;
  for (int i = 0; i < 300; ++i) {
    const size_t length = i < 100 ? rng() % 70000 : rng() % ((size_t{1} << 20) + 1);
    const uint8_t* p = buffer.data() + rng() % 128;
    const auto seed = static_cast<uint32_t>(rng());
    const uint32_t chosen = Crc32c(p, length, seed);
    for (Crc32cPath path : paths) {
      if (Crc32cOn(path, p, length, seed) != chosen) {
        BOOST_ERROR(Crc32cPathName(path) << " differs from Crc32c at length " << length);
      }
      ++compared;
    }
  }
  BOOST_TEST(compared == 300u * paths.size());
}

// A checksum extended over pieces cut anywhere (the journal and the .gmeta
// stamps extend one) is the checksum of the whole, on every path.
BOOST_AUTO_TEST_CASE(checksums_extend_across_any_cut) {
  std::mt19937 rng(7);
  std::vector<uint8_t> bytes(40000);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  const uint32_t whole = test::ReferenceCrc32c(bytes.data(), bytes.size());
  for (Crc32cPath path : PathsHere()) {
    for (int i = 0; i < 50; ++i) {
      const size_t cut = rng() % bytes.size();
      const uint32_t first = Crc32cOn(path, bytes.data(), cut, 0);
      BOOST_TEST(Crc32cOn(path, bytes.data() + cut, bytes.size() - cut, first) == whole);
    }
  }
}

// One flipped bit anywhere changes the checksum (CRC-32C detects every
// single-bit error), on every path.
BOOST_AUTO_TEST_CASE(a_flipped_bit_changes_the_checksum) {
  std::mt19937 rng(11);
  std::vector<uint8_t> bytes(3 * 4096 + 1000);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (Crc32cPath path : PathsHere()) {
    const uint32_t clean = Crc32cOn(path, bytes.data(), bytes.size(), 0);
    for (int i = 0; i < 200; ++i) {
      const size_t at = rng() % bytes.size();
      const auto bit = static_cast<uint8_t>(1u << (rng() % 8));
      bytes[at] ^= bit;
      BOOST_TEST(Crc32cOn(path, bytes.data(), bytes.size(), 0) != clean);
      bytes[at] ^= bit;
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::util
