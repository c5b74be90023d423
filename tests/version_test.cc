// Versions (engine/version, docs/versions.md) through the C++ API: a tag
// reads as the dataset was after appends, meta edits, removes and a
// compaction (which keeps the chunk files the tag reads out of the GulpIO
// names); tags share unchanged objects; diff by content; deleting a tag
// frees its space only after the grace period; names from disk never leave
// gulpdb.versions.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/version/version_diff.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/maintenance.h"
#include "support/test_util.h"

namespace gulpdb {
namespace {

namespace fs = std::filesystem;
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

std::unique_ptr<Dataset> OpenVersion(const std::string& dir, const std::string& version) {
  OpenOptions o;
  o.version = version;
  return Dataset::Open(dir, o);
}

// v0..v<n-1>, 3 videos per chunk, meta {"label": "l<i % 3>"}.
void Make(const std::string& dir, int n) {
  CreateOptions c;
  c.videos_per_chunk = 3;
  auto ds = Dataset::Create(dir, c);
  auto w = ds->NewWriter();
  for (int i = 0; i < n; ++i) {
    const auto frames = Frames(i);
    w->Append("v" + std::to_string(i), test::Views(frames),
              "{\"label\": \"l" + std::to_string(i % 3) + "\"}");
  }
  w->Commit();
}

// Every id with its meta and frames' bytes, in order.
std::map<std::string, std::pair<std::string, std::vector<std::string>>> State(const Dataset& ds) {
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> out;
  for (const std::string& id : ds.Ids()) {
    const StoredFrames f = ds.ReadJpegs(id);
    std::vector<std::string> bytes;
    for (size_t i = 0; i < f.size(); ++i) bytes.emplace_back(f[i]);
    out[id] = {ds.Get(id).meta_data, bytes};
  }
  return out;
}

size_t Entries(const std::string& dir) {
  return fs::is_directory(dir) ? static_cast<size_t>(std::distance(fs::directory_iterator(dir),
                                                                   fs::directory_iterator()))
                               : 0;
}

BOOST_AUTO_TEST_SUITE(version_test)

BOOST_AUTO_TEST_CASE(a_tag_reads_as_tagged_after_edits_removes_and_a_compaction) {
  TempDir tmp;
  Make(tmp.path(), 9);
  auto ds = OpenRw(tmp.path());
  const auto tagged = State(*ds);
  const std::vector<std::string> ids = ds->Ids();
  const VersionInfo info = ds->Tag("t1", "first");
  BOOST_TEST(info.videos == 9u);
  BOOST_TEST(info.frames == 18u);
  {
    auto w = ds->NewWriter();
    const auto frames = Frames(40);
    w->Append("new", test::Views(frames), "{}");
    w->UpdateMeta("v1", "{\"label\": \"fox\"}");
    w->Remove("v0");
    w->Remove("v2");
    w->Commit();
  }
  Compact(*ds);
  // Chunk 0 lost all its videos to the compaction: its data file left the
  // dataset directory for gulpdb.versions/chunks (a GulpIO directory keeps
  // matching data and meta lists), and the tag still reads it.
  BOOST_TEST(!fs::exists(tmp.path() + "/data_0.gulp"));
  BOOST_TEST(fs::exists(tmp.path() + "/gulpdb.versions/chunks/data_0.gulp"));
  BOOST_TEST(ds->VersionBytes() > 0u);
  auto v = OpenVersion(tmp.path(), "t1");
  BOOST_TEST(v->read_only());
  BOOST_TEST(v->Ids() == ids, boost::test_tools::per_element());
  BOOST_TEST((State(*v) == tagged));
  BOOST_TEST(v->Select("label = 'fox'").empty());
  CheckOptions check;
  check.version = "t1";  // the frames are fake JPEGs: no --deep decoding
  BOOST_TEST(Check(tmp.path(), check).healthy());
  const VersionDiff d = ds->Diff("t1", "HEAD");
  BOOST_TEST(d.added == std::vector<std::string>{"new"}, boost::test_tools::per_element());
  BOOST_TEST((d.removed == std::vector<std::string>{"v0", "v2"}));
  BOOST_TEST(d.meta_changed == std::vector<std::string>{"v1"}, boost::test_tools::per_element());
  BOOST_TEST(d.frames_changed.empty());  // v1 moved to another chunk: same frames
}

BOOST_AUTO_TEST_CASE(tags_share_unchanged_objects) {
  TempDir tmp;
  Make(tmp.path(), 30);
  auto ds = OpenRw(tmp.path());
  const std::string objects = tmp.path() + "/gulpdb.versions/objects";
  ds->Tag("a");
  const size_t first = Entries(objects);
  BOOST_TEST(first > 1u);
  ds->Tag("b");  // nothing changed: only a new root (its generation is the next)
  BOOST_TEST(Entries(objects) == first + 1);
  BOOST_TEST(ds->Versions().size() == 2u);
}

BOOST_AUTO_TEST_CASE(bad_names_and_unknown_versions_are_refused) {
  TempDir tmp;
  Make(tmp.path(), 2);
  auto ds = OpenRw(tmp.path());
  for (const std::string& bad :
       std::vector<std::string>{"", "a/b", "..", ".", "HEAD", "a b", std::string(256, 'x')}) {
    BOOST_CHECK_THROW(ds->Tag(bad), InvalidArgumentError);
  }
  ds->Tag(std::string(255, 'x'));
  BOOST_CHECK_THROW(ds->Tag(std::string(255, 'x')), InvalidArgumentError);
  BOOST_CHECK_THROW(OpenVersion(tmp.path(), "nope"), NameNotFoundError);
  BOOST_CHECK_THROW(ds->Diff("nope", "HEAD"), NameNotFoundError);
  BOOST_CHECK_THROW(ds->DeleteTag("nope"), NameNotFoundError);
  auto ro = Dataset::Open(tmp.path());
  BOOST_CHECK_THROW(ro->Tag("y"), InvalidArgumentError);
  OpenOptions rw;
  rw.read_only = false;
  rw.version = std::string(255, 'x');
  BOOST_CHECK_THROW(Dataset::Open(tmp.path(), rw), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(a_deleted_tag_is_freed_only_after_its_grace_period) {
  TempDir tmp;
  Make(tmp.path(), 6);
  auto ds = OpenRw(tmp.path());
  ds->Tag("t");
  {
    auto w = ds->NewWriter();
    for (int i = 0; i < 6; ++i) w->Remove("v" + std::to_string(i));
    w->Commit();
  }
  Compact(*ds);
  const std::string kept = tmp.path() + "/gulpdb.versions/chunks";
  BOOST_TEST(Entries(kept) == 2u);
  auto reader = OpenVersion(tmp.path(), "t");
  ds->DeleteTag("t", std::chrono::seconds(3600));
  BOOST_CHECK_THROW(OpenVersion(tmp.path(), "t"), NameNotFoundError);
  BOOST_TEST(ds->ReclaimVersions() == 0u);
  BOOST_TEST(reader->Ids().size() == 6u);
  BOOST_TEST(reader->ReadJpegs("v5").size() == 2u);  // from a kept chunk
  BOOST_TEST(Entries(kept) == 2u);
  ds->Tag("u");
  ds->DeleteTag("u", std::chrono::seconds(0));
  BOOST_TEST(Entries(kept) == 2u);  // "t" is still in its grace period
}

BOOST_AUTO_TEST_CASE(a_root_name_from_a_tag_file_never_becomes_a_path_outside) {
  TempDir tmp;
  Make(tmp.path(), 2);
  auto ds = OpenRw(tmp.path());
  const VersionInfo t = ds->Tag("t");
  const std::string tags = tmp.path() + "/gulpdb.versions/tags";
  const std::string file = tags + "/" + fs::directory_iterator(tags)->path().filename().string();
  std::string text = test::ReadFile(file);
  text.replace(text.find(t.root), t.root.size(), "../../../../../../../../etc/passwd");
  test::WriteFile(file, text);
  try {
    OpenVersion(tmp.path(), "t");
    BOOST_FAIL("a root outside objects/ was opened");
  } catch (const CorruptionError& e) {
    BOOST_TEST(test::Contains(e.what(), file));
  }
  BOOST_CHECK_THROW(ds->Versions(), CorruptionError);
}

BOOST_AUTO_TEST_CASE(a_diff_of_tags_after_meta_edits_reads_their_record_deltas_alone) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  {
    auto ds = Dataset::Create(dir);
    auto w = ds->NewWriter();
    const std::vector<std::string> frames = Frames(0);
    for (int i = 0; i < 6000; ++i) {
      w->Append("v" + std::to_string(i), test::Views(frames),
                "{\"label\": \"l" + std::to_string(i % 7) + "\", \"pad\": \"" +
                    std::string(200, 'x') + "\"}");
    }
    w->Commit();
  }
  auto ds = OpenRw(dir);
  ds->Tag("a");
  const auto edit = [&](int from, int step, const std::string& label) {
    std::vector<std::string> ids;
    auto w = ds->NewWriter();
    for (int i = from; i < 6000; i += step) {
      w->UpdateMeta("v" + std::to_string(i), "{\"label\": \"" + label + "\"}");
      ids.push_back("v" + std::to_string(i));
    }
    w->Commit();
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  const std::vector<std::string> first = edit(5, 100, "fixed");
  {
    // Meta set to what it is: no change.
    auto w = ds->NewWriter();
    w->SetMeta("v1", ds->Get("v1").meta_data.substr(1, ds->Get("v1").meta_data.size() - 2));
    w->Commit();
  }
  ds->Tag("b");
  const std::vector<std::string> second = edit(5, 200, "twice");  // a subset of the first
  const std::vector<std::string> third = edit(77, 300, "other");
  ds->Tag("c");
  const uint64_t tag_bytes = ds->VersionBytes();

  const auto diff = [&](const std::string& a, const std::string& b, engine::DiffCost* cost) {
    return engine::DiffVersions(*ds, a, b, cost);
  };
  engine::DiffCost cost;
  VersionDiff d = diff("a", "b", &cost);
  BOOST_CHECK(cost.by_record_deltas);
  BOOST_CHECK(d.meta_changed == first);
  BOOST_CHECK(d.added.empty() && d.removed.empty() && d.frames_changed.empty());
  BOOST_CHECK_LT(cost.bytes * 10, tag_bytes);
  std::vector<std::string> b_to_c = second;
  b_to_c.insert(b_to_c.end(), third.begin(), third.end());
  std::sort(b_to_c.begin(), b_to_c.end());
  b_to_c.erase(std::unique(b_to_c.begin(), b_to_c.end()), b_to_c.end());
  d = diff("b", "c", &cost);
  BOOST_CHECK(cost.by_record_deltas);
  BOOST_CHECK(d.meta_changed == b_to_c);
  d = diff("c", "b", &cost);
  BOOST_CHECK(d.meta_changed == b_to_c);
  std::vector<std::string> a_to_c = first;
  a_to_c.insert(a_to_c.end(), third.begin(), third.end());
  std::sort(a_to_c.begin(), a_to_c.end());
  a_to_c.erase(std::unique(a_to_c.begin(), a_to_c.end()), a_to_c.end());
  d = diff("a", "c", &cost);
  BOOST_CHECK(cost.by_record_deltas);
  BOOST_CHECK(d.meta_changed == a_to_c);
  // The walk of both order tables says the same.
  BOOST_CHECK(diff("a", "HEAD", &cost).meta_changed == a_to_c);
  BOOST_CHECK(!cost.by_record_deltas);

  // An append moves no record, but the order table is another: a walk.
  {
    auto w = ds->NewWriter();
    const std::vector<std::string> frames = Frames(1);
    w->Append("new", test::Views(frames), "{}");
    w->UpdateMeta("v9", "{\"label\": \"late\"}");
    w->Commit();
  }
  ds->Tag("d");
  d = diff("c", "d", &cost);
  BOOST_CHECK(!cost.by_record_deltas);
  BOOST_CHECK(d.added == std::vector<std::string>{"new"});
  BOOST_CHECK(d.meta_changed == std::vector<std::string>{"v9"});
  auto version = OpenVersion(dir, "c");
  BOOST_CHECK(version->Get("v5").meta_data == ds->Get("v5").meta_data);
  BOOST_CHECK(version->Get("v9").meta_data != ds->Get("v9").meta_data);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
