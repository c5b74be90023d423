#include "gulpdb/dataset.h"

#include <sys/stat.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <map>
#include <thread>
#include <type_traits>

#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "index/lmdb_env.h"
#include "index/records.h"
#include "support/test_util.h"
#include "util/utf8.h"

namespace gulpdb {
namespace {

using test::FakeJpeg;
using test::FixtureFrames;
using test::TempDir;
using test::Views;

std::unique_ptr<Dataset> CreateIn(const TempDir& tmp, uint32_t videos_per_chunk = 100,
                                  uint64_t bytes_per_chunk = 0) {
  CreateOptions options;
  options.videos_per_chunk = videos_per_chunk;
  options.bytes_per_chunk = bytes_per_chunk;
  return Dataset::Create(tmp.path(), options);
}

BOOST_AUTO_TEST_SUITE(dataset_test)

// A Writer shares the dataset's internals: destroying the Dataset first
// leaves it fully usable (this was a use after free, seen under ASan).
BOOST_AUTO_TEST_CASE(writer_outlives_its_dataset) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  std::unique_ptr<Writer> writer = Dataset::Create(dir)->NewWriter();  // the Dataset is gone
  writer->Append("a", test::Views({test::FakeJpeg(50, 1), test::FakeJpeg(61, 2)}), "{}");
  writer->Commit();
  writer->Append("b", test::Views({test::FakeJpeg(70, 3)}), "{}");
  writer->Rollback();
  writer->Append("c", test::Views({test::FakeJpeg(30, 4)}), "{}");
  BOOST_TEST(writer->Remove("a"));
  writer->Commit();
  writer.reset();
  {
    OpenOptions rw;
    rw.read_only = false;
    auto ds = Dataset::Open(dir, rw);
    std::unique_ptr<Writer> second = ds->NewWriter();
    second->Append("d", test::Views({test::FakeJpeg(40, 5)}), "{}");
    ds.reset();
    // Destroyed with a pending batch and no Dataset: it rolls back.
  }
  auto ds = Dataset::Open(dir);
  BOOST_TEST(ds->Ids() == std::vector<std::string>{"c"}, boost::test_tools::per_element());
  BOOST_TEST(ds->ReadJpegs("c")[0] == test::FakeJpeg(30, 4));
}

BOOST_AUTO_TEST_CASE(open_refuses_more_decode_threads_than_the_engine_allows) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  Dataset::Create(dir);
  OpenOptions options;
  options.decode_threads = kMaxThreads;
  BOOST_TEST(Dataset::Open(dir, options)->Ids().empty());
  options.decode_threads = kMaxThreads + 1;
  try {
    Dataset::Open(dir, options);
    BOOST_ERROR("decode_threads past the cap was taken");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(std::string(e.what()).find("decode_threads 1025") != std::string::npos, e.what());
  }
}

// JpegFrames, StoredFrames' old name, keeps compiling for a release (with a
// deprecation warning, silenced here).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
BOOST_AUTO_TEST_CASE(the_deprecated_name_jpeg_frames_is_stored_frames) {
  static_assert(std::is_same_v<JpegFrames, StoredFrames>);
  TempDir tmp;
  const std::string dir = tmp / "d";
  {
    std::unique_ptr<Writer> writer = Dataset::Create(dir)->NewWriter();
    writer->Append("a", test::Views({test::FakeJpeg(50, 1)}), "{}");
    writer->Commit();
  }
  const JpegFrames frames = Dataset::Open(dir)->ReadJpegs("a");
  BOOST_TEST(frames[0] == test::FakeJpeg(50, 1));
}
#pragma GCC diagnostic pop

