// CheckVideo (interop.h): one video's frames checked as `check --deep`
// checks them, its problems reported by frame.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/jpeg.h"
#include "tests/support/test_util.h"

namespace gulpdb {
namespace {

using test::Contains;
using test::TempDir;

std::string Jpeg(size_t seed) {
  std::vector<uint8_t> px(48 * 64 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * 7 + seed * 31) % 251);
  return ThreadLocalEncoder().Encode(px.data(), 64, 48, 3);
}

// Overwrites one byte of the chunk file at `offset`.
void Poke(const std::string& path, uint64_t offset, char byte) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(offset));
  file.put(byte);
  BOOST_REQUIRE(file.good());
}

struct Fixture {
  TempDir tmp;
  explicit Fixture(bool checksums = true) {
    CreateOptions create;
    create.checksums = checksums;
    auto rw = Dataset::Create(tmp.path(), create);
    auto w = rw->NewWriter();
    w->Append("a", test::Views({Jpeg(0), Jpeg(1), Jpeg(2), Jpeg(3)}));
    w->Append("b", test::Views({Jpeg(4)}));
    w->Commit();
  }
  FrameInfo Frame(const char* id, size_t k) const {
    return Dataset::Open(tmp.path())->Get(id).frames[k];
  }
  std::string Chunk() const { return tmp / "data_0.gulp"; }
};

BOOST_AUTO_TEST_SUITE(check_video_test)

BOOST_AUTO_TEST_CASE(a_healthy_video_has_no_problem) {
  Fixture f;
  auto ds = Dataset::Open(f.tmp.path());
  const VideoCheckReport report = CheckVideo(*ds, "a");
  BOOST_TEST(report.id == "a");
  BOOST_TEST(report.frames == 4u);
  BOOST_TEST(report.checksums);
  BOOST_TEST(report.healthy());
  BOOST_TEST(report.frame_problems.empty());
  BOOST_TEST(report.problems.empty());
}

BOOST_AUTO_TEST_CASE(a_changed_frame_is_reported_at_its_index_and_only_there) {
  Fixture f;
  const FrameInfo frame = f.Frame("a", 2);
  Poke(f.Chunk(), frame.offset + frame.jpeg_size() / 2, '\x5a');
  auto ds = Dataset::Open(f.tmp.path());
  const VideoCheckReport report = CheckVideo(*ds, "a");
  BOOST_TEST(!report.healthy());
  BOOST_REQUIRE(!report.frame_problems.empty());
  for (const FrameProblem& p : report.frame_problems) BOOST_TEST(p.frame == 2u);
  BOOST_TEST(Contains(report.frame_problems.front().what, "CRC-32C mismatch"));
  BOOST_TEST(report.problems.empty());
  // The other video of the chunk is untouched.
  BOOST_TEST(CheckVideo(*ds, "b").healthy());
}

BOOST_AUTO_TEST_CASE(without_checksums_a_frame_that_does_not_decode_is_reported) {
  Fixture f(/*checksums=*/false);
  const FrameInfo frame = f.Frame("a", 1);
  Poke(f.Chunk(), frame.offset, '\0');  // no SOI marker
  auto ds = Dataset::Open(f.tmp.path());
  const VideoCheckReport report = CheckVideo(*ds, "a");
  BOOST_TEST(!report.checksums);
  BOOST_REQUIRE(!report.frame_problems.empty());
  BOOST_TEST(report.frame_problems.front().frame == 1u);
  BOOST_TEST(Contains(report.frame_problems.front().what, "SOI"));
}

BOOST_AUTO_TEST_CASE(a_truncated_chunk_is_the_videos_problem) {
  Fixture f;
  const FrameInfo frame = f.Frame("a", 1);
  BOOST_REQUIRE(::truncate(f.Chunk().c_str(), static_cast<off_t>(frame.offset)) == 0);
  auto ds = Dataset::Open(f.tmp.path());
  const VideoCheckReport report = CheckVideo(*ds, "a");
  BOOST_TEST(!report.healthy());
  BOOST_REQUIRE(!report.problems.empty());
  BOOST_TEST(Contains(report.problems.front(), "truncated"));
}

BOOST_AUTO_TEST_CASE(a_missing_id_is_not_found) {
  Fixture f;
  auto ds = Dataset::Open(f.tmp.path());
  BOOST_CHECK_THROW(CheckVideo(*ds, "../a"), IdNotFoundError);
  BOOST_CHECK_THROW(CheckVideo(*ds, ""), IdNotFoundError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
