// The change record (index/change_record.h): every mutating operation of
// the dataset keeps it, so that a tag built from it (BuildPartitions with
// previous_sha256) reads exactly as one built by reading the whole index;
// a record that does not cover the base (a commit without it, an older
// tag, an overflow) is not used, and the build reads the index instead.
#include "index/change_record.h"

#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/partition/partitions.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/maintenance.h"
#include "index/lmdb_env.h"
#include "support/test_util.h"
#include "util/file_io.h"
#include "util/sha256.h"

namespace gulpdb {
namespace {

using engine::BuildPartitions;
using engine::BuildResult;
using engine::PartitionedIndex;
using engine::PartitionOptions;
using test::TempDir;

// An index environment made in `dir` whose "videos" table the change record
// tracks.
std::unique_ptr<index::Env> VideosTrackedEnv(const std::string& dir) {
  util::MakeDirectories(dir);
  auto env = index::Env::Open(dir, {});
  env->TrackChanges({{"videos", 0}}, index::kChangesDb);
  return env;
}

std::string Id(int n) { return util::Sha256Hex(std::to_string(n)).substr(0, 24); }

std::vector<std::string> Frames(int n) {
  return {test::FakeJpeg(120, static_cast<uint32_t>(n)),
          test::FakeJpeg(90, static_cast<uint32_t>(n + 7))};
}

void Append(Dataset& ds, int from, int to, const WriterOptions& options = {}) {
  auto w = ds.NewWriter(options);
  for (int n = from; n < to; ++n) {
    const std::vector<std::string> frames = Frames(n);
    w->Append(Id(n), test::Views(frames),
              "{\"label\": \"l" + std::to_string(n % 5) + "\", \"n\": " + std::to_string(n) + "}");
  }
  w->Commit();
}

std::unique_ptr<Dataset> Make(const std::string& dir) {
  CreateOptions c;
  c.videos_per_chunk = 50;
  auto ds = Dataset::Create(dir, c);
  Append(*ds, 0, 600);
  ds->CreateMetaIndex("label");
  OpenOptions rw;
  rw.read_only = false;
  return Dataset::Open(dir, rw);
}

// What a reader of the snapshot sees: every id in order with its record,
// and the meta index's answers.
std::string Describe(const engine::IndexSource& index) {
  std::string out;
  for (uint64_t p = 0; p < index.OrderCount(); ++p) {
    const std::string id = *index.OrderAt(p);
    const std::optional<index::VideoRecord> r = index.FindVideo(id);
    BOOST_REQUIRE_MESSAGE(r.has_value(), "no record for " << id);
    out += id + " " + r->meta_data + " " + std::to_string(r->chunk) + ":" + std::to_string(r->seq) +
           " " + std::to_string(r->frames.size()) + "\n";
  }
  index.ScanMeta({}, {}, [&](std::string_view key, std::string_view id) {
    out += "meta " + std::string(id) + " " + std::to_string(key.size()) + "\n";
    return true;
  });
  return out;
}

struct Built {
  BuildResult result;
  std::string described;
};

Built Build(const Dataset& ds, const BuildResult* previous, const std::string& out,
            bool use_record) {
  PartitionOptions options;
  options.target_bytes = 64 << 10;
  if (previous != nullptr && use_record) options.previous_sha256 = previous->root_sha256;
  Built b;
  b.result = BuildPartitions(ds, previous != nullptr ? &previous->root : nullptr, options, out);
  PartitionedIndex reader(b.result.root, engine::DirectoryFetch(out), out);
  b.described = Describe(reader);
  return b;
}

// A tag-like start: the full build of `ds`, and the record started at it.
BuildResult Start(const Dataset& ds, const std::string& out) {
  const Built base = Build(ds, nullptr, out, false);
  engine::StartChangeRecord(ds, base.result.root_sha256);
  return base.result;
}

BOOST_AUTO_TEST_SUITE(change_record_test)

BOOST_AUTO_TEST_CASE(every_mutating_operation_is_recorded_and_the_build_from_it_reads_the_same) {
  const std::vector<std::pair<std::string, std::function<void(Dataset&)>>> operations = {
      {"append", [](Dataset& ds) { Append(ds, 600, 640); }},
      {"remove",
       [](Dataset& ds) {
         ds.Remove({Id(3), Id(300), Id(599)});
       }},
      {"update meta",
       [](Dataset& ds) {
         auto w = ds.NewWriter();
         for (int n = 1; n < 600; n += 37) w->UpdateMeta(Id(n), "{\"label\": \"fixed\"}");
         w->Commit();
       }},
      {"set meta",
       [](Dataset& ds) {
         auto w = ds.NewWriter();
         w->SetMeta(Id(10), "{\"other\": 1}");
         w->SetMeta(Id(410), "{\"label\": \"l9\"}");
         w->Commit();
       }},
      {"edit back",
       [](Dataset& ds) {
         for (const char* label : {"x", "l0"}) {
           auto w = ds.NewWriter();
           w->UpdateMeta(Id(20), std::string("{\"label\": \"") + label + "\"}");
           w->Commit();
         }
       }},
      {"replace",
       [](Dataset& ds) {
         WriterOptions o;
         o.on_duplicate = OnDuplicate::kReplace;
         Append(ds, 100, 104, o);
       }},
      {"compact",
       [](Dataset& ds) {
         ds.Remove({Id(1), Id(2), Id(51), Id(52)});
         Compact(ds);
       }},
      {"meta index",
       [](Dataset& ds) {
         ds.CreateMetaIndex("n");
         ds.DropMetaIndex("label");
       }},
      {"split",
       [](Dataset& ds) {
         auto w = ds.NewWriter();
         w->SetSplit("val", {Id(5), Id(6)});
         w->Commit();
       }},
      {"append, edit and remove in one batch",
       [](Dataset& ds) {
         auto w = ds.NewWriter();
         const std::vector<std::string> frames = Frames(9);
         w->Append("fresh", test::Views(frames), "{\"label\": \"new\"}");
         w->UpdateMeta("fresh", "{\"label\": \"newer\"}");
         w->UpdateMeta(Id(7), "{\"label\": \"seven\"}");
         w->Remove(Id(8));
         w->Commit();
       }},
  };
  for (const auto& [name, operation] : operations) {
    BOOST_TEST_CONTEXT(name) {
      TempDir tmp;
      auto ds = Make(tmp / "d");
      const BuildResult base = Start(*ds, tmp / "objects");
      operation(*ds);
      const Built from_record = Build(*ds, &base, tmp / "objects", true);
      const Built full = Build(*ds, &base, tmp / "objects", false);
      const Built fresh = Build(*ds, nullptr, tmp / "objects", false);
      BOOST_CHECK(from_record.result.from_changes);
      BOOST_CHECK(!full.result.from_changes);
      BOOST_CHECK_EQUAL(from_record.described, fresh.described);
      BOOST_CHECK_EQUAL(full.described, fresh.described);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_relabel_build_from_the_record_reads_few_previous_bytes) {
  TempDir tmp;
  auto ds = Make(tmp / "d");
  Append(*ds, 600, 6000);
  const BuildResult base = Start(*ds, tmp / "objects");
  {
    auto w = ds->NewWriter();
    for (int n = 0; n < 6000; n += 97) w->UpdateMeta(Id(n), "{\"label\": \"fixed\"}");
    w->Commit();
  }
  const Built from_record = Build(*ds, &base, tmp / "objects", true);
  const Built full = Build(*ds, &base, tmp / "objects", false);
  BOOST_CHECK(from_record.result.from_changes);
  BOOST_CHECK_EQUAL(from_record.described, full.described);
  BOOST_TEST_MESSAGE("previous bytes read: from the record "
                     << from_record.result.previous_bytes_read << ", full "
                     << full.result.previous_bytes_read << " of " << base.total_bytes);
  BOOST_CHECK_LT(from_record.result.previous_bytes_read * 10, base.total_bytes);
  BOOST_CHECK_GT(full.result.previous_bytes_read * 2, base.total_bytes);
}

BOOST_AUTO_TEST_CASE(a_record_that_does_not_cover_the_base_is_not_used) {
  TempDir tmp;
  auto ds = Make(tmp / "d");
  const BuildResult base = Start(*ds, tmp / "objects");
  Append(*ds, 600, 610);
  // Another base (an older tag, a tag deleted since): not used.
  const Built other = Build(*ds, &base, tmp / "objects", false);
  PartitionOptions options;
  options.previous_sha256 = other.result.root_sha256;
  BOOST_CHECK(!BuildPartitions(*ds, &base.root, options, tmp / "objects").from_changes);
  // A dataset whose record was never started (written by an older build).
  TempDir tmp2;
  auto plain = Make(tmp2 / "d");
  const Built first = Build(*plain, nullptr, tmp2 / "objects", false);
  Append(*plain, 600, 610);
  options.previous_sha256 = first.result.root_sha256;
  BOOST_CHECK(!BuildPartitions(*plain, &first.result.root, options, tmp2 / "objects").from_changes);
}

BOOST_AUTO_TEST_CASE(a_commit_that_does_not_keep_the_record_makes_it_unused) {
  // An older gulpdb writing the index keeps no record and stamps nothing.
  TempDir tmp;
  const std::string env_dir = tmp / "env";
  util::MakeDirectories(env_dir);
  const std::vector<std::pair<std::string, uint8_t>> tracked = {{"videos", 0}};
  {
    auto env = index::Env::Open(env_dir, {});
    env->TrackChanges(tracked, index::kChangesDb);
    const index::Dbi videos = env->OpenDb("videos", true);
    env->Update([&](index::Txn& txn) { txn.Put(videos, "a", "1"); });
    const index::Dbi changes = env->OpenDb(index::kChangesDb, true);
    env->Update([&](index::Txn& txn) { index::StartChangeRecord(txn, changes, "base"); });
    env->Update([&](index::Txn& txn) {
      txn.Put(videos, "a", "2");
      txn.Put(videos, "b", "3");
      txn.Put(videos, "a", "4");
      txn.Del(videos, "nothing");
    });
    index::Txn read = env->BeginRead();
    BOOST_CHECK(index::ChangeRecordCovers(read, changes, "base"));
    BOOST_CHECK(!index::ChangeRecordCovers(read, changes, "another"));
    std::string_view value;
    BOOST_REQUIRE(read.Get(changes, std::string(1, '\0') + "a", &value));
    BOOST_CHECK_EQUAL(std::string(value), std::string("\1") + "1");  // its value before
    BOOST_REQUIRE(read.Get(changes, std::string(1, '\0') + "b", &value));
    BOOST_CHECK_EQUAL(std::string(value), std::string(1, '\0'));  // absent before
  }
  {
    auto env = index::Env::Open(env_dir, {});  // no TrackChanges: an older build
    const index::Dbi videos = env->OpenDb("videos", false);
    env->Update([&](index::Txn& txn) { txn.Put(videos, "c", "5"); });
  }
  auto env = index::Env::Open(env_dir, {});
  env->TrackChanges(tracked, index::kChangesDb);
  const index::Dbi changes = env->OpenDb(index::kChangesDb, false);
  index::Txn read = env->BeginRead();
  BOOST_CHECK(!index::ChangeRecordCovers(read, changes, "base"));
}

BOOST_AUTO_TEST_CASE(an_append_is_recorded_as_a_put_is_and_refuses_a_key_out_of_order) {
  TempDir tmp;
  auto env = VideosTrackedEnv(tmp / "env");
  const index::Dbi videos = env->OpenDb("videos", true);
  env->Update([&](index::Txn& txn) { txn.Put(videos, "a", "1"); });
  const index::Dbi changes = env->OpenDb(index::kChangesDb, true);
  env->Update([&](index::Txn& txn) { index::StartChangeRecord(txn, changes, "base"); });
  env->Update([&](index::Txn& txn) {
    txn.Append(videos, "b", "2");
    txn.Put(videos, "a", "3");
  });
  BOOST_CHECK_THROW(env->Update([&](index::Txn& txn) { txn.Append(videos, "0", "4"); }),
                    InvalidArgumentError);
  index::Txn read = env->BeginRead();
  BOOST_CHECK(index::ChangeRecordCovers(read, changes, "base"));
  std::string_view value;
  BOOST_REQUIRE(read.Get(changes, std::string(1, '\0') + "b", &value));
  BOOST_CHECK_EQUAL(std::string(value), std::string(1, '\0'));  // absent before
  BOOST_REQUIRE(read.Get(changes, std::string(1, '\0') + "a", &value));
  BOOST_CHECK_EQUAL(std::string(value), std::string("\1") + "1");
  BOOST_CHECK(!read.Get(changes, std::string(1, '\0') + "0", &value));  // rolled back
  BOOST_REQUIRE(read.Get(videos, "b", &value));
  BOOST_CHECK_EQUAL(std::string(value), "2");
}

BOOST_AUTO_TEST_CASE(a_record_started_by_another_process_is_kept_by_a_writer_open_before) {
  // A Python session open before `gulpdb tag` started the record: its next
  // write finds the record and keeps it (else the next tag could not use it).
  TempDir tmp;
  const std::string env_dir = tmp / "env";
  util::MakeDirectories(env_dir);
  const std::vector<std::pair<std::string, uint8_t>> tracked = {{"videos", 0}};
  auto env = index::Env::Open(env_dir, {});
  env->TrackChanges(tracked, index::kChangesDb);
  const index::Dbi videos = env->OpenDb("videos", true);
  env->Update([&](index::Txn& txn) { txn.Put(videos, "a", "1"); });
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    int code = 1;
    try {
      auto other = index::Env::Open(env_dir, {});
      other->TrackChanges(tracked, index::kChangesDb);
      const index::Dbi changes = other->OpenDb(index::kChangesDb, true);
      other->Update([&](index::Txn& txn) { index::StartChangeRecord(txn, changes, "base"); });
      code = 0;
    } catch (...) {
    }
    ::_exit(code);
  }
  int status = 0;
  BOOST_REQUIRE_EQUAL(::waitpid(child, &status, 0), child);
  BOOST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  env->Update([&](index::Txn& txn) { txn.Put(videos, "a", "2"); });
  const index::Dbi changes = env->OpenDb(index::kChangesDb, false);
  index::Txn read = env->BeginRead();
  BOOST_CHECK(index::ChangeRecordCovers(read, changes, "base"));
  std::string_view value;
  BOOST_REQUIRE(read.Get(changes, std::string(1, '\0') + "a", &value));
  BOOST_CHECK_EQUAL(std::string(value), std::string("\1") + "1");
}

BOOST_AUTO_TEST_CASE(a_record_past_its_bound_overflows_and_is_not_used) {
  TempDir tmp;
  auto env = VideosTrackedEnv(tmp / "env");
  const index::Dbi videos = env->OpenDb("videos", true);
  const index::Dbi changes = env->OpenDb(index::kChangesDb, true);
  env->Update([&](index::Txn& txn) { index::StartChangeRecord(txn, changes, "base"); });
  env->Update([&](index::Txn& txn) {
    for (int i = 0; i < 5000; ++i) txn.Put(videos, "k" + std::to_string(i), "v");
  });
  index::Txn read = env->BeginRead();
  BOOST_CHECK(!index::ChangeRecordCovers(read, changes, "base"));
  const std::optional<index::ChangeHeader> header = index::ReadChangeHeader(read, changes);
  BOOST_REQUIRE(header.has_value());
  BOOST_CHECK(header->overflowed);
  BOOST_CHECK_EQUAL(read.Count(changes), 1u);  // the header alone
}

// A key keeps the value it had before its first change since the start, in
// the transaction that changed it first or a later one, and writing it
// again costs none of the record's bound (only new keys count).
BOOST_AUTO_TEST_CASE(a_key_changed_again_keeps_its_first_before_value_and_costs_no_bound) {
  TempDir tmp;
  const std::string env_dir = tmp / "env";
  util::MakeDirectories(env_dir);
  auto env = index::Env::Open(env_dir, {});
  env->TrackChanges({{"videos", 0}}, index::kChangesDb);
  const index::Dbi videos = env->OpenDb("videos", true);
  const index::Dbi changes = env->OpenDb(index::kChangesDb, true);
  env->Update([&](index::Txn& txn) { txn.Put(videos, "old", "v0"); });
  env->Update([&](index::Txn& txn) { index::StartChangeRecord(txn, changes, "base"); });
  env->Update([&](index::Txn& txn) {
    txn.Put(videos, "old", "v1");
    txn.Put(videos, "new", "n1");
    for (int i = 0; i < 5000; ++i) txn.Put(videos, "old", "w" + std::to_string(i));
  });
  env->Update([&](index::Txn& txn) {
    txn.Del(videos, "old");
    for (int i = 0; i < 5000; ++i) txn.Put(videos, "new", "m" + std::to_string(i));
  });
  index::Txn read = env->BeginRead();
  BOOST_CHECK(index::ChangeRecordCovers(read, changes, "base"));
  BOOST_CHECK_EQUAL(read.Count(changes), 3u);  // the header, "old" and "new"
  std::string_view bytes;
  BOOST_REQUIRE(read.Get(changes, std::string(1, '\0') + "old", &bytes));
  std::optional<index::ChangeBefore> before = index::DecodeChangeBefore(bytes);
  BOOST_REQUIRE(before.has_value());
  BOOST_CHECK(before->existed);
  BOOST_CHECK_EQUAL(before->value, "v0");
  BOOST_REQUIRE(read.Get(changes, std::string(1, '\0') + "new", &bytes));
  before = index::DecodeChangeBefore(bytes);
  BOOST_REQUIRE(before.has_value());
  BOOST_CHECK(!before->existed);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