BOOST_AUTO_TEST_CASE(real_frames_round_trip_byte_for_byte) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  const auto v0 = FixtureFrames("0");
  const auto v3 = FixtureFrames("3");
  {
    auto w = ds->NewWriter();
    BOOST_TEST(w->Append("v0", Views(v0), R"({"label": "a"})"));
    BOOST_TEST(w->Append("v3", Views(v3), R"({"label": "b"})"));
    w->Commit();
  }
  auto ro = Dataset::Open(tmp.path());
  BOOST_TEST(ro->Count() == 2u);
  BOOST_TEST(ro->Contains("v0"));
  BOOST_TEST(!ro->Contains("v1"));
  const StoredFrames frames = ro->ReadJpegs("v3");
  BOOST_REQUIRE_EQUAL(frames.size(), v3.size());
  for (size_t i = 0; i < v3.size(); ++i) BOOST_TEST((frames[i] == v3[i]));
  const VideoInfo info = ro->Get("v0");
  BOOST_TEST(info.meta_data == R"([{"label": "a"}])");
  BOOST_TEST(info.frames.size() == v0.size());
  BOOST_TEST(info.checksums.size() == v0.size());
  BOOST_TEST(info.chunk == 0u);
  BOOST_TEST(ro->FrameCount("v3") == v3.size());
  // The chunk file is exactly the GulpIO layout of the frames.
  std::string expected;
  for (const auto* video : {&v0, &v3}) {
    for (const std::string& f : *video) expected += f + std::string(PadFor(f.size()), '\0');
  }
  BOOST_TEST(test::ReadFile(tmp / "data_0.gulp") == expected);
}

BOOST_AUTO_TEST_CASE(meta_is_stored_as_python_writes_it) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  auto w = ds->NewWriter();
  w->Append("m", {FakeJpeg(8, 1)},
            "{\"label\":\"caf\xc3\xa9\",\"n\":[1,NaN, 18446744073709551617]}");
  w->Commit();
  BOOST_TEST(ds->Get("m").meta_data ==
             "[{\"label\": \"caf\\u00e9\", \"n\": [1, NaN, 18446744073709551617]}]");
}

BOOST_AUTO_TEST_CASE(selections_pick_the_right_bytes) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  std::vector<std::string> frames;
  for (uint32_t i = 0; i < 10; ++i) frames.push_back(FakeJpeg(100 + i, i));
  auto w = ds->NewWriter();
  w->Append("v", Views(frames));
  w->Commit();
  const auto check = [&](const Selection& sel, std::vector<uint32_t> want) {
    const StoredFrames got = ds->ReadJpegs("v", sel);
    BOOST_REQUIRE_EQUAL(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      BOOST_TEST(got.indices()[i] == want[i]);
      BOOST_TEST((got[i] == frames[want[i]]));
    }
  };
  check(Selection::Slice(1, 10, 2), {1, 3, 5, 7, 9});
  check(Selection::Slice(std::nullopt, std::nullopt, -3), {9, 6, 3, 0});
  check(Selection::Slice(-2, std::nullopt), {8, 9});
  check(Selection::Indices({4, 0, -1, 4}), {4, 0, 9, 4});
  check(Selection::Slice(5, 2), {});
  BOOST_CHECK_THROW(ds->ReadJpegs("v", Selection::Indices({10})), InvalidArgumentError);
  BOOST_CHECK_THROW(ds->ReadJpegs("nope"), NotFoundError);
}

BOOST_AUTO_TEST_CASE(rollback_and_destruction_leave_no_trace) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  {
    auto w = ds->NewWriter();
    w->Append("keep", {FakeJpeg(50, 1)});
    w->Commit();
  }
  const uint64_t committed = test::FileSizeOf(tmp / "data_0.gulp");
  {
    auto w = ds->NewWriter();
    w->Append("gone", {FakeJpeg(5000, 2)});
    BOOST_TEST(w->pending_videos() == 1u);
    w->Rollback();
    BOOST_TEST(w->pending_videos() == 0u);
    w->Append("gone_too", {FakeJpeg(5000, 3)});
  }  // destroyed without commit
  BOOST_TEST(test::FileSizeOf(tmp / "data_0.gulp") == committed);
  BOOST_TEST(ds->Count() == 1u);
  BOOST_TEST(!ds->Contains("gone"));
  BOOST_TEST(!ds->Contains("gone_too"));
  BOOST_TEST(ds->Stats().frames == 1u);
}

