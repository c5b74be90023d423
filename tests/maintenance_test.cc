// Compaction and merging: what they keep, what they reclaim, and that a
// crash at any moment of a compaction leaves a healthy dataset.
#include "gulpdb/maintenance.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <map>
#include <tuple>

#include "engine/core/dataset_impl.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "support/test_util.h"
#include "util/file_io.h"

namespace gulpdb {
namespace {

namespace fs = std::filesystem;
using test::FakeJpeg;
using test::TempDir;

using Contents = std::map<std::string, std::pair<std::vector<std::string>, std::string>>;

// Every video's frames and meta.
Contents Snapshot(const Dataset& ds) {
  Contents out;
  ds.ForEach([&](const VideoInfo& v) {
    const StoredFrames jpegs = ds.ReadJpegs(v.id);
    std::vector<std::string> frames;
    for (size_t i = 0; i < jpegs.size(); ++i) frames.emplace_back(jpegs[i]);
    out[v.id] = {frames, v.meta_data};
    return true;
  });
  return out;
}

std::unique_ptr<Dataset> Filled(const std::string& dir, int videos, uint32_t per_chunk) {
  CreateOptions c;
  c.videos_per_chunk = per_chunk;
  auto ds = Dataset::Create(dir, c);
  auto w = ds->NewWriter();
  for (int i = 0; i < videos; ++i) {
    std::vector<std::string> frames;
    for (uint32_t f = 0; f < 3; ++f)
      frames.push_back(FakeJpeg(40 + static_cast<size_t>(i) + f, static_cast<uint32_t>(i) * 7 + f));
    w->Append("v" + std::to_string(i), test::Views(frames), "{\"i\": " + std::to_string(i) + "}");
  }
  w->Commit();
  return ds;
}

BOOST_AUTO_TEST_SUITE(maintenance_test)

BOOST_AUTO_TEST_CASE(compact_reclaims_garbage_and_keeps_every_video) {
  TempDir tmp;
  auto ds = Filled(tmp / "d", 12, 4);
  ds->Remove({"v0", "v1", "v5", "v6", "v7"});
  {
    WriterOptions replace;
    replace.on_duplicate = OnDuplicate::kReplace;
    auto w = ds->NewWriter(replace);
    w->Append("v9", {FakeJpeg(99, 1)}, "{\"replaced\": true}");
    w->Commit();
  }
  const Contents before = Snapshot(*ds);
  const DatasetStats stats_before = ds->Stats();
  BOOST_TEST(stats_before.garbage_bytes > 0u);

  const CompactReport report = Compact(*ds);
  BOOST_TEST(report.chunks_rewritten == 3u);  // chunks 0, 1 and 2 all had garbage
  BOOST_TEST(report.bytes_reclaimed == stats_before.garbage_bytes);
  const DatasetStats after = ds->Stats();
  BOOST_TEST(after.garbage_bytes == 0u);
  BOOST_TEST(after.videos == stats_before.videos);
  BOOST_TEST(after.frames == stats_before.frames);
  BOOST_TEST((Snapshot(*ds) == before));
  for (const std::string& name : report.files_removed) BOOST_TEST(!fs::exists(tmp / ("d/" + name)));
  BOOST_TEST(!fs::exists(tmp / "d/data_0.gulp"));
  CheckOptions deep;
  deep.deep = false;
  const CheckReport check = Check(tmp / "d", deep);
  for (const auto& p : check.problems) BOOST_ERROR(p.where << ": " << p.what);
  BOOST_TEST(!ds->Get("v2").checksums.empty());
  // Nothing left to do the second time.
  BOOST_TEST(Compact(*ds).chunks_rewritten == 0u);
}

// Compaction copies frames under new checksums, so it must not launder a
// damaged frame: it stops with an error naming the id and leaves every
// committed video where it was.
BOOST_AUTO_TEST_CASE(compact_refuses_to_copy_a_damaged_frame) {
  TempDir tmp;
  auto ds = Filled(tmp / "d", 4, 4);
  ds->Remove({"v0"});
  const VideoInfo victim = ds->Get("v2");
  const std::string chunk = tmp / ("d/" + ds->Chunks()[victim.chunk].file_name);
  std::string bytes = test::ReadFile(chunk);
  bytes[victim.frames[1].offset + 5] = static_cast<char>(bytes[victim.frames[1].offset + 5] ^ 0x40);
  test::WriteFile(chunk, bytes);
  try {
    Compact(*ds);
    BOOST_ERROR("compacting over a damaged frame should fail");
  } catch (const CorruptionError& e) {
    BOOST_TEST_INFO("message: " << e.what());
    BOOST_TEST(std::string(e.what()).find("'v2' frame 1") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find("checksum mismatch") != std::string::npos);
  }
  BOOST_TEST(ds->Get("v2").chunk == victim.chunk);
  BOOST_TEST(ds->Get("v2").frames[1].offset == victim.frames[1].offset);
  BOOST_TEST(ds->Count() == 3u);
}

// The obsolete-file list comes from the index; a damaged entry pointing
// outside the dataset must stop recovery, not delete someone else's file.
BOOST_AUTO_TEST_CASE(obsolete_files_outside_the_dataset_are_never_deleted) {
  TempDir tmp;
  auto ds = Filled(tmp / "d", 2, 4);
  for (const std::string name : {"../victim", "/tmp/../victim", "a/../../victim", ".."}) {
    test::WriteFile(tmp / "victim", "keep me");
    engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
    impl.env->Update([&](index::Txn& txn) {
      index::DatasetInfo info = impl.GetInfo(txn);
      info.obsolete_files = {name};
      txn.Put(impl.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
    BOOST_TEST_CONTEXT("name " << name) {
      try {
        ds->NewWriter();
        BOOST_ERROR("recovery should refuse the name");
      } catch (const CorruptionError& e) {
        BOOST_TEST(std::string(e.what()).find("not inside the dataset") != std::string::npos);
      }
      BOOST_TEST(test::ReadFile(tmp / "victim") == "keep me");
    }
  }
}

// Compaction lists the files of the chunks it empties as obsolete, taking
// their names from the index: a damaged chunk name pointing outside the
// dataset must stop it before anything moves, not delete someone else's file.
BOOST_AUTO_TEST_CASE(compaction_never_deletes_a_chunk_file_named_outside_the_dataset) {
  TempDir tmp;
  auto ds = Filled(tmp / "d", 12, 4);  // chunks 0, 1, 2
  ds->Remove({"v0"});                  // garbage in chunk 0
  engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
  const Contents before = Snapshot(*Dataset::Open(tmp / "d"));  // (its own open chunk files)
  const auto name_chunk_0 = [&](const std::string& name) {
    impl.env->Update([&](index::Txn& txn) {
      index::ChunkRecord record = impl.GetChunk(txn, 0);
      record.file_name = name;
      impl.PutChunk(txn, 0, record);
    });
  };
  // The chunk record now names ../victim, and the file is there.
  fs::rename(tmp / "d/data_0.gulp", tmp / "victim");
  name_chunk_0("../victim");
  const std::string victim = test::ReadFile(tmp / "victim");
  // Readers never open it either (util/relative_name.h).
  BOOST_CHECK_THROW(Snapshot(*Dataset::Open(tmp / "d")), CorruptionError);
  try {
    Compact(*ds);
    BOOST_ERROR("compaction accepted a chunk file outside the dataset");
  } catch (const CorruptionError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("'../victim'") != std::string::npos, what);
    BOOST_TEST(what.find("not inside the dataset") != std::string::npos, what);
  }
  BOOST_REQUIRE(fs::exists(tmp / "victim"));
  BOOST_TEST(test::ReadFile(tmp / "victim") == victim);
  // Nothing else changed: with the record and the file put back, every read is as before.
  fs::rename(tmp / "victim", tmp / "d/data_0.gulp");
  name_chunk_0("data_0.gulp");
  BOOST_TEST(Snapshot(*Dataset::Open(tmp / "d")) == before);
}

BOOST_AUTO_TEST_CASE(compact_keeps_gulpio_meta_lists_of_imported_data) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(test::FixturesDir() + "/gulpio2_edge_cases")) {
    fs::copy_file(e.path(), dir + "/" + e.path().filename().string());
    fs::permissions(dir + "/" + e.path().filename().string(), fs::perms::owner_write,
                    fs::perm_options::add);
  }
  ImportGulpio(dir);
  OpenOptions rw;
  rw.read_only = false;
  auto ds = Dataset::Open(dir, rw);
  const std::string dup_meta = ds->Get("dup").meta_data;
  ds->Remove({"42"});
  const Contents before = Snapshot(*ds);
  Compact(*ds);
  BOOST_TEST((Snapshot(*ds) == before));
  BOOST_TEST(ds->Get("dup").meta_data == dup_meta);
  BOOST_TEST(!fs::exists(dir + "/data_0.gulp"));
  BOOST_TEST(!fs::exists(dir + "/meta_0.gmeta"));  // it described the removed file
  BOOST_TEST(fs::exists(dir + "/data_1.gulp"));    // no garbage there: untouched
  BOOST_TEST(Check(dir).healthy());
  ExportGmeta(*ds);
  BOOST_TEST(Check(dir).healthy());
}

// A dataset gulpdb wrote and exported in place has meta_N.gmeta beside each
// data_N.gulp; compacting chunk N removes both, so GulpIO readers never meet
// a .gmeta without its data file.
BOOST_AUTO_TEST_CASE(compact_removes_the_exported_gmeta_of_a_removed_chunk) {
  TempDir tmp;
  auto ds = Filled(tmp / "d", 8, 4);
  ExportGmeta(*ds);
  BOOST_TEST(fs::exists(tmp / "d/meta_0.gmeta"));
  ds->Remove({"v0", "v1"});
  const Contents before = Snapshot(*ds);
  const CompactReport report = Compact(*ds);
  BOOST_TEST(report.chunks_rewritten == 1u);
  BOOST_TEST(!fs::exists(tmp / "d/data_0.gulp"));
  BOOST_TEST(!fs::exists(tmp / "d/meta_0.gmeta"));
  BOOST_TEST(fs::exists(tmp / "d/meta_1.gmeta"));  // chunk 1 had no garbage
  BOOST_TEST((Snapshot(*ds) == before));
  BOOST_TEST(Check(tmp / "d").healthy());
}

// A compaction killed at many different moments: the dataset always opens,
// checks healthy and holds every video with its bytes.
BOOST_AUTO_TEST_CASE(compact_killed_at_any_moment_leaves_a_healthy_dataset) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  Contents expected;
  {
    auto ds = Filled(dir, 120, 10);
    std::vector<std::string> drop;
    for (int i = 0; i < 120; i += 2) drop.push_back("v" + std::to_string(i));
    ds->Remove(drop);
    expected = Snapshot(*ds);
  }
  for (int delay_us : {200, 1000, 3000, 6000, 10000, 20000, 40000}) {
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
      try {
        OpenOptions rw;
        rw.read_only = false;
        auto ds = Dataset::Open(dir, rw);
        Compact(*ds);
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    ::usleep(static_cast<useconds_t>(delay_us));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    BOOST_TEST_CONTEXT("killed after " << delay_us << " us") {
      BOOST_TEST(!(WIFEXITED(status) && WEXITSTATUS(status) == 3));
      const CheckReport check = Check(dir);
      for (const auto& p : check.problems) BOOST_ERROR(p.where << ": " << p.what);
      BOOST_TEST((Snapshot(*Dataset::Open(dir)) == expected));
    }
  }
  // A last, uninterrupted run finishes the job.
  OpenOptions rw;
  rw.read_only = false;
  auto ds = Dataset::Open(dir, rw);
  Compact(*ds);
  BOOST_TEST(ds->Stats().garbage_bytes == 0u);
  BOOST_TEST((Snapshot(*ds) == expected));
  BOOST_TEST(Check(dir).healthy());
}

BOOST_AUTO_TEST_CASE(merge_attaches_inner_shards_and_copies_outer_ones) {
  TempDir tmp;
  const std::string out = tmp / "out";
  fs::create_directories(out + "/shards");
  Filled(out + "/shards/a", 7, 3).reset();
  {
    auto b = Dataset::Create(tmp / "b");
    auto w = b->NewWriter();
    w->Append("b0", {FakeJpeg(30, 1)}, "{}");
    w->Append("b1", {FakeJpeg(31, 2), FakeJpeg(32, 3)}, "{\"x\": 1}");
    w->Commit();
  }
  const Contents a = Snapshot(*Dataset::Open(out + "/shards/a"));
  const Contents b = Snapshot(*Dataset::Open(tmp / "b"));
  const MergeReport report = Merge(out, {out + "/shards/a", tmp / "b"});
  BOOST_TEST(report.shards == 2u);
  BOOST_TEST(report.chunks_attached == 3u);
  BOOST_TEST(report.videos_copied == 2u);
  BOOST_TEST(report.videos == 9u);
  auto ds = Dataset::Open(out);
  Contents merged = Snapshot(*ds);
  Contents want = a;
  want.insert(b.begin(), b.end());
  BOOST_TEST((merged == want));
  // The attached chunks are the shard's own files: nothing was copied for them.
  BOOST_TEST(ds->Chunks().at(0).file_name == "shards/a/data_0.gulp");
  BOOST_TEST(Check(out).healthy());

  // Running it again: duplicates are an error by default, skipped on request.
  BOOST_CHECK_THROW(Merge(out, {tmp / "b"}), InvalidArgumentError);
  MergeOptions skip;
  skip.on_duplicate = OnDuplicate::kSkip;
  const MergeReport again = Merge(out, {out + "/shards/a", tmp / "b"}, skip);
  BOOST_TEST(again.videos == 0u);
  BOOST_TEST(Dataset::Open(out)->Count() == 9u);

  // New appends go to the output's own chunk, not into a shard's file.
  OpenOptions rw;
  rw.read_only = false;
  auto writable = Dataset::Open(out, rw);
  auto w = writable->NewWriter();
  w->Append("new", {FakeJpeg(20, 5)}, "{}");
  w->Commit();
  const uint32_t chunk = writable->Get("new").chunk;
  for (const ChunkInfo& c : writable->Chunks()) {
    if (c.number == chunk) BOOST_TEST(c.file_name.find('/') == std::string::npos);
  }
  BOOST_TEST(Check(out).healthy());
  BOOST_CHECK_THROW(Merge(out, {out}), InvalidArgumentError);
}

// A shard ingested on its own: videos with GulpIO's {"id", "label", "idx"}
// meta and, when `write_map`, a label2idx.json of `labels` (label, idx).
void LabeledShard(const std::string& dir,
                  const std::vector<std::tuple<std::string, std::string, int>>& videos,
                  const std::vector<std::pair<std::string, int>>& labels, bool write_map = true) {
  auto ds = Dataset::Create(dir);
  auto w = ds->NewWriter();
  uint32_t seed = 0;
  for (const auto& [id, label, idx] : videos) {
    w->Append(id, {FakeJpeg(30 + seed, seed)},
              "{\"id\": \"" + id + "\", \"note\": [1.50, \"x\"], \"label\": \"" + label +
                  "\", \"idx\": " + std::to_string(idx) + "}");
    ++seed;
  }
  w->Commit();
  if (!write_map) return;
  std::string json = "{";
  for (const auto& [label, idx] : labels) {
    json += (json.size() > 1 ? ", " : "") + ("\"" + label + "\": " + std::to_string(idx));
  }
  test::WriteFile(dir + "/label2idx.json", json + "}");
}

std::string MetaOf(const std::string& id, const std::string& label, int idx) {
  return "[{\"id\": \"" + id + "\", \"note\": [1.50, \"x\"], \"label\": \"" + label +
         "\", \"idx\": " + std::to_string(idx) + "}]";
}

// Shards with different label lists: one label map for the output, and every
// merged video's idx rewritten to it, on both merge paths.
BOOST_AUTO_TEST_CASE(merge_builds_one_label_map_and_rewrites_idx) {
  for (const bool inside : {true, false}) {
    BOOST_TEST_CONTEXT((inside ? "attached" : "copied")) {
      TempDir tmp;
      const std::string out = tmp / "out";
      const std::string root = inside ? out + "/shards" : tmp / "shards";
      fs::create_directories(root);
      LabeledShard(root + "/a", {{"a0", "cat", 0}, {"a1", "dog", 1}}, {{"cat", 0}, {"dog", 1}});
      LabeledShard(root + "/b", {{"b0", "bird", 0}, {"b1", "cat", 1}}, {{"bird", 0}, {"cat", 1}});
      Merge(out, {root + "/a", root + "/b"});
      BOOST_TEST(test::ReadFile(out + "/label2idx.json") ==
                 "{\"bird\": 0, \"cat\": 1, \"dog\": 2}");
      auto ds = Dataset::Open(out);
      BOOST_TEST(ds->Get("a0").meta_data == MetaOf("a0", "cat", 1));
      BOOST_TEST(ds->Get("a1").meta_data == MetaOf("a1", "dog", 2));
      BOOST_TEST(ds->Get("b0").meta_data == MetaOf("b0", "bird", 0));
      BOOST_TEST(ds->Get("b1").meta_data == MetaOf("b1", "cat", 1));
      BOOST_TEST(Check(out).healthy());
      // The shards keep their own meta.
      BOOST_TEST(Dataset::Open(root + "/a")->Get("a0").meta_data == MetaOf("a0", "cat", 0));

      // A later merge keeps the output's indices and numbers new labels after them.
      LabeledShard(root + "/c", {{"c0", "ant", 0}, {"c1", "dog", 1}}, {{"ant", 0}, {"dog", 1}});
      Merge(out, {root + "/c"});
      BOOST_TEST(test::ReadFile(out + "/label2idx.json") ==
                 "{\"bird\": 0, \"cat\": 1, \"dog\": 2, \"ant\": 3}");
      ds = Dataset::Open(out);
      BOOST_TEST(ds->Get("c0").meta_data == MetaOf("c0", "ant", 3));
      BOOST_TEST(ds->Get("c1").meta_data == MetaOf("c1", "dog", 2));
      BOOST_TEST(ds->Get("a1").meta_data == MetaOf("a1", "dog", 2));
    }
  }
}

// Shards that share one label map (a distributed ingest): nothing is rewritten.
BOOST_AUTO_TEST_CASE(merge_of_shards_sharing_a_label_map_keeps_meta_as_it_is) {
  TempDir tmp;
  const std::string out = tmp / "out";
  fs::create_directories(out + "/s");
  const std::vector<std::pair<std::string, int>> map = {{"cat", 0}, {"dog", 1}, {"eel", 2}};
  LabeledShard(out + "/s/0", {{"x0", "dog", 1}}, map);
  LabeledShard(out + "/s/1", {{"x1", "eel", 2}, {"x2", "cat", 0}}, map);
  Merge(out, {out + "/s/0", out + "/s/1"});
  BOOST_TEST(test::ReadFile(out + "/label2idx.json") ==
             test::ReadFile(out + "/s/0/label2idx.json"));
  auto ds = Dataset::Open(out);
  BOOST_TEST(ds->Get("x0").meta_data == MetaOf("x0", "dog", 1));
  BOOST_TEST(ds->Get("x2").meta_data == MetaOf("x2", "cat", 0));
}

// Inconsistent label input is refused before anything is written, with every
// conflict listed; datasets without labels merge without a map.
BOOST_AUTO_TEST_CASE(merge_refuses_conflicting_labels_and_ignores_unlabeled_data) {
  TempDir tmp;
  // Videos that disagree with their own shard's label2idx.json.
  LabeledShard(tmp / "bad", {{"v0", "cat", 0}, {"v1", "dog", 5}}, {{"cat", 0}, {"dog", 1}});
  // A shard without a map whose videos give one label two indices.
  LabeledShard(tmp / "bad2", {{"w0", "cat", 0}, {"w1", "cat", 1}}, {}, false);
  LabeledShard(tmp / "good", {{"g0", "cat", 0}}, {{"cat", 0}});
  for (const std::string& shard : {tmp / "bad", tmp / "bad2"}) {
    BOOST_TEST_CONTEXT(shard) {
      const std::string out = tmp / "out";
      try {
        Merge(out, {tmp / "good", shard});
        BOOST_ERROR("merge should refuse inconsistent labels");
      } catch (const InvalidArgumentError& e) {
        const std::string what = e.what();
        BOOST_TEST(what.find(shard) != std::string::npos, what);
        BOOST_TEST(what.find(shard == tmp / "bad" ? "'v1'" : "'w1'") != std::string::npos, what);
      }
      BOOST_TEST(!fs::exists(out));
    }
  }
  Filled(tmp / "plain_a", 2, 4).reset();
  Filled(tmp / "plain_b", 0, 4).reset();
  { auto b = Dataset::Open(tmp / "plain_b"); }
  Merge(tmp / "plain_out", {tmp / "plain_a"});
  BOOST_TEST(!fs::exists(tmp / "plain_out/label2idx.json"));
  BOOST_TEST(Dataset::Open(tmp / "plain_out")->Count() == 2u);
}

// Merge checks every shard before it creates or changes the output.
BOOST_AUTO_TEST_CASE(merge_validates_every_shard_before_touching_the_output) {
  TempDir tmp;
  Filled(tmp / "a", 3, 4).reset();
  fs::create_directories(tmp / "not_a_dataset");
  for (const std::string& bad : {tmp / "missing", tmp / "not_a_dataset"}) {
    BOOST_TEST_CONTEXT(bad) {
      try {
        Merge(tmp / "out", {tmp / "a", bad});
        BOOST_ERROR("merge with a bad shard should fail");
      } catch (const NotFoundError& e) {
        BOOST_TEST(std::string(e.what()).find(bad) != std::string::npos, e.what());
      }
      BOOST_TEST(!fs::exists(tmp / "out"));
    }
  }
  // An existing output is left as it was, too.
  Filled(tmp / "out2", 1, 4).reset();
  BOOST_CHECK_THROW(Merge(tmp / "out2", {tmp / "a", tmp / "missing"}), NotFoundError);
  BOOST_TEST(Dataset::Open(tmp / "out2")->Count() == 1u);
}

// Compaction of a merged output copies the live videos out of attached
// chunks and never deletes the shard's files; the shard refuses writers of
// its own but can still be read.
BOOST_AUTO_TEST_CASE(compact_after_in_place_merge_keeps_the_shards_files) {
  TempDir tmp;
  const std::string out = tmp / "out";
  const std::string shard = out + "/shards/a";
  fs::create_directories(out + "/shards");
  Filled(shard, 8, 3).reset();
  const Contents shard_before = Snapshot(*Dataset::Open(shard));
  std::vector<std::string> shard_files = util::ListDirectory(shard);
  Merge(out, {shard});
  OpenOptions rw;
  rw.read_only = false;
  {
    auto ds = Dataset::Open(out, rw);
    ds->Remove({"v0", "v4"});
    const Contents before = Snapshot(*ds);
    const CompactReport report = Compact(*ds);
    BOOST_TEST(report.chunks_rewritten == 2u);
    BOOST_TEST(report.files_removed.empty());
    BOOST_TEST((Snapshot(*ds) == before));
    for (const ChunkInfo& c : ds->Chunks()) {
      BOOST_TEST(c.file_name.find("data_0.gulp") == std::string::npos, c.file_name);
    }
  }
  BOOST_TEST(Check(out).healthy());
  BOOST_TEST(util::ListDirectory(shard) == shard_files, boost::test_tools::per_element());
  BOOST_TEST(Check(shard).healthy());
  BOOST_TEST((Snapshot(*Dataset::Open(shard)) == shard_before));

  // The shard's own writers are refused, naming the output.
  auto s = Dataset::Open(shard, rw);
  const auto names_out = [&](const InvalidArgumentError& e) {
    return std::string(e.what()).find("attached to " + fs::canonical(out).string()) !=
           std::string::npos;
  };
  BOOST_CHECK_EXCEPTION(s->NewWriter(), InvalidArgumentError, names_out);
  BOOST_CHECK_EXCEPTION(s->Remove({"v1"}), InvalidArgumentError, names_out);
  BOOST_CHECK_EXCEPTION(Compact(*s), InvalidArgumentError, names_out);
  Filled(tmp / "other", 1, 4).reset();
  BOOST_CHECK_EXCEPTION(Merge(shard, {tmp / "other"}), InvalidArgumentError, names_out);
  BOOST_TEST(s->Count() == 8u);

  // A shard the output refuses (a duplicate id) stays its own.
  {
    auto dup = Dataset::Create(out + "/shards/dup");
    auto w = dup->NewWriter();
    w->Append("v2", {FakeJpeg(50, 9)}, "{}");
    w->Commit();
  }
  BOOST_CHECK_THROW(Merge(out, {out + "/shards/dup"}), InvalidArgumentError);
  Dataset::Open(out + "/shards/dup", rw)->Remove({"v2"});

  // Re-running the merge attaches nothing twice.
  const MergeReport again = Merge(out, {shard});
  BOOST_TEST(again.chunks_attached == 0u);
  BOOST_TEST(Dataset::Open(out)->Count() == 6u);
  BOOST_TEST(Check(out).healthy());
}

// An output merged before chunk owners were recorded: its attached chunks
// are known by the '/' in their names, and compaction keeps their files too.
BOOST_AUTO_TEST_CASE(compact_keeps_files_of_shards_attached_before_owners_were_recorded) {
  TempDir tmp;
  const std::string out = tmp / "out";
  const std::string shard = out + "/shards/a";
  fs::create_directories(out + "/shards");
  Filled(shard, 6, 3).reset();
  Merge(out, {shard});
  OpenOptions rw;
  rw.read_only = false;
  {
    // Strip what this version records, as the previous one wrote the indexes.
    auto ds = Dataset::Open(out, rw);
    engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
    impl.env->Update([&](index::Txn& txn) {
      for (const ChunkInfo& c : ds->Chunks()) {
        index::ChunkRecord r = impl.GetChunk(txn, c.number);
        r.owner.clear();
        impl.PutChunk(txn, c.number, r);
      }
      txn.Del(impl.info, std::string(index::kAttachedShardKeyPrefix) + "shards/a");
    });
    auto s = Dataset::Open(shard, rw);
    engine::DatasetImpl& si = engine::DatasetAccess::Of(*s);
    si.env->Update([&](index::Txn& txn) {
      index::DatasetInfo info = si.GetInfo(txn);
      info.attached_to.clear();
      txn.Put(si.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
  }
  const std::vector<std::string> shard_files = util::ListDirectory(shard);
  auto ds = Dataset::Open(out, rw);
  for (const ChunkInfo& c : ds->Chunks()) BOOST_TEST(c.owner.empty());
  ds->Remove({"v0"});
  const Contents before = Snapshot(*ds);
  BOOST_TEST(Compact(*ds).files_removed.empty());
  BOOST_TEST((Snapshot(*ds) == before));
  BOOST_TEST(util::ListDirectory(shard) == shard_files, boost::test_tools::per_element());
  BOOST_TEST(Check(shard).healthy());
  BOOST_TEST(Check(out).healthy());
}

// ---- Removing every video of the newest chunk, then compacting ----------------

// The chunk numbers the index holds.
std::vector<uint32_t> ChunkNumbers(const Dataset& ds) {
  std::vector<uint32_t> out;
  for (const ChunkInfo& c : ds.Chunks()) out.push_back(c.number);
  return out;
}

std::unique_ptr<Dataset> OpenRw(const std::string& dir) {
  OpenOptions o;
  o.read_only = false;
  return Dataset::Open(dir, o);
}

// Every kind of write a user makes, each in its own writer, as the CLI runs
// them: append (ingest), remove, compact, split, meta index, merge into it.
void WriteEveryWay(const std::string& dir, const std::string& tag) {
  const std::vector<std::string> frames = {FakeJpeg(50, 1), FakeJpeg(51, 2)};
  {
    auto ds = OpenRw(dir);
    auto w = ds->NewWriter();
    w->Append(tag + "_a", test::Views(frames), "{\"i\": 100}");
    w->Append(tag + "_b", test::Views(frames), "{\"i\": 101}");
    w->Commit();
  }
  OpenRw(dir)->Remove({tag + "_b"});
  {
    auto ds = OpenRw(dir);
    Compact(*ds);
    {
      auto w = ds->NewWriter();
      w->SetSplit(tag, {tag + "_a"});
      w->Commit();
    }
    ds->CreateMetaIndex("i");
  }
  TempDir other;
  Filled(other / "s", 2, 4);
  MergeOptions merge;
  merge.on_duplicate = OnDuplicate::kReplace;
  Merge(dir, {other / "s"}, merge);
}

// Removing every video of the newest chunk and compacting deletes that
// chunk; it was also the writer's current chunk, listed in the dataset info
// as being written. Every later writer must still work, and the number must
// never be given to a new chunk (a published data_N.gulp would otherwise be
// asked to hold other bytes).
BOOST_AUTO_TEST_CASE(compacting_away_the_newest_chunk_leaves_every_writer_working) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  Filled(dir, 10, 4);  // chunks 0, 1, 2 (v8, v9)
  OpenRw(dir)->Remove({"v8", "v9"});
  {
    auto ds = OpenRw(dir);
    const CompactReport r = Compact(*ds);
    BOOST_TEST(r.chunks_rewritten == 1u);
    BOOST_TEST(r.videos_moved == 0u);
    BOOST_TEST((ChunkNumbers(*ds) == std::vector<uint32_t>{0, 1}));
  }
  // (Check, not --deep: FakeJpeg frames do not decode; the deep part only
  // adds decoding.)
  const CheckReport compacted = Check(dir);
  BOOST_TEST(compacted.healthy());
  for (const CheckProblem& p : compacted.problems) BOOST_TEST_MESSAGE(p.where << ": " << p.what);
  WriteEveryWay(dir, "w");
  auto ds = Dataset::Open(dir);
  const std::vector<uint32_t> numbers = ChunkNumbers(*ds);
  BOOST_TEST(std::count(numbers.begin(), numbers.end(), 2u) == 0, "chunk number 2 was reused");
  BOOST_TEST(ds->Get("w_a").chunk > 2u);
  BOOST_TEST(ds->Split("w") == std::vector<std::string>{"w_a"});
  BOOST_TEST(ds->Count() == 8u + 1u);  // the merged shard replaced v0 and v1
  BOOST_TEST(Check(dir).healthy());
  BOOST_TEST(!fs::exists(dir + "/data_2.gulp"));
}

// Chunk numbers are not reused by a merge that attaches an inner shard
// either, nor when the newest chunks go by compaction in other ways.
BOOST_AUTO_TEST_CASE(chunk_numbers_are_never_reused) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  Filled(dir, 12, 4);  // chunks 0, 1, 2
  {
    auto ds = OpenRw(dir);
    ds->Remove({"v4", "v5", "v6", "v7", "v8", "v9", "v10"});
    Compact(*ds);  // chunk 1 and 2 emptied or compacted; v11 moves to chunk 3
    BOOST_TEST(ds->Get("v11").chunk == 3u);
    ds->Remove({"v11"});
    Compact(*ds);  // chunk 3 goes
    BOOST_TEST((ChunkNumbers(*ds) == std::vector<uint32_t>{0}));
  }
  Filled(dir + "/shard", 3, 4);
  MergeOptions replace;
  replace.on_duplicate = OnDuplicate::kReplace;
  Merge(dir, {dir + "/shard"}, replace);  // attached: gets a new number
  {
    auto ds = Dataset::Open(dir);
    BOOST_TEST((ChunkNumbers(*ds) == std::vector<uint32_t>{0, 4}));
    BOOST_TEST(Check(dir).healthy());
  }
  const std::vector<std::string> frames = {FakeJpeg(60, 3)};
  auto ds = OpenRw(dir);
  auto w = ds->NewWriter();
  w->Append("n", test::Views(frames), "{}");
  w->Commit();
  BOOST_TEST(ds->Get("n").chunk == 5u);
  BOOST_TEST(fs::exists(dir + "/data_5.gulp"));
  BOOST_TEST(Check(dir).healthy());
}

// A dataset an older version left in that state (the deleted chunk still
// listed as being written, no next_chunk recorded): check reports it and
// says what to run; reading works; the next writer repairs it, and its new
// chunk still does not take the deleted chunk's number.
BOOST_AUTO_TEST_CASE(a_dataset_left_by_the_old_compaction_is_reported_and_repaired) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  Filled(dir, 10, 4);
  OpenRw(dir)->Remove({"v8", "v9"});
  Contents before;
  {
    auto ds = OpenRw(dir);
    Compact(*ds);
    before = Snapshot(*ds);
    // What the old compaction left: chunk 2 deleted, still listed dirty, and
    // no next_chunk in the info (an index written before the field).
    engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
    impl.env->Update([&](index::Txn& txn) {
      index::DatasetInfo info = impl.GetInfo(txn);
      info.dirty_chunks = {2};
      info.next_chunk = 0;
      txn.Put(impl.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
  }
  const CheckReport report = Check(dir);
  BOOST_TEST(!report.healthy());
  bool named = false;
  for (const CheckProblem& p : report.problems) {
    named = named || (p.what.find("chunk 2") != std::string::npos &&
                      p.what.find("gulpdb compact " + dir) != std::string::npos);
  }
  BOOST_TEST(named);
  BOOST_TEST((Snapshot(*Dataset::Open(dir)) == before));
  WriteEveryWay(dir, "r");
  auto ds = Dataset::Open(dir);
  const std::vector<uint32_t> numbers = ChunkNumbers(*ds);
  BOOST_TEST(std::count(numbers.begin(), numbers.end(), 2u) == 0, "chunk number 2 was reused");
  BOOST_TEST(Check(dir).healthy());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
