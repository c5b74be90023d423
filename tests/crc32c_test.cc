// CRC-32C against published known answers (RFC 3720, appendix B.4, and the
// common "123456789" check value), and the SSE4.2 path against the table
// path on many lengths and alignments.
#include "index/crc32c.h"

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace gulpdb::index {
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

BOOST_AUTO_TEST_SUITE(crc32c_test)

BOOST_AUTO_TEST_CASE(rfc3720_known_answers_on_both_paths) {
  for (const Vector& v : KnownAnswers()) {
    BOOST_TEST_CONTEXT(v.name) {
      BOOST_TEST(Crc32c(v.bytes.data(), v.bytes.size()) == v.crc);
      BOOST_TEST(Crc32cPortable(v.bytes.data(), v.bytes.size()) == v.crc);
      BOOST_TEST(test::ReferenceCrc32c(v.bytes.data(), v.bytes.size()) == v.crc);
      // Extending a checksum piecewise gives the checksum of the whole.
      const size_t half = v.bytes.size() / 2;
      BOOST_TEST(Crc32c(v.bytes.data() + half, v.bytes.size() - half,
                        Crc32c(v.bytes.data(), half)) == v.crc);
      BOOST_TEST(Crc32cPortable(v.bytes.data() + half, v.bytes.size() - half,
                                Crc32cPortable(v.bytes.data(), half)) == v.crc);
    }
  }
  BOOST_TEST(Crc32c("", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(hardware_and_table_paths_agree_on_every_length_and_alignment) {
#if defined(__x86_64__)
  BOOST_TEST(Crc32cUsesHardware() == static_cast<bool>(__builtin_cpu_supports("sse4.2")));
#endif
  std::mt19937 rng(20261124);
  std::vector<uint8_t> buffer(4096 + 16);
  for (uint8_t& b : buffer) b = static_cast<uint8_t>(rng());
  size_t checked = 0;
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t length = 0; length <= 300; ++length) {
      const uint8_t* p = buffer.data() + offset;
      const uint32_t seed = length % 3 == 0 ? 0 : static_cast<uint32_t>(rng());
      if (Crc32c(p, length, seed) != Crc32cPortable(p, length, seed)) {
        BOOST_ERROR("paths differ at offset " << offset << ", length " << length);
      }
      ++checked;
    }
  }
  for (size_t length : {1000u, 1023u, 4096u}) {
    BOOST_TEST(Crc32c(buffer.data() + 3, length) == Crc32cPortable(buffer.data() + 3, length));
    BOOST_TEST(Crc32c(buffer.data() + 3, length) ==
               test::ReferenceCrc32c(buffer.data() + 3, length));
  }
  BOOST_TEST(checked == 16u * 301u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::index