BOOST_AUTO_TEST_CASE(writer_reused_for_several_batches) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  auto w = ds->NewWriter();
  for (int batch = 0; batch < 3; ++batch) {
    for (uint32_t i = 0; i < 4; ++i) {
      w->Append("b" + std::to_string(batch) + "_" + std::to_string(i), {FakeJpeg(30 + i, i)});
    }
    w->Commit();
  }
  BOOST_TEST(ds->Count() == 12u);
  const std::vector<std::string> ids = ds->Ids();
  BOOST_REQUIRE_EQUAL(ids.size(), 12u);
  BOOST_TEST(ids.front() == "b0_0");
  BOOST_TEST(ids.back() == "b2_3");
}

BOOST_AUTO_TEST_CASE(for_each_walks_every_video_in_chunk_then_insertion_order) {
  TempDir tmp;
  auto ds = CreateIn(tmp, 50);
  auto w = ds->NewWriter();
  // More videos than one scan batch, so the scan resumes across transactions.
  for (uint32_t i = 0; i < 600; ++i) w->Append("id" + std::to_string(i), {FakeJpeg(8, i)});
  w->Commit();
  std::vector<std::string> seen;
  ds->ForEach([&](const VideoInfo& v) {
    seen.push_back(v.id);
    return true;
  });
  BOOST_REQUIRE_EQUAL(seen.size(), 600u);
  for (uint32_t i = 0; i < 600; ++i) BOOST_TEST(seen[i] == "id" + std::to_string(i));
  BOOST_TEST(seen == ds->Ids(), boost::test_tools::per_element());
  size_t stopped = 0;
  ds->ForEach([&](const VideoInfo&) { return ++stopped < 10; });
  BOOST_TEST(stopped == 10u);
}

BOOST_AUTO_TEST_CASE(chunks_roll_over_by_videos_and_bytes) {
  TempDir tmp;
  auto ds = CreateIn(tmp, /*videos_per_chunk=*/3, /*bytes_per_chunk=*/1000);
  auto w = ds->NewWriter();
  for (uint32_t i = 0; i < 7; ++i) w->Append("v" + std::to_string(i), {FakeJpeg(100, i)});
  w->Append("big", {FakeJpeg(904, 9)});    // 100 + 904 > 1000: new chunk
  w->Append("huge", {FakeJpeg(5000, 9)});  // alone in its own chunk, over the limit
  w->Commit();
  const std::vector<ChunkInfo> chunks = ds->Chunks();
  BOOST_REQUIRE_EQUAL(chunks.size(), 5u);
  const uint32_t expected_videos[] = {3, 3, 1, 1, 1};
  for (size_t i = 0; i < chunks.size(); ++i) {
    BOOST_TEST(chunks[i].number == i);
    BOOST_TEST(chunks[i].file_name == "data_" + std::to_string(i) + ".gulp");
    BOOST_TEST(chunks[i].live_videos == expected_videos[i]);
    BOOST_TEST(chunks[i].committed_length == test::FileSizeOf(tmp / chunks[i].file_name));
  }
  BOOST_TEST(ds->Get("v6").chunk == 2u);
  BOOST_TEST(ds->Get("huge").chunk == 4u);
  std::vector<std::string> in_chunk_1;
  ds->ForEachInChunk(1, [&](const VideoInfo& v) {
    in_chunk_1.push_back(v.id);
    return true;
  });
  BOOST_TEST(in_chunk_1 == (std::vector<std::string>{"v3", "v4", "v5"}),
             boost::test_tools::per_element());
}

