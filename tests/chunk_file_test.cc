#include "engine/core/chunk_file.h"

#include <boost/test/unit_test.hpp>

#include "gulpdb/error.h"
#include "support/test_util.h"

namespace gulpdb::engine {
namespace {

using test::FakeJpeg;
using test::TempDir;

BOOST_AUTO_TEST_SUITE(chunk_file_test)

BOOST_AUTO_TEST_CASE(each_pad_value_gives_gulpio_layout) {
  TempDir tmp;
  const std::string path = tmp / "data_0.gulp";
  ChunkFile file(path, ChunkFile::Mode::kCreate);
  // Sizes with size % 4 == 0, 3, 2, 1 need pads 0, 1, 2, 3.
  const std::vector<std::string> jpegs = {FakeJpeg(8, 1), FakeJpeg(7, 2), FakeJpeg(6, 3),
                                          FakeJpeg(5, 4)};
  const std::vector<FrameInfo> frames =
      file.AppendFrames(0, std::vector<std::string_view>(jpegs.begin(), jpegs.end()));
  BOOST_REQUIRE_EQUAL(frames.size(), 4u);
  const uint32_t expected_pads[] = {0, 1, 2, 3};
  uint64_t offset = 0;
  for (size_t i = 0; i < 4; ++i) {
    BOOST_TEST(frames[i].pad == expected_pads[i]);
    BOOST_TEST(frames[i].offset == offset);
    BOOST_TEST(frames[i].length == jpegs[i].size() + expected_pads[i]);
    BOOST_TEST(frames[i].length % 4 == 0u);
    offset += frames[i].length;
  }
  // The file is exactly |jpeg|zeros|jpeg|zeros|...
  std::string expected;
  for (size_t i = 0; i < 4; ++i) expected += jpegs[i] + std::string(expected_pads[i], '\0');
  BOOST_TEST(test::ReadFile(path) == expected);
  BOOST_TEST(file.Size() == 32u);
}

BOOST_AUTO_TEST_CASE(read_at_returns_bytes_and_reports_short_files) {
  TempDir tmp;
  const std::string path = tmp / "c.gulp";
  test::WriteFile(path, "0123456789");
  ChunkFile file(path, ChunkFile::Mode::kRead);
  char buf[4];
  file.ReadAt(3, buf, 4);
  BOOST_TEST(std::string(buf, 4) == "3456");
  try {
    file.ReadAt(8, buf, 4);
    BOOST_FAIL("a read past the end must throw");
  } catch (const CorruptionError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find(path) != std::string::npos);
    BOOST_TEST(what.find("offset 8") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(create_refuses_existing_and_append_needs_existing) {
  TempDir tmp;
  const std::string path = tmp / "c.gulp";
  BOOST_CHECK_THROW(ChunkFile(path, ChunkFile::Mode::kAppend), NotFoundError);
  ChunkFile created(path, ChunkFile::Mode::kCreate);
  // EEXIST is the caller's to avoid: InvalidArgumentError (util/sys_error.h).
  BOOST_CHECK_THROW(ChunkFile(path, ChunkFile::Mode::kCreate), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(truncate_drops_uncommitted_tail) {
  TempDir tmp;
  ChunkFile file(tmp / "c.gulp", ChunkFile::Mode::kCreate);
  const std::string a = FakeJpeg(10, 1);
  file.AppendFrames(0, {a});
  file.TruncateTo(4);
  BOOST_TEST(file.Size() == 4u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::engine
