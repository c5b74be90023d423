// CRC-32C against published known answers (RFC 3720, appendix B.4, and the
// common "123456789" check value), and the SSE4.2 path (three interleaved
// streams) against the slicing-by-8 path and a bit-at-a-time reference on
// many lengths and alignments, including the lengths where the streams'
// blocks begin and end.
#include "util/crc32c.h"

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/test_util.h"

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

using Path = uint32_t (*)(const void*, size_t, uint32_t);

BOOST_AUTO_TEST_SUITE(crc32c_test)

BOOST_AUTO_TEST_CASE(rfc3720_known_answers_on_both_paths) {
  for (const Vector& v : KnownAnswers()) {
    BOOST_TEST_CONTEXT(v.name) {
      BOOST_TEST(test::ReferenceCrc32c(v.bytes.data(), v.bytes.size()) == v.crc);
      for (Path path : {Path{Crc32c}, Path{Crc32cPortable}, Path{Crc32cHardware}}) {
        BOOST_TEST(path(v.bytes.data(), v.bytes.size(), 0) == v.crc);
        // Extending a checksum piecewise gives the checksum of the whole.
        const size_t half = v.bytes.size() / 2;
        BOOST_TEST(path(v.bytes.data() + half, v.bytes.size() - half,
                        path(v.bytes.data(), half, 0)) == v.crc);
      }
    }
  }
  BOOST_TEST(Crc32c("", 0) == 0u);
  BOOST_TEST(Crc32cPortable("", 0) == 0u);
  BOOST_TEST(Crc32cHardware("", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(the_hardware_path_is_taken_where_the_cpu_has_sse42) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  BOOST_TEST(Crc32cUsesHardware() == (__builtin_cpu_supports("sse4.2") != 0));
#else
  BOOST_TEST(!Crc32cUsesHardware());
#endif
}

// Every path against the bit-at-a-time reference: each length up to 300 at
// each of 16 alignments, the lengths around the three streams' block sizes
// (3 x 256 and 3 x 4096 bytes, where they start to run), and random lengths
// and alignments up to 64 KiB with random starting registers.
BOOST_AUTO_TEST_CASE(hardware_and_portable_paths_agree_on_every_length_and_alignment) {
  std::mt19937 rng(20261124);
  std::vector<uint8_t> buffer((size_t{1} << 16) + 64);
  for (uint8_t& b : buffer) b = static_cast<uint8_t>(rng());
  size_t checked = 0;
  const auto check = [&](size_t offset, size_t length, uint32_t seed) {
    const uint8_t* p = buffer.data() + offset;
    const uint32_t hardware = Crc32cHardware(p, length, seed);
    const uint32_t portable = Crc32cPortable(p, length, seed);
    const uint32_t chosen = Crc32c(p, length, seed);
    if (hardware != portable || chosen != portable) {
      BOOST_ERROR("paths differ at offset " << offset << ", length " << length << ", seed "
                                            << seed);
    }
    if (seed == 0 && portable != test::ReferenceCrc32c(p, length)) {
      BOOST_ERROR("the portable path differs from the reference at offset " << offset << ", length "
                                                                            << length);
    }
    ++checked;
  };
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t length = 0; length <= 300; ++length) {
      check(offset, length, length % 3 == 0 ? 0 : static_cast<uint32_t>(rng()));
    }
  }
  for (size_t edge : {size_t{3 * 256}, size_t{3 * 4096}, size_t{6 * 4096}}) {
    for (size_t length = edge - 17; length <= edge + 17; ++length) {
      for (size_t offset : {size_t{0}, size_t{1}, size_t{7}}) check(offset, length, 0);
    }
  }
  for (int i = 0; i < 400; ++i) {
    const size_t length = rng() % (size_t{1} << 16);
    const size_t offset = rng() % 64;
    check(offset, length, i % 2 == 0 ? 0 : static_cast<uint32_t>(rng()));
  }
  BOOST_TEST(checked == 16u * 301u + 3u * 35u * 3u + 400u);
}

// A checksum extended over pieces cut anywhere (the journal and the .gmeta
// stamps extend one) is the checksum of the whole, on both paths.
BOOST_AUTO_TEST_CASE(checksums_extend_across_any_cut) {
  std::mt19937 rng(7);
  std::vector<uint8_t> bytes(40000);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  const uint32_t whole = test::ReferenceCrc32c(bytes.data(), bytes.size());
  for (Path path : {Path{Crc32cPortable}, Path{Crc32cHardware}}) {
    for (int i = 0; i < 50; ++i) {
      const size_t cut = rng() % bytes.size();
      const uint32_t first = path(bytes.data(), cut, 0);
      BOOST_TEST(path(bytes.data() + cut, bytes.size() - cut, first) == whole);
    }
  }
}

// One flipped bit anywhere changes the checksum (CRC-32C detects every
// single-bit error), on both paths.
BOOST_AUTO_TEST_CASE(a_flipped_bit_changes_the_checksum) {
  std::mt19937 rng(11);
  std::vector<uint8_t> bytes(3 * 4096 + 1000);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (Path path : {Path{Crc32cPortable}, Path{Crc32cHardware}}) {
    const uint32_t clean = path(bytes.data(), bytes.size(), 0);
    for (int i = 0; i < 200; ++i) {
      const size_t at = rng() % bytes.size();
      const auto bit = static_cast<uint8_t>(1u << (rng() % 8));
      bytes[at] ^= bit;
      BOOST_TEST(path(bytes.data(), bytes.size(), 0) != clean);
      bytes[at] ^= bit;
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::util