// GulpIO's writers put exactly the videos they are given into one chunk:
// without rollover, StartChunk opens each chunk (empty ones too) and
// videos_per_chunk / bytes_per_chunk never split a group; numbering goes on
// across writers and skips foreign files.
BOOST_AUTO_TEST_CASE(start_chunk_without_rollover_keeps_each_group_in_one_chunk) {
  TempDir tmp;
  auto ds = CreateIn(tmp, /*videos_per_chunk=*/2, /*bytes_per_chunk=*/100);
  WriterOptions gulpio;
  gulpio.rollover = false;
  {
    auto w = ds->NewWriter(gulpio);
    BOOST_TEST(w->StartChunk() == 0u);
    for (const char* id : {"a", "b", "c"}) w->Append(id, {FakeJpeg(60, 1)});
    w->Commit();
    BOOST_TEST(w->StartChunk() == 1u);
    w->Append("d", {FakeJpeg(60, 2)});
    BOOST_TEST(w->StartChunk() == 2u);  // a group with nothing in it
    BOOST_TEST(w->StartChunk() == 3u);
    w->Append("e", {FakeJpeg(60, 3)});
    w->Append("f", {FakeJpeg(60, 4)});
    w->Commit();
  }
  test::WriteFile(tmp / "data_5.gulp", "not ours");
  {
    auto w = ds->NewWriter(gulpio);
    BOOST_TEST(w->StartChunk() == 4u);
    w->Append("g", {FakeJpeg(60, 5)});
    w->Commit();
    BOOST_TEST(w->StartChunk() == 6u);
    w->Append("rolled_back", {FakeJpeg(60, 6)});
    w->Rollback();  // the chunk stays, empty
  }
  std::map<uint32_t, std::vector<std::string>> ids;
  for (const ChunkInfo& c : ds->Chunks()) {
    ds->ForEachInChunk(c.number, [&](const VideoInfo& v) {
      ids[c.number].push_back(v.id);
      return true;
    });
    BOOST_TEST(c.committed_length == test::FileSizeOf(tmp / c.file_name));
  }
  const std::map<uint32_t, std::vector<std::string>> want = {
      {0, {"a", "b", "c"}}, {1, {"d"}}, {3, {"e", "f"}}, {4, {"g"}}};
  BOOST_TEST(ids.size() == want.size());
  for (const auto& [n, list] : want) {
    BOOST_TEST(ids[n] == list, boost::test_tools::per_element());
  }
  std::vector<uint32_t> numbers;
  for (const ChunkInfo& c : ds->Chunks()) numbers.push_back(c.number);
  BOOST_TEST(numbers == (std::vector<uint32_t>{0, 1, 2, 3, 4, 6}),
             boost::test_tools::per_element());
  BOOST_TEST(test::FileSizeOf(tmp / "data_2.gulp") == 0u);
  BOOST_TEST(test::ReadFile(tmp / "data_5.gulp") == "not ours");
  // Export pairs every data file with a .gmeta, the empty chunks' included.
  ExportGmeta(*ds);
  BOOST_TEST(test::ReadFile(tmp / "meta_2.gmeta") == "{}");
  BOOST_TEST(test::ReadFile(tmp / "meta_6.gmeta") == "{}");
  // The default writer still rolls over by itself.
  auto w = ds->NewWriter();
  w->Append("h", {FakeJpeg(60, 6)});
  w->Append("i", {FakeJpeg(60, 7)});
  w->Commit();
  BOOST_TEST(ds->Get("h").chunk == 6u);
  BOOST_TEST(ds->Get("i").chunk == 7u);
}

BOOST_AUTO_TEST_CASE(new_chunk_skips_foreign_files) {
  TempDir tmp;
  auto ds = CreateIn(tmp, 1);
  test::WriteFile(tmp / "data_1.gulp", "not ours");
  auto w = ds->NewWriter();
  w->Append("a", {FakeJpeg(10, 1)});
  w->Append("b", {FakeJpeg(10, 2)});
  w->Commit();
  BOOST_TEST(ds->Get("b").chunk == 2u);
  BOOST_TEST(test::ReadFile(tmp / "data_1.gulp") == "not ours");
}

