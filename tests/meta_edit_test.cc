// Meta edits (Writer::UpdateMeta / SetMeta, engine/core/meta_edit.h): the
// merge and replace rules on the text of meta_data, an edit as part of a
// writer's batch (all or nothing, with appends and removals), the meta
// index in the same transaction, the journal's record of an edit replayed
// after a power cut, and frames that never move.
#include "engine/core/meta_edit.h"

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "support/run_and_kill.h"
#include "support/test_util.h"

namespace gulpdb {
namespace {

using test::TempDir;

std::vector<std::string> Frames(int i) {
  return {test::FakeJpeg(200, static_cast<uint32_t>(2 * i)),
          test::FakeJpeg(230, static_cast<uint32_t>(2 * i + 1))};
}

std::unique_ptr<Dataset> OpenRw(const std::string& dir) {
  OpenOptions o;
  o.read_only = false;
  return Dataset::Open(dir, o);
}

// A dataset of `n` videos v0.. with meta {"label": "l<i % 3>", "duration": i}.
std::unique_ptr<Dataset> MakeDataset(const TempDir& tmp, int n) {
  auto ds = Dataset::Create(tmp.path());
  auto w = ds->NewWriter();
  for (int i = 0; i < n; ++i) {
    const auto frames = Frames(i);
    w->Append(
        "v" + std::to_string(i), test::Views(frames),
        "{\"label\": \"l" + std::to_string(i % 3) + "\", \"duration\": " + std::to_string(i) + "}");
  }
  w->Commit();
  return ds;
}

std::string Meta(const Dataset& ds, const std::string& id) { return ds.Get(id).meta_data; }

BOOST_AUTO_TEST_SUITE(meta_edit_test)

BOOST_AUTO_TEST_CASE(merge_sets_keys_in_place_adds_new_ones_and_null_deletes) {
  const std::string op = "test";
  BOOST_TEST(engine::MergeFirstMeta(R"([{"a": 1, "b": 2}])", R"({"b": "x", "c": [1]})", op) ==
             R"([{"a": 1, "b": "x", "c": [1]}])");
  BOOST_TEST(engine::MergeFirstMeta(R"([{"a": 1, "b": 2}])", R"({"a": null})", op) ==
             R"([{"b": 2}])");
  // Only the first entry is the video's meta; the others stay verbatim.
  BOOST_TEST(engine::MergeFirstMeta(R"([{"a": 1}, {"a": 5}])", R"({"a": 2})", op) ==
             R"([{"a": 2}, {"a": 5}])");
  // A duplicated key: the first place gets the value, the later copies go.
  BOOST_TEST(engine::MergeFirstMeta(R"([{"a": 1, "b": 0, "a": 3}])", R"({"a": 9})", op) ==
             R"([{"a": 9, "b": 0}])");
  BOOST_TEST(engine::MergeFirstMeta("[]", R"({"a": 1, "z": null})", op) == R"([{"a": 1}])");
  BOOST_TEST(engine::MergeFirstMeta(R"([{"\u00e9": 1}])", R"({"\u00e9": 2})", op) ==
             R"([{"\u00e9": 2}])");
  BOOST_CHECK_THROW(engine::MergeFirstMeta(R"([[1, 2]])", R"({"a": 1})", op), InvalidArgumentError);
  BOOST_TEST(engine::ReplaceFirstMeta(R"([[1, 2], {"k": 1}])", R"({"a": 1})", op) ==
             R"([{"a": 1}, {"k": 1}])");
  BOOST_TEST(engine::ReplaceFirstMeta("[]", R"({"a": 1})", op) == R"([{"a": 1}])");
  BOOST_CHECK_THROW(engine::CanonicalMetaObject("[1]", op), InvalidArgumentError);
  BOOST_CHECK_THROW(engine::CanonicalMetaObject("{", op), InvalidArgumentError);
  BOOST_TEST(engine::CanonicalMetaObject(R"({ "a" :1 })", op) == R"({"a": 1})");
}

BOOST_AUTO_TEST_CASE(update_and_set_meta_change_meta_and_never_the_frames) {
  TempDir tmp;
  auto ds = MakeDataset(tmp, 5);
  const VideoInfo before = ds->Get("v1");
  const auto chunk_sizes = [&] {
    std::vector<uintmax_t> sizes;
    for (const ChunkInfo& c : ds->Chunks())
      sizes.push_back(std::filesystem::file_size(tmp / c.file_name));
    return sizes;
  };
  const auto sizes_before = chunk_sizes();
  {
    auto w = ds->NewWriter();
    w->UpdateMeta("v1", R"({"label": "fixed", "duration": null, "note": "ok"})");
    w->SetMeta("v2", R"({"only": true})");
    w->Commit();
  }
  BOOST_TEST(Meta(*ds, "v1") == R"([{"label": "fixed", "note": "ok"}])");
  BOOST_TEST(Meta(*ds, "v2") == R"([{"only": true}])");
  BOOST_TEST(Meta(*ds, "v0") == R"([{"label": "l0", "duration": 0}])");
  const VideoInfo after = ds->Get("v1");
  BOOST_TEST(after.chunk == before.chunk);
  BOOST_TEST(after.seq == before.seq);
  BOOST_TEST(after.frames.size() == before.frames.size());
  for (size_t i = 0; i < after.frames.size(); ++i) {
    BOOST_TEST(after.frames[i].offset == before.frames[i].offset);
  }
  BOOST_TEST(chunk_sizes() == sizes_before, boost::test_tools::per_element());
  BOOST_TEST(ds->ReadJpegs("v1").size() == 2u);
  BOOST_TEST(ds->Count() == 5u);
  const auto chunks = ds->Chunks();
  BOOST_TEST(chunks.size() == 1u);
}

BOOST_AUTO_TEST_CASE(edits_of_one_id_apply_in_call_order) {
  TempDir tmp;
  auto ds = MakeDataset(tmp, 2);
  auto w = ds->NewWriter();
  w->UpdateMeta("v0", R"({"a": 1})");
  w->UpdateMeta("v0", R"({"b": 2, "label": null})");
  w->Commit();
  BOOST_TEST(Meta(*ds, "v0") == R"([{"duration": 0, "a": 1, "b": 2}])");
}

BOOST_AUTO_TEST_CASE(an_id_appended_earlier_in_the_batch_can_be_edited) {
  TempDir tmp;
  auto ds = MakeDataset(tmp, 1);
  auto w = ds->NewWriter();
  const auto frames = Frames(9);
  w->Append("new", test::Views(frames), R"({"label": "a"})");
  w->UpdateMeta("new", R"({"label": "b"})");
  w->Commit();
  BOOST_TEST(Meta(*ds, "new") == R"([{"label": "b"}])");
}

BOOST_AUTO_TEST_CASE(a_missing_id_throws_and_nothing_of_the_batch_lands) {
  TempDir tmp;
  auto ds = MakeDataset(tmp, 3);
  auto w = ds->NewWriter();
  const auto frames = Frames(7);
  w->Append("x", test::Views(frames), "{}");
  w->UpdateMeta("v0", R"({"label": "changed"})");
  BOOST_CHECK_THROW(w->UpdateMeta("nope", R"({"a": 1})"), IdNotFoundError);
  w->Commit();  // the batch was rolled back: nothing to commit
  BOOST_TEST(!ds->Contains("x"));
  BOOST_TEST(Meta(*ds, "v0") == R"([{"label": "l0", "duration": 0}])");
  BOOST_CHECK_THROW(w->SetMeta("", "{}"), IdNotFoundError);
  // Removed in the batch: no longer there to edit.
  w->Remove("v1");
  BOOST_CHECK_THROW(w->SetMeta("v1", "{}"), IdNotFoundError);
  BOOST_TEST(ds->Contains("v1"));
}

BOOST_AUTO_TEST_CASE(bad_json_leaves_the_batch_as_it_was) {
  TempDir tmp;
  auto ds = MakeDataset(tmp, 2);
  auto w = ds->NewWriter();
  w->UpdateMeta("v0", R"({"a": 1})");
  BOOST_CHECK_THROW(w->UpdateMeta("v1", "[1]"), InvalidArgumentError);
  BOOST_CHECK_THROW(w->SetMeta("v1", "not json"), InvalidArgumentError);
  BOOST_CHECK_THROW(w->UpdateMeta("v1", "\"text\""), InvalidArgumentError);
  w->Commit();
  BOOST_TEST(Meta(*ds, "v0") == R"([{"label": "l0", "duration": 0, "a": 1}])");
}

BOOST_AUTO_TEST_CASE(update_refuses_a_meta_that_is_not_an_object_and_set_replaces_it) {
  TempDir tmp;
  auto ds = Dataset::Create(tmp.path());
  auto w = ds->NewWriter();
  const auto frames = Frames(1);
  w->AppendEntry("list", test::Views(frames), "[[1, 2], {\"k\": 1}]");
  w->Commit();
  try {
    w->UpdateMeta("list", R"({"a": 1})");
    BOOST_FAIL("UpdateMeta of a non-object meta must throw");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(std::string(e.what()).find("'list'") != std::string::npos, e.what());
  }
  w->SetMeta("list", R"({"a": 1})");
  w->Commit();
  BOOST_TEST(Meta(*ds, "list") == R"([{"a": 1}, {"k": 1}])");
}

BOOST_AUTO_TEST_CASE(a_batch_of_appends_removals_and_edits_is_all_or_nothing) {
  TempDir tmp;
  auto ds = MakeDataset(tmp, 4);
  auto w = ds->NewWriter();
  const auto frames = Frames(5);
  w->Append("added", test::Views(frames), "{}");
  w->Remove("v3");
  w->UpdateMeta("v0", R"({"label": "z"})");
  w->Rollback();
  BOOST_TEST(!ds->Contains("added"));
  BOOST_TEST(ds->Contains("v3"));
  BOOST_TEST(Meta(*ds, "v0") == R"([{"label": "l0", "duration": 0}])");
  w->Append("added", test::Views(frames), "{}");
  w->Remove("v3");
  w->UpdateMeta("v0", R"({"label": "z"})");
  // An edit of a video the batch then removes goes with it.
  w->UpdateMeta("v2", R"({"label": "gone"})");
  w->Remove("v2");
  w->Commit();
  BOOST_TEST(ds->Contains("added"));
  BOOST_TEST(!ds->Contains("v3"));
  BOOST_TEST(!ds->Contains("v2"));
  BOOST_TEST(Meta(*ds, "v0") == R"([{"label": "z", "duration": 0}])");
  BOOST_TEST(ds->Count() == 3u);
}

BOOST_AUTO_TEST_CASE(a_replacing_append_drops_an_earlier_edit_of_its_id) {
  TempDir tmp;
  auto ds = MakeDataset(tmp, 2);
  WriterOptions o;
  o.on_duplicate = OnDuplicate::kReplace;
  auto w = ds->NewWriter(o);
  w->UpdateMeta("v1", R"({"label": "edited"})");
  const auto frames = Frames(8);
  w->Append("v1", test::Views(frames), R"({"label": "appended"})");
  w->Commit();
  BOOST_TEST(Meta(*ds, "v1") == R"([{"label": "appended"}])");
}

BOOST_AUTO_TEST_CASE(meta_indexes_follow_an_edit_in_the_same_transaction) {
  TempDir tmp;
  auto ds = MakeDataset(tmp, 6);
  BOOST_TEST(ds->CreateMetaIndex("label"));
  BOOST_TEST(ds->CreateMetaIndex("duration"));
  {
    auto w = ds->NewWriter();
    w->UpdateMeta("v0", R"({"label": "new"})");
    w->UpdateMeta("v3", R"({"duration": 100})");
    w->SetMeta("v4", R"({"other": 1})");
    w->Commit();
  }
  BOOST_TEST(ds->Select("label = 'new'") == std::vector<std::string>{"v0"},
             boost::test_tools::per_element());
  BOOST_TEST(ds->Select("label = 'l0'") == std::vector<std::string>{"v3"},
             boost::test_tools::per_element());
  BOOST_TEST(ds->Select("duration >= 50") == std::vector<std::string>{"v3"},
             boost::test_tools::per_element());
  BOOST_TEST(ds->Select("label = 'l1'") == std::vector<std::string>{"v1"},
             boost::test_tools::per_element());
  const CheckReport report = Check(tmp.path());
  BOOST_TEST(report.healthy(), (report.problems.empty() ? "" : report.problems[0].what));
}

BOOST_AUTO_TEST_CASE(a_journaled_edit_is_replayed_by_the_first_open_after_a_reboot) {
  TempDir tmp;
  MakeDataset(tmp, 3).reset();
  test::RunAndKill([&](const std::function<void()>& crash_here) {
    auto ds = OpenRw(tmp.path());
    auto w = ds->NewWriter();
    w->UpdateMeta("v1", R"({"label": "after"})");
    w->Commit();  // a small batch: the journal's record
    w->SetMeta("v2", R"({"x": 1})");
    w->Remove("v0");
    w->Commit();
    crash_here();
  });
  ::setenv("GULPDB_TEST_BOOT_ID", "a-later-boot", 1);
  {
    auto ds = Dataset::Open(tmp.path());
    BOOST_TEST(Meta(*ds, "v1") == R"([{"label": "after", "duration": 1}])");
    BOOST_TEST(Meta(*ds, "v2") == R"([{"x": 1}])");
    BOOST_TEST(!ds->Contains("v0"));
  }
  ::unsetenv("GULPDB_TEST_BOOT_ID");
  const CheckReport report = Check(tmp.path());
  BOOST_TEST(report.healthy(), (report.problems.empty() ? "" : report.problems[0].what));
}

BOOST_AUTO_TEST_CASE(an_edit_counts_in_its_chunk_record) {
  TempDir tmp;
  auto ds = MakeDataset(tmp, 2);
  auto w = ds->NewWriter();
  w->UpdateMeta("v0", R"({"a": 1})");
  w->Commit();
  w->UpdateMeta("v1", R"({"a": 1})");
  w->UpdateMeta("v0", R"({"a": 2})");
  w->Commit();
  w.reset();
  const auto chunks = ds->Chunks();
  BOOST_REQUIRE(chunks.size() == 1u);
  BOOST_TEST(chunks[0].meta_edits == 3u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