BOOST_AUTO_TEST_CASE(duplicates_error_skip_or_replace) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  const std::string first = FakeJpeg(40, 1), second = FakeJpeg(60, 2);
  {
    auto w = ds->NewWriter();
    w->Append("x", {first}, R"({"v": 1})");
    BOOST_CHECK_THROW(w->Append("x", {second}), InvalidArgumentError);  // same batch
    w->Commit();
  }
  {
    auto w = ds->NewWriter();
    BOOST_CHECK_THROW(w->Append("x", {second}), InvalidArgumentError);
  }
  {
    WriterOptions o;
    o.on_duplicate = OnDuplicate::kSkip;
    auto w = ds->NewWriter(o);
    BOOST_TEST(!w->Append("x", {second}));
    w->Commit();
    BOOST_TEST((ds->ReadJpegs("x")[0] == first));
  }
  {
    WriterOptions o;
    o.on_duplicate = OnDuplicate::kReplace;
    auto w = ds->NewWriter(o);
    BOOST_TEST(w->Append("x", {second}, R"({"v": 2})"));
    w->Commit();
  }
  BOOST_TEST(ds->Count() == 1u);
  BOOST_TEST((ds->ReadJpegs("x")[0] == second));
  BOOST_TEST(ds->Get("x").meta_data == R"([{"v": 2}])");
  const DatasetStats stats = ds->Stats();
  BOOST_TEST(stats.frames == 1u);
  BOOST_TEST(stats.garbage_bytes == 40u);
  BOOST_TEST(ds->Ids().size() == 1u);
}

BOOST_AUTO_TEST_CASE(remove_drops_from_index_only) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  {
    auto w = ds->NewWriter();
    w->Append("a", {FakeJpeg(16, 1)});
    w->Append("b", {FakeJpeg(16, 2)});
    w->Commit();
  }
  const uint64_t size = test::FileSizeOf(tmp / "data_0.gulp");
  BOOST_TEST(ds->Remove({"a", "missing"}) == 1u);
  BOOST_TEST(!ds->Contains("a"));
  BOOST_TEST(ds->Ids() == (std::vector<std::string>{"b"}), boost::test_tools::per_element());
  BOOST_TEST(test::FileSizeOf(tmp / "data_0.gulp") == size);
  BOOST_TEST(ds->Stats().garbage_bytes == 16u);
  // Remove then re-append in one batch.
  auto w = ds->NewWriter();
  BOOST_TEST(w->Remove("b"));
  BOOST_TEST(w->Append("b", {FakeJpeg(20, 3)}));
  w->Commit();
  BOOST_TEST(ds->Get("b").frames[0].length == 20u);
  BOOST_TEST(ds->Count() == 1u);
}

BOOST_AUTO_TEST_CASE(bad_input_is_rejected_and_dataset_stays_intact) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  {
    auto w = ds->NewWriter();
    w->Append("ok", {FakeJpeg(32, 1)});
    w->Commit();
  }
  auto w = ds->NewWriter();
  BOOST_CHECK_THROW(w->Append("", {FakeJpeg(32, 1)}), InvalidArgumentError);
  BOOST_CHECK_THROW(w->Append(std::string(512, 'k'), {FakeJpeg(32, 1)}), InvalidArgumentError);
  BOOST_CHECK_THROW(w->Append("empty_frame", {std::string()}), InvalidArgumentError);
  BOOST_CHECK_THROW(w->Append("not_jpeg", {std::string("hello world")}), InvalidArgumentError);
  BOOST_CHECK_THROW(w->Append("bad_meta", {FakeJpeg(32, 1)}, "{\"a\": }"), InvalidArgumentError);
  BOOST_CHECK_THROW(w->Append("list_meta", {FakeJpeg(32, 1)}, "[1]"), InvalidArgumentError);
  BOOST_TEST(w->Append(std::string(511, 'k'), {FakeJpeg(32, 1)}));
  w->Commit();
  BOOST_TEST(ds->Count() == 2u);
  BOOST_TEST((ds->ReadJpegs("ok")[0] == FakeJpeg(32, 1)));

  BOOST_CHECK_THROW(Dataset::Open(tmp / "missing"), NotFoundError);
  BOOST_CHECK_THROW(Dataset::Open(tmp / "data_0.gulp"), NotFoundError);
  BOOST_CHECK_THROW(Dataset::Create(tmp.path()), InvalidArgumentError);
  auto ro = Dataset::Open(tmp.path());
  BOOST_CHECK_THROW(ro->NewWriter(), InvalidArgumentError);
}

// Ids are arbitrary UTF-8 text of 1..511 bytes: NUL bytes, path separators,
// dot-dot, control characters and non-ASCII all round trip through append,
// lookup, listing, removal and a .gmeta export + import. Ids that cannot be
// stored (too long, not UTF-8) are refused with a message that says why and
// never echoes the raw bytes; lookups of such ids simply miss.
BOOST_AUTO_TEST_CASE(hostile_ids_round_trip_or_are_refused_clearly) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  const std::vector<std::string> ids = {std::string("nul\0inside", 10),
                                        std::string("\0", 1),
                                        "a/b/c",
                                        "../../etc/passwd",
                                        "/abs",
                                        "back\\slash",
                                        "line\nbreak\ttab\x7f",
                                        "quote\"and'",
                                        "\xc3\xa9t\xc3\xa9 \xf0\x9f\x8e\xa5",
                                        std::string(511, 'x'),
                                        " ",
                                        "%s%n{}[]"};
  {
    auto ds = Dataset::Create(dir);
    auto w = ds->NewWriter();
    for (size_t i = 0; i < ids.size(); ++i) {
      BOOST_TEST_CONTEXT("id " << test::Printable(ids[i])) {
        BOOST_TEST(w->Append(ids[i], {FakeJpeg(40 + i, static_cast<uint32_t>(i))},
                             R"({"n": )" + std::to_string(i) + "}"));
      }
    }
    w->Commit();
  }
  auto check_all = [&](const Dataset& ds, const std::string& what) {
    BOOST_TEST_CONTEXT(what) {
      BOOST_TEST(ds.Count() == ids.size());
      std::vector<std::string> listed = ds.Ids();
      std::sort(listed.begin(), listed.end());
      std::vector<std::string> want = ids;
      std::sort(want.begin(), want.end());
      BOOST_TEST(listed == want, boost::test_tools::per_element());
      for (size_t i = 0; i < ids.size(); ++i) {
        BOOST_TEST_CONTEXT("id " << test::Printable(ids[i])) {
          BOOST_TEST((ds.ReadJpegs(ids[i])[0] == FakeJpeg(40 + i, static_cast<uint32_t>(i))));
          BOOST_TEST(ds.Get(ids[i]).meta_data == R"([{"n": )" + std::to_string(i) + "}]");
        }
      }
    }
  };
  {
    auto ds = Dataset::Open(dir);
    check_all(*ds, "as written");
    BOOST_TEST(!ds->Contains("nul"));  // a prefix before the NUL is another id
    BOOST_TEST(!ds->Find(std::string(10 * 1024, 'k')).has_value());
    BOOST_TEST(!ds->Find("\xff\xfe").has_value());
    // Export, then import the exported .gmeta files next to copies of the chunks.
    const std::string copy = tmp / "copy";
    std::filesystem::create_directories(copy);
    for (const ChunkInfo& c : ds->Chunks()) {
      std::filesystem::copy_file(dir + "/" + c.file_name, copy + "/" + c.file_name);
    }
    ExportGmeta(*ds, copy);
    ImportGulpio(copy);
    check_all(*Dataset::Open(copy), "after export and import");
  }

  OpenOptions rw;
  rw.read_only = false;
  auto ds = Dataset::Open(dir, rw);
  auto w = ds->NewWriter();
  const auto refused = [&](const std::string& id, const std::string& fragment) {
    BOOST_TEST_CONTEXT("id " << test::Printable(id.substr(0, 40))) {
      try {
        w->Append(id, {FakeJpeg(40, 1)});
        BOOST_ERROR("append should fail");
      } catch (const InvalidArgumentError& e) {
        const std::string message = e.what();
        BOOST_TEST_INFO("message: " << test::Printable(message));
        BOOST_TEST(message.find(fragment) != std::string::npos);
        BOOST_TEST(message.find(dir) != std::string::npos);
        BOOST_TEST(message.size() < 400u);
        BOOST_TEST(util::FindInvalidUtf8(message) == std::string::npos);
      }
    }
  };
  refused(std::string(512, 'k'), "512 bytes is longer than the 511-byte limit");
  refused(std::string(10 * 1024, 'k'), "10240 bytes is longer");
  refused("bad\xff", "not valid UTF-8 at byte 3");
  refused("\xc0\x80", "not valid UTF-8 at byte 0");      // overlong NUL
  refused("\xed\xa0\x80", "not valid UTF-8 at byte 0");  // a surrogate
  refused("cut\xe2\x82", "not valid UTF-8 at byte 3");   // truncated sequence
  refused(std::string(600, '\xff'), "longer than the 511-byte limit");
  BOOST_TEST(w->pending_videos() == 0u);
  w.reset();
  BOOST_TEST(ds->Remove({ids[0], ids[2], std::string(10 * 1024, 'k')}) == 2u);
  BOOST_TEST(!ds->Contains(ids[0]));
  BOOST_TEST(ds->Contains(ids[1]));
}

// An id the index cannot hold (empty, or over LMDB's 511-byte key limit) is
// simply not there: lookups miss with the ordinary "no such video" error,
// removals remove nothing, and nothing reports LMDB's MDB_BAD_VALSIZE.
BOOST_AUTO_TEST_CASE(empty_and_overlong_ids_are_absent) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  {
    auto w = ds->NewWriter();
    w->Append("a", {FakeJpeg(16, 1)});
    w->Commit();
  }
  for (const std::string& id : {std::string(), std::string(512, 'k')}) {
    BOOST_TEST_CONTEXT("id of " << id.size() << " bytes") {
      BOOST_TEST(!ds->Contains(id));
      BOOST_TEST(!ds->Find(id).has_value());
      try {
        ds->Get(id);
        BOOST_ERROR("Get should throw");
      } catch (const IdNotFoundError& e) {
        BOOST_TEST(std::string(e.what()).find("MDB_") == std::string::npos);
      }
      BOOST_CHECK_THROW(ds->FrameCount(id), IdNotFoundError);
      BOOST_CHECK_THROW(ds->ReadJpegs(id), IdNotFoundError);
      BOOST_CHECK_THROW(ds->ReadFrames(id), IdNotFoundError);
      BOOST_CHECK_THROW(ds->ReadJpegBatch({FrameRequest{id}}), IdNotFoundError);
      BOOST_TEST(ds->Remove({id, "a"}) == 1u);
      auto w = ds->NewWriter();
      BOOST_TEST(!w->Remove(id));
      BOOST_TEST(w->Append("a", {FakeJpeg(16, 1)}));
      w->Commit();
    }
  }
  BOOST_TEST(ds->Count() == 1u);
}

BOOST_AUTO_TEST_CASE(second_writer_is_busy_or_waits) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  auto first = ds->NewWriter();
  try {
    ds->NewWriter();
    BOOST_FAIL("a second writer must be refused");
  } catch (const BusyError& e) {
    BOOST_TEST(std::string(e.what()).find(tmp.path()) != std::string::npos);
  }
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    first->Append("a", {FakeJpeg(8, 1)});
    first->Commit();
    first.reset();
  });
  WriterOptions wait;
  wait.lock_timeout = std::chrono::seconds(20);
  auto second = ds->NewWriter(wait);
  release.join();
  BOOST_TEST(ds->Contains("a"));
}

BOOST_AUTO_TEST_CASE(corrupt_index_record_is_reported_not_crashed) {
  TempDir tmp;
  {
    auto ds = CreateIn(tmp);
    auto w = ds->NewWriter();
    w->Append("good", {FakeJpeg(8, 1)});
    w->Append("bad", {FakeJpeg(8, 2)});
    w->Commit();
  }
  {
    auto env = index::Env::Open(tmp / "gulpdb.index", index::EnvOptions{});
    const index::Dbi videos = env->OpenDb(index::kVideosDb, false);
    env->Update([&](index::Txn& txn) { txn.Put(videos, "bad", std::string(40, '\x13')); });
  }
  auto ds = Dataset::Open(tmp.path());
  BOOST_CHECK_THROW(ds->ReadJpegs("bad"), CorruptionError);
  BOOST_CHECK_THROW(ds->Get("bad"), CorruptionError);
  BOOST_TEST((ds->ReadJpegs("good")[0] == FakeJpeg(8, 1)));
}

// An index file whose main database lost the records of the named databases
// is damage, read-only or read-write (which must not create them empty), and
// the error points at `gulpdb check`; it is not a missing dataset.
BOOST_AUTO_TEST_CASE(index_without_its_databases_is_corruption_not_missing) {
  TempDir tmp;
  {
    auto ds = CreateIn(tmp);
    auto w = ds->NewWriter();
    w->Append("a", {FakeJpeg(8, 1)});
    w->Commit();
  }
  const std::string file = tmp / "gulpdb.index/data.mdb";
  std::string bytes = test::ReadFile(file);
  size_t renamed = 0;
  for (size_t at = bytes.find("videos"); at != std::string::npos; at = bytes.find("videos", at)) {
    bytes.replace(at, 6, "vidzos");  // still sorts after "order": the tree stays ordered
    ++renamed;
  }
  BOOST_REQUIRE(renamed > 0u);
  test::WriteFile(file, bytes);
  for (const bool read_only : {true, false}) {
    BOOST_TEST_CONTEXT("read_only " << read_only) {
      OpenOptions options;
      options.read_only = read_only;
      try {
        Dataset::Open(tmp.path(), options);
        BOOST_ERROR("Open should throw");
      } catch (const CorruptionError& e) {
        const std::string message = e.what();
        BOOST_TEST(message.find("gulpdb check " + tmp.path()) != std::string::npos, message);
        BOOST_TEST(message.find("damaged") != std::string::npos, message);
      }
    }
  }
  BOOST_TEST(test::ReadFile(file) == bytes);  // nothing created
}

BOOST_AUTO_TEST_CASE(truncated_chunk_is_corruption_on_read) {
  TempDir tmp;
  auto ds = CreateIn(tmp);
  auto w = ds->NewWriter();
  w->Append("a", {FakeJpeg(100, 1)});
  w->Commit();
  BOOST_REQUIRE_EQUAL(::truncate((tmp / "data_0.gulp").c_str(), 50), 0);
  BOOST_CHECK_THROW(ds->ReadJpegs("a"), CorruptionError);
}

BOOST_AUTO_TEST_CASE(checksums_are_verified_when_asked) {
  TempDir tmp;
  {
    auto ds = CreateIn(tmp);
    auto w = ds->NewWriter();
    w->Append("a", {FakeJpeg(100, 1)});
    w->Commit();
  }
  std::string bytes = test::ReadFile(tmp / "data_0.gulp");
  bytes[50] = static_cast<char>(bytes[50] ^ 1);
  test::WriteFile(tmp / "data_0.gulp", bytes);
  OpenOptions verify;
  verify.verify_checksums = true;
  BOOST_CHECK_THROW(Dataset::Open(tmp.path(), verify)->ReadJpegs("a"), CorruptionError);
}

BOOST_AUTO_TEST_CASE(stats_count_everything) {
  TempDir tmp;
  auto ds = CreateIn(tmp, 2);
  auto w = ds->NewWriter();
  w->Append("a", {FakeJpeg(8, 1), FakeJpeg(9, 2)});
  w->Append("b", {FakeJpeg(10, 3)});
  w->Append("c", {FakeJpeg(12, 4)});
  w->Commit();
  const DatasetStats s = ds->Stats();
  BOOST_TEST(s.videos == 3u);
  BOOST_TEST(s.frames == 4u);
  BOOST_TEST(s.chunks == 2u);
  BOOST_TEST(s.committed_bytes == 8u + 12u + 12u + 12u);
  BOOST_TEST(s.garbage_bytes == 0u);
  BOOST_TEST(s.format_version == 2u);
  BOOST_TEST(s.videos_per_chunk == 2u);
}

BOOST_AUTO_TEST_CASE(duplicate_policy_has_one_vocabulary) {
  for (OnDuplicate policy : {OnDuplicate::kError, OnDuplicate::kSkip, OnDuplicate::kReplace}) {
    BOOST_TEST((OnDuplicateFromName(OnDuplicateName(policy)) == policy));
  }
  BOOST_TEST(std::string(OnDuplicateName(OnDuplicate::kSkip)) == "skip");
  BOOST_TEST(std::string(OnDuplicateName(OnDuplicate::kReplace)) == "replace");
  for (const char* other : {"", "keep-first", "keep_last", "Skip", "replace "}) {
    BOOST_TEST(!OnDuplicateFromName(other).has_value(), other);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
