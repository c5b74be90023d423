// Remote reading against hostile bytes and a flaky network (s3rver started
// by the suite):
//   - a damaged node cache, damaged in many random ways, never kills a
//     reader: every child process reads the right data (the snapshot is
//     fetched again) or, when it cannot be fetched, gets an error naming the
//     cache file; a verified cache is trusted without being read again;
//   - a hostile snapshot cannot make export write outside its directory;
//   - a manifest entry that disagrees with the snapshot's chunk record is
//     refused;
//   - a GET whose size is bounded stops there; Retry-After is understood; a
//     request rides out a server restart within its retry budget.
// The Python side (every CLI command, DataLoader workers, the fault proxy)
// is tests/python/test_remote_hardening.py.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/remote_dataset.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/remote.h"
#include "s3/errors.h"
#include "s3/retry_policy.h"
#include "s3/s3_client.h"
#include "support/remote_fixture.h"
#include "support/test_util.h"
#include "tests/harness/s3_server.h"
#include "util/sha256.h"

namespace gulpdb {
namespace {

namespace fs = std::filesystem;
using test::Contains;
using test::S3rverServer;
using test::ScopedEnv;
using test::TempDir;

S3rverServer& Server() {
  static std::unique_ptr<S3rverServer> server = std::make_unique<S3rverServer>();
  return *server;
}

// A test's place in the bucket, its cache, and a client to look behind the
// dataset's back.
struct World {
  TempDir tmp;
  ScopedEnv env;
  std::string prefix = test::UniquePrefix("hard");
  std::string url = "s3://" + Server().bucket() + "/" + prefix.substr(0, prefix.size() - 1);
  std::unique_ptr<remote::S3Client> client = std::make_unique<remote::S3Client>(
      test::TestConfig(Server().endpoint(), S3rverServer::kAccessKey, S3rverServer::kSecretKey),
      Server().bucket());

  World() {
    env.Set("AWS_ENDPOINT_URL", Server().endpoint());
    env.Set("AWS_ACCESS_KEY_ID", S3rverServer::kAccessKey);
    env.Set("AWS_SECRET_ACCESS_KEY", S3rverServer::kSecretKey);
    env.Set("AWS_REGION", "us-east-1");
    env.Set("GULPDB_CACHE", tmp / "cache");
    env.Set("GULPDB_S3_CONNECT_TIMEOUT_MS", "2000");
    env.Set("GULPDB_S3_REQUEST_TIMEOUT_MS", "20000");
    env.Set("GULPDB_S3_MAX_ATTEMPTS", "3");
    env.Set("GULPDB_S3_RETRY_BUDGET_MS", "0");
    env.Set("GULPDB_S3_BACKOFF_BASE_MS", "5");
    env.Set("GULPDB_S3_BACKOFF_MAX_MS", "40");
  }

  std::string Key(const std::string& name) const { return prefix + name; }
  engine::Manifest Manifest() const {
    return engine::ParseManifest(client->Get(Key(engine::kManifestKey)), "test");
  }
};

// A local dataset of `count` fixture videos, 3 per chunk.
void MakeDataset(const std::string& dir, int count, int seed = 0) {
  CreateOptions c;
  c.videos_per_chunk = 3;
  auto ds = Dataset::Create(dir, c);
  auto writer = ds->NewWriter();
  for (int i = 0; i < count; ++i) {
    const std::vector<std::string> frames = test::FixtureFrames(std::to_string((i + seed) % 22));
    writer->Append("v" + std::to_string(i), test::Views(frames),
                   "{\"label\": \"c" + std::to_string((i + seed) % 3) + "\"}");
  }
  writer->Commit();
}

using Content = std::map<std::string, std::pair<std::vector<std::string>, std::string>>;

Content ContentOf(const Dataset& ds) {
  Content out;
  for (const std::string& id : ds.Ids()) {
    const StoredFrames jpegs = ds.ReadJpegs(id);
    std::vector<std::string> frames;
    for (size_t i = 0; i < jpegs.size(); ++i) frames.emplace_back(jpegs[i]);
    out[id] = {frames, ds.Get(id).meta_data};
  }
  return out;
}

std::string FileBytes(const std::string& path) { return test::ReadFile(path); }

void Overwrite(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".new";
  test::WriteFile(tmp, bytes);
  fs::rename(tmp, path);
}

// ---- a damaged cache ------------------------------------------------------------

constexpr int kRight = 0;
constexpr int kClearError = 10;
constexpr int kWrong = 12;

// In a child: opens `url`, reads everything, runs a deep check. Writes the
// first error's text to `message_file`.
int Probe(const std::string& url, const Content& want, const std::string& message_file) {
  try {
    OpenOptions open;
    open.verify_index = true;
    auto ds = Dataset::Open(url, open);
    if (ContentOf(*ds) != want) return kWrong;
    CheckOptions deep;
    deep.deep = true;
    const CheckReport report = Check(url, deep);
    if (!report.healthy()) {
      test::WriteFile(message_file, report.problems[0].where + ": " + report.problems[0].what);
      return kClearError;
    }
    return kRight;
  } catch (const Error& e) {
    test::WriteFile(message_file, e.what());
    return kClearError;
  }
}

struct Outcome {
  int code = -1;   // the child's exit code; -1 if it did not exit
  int signal = 0;  // the signal that ended it
  std::string message;
};

Outcome RunProbe(const std::string& url, const Content& want, const std::string& message_file) {
  ::unlink(message_file.c_str());
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    // Boost.Test's handlers would turn a fatal signal into a report and go on
    // running tests in the child: a fatal signal must end it, as it would
    // end a user's process.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
    ::alarm(60);
    std::_Exit(Probe(url, want, message_file));
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  Outcome o;
  if (WIFEXITED(status)) o.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  if (fs::exists(message_file)) o.message = test::ReadFile(message_file);
  return o;
}

// One random damage of the snapshot file at `path` (whose pristine bytes
// are `pristine`), described in `*what`.
void Damage(const std::string& path, const std::string& pristine, const std::string& other,
            std::mt19937_64& rng, std::string* what) {
  constexpr size_t kPage = 4096;
  const size_t pages = pristine.size() / kPage;
  std::string bytes = pristine;
  const auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  switch (pick(7)) {
    case 0: {  // flipped bytes in one page (any: meta, branch, leaf, overflow, free)
      const size_t page = pick(pages);
      const size_t flips = 1 + pick(8);
      for (size_t i = 0; i < flips; ++i)
        bytes[page * kPage + pick(kPage)] ^= static_cast<char>(1 + pick(255));
      *what = "flipped " + std::to_string(flips) + " bytes in page " + std::to_string(page);
      break;
    }
    case 1: {
      const size_t page = pick(pages);
      for (size_t i = 0; i < kPage; ++i) bytes[page * kPage + i] = static_cast<char>(rng());
      *what = "random bytes over page " + std::to_string(page);
      break;
    }
    case 2: {
      const size_t page = pick(pages);
      std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(page * kPage),
                bytes.begin() + static_cast<std::ptrdiff_t>((page + 1) * kPage), '\0');
      *what = "zeroed page " + std::to_string(page);
      break;
    }
    case 3:
      bytes.resize(pick(bytes.size()));
      *what = "truncated to " + std::to_string(bytes.size()) + " bytes";
      break;
    case 4:
      bytes = other;
      *what = "replaced with another dataset's snapshot";
      break;
    case 5:
      for (char& c : bytes) c = static_cast<char>(rng());
      *what = "replaced with random bytes (not an LMDB file)";
      break;
    default:
      bytes = std::string(kPage * 2, '\0');
      *what = "replaced with zeros";
      break;
  }
  Overwrite(path, bytes);
}

// ---- hostile snapshots ------------------------------------------------------------

// Publishes, as the snapshot of `w`'s manifest, the index of the local
// dataset `dir` after `edit` changed it (in one write transaction): what a
// hostile (or broken) publisher could put in a bucket.
void PublishEditedIndex(World& w, const std::string& dir,
                        const std::function<void(engine::DatasetImpl&, index::Txn&)>& edit,
                        bool partitioned) {
  const std::string copy = w.tmp / "edited";
  fs::remove_all(copy);
  fs::copy(dir, copy, fs::copy_options::recursive);
  {
    OpenOptions rw;
    rw.read_only = false;
    auto ds = Dataset::Open(copy, rw);
    engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
    impl.env->Update([&](index::Txn& txn) { edit(impl, txn); });
    engine::Manifest m = w.Manifest();
    if (partitioned) {
      // Partitions and a root of the edited index, content-addressed as a
      // publisher makes them, and a manifest naming that root.
      const std::string parts = w.tmp / "edited.partitions";
      fs::remove_all(parts);
      const engine::BuildResult built =
          engine::BuildPartitions(*ds, nullptr, engine::PartitionOptions(), parts);
      for (const index::PartitionEntry& p : built.root.partitions) {
        w.client->Put(w.Key(engine::PartitionKey(p.sha256)), FileBytes(parts + "/" + p.sha256));
      }
      m.root_key = engine::RootKey(built.root_sha256);
      m.root_size = built.root_bytes.size();
      m.root_sha256 = built.root_sha256;
      w.client->Put(w.Key(m.root_key), built.root_bytes);
      w.client->Put(w.Key(engine::kManifestKey), engine::SerializeManifest(m));
      return;
    }
    const std::string file = w.tmp / "edited.mdb";
    fs::remove(file);
    impl.env->CopyTo(file, /*compact=*/true);
    const std::string bytes = FileBytes(file);
    m.snapshot_sha256 = util::Sha256Hex(bytes);
    m.snapshot_key = engine::SnapshotKey(m.snapshot_sha256);
    m.snapshot_size = bytes.size();
    w.client->Put(w.Key(m.snapshot_key), bytes);
    w.client->Put(w.Key(engine::kManifestKey), engine::SerializeManifest(m));
  }
}

// PublishEditedIndex after `edit` changed the record of chunk 0.
void PublishEditedSnapshot(World& w, const std::string& dir,
                           const std::function<void(index::ChunkRecord*)>& edit,
                           bool partitioned = false) {
  PublishEditedIndex(
      w, dir,
      [&](engine::DatasetImpl& impl, index::Txn& txn) {
        index::ChunkRecord record = impl.GetChunk(txn, 0);
        edit(&record);
        impl.PutChunk(txn, 0, record);
      },
      partitioned);
}

// Rewrites the chunk list of `w`'s manifest with `edit` (in its pages, for
// a version 3 manifest, uploaded under their new names).
void EditPublishedChunks(World& w,
                         const std::function<void(std::vector<engine::ManifestChunk>*)>& edit) {
  engine::Manifest m = w.Manifest();
  std::vector<engine::ManifestChunk> chunks = m.chunks;
  for (const engine::ManifestChunkPage& p : m.chunk_pages) {
    for (engine::ManifestChunk& c : engine::ParseChunkPage(w.client->Get(w.Key(p.key)), p, p.key)) {
      chunks.push_back(std::move(c));
    }
  }
  edit(&chunks);
  if (m.paged()) {
    m.chunk_pages.clear();
    for (const engine::ChunkPageText& t : engine::MakeChunkPages(chunks)) {
      w.client->Put(w.Key(t.page.key), t.text);
      m.chunk_pages.push_back(t.page);
    }
  } else {
    m.chunks = chunks;
  }
  w.client->Put(w.Key(engine::kManifestKey), engine::SerializeManifest(m));
}

// The layout option of a push: partitioned or the whole snapshot.
PushOptions Layout(bool partitioned) {
  PushOptions options;
  options.layout = partitioned ? IndexLayout::kPartitioned : IndexLayout::kWhole;
  return options;
}

// The problems of a check of `url`, one per line, for messages and searches.
std::string CheckText(const std::string& url, bool deep) {
  CheckOptions options;
  options.deep = deep;
  const CheckReport report = Check(url, options);
  std::string text;
  for (const CheckProblem& p : report.problems) text += p.where + ": " + p.what + "\n";
  return text;
}

// Pushes a dataset of `count` videos as a whole snapshot and reads it once:
// the cached snapshot's path, and what the dataset holds.
std::pair<std::string, Content> PushWholeAndRead(World& w, int count) {
  MakeDataset(w.tmp / "local", count);
  Push(w.tmp / "local", w.url, test::WholeSnapshot());
  auto ds = Dataset::Open(w.url);
  return {GetRemoteInfo(*ds)->snapshot_path, ContentOf(*ds)};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(remote_hardening_test)

BOOST_AUTO_TEST_CASE(a_damaged_cache_never_kills_a_reader_and_is_fetched_again) {
  World w;
  MakeDataset(w.tmp / "local", 14);
  MakeDataset(w.tmp / "other", 9, 5);
  Push(w.tmp / "local", w.url, test::WholeSnapshot());
  Push(w.tmp / "other", w.url + "-other", test::WholeSnapshot());
  const std::string other =
      FileBytes(GetRemoteInfo(*Dataset::Open(w.url + "-other"))->snapshot_path);
  std::string snapshot;
  Content want;
  {
    auto ds = Dataset::Open(w.url);
    snapshot = GetRemoteInfo(*ds)->snapshot_path;
    want = ContentOf(*ds);
  }
  const std::string pristine = FileBytes(snapshot);
  BOOST_REQUIRE_GE(pristine.size(), 4096u * 4);
  std::mt19937_64 rng(20261127);
  std::map<int, int> outcomes;
  for (int trial = 0; trial < 40; ++trial) {
    std::string what;
    fs::create_directories(fs::path(snapshot).parent_path());
    Overwrite(snapshot, pristine);  // a new file: the stamp no longer matches
    Damage(snapshot, pristine, other, rng, &what);
    const Outcome o = RunProbe(w.url, want, w.tmp / "message");
    BOOST_TEST_INFO("trial " << trial << ": " << what << ": " << o.message);
    BOOST_TEST(o.signal == 0);
    BOOST_TEST(o.code == kRight);
    ++outcomes[o.signal != 0 ? 100 + o.signal : o.code];
    BOOST_TEST(FileBytes(snapshot) == pristine, "the cache was not repaired after " << what);
  }
  BOOST_TEST(outcomes[kRight] == 40);
}

BOOST_AUTO_TEST_CASE(a_damaged_cache_that_cannot_be_fetched_again_is_an_error_naming_it) {
  World w;
  const auto published = PushWholeAndRead(w, 8);
  const std::string& snapshot = published.first;
  const Content& want = published.second;
  const std::string pristine = FileBytes(snapshot);
  w.client->Delete(w.Key(w.Manifest().snapshot_key));
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 15; ++trial) {
    std::string what;
    fs::create_directories(fs::path(snapshot).parent_path());
    Overwrite(snapshot, pristine);
    Damage(snapshot, pristine, std::string(4096 * 3, 'x'), rng, &what);
    if (FileBytes(snapshot) == pristine) continue;  // (a flip of a byte to itself cannot happen)
    const Outcome o = RunProbe(w.url, want, w.tmp / "message");
    BOOST_TEST_INFO("trial " << trial << ": " << what << ": " << o.message);
    BOOST_TEST(o.signal == 0);
    BOOST_TEST(o.code == kClearError);
    BOOST_TEST(Contains(o.message, snapshot + " is damaged"), o.message);
  }
  // The pristine file (a cache restored from a backup) is verified and used.
  fs::create_directories(fs::path(snapshot).parent_path());
  Overwrite(snapshot, pristine);
  BOOST_TEST(RunProbe(w.url, want, w.tmp / "message").code == kRight);
}

// Whatever was done to a cached snapshot's folder, the next open repairs it:
// a folder left without its data.mdb (its `verified` record still there)
// made every open fail with "rename ...: Directory not empty".
BOOST_AUTO_TEST_CASE(a_snapshot_folder_damaged_in_any_way_is_repaired_by_the_next_open) {
  World w;
  const auto published = PushWholeAndRead(w, 6);
  const std::string& snapshot = published.first;
  const Content& want = published.second;
  const fs::path folder = fs::path(snapshot).parent_path();
  const fs::path stamp = folder / "verified";
  const std::string pristine = FileBytes(snapshot);
  const std::vector<std::pair<std::string, std::function<void()>>> damages = {
      {"data.mdb deleted", [&] { fs::remove(snapshot); }},
      {"data.mdb deleted, an extra file",
       [&] {
         fs::remove(snapshot);
         test::WriteFile(folder / "lock.mdb", "x");
       }},
      {"data.mdb truncated", [&] { fs::resize_file(snapshot, 4096); }},
      {"data.mdb a folder",
       [&] {
         fs::remove(snapshot);
         fs::create_directories(fs::path(snapshot) / "inside");
       }},
      {"an extra file", [&] { test::WriteFile(folder / "extra", "x"); }},
      {"the record garbage", [&] { test::WriteFile(stamp, std::string(300, '\x7f')); }},
      {"the record missing", [&] { fs::remove(stamp); }},
      {"the record a folder",
       [&] {
         fs::remove(stamp);
         fs::create_directories(stamp / "inside");
       }},
      {"data.mdb deleted, the record a folder",
       [&] {
         fs::remove(snapshot);
         fs::remove(stamp);
         fs::create_directories(stamp / "inside");
       }},
      {"the folder a file",
       [&] {
         fs::remove_all(folder);
         test::WriteFile(folder, "x");
       }},
  };
  for (const auto& [what, damage] : damages) {
    BOOST_TEST_INFO(what);
    damage();
    for (int open = 0; open < 2; ++open) {
      try {
        auto ds = Dataset::Open(w.url);
        BOOST_TEST((ContentOf(*ds) == want));
      } catch (const Error& e) {
        BOOST_ERROR(what << ": " << e.what());
      }
    }
    BOOST_TEST(FileBytes(snapshot) == pristine);
    BOOST_TEST(fs::is_regular_file(stamp));
    BOOST_TEST(Contains(FileBytes(stamp), "sha256 " + w.Manifest().snapshot_sha256));
  }
}

BOOST_AUTO_TEST_CASE(a_verified_snapshot_is_trusted_until_the_file_changes) {
  World w;
  MakeDataset(w.tmp / "local", 5);
  Push(w.tmp / "local", w.url, test::WholeSnapshot());
  const std::string snapshot = GetRemoteInfo(*Dataset::Open(w.url))->snapshot_path;
  const std::string stamp = fs::path(snapshot).parent_path() / "verified";
  const std::string recorded = FileBytes(stamp);
  BOOST_TEST(Contains(recorded, "sha256 " + w.Manifest().snapshot_sha256));
  // Reopening reads the stamp, not the snapshot: the stamp stays as it was.
  auto again = Dataset::Open(w.url);
  BOOST_TEST(!GetRemoteInfo(*again)->snapshot_downloaded);
  BOOST_TEST(FileBytes(stamp) == recorded);
  // The same bytes with another modification time (a restore, cp without
  // -p): verified again, kept, and the stamp records the file as it is now.
  ::utimensat(AT_FDCWD, snapshot.c_str(), nullptr, 0);
  auto touched = Dataset::Open(w.url);
  BOOST_TEST(!GetRemoteInfo(*touched)->snapshot_downloaded);
  BOOST_TEST(FileBytes(stamp) != recorded);
  BOOST_TEST(Dataset::Open(w.url)->Count() == 5u);
}

// Both layouts: the whole snapshot, and partitions (push's default), whose
// chunk partitions name the chunks' .gmeta files too.
BOOST_AUTO_TEST_CASE(a_hostile_snapshot_cannot_make_export_write_outside_its_directory) {
  for (const bool partitioned : {false, true}) {
    BOOST_TEST_INFO("partitioned: " << partitioned);
    World w;
    const std::string dir = w.tmp / "local";
    MakeDataset(dir, 7);
    const PushOptions layout = Layout(partitioned);
    Push(dir, w.url, layout);
    const std::string out = w.tmp / "out/inner";
    fs::create_directories(out);
    for (const std::string& name :
         {std::string("../escaped.gmeta"), std::string("../../escaped.gmeta"),
          (w.tmp / "out/absolute.gmeta"), std::string("sub/../../escaped.gmeta")}) {
      BOOST_TEST_INFO("meta_file '" << name << "'");
      PublishEditedSnapshot(
          w, dir, [&](index::ChunkRecord* r) { r->meta_file = name; }, partitioned);
      auto ds = Dataset::Open(w.url);
      BOOST_TEST(GetRemoteInfo(*ds)->partitioned == partitioned);
      try {
        ExportGmeta(*ds, out);
        BOOST_FAIL("exported with a .gmeta name that leaves the directory");
      } catch (const CorruptionError& e) {
        BOOST_TEST(Contains(e.what(), "is not a safe relative name"), e.what());
      }
      // Nothing outside, and nothing inside either: a failed export leaves nothing.
      BOOST_TEST(!fs::exists(w.tmp / "escaped.gmeta"));
      BOOST_TEST(!fs::exists(w.tmp / "out/escaped.gmeta"));
      BOOST_TEST(!fs::exists(w.tmp / "out/absolute.gmeta"));
      BOOST_TEST(fs::is_empty(out));
    }
    // A chunk file name that leaves the dataset is never opened.
    PublishEditedSnapshot(
        w, dir, [](index::ChunkRecord* r) { r->file_name = "../data_0.gulp"; }, partitioned);
    BOOST_CHECK_THROW(ContentOf(*Dataset::Open(w.url)), CorruptionError);
    {
      const std::string copy = w.tmp / "edited";  // the local dataset with that record
      BOOST_CHECK_THROW(ContentOf(*Dataset::Open(copy)), CorruptionError);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_manifest_entry_must_match_the_snapshots_chunk_record) {
  index::ChunkRecord top;
  top.file_name = "data_3.gulp";
  top.committed_length = 100;
  index::ChunkRecord shard;
  shard.file_name = "shards/ingest-0001/part-00000/data_0.gulp";
  shard.committed_length = 50;
  engine::ManifestChunk m;
  m.committed_length = 100;
  m.key = "data_3.gulp";
  BOOST_TEST(engine::ChunkDisagreement(m, 3, top) == "");
  m.key = "data_4.gulp";  // another chunk's object
  BOOST_TEST(Contains(engine::ChunkDisagreement(m, 3, top), "names the object 'data_4.gulp'"));
  m.key = "data_3.gulp";
  m.committed_length = 99;  // cut
  BOOST_TEST(Contains(engine::ChunkDisagreement(m, 3, top), "committed length of 99 bytes"));
  m.committed_length = 50;
  m.key = "data_7.gulp";  // an attached shard's chunk, published flat
  BOOST_TEST(engine::ChunkDisagreement(m, 7, shard) == "");
  m.key = shard.file_name;  // or under its path when the flat names were taken
  BOOST_TEST(engine::ChunkDisagreement(m, 7, shard) == "");
  m.key = "data_0.gulp";
  BOOST_TEST(engine::ChunkDisagreement(m, 7, shard) != "");
}

// `gulpdb check URL` finds what readers or GulpIO readers of the bucket
// would meet, naming the object; `--deep` reads every chunk object whole.
BOOST_AUTO_TEST_CASE(check_of_a_url_finds_a_meta_index_that_disagrees_with_the_records) {
  for (const bool partitioned : {true, false}) {
    BOOST_TEST_CONTEXT("partitioned: " << partitioned) {
      World w;
      const std::string dir = w.tmp / "local";
      MakeDataset(dir, 7);
      {
        OpenOptions rw;
        rw.read_only = false;
        Dataset::Open(dir, rw)->CreateMetaIndex("label");
      }
      const PushOptions layout = Layout(partitioned);
      Push(dir, w.url, layout);
      BOOST_TEST(CheckText(w.url, false) == "");
      // v1's record says "c9"; the meta index still files it under "c1".
      PublishEditedIndex(
          w, dir,
          [](engine::DatasetImpl& impl, index::Txn& txn) {
            index::VideoRecord v = *impl.FindRecord(txn, "v1");
            v.meta_data = "[{\"label\": \"c9\"}]";
            impl.PutVideo(txn, "v1", v);
          },
          partitioned);
      for (const bool deep : {false, true}) {
        const std::string problems = CheckText(w.url, deep);
        BOOST_TEST(Contains(problems, "meta index"), problems);
        BOOST_TEST(Contains(problems, "'v1'"), problems);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(check_of_a_url_finds_chunk_entries_readers_or_exporters_would_refuse) {
  for (const bool partitioned : {true, false}) {
    BOOST_TEST_CONTEXT("partitioned: " << partitioned) {
      World w;
      const std::string dir = w.tmp / "local";
      MakeDataset(dir, 7);
      const PushOptions layout = Layout(partitioned);
      Push(dir, w.url, layout);
      BOOST_TEST(CheckText(w.url, true) == "");
      // A chunk entry without its .gmeta (GulpIO readers of the bucket then
      // pair data files and .gmeta wrongly), and one whose CRC-32C is not
      // its object's.
      EditPublishedChunks(w, [](std::vector<engine::ManifestChunk>* chunks) {
        chunks->at(0).gmeta_key.clear();
        chunks->at(1).crc32c = *chunks->at(1).crc32c ^ 1u;
      });
      const std::string quick = CheckText(w.url, false);
      BOOST_TEST(Contains(quick, "chunk 0"), quick);
      BOOST_TEST(Contains(quick, ".gmeta"), quick);
      const std::string deep = CheckText(w.url, true);
      BOOST_TEST(Contains(deep, "chunk 0"), deep);
      BOOST_TEST(Contains(deep, w.url + "/data_1.gulp"), deep);
      BOOST_TEST(Contains(deep, "CRC-32C"), deep);
      // A push with the overwrite option publishes sound entries again (it
      // takes neither the .gmeta names nor the CRC-32Cs on trust).
      PushOptions overwrite = layout;
      overwrite.overwrite = true;
      BOOST_TEST(Push(dir, w.url, overwrite).published);
      BOOST_TEST(CheckText(w.url, true) == "");
      // A .gmeta name that export refuses, in the snapshot's chunk record
      // (one in the manifest is refused as the manifest is read).
      PublishEditedSnapshot(
          w, dir, [](index::ChunkRecord* r) { r->meta_file = "meta\x01.gmeta"; }, partitioned);
      const std::string recorded = CheckText(w.url, false);
      BOOST_TEST(Contains(recorded, "chunk 0"), recorded);
      BOOST_TEST(Contains(recorded, "not a safe relative name"), recorded);
    }
  }
}

BOOST_AUTO_TEST_CASE(check_deep_of_a_url_finds_chunk_bytes_damaged_before_they_were_stored) {
  // What a store that checks no hash kept of a body flipped in transit,
  // with the manifest recording that object's ETag: a dataset without
  // checksums, a byte flipped inside a JPEG's entropy-coded data (which a
  // decoder need not notice). Only the chunk's CRC-32C tells.
  for (const bool partitioned : {true, false}) {
    BOOST_TEST_CONTEXT("partitioned: " << partitioned) {
      World w;
      const std::string dir = w.tmp / "local";
      {
        CreateOptions c;
        c.videos_per_chunk = 3;
        c.checksums = false;
        auto ds = Dataset::Create(dir, c);
        auto writer = ds->NewWriter();
        for (int i = 0; i < 4; ++i) {
          const std::vector<std::string> frames = test::FixtureFrames(std::to_string(i));
          writer->Append("v" + std::to_string(i), test::Views(frames), "{}");
        }
        writer->Commit();
      }
      const PushOptions layout = Layout(partitioned);
      Push(dir, w.url, layout);
      const VideoInfo v0 = Dataset::Open(dir)->Get("v0");
      std::string bytes = w.client->Get(w.Key("data_0.gulp"));
      bytes[v0.frames[0].offset + v0.frames[0].length / 2] ^= 0x04;
      const std::string etag = w.client->Put(w.Key("data_0.gulp"), bytes);
      EditPublishedChunks(
          w, [&](std::vector<engine::ManifestChunk>* chunks) { chunks->at(0).etag = etag; });
      const std::string deep = CheckText(w.url, true);
      BOOST_TEST(Contains(deep, w.url + "/data_0.gulp"), deep);
      BOOST_TEST(Contains(deep, "CRC-32C"), deep);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_chunk_record_that_is_not_sound_is_an_error_naming_the_dataset_and_object) {
  for (const bool partitioned : {true, false}) {
    BOOST_TEST_CONTEXT("partitioned: " << partitioned) {
      World w;
      const std::string dir = w.tmp / "local";
      MakeDataset(dir, 7);
      const PushOptions layout = Layout(partitioned);
      Push(dir, w.url, layout);
      PublishEditedSnapshot(
          w, dir, [](index::ChunkRecord* r) { r->live_bytes = r->committed_length + 1; },
          partitioned);
      try {
        ContentOf(*Dataset::Open(w.url));
        BOOST_FAIL("read a dataset whose chunk record is not sound");
      } catch (const CorruptionError& e) {
        BOOST_TEST(Contains(e.what(), "live bytes exceed the committed length"), e.what());
        BOOST_TEST(Contains(e.what(), w.url), e.what());
        BOOST_TEST(Contains(e.what(), "data_0.gulp"), e.what());
      }
      const std::string problems = CheckText(w.url, false);
      BOOST_TEST(Contains(problems, "live bytes exceed the committed length"), problems);
      BOOST_TEST(Contains(problems, w.url), problems);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_bounded_get_stops_before_the_bytes_of_a_larger_object_arrive) {
  World w;
  const std::string key = w.Key("big");
  w.client->Put(key, test::RandomBytes(8 << 20, 3));
  remote::S3Client client(
      test::TestConfig(Server().endpoint(), S3rverServer::kAccessKey, S3rverServer::kSecretKey),
      Server().bucket());
  const std::string path = w.tmp / "big.part";
  try {
    client.GetToFile(key, path, 1000);
    BOOST_FAIL("a GET bounded to 1000 bytes returned an 8 MiB object");
  } catch (const remote::ObjectTooLargeError& e) {
    BOOST_TEST(Contains(e.what(), "larger than the 1000 bytes"), e.what());
  }
  BOOST_TEST(!fs::exists(path));
  BOOST_CHECK_THROW(client.Get(key, nullptr, 1000), remote::ObjectTooLargeError);
  BOOST_TEST(client.stats().bytes_received < (1u << 20), client.stats().bytes_received);
  BOOST_TEST(client.GetToFile(key, path, 8 << 20).size == (8u << 20));
}

BOOST_AUTO_TEST_CASE(retry_after_is_read_as_seconds_or_an_http_date) {
  const auto now = std::chrono::system_clock::from_time_t(1445412480);  // 2015-10-21 07:28:00 UTC
  BOOST_TEST(*remote::ParseRetryAfterMs("120", now) == 120000u);
  BOOST_TEST(*remote::ParseRetryAfterMs(" 0 ", now) == 0u);
  BOOST_TEST(*remote::ParseRetryAfterMs("Wed, 21 Oct 2015 07:28:05 GMT", now) == 5000u);
  BOOST_TEST(*remote::ParseRetryAfterMs("Wed, 21 Oct 2015 07:27:00 GMT", now) == 0u);  // passed
  for (const char* bad : {"", "soon", "-5", "1.5", "Wed, 21 Oct 2015 07:28:05", "12abc"}) {
    BOOST_TEST(!remote::ParseRetryAfterMs(bad, now).has_value(), bad);
  }
  remote::RetryPolicy p;
  p.max_attempts = 3;
  p.retry_budget_ms = 10000;
  p.backoff_max_ms = 5000;
  BOOST_TEST(remote::MayRetry(p, 1, 0));
  BOOST_TEST(remote::MayRetry(p, 7, 9999));  // past max_attempts, within the budget
  BOOST_TEST(!remote::MayRetry(p, 7, 10000));
  BOOST_TEST(remote::MayRetry(p, 2, 60000));  // within max_attempts
  BOOST_TEST(remote::RetryAfterCapMs(p) == 10000u);
  p.retry_budget_ms = 0;
  BOOST_TEST(remote::RetryAfterCapMs(p) == 5000u);
}

BOOST_AUTO_TEST_CASE(a_request_rides_out_a_server_restart_within_its_retry_budget) {
  World w;
  const std::string key = w.Key("small");
  w.client->Put(key, "hello");
  remote::S3Config config =
      test::TestConfig(Server().endpoint(), S3rverServer::kAccessKey, S3rverServer::kSecretKey);
  config.max_attempts = 3;
  config.backoff_max_ms = 500;
  config.retry_budget_ms = 10000;
  remote::S3Client patient(config, Server().bucket());
  config.retry_budget_ms = 0;
  remote::S3Client hasty(config, Server().bucket());
  Server().Stop();
  BOOST_CHECK_THROW(hasty.Get(key), IoError);  // 3 attempts, then the error
  // The server is restarted from this thread (it dies with the thread that
  // started it); the GET runs on another.
  const auto start = std::chrono::steady_clock::now();
  std::string got;
  std::string error;
  std::thread reader([&] {
    try {
      got = patient.Get(key);
    } catch (const Error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(3));
  Server().Start();
  reader.join();
  BOOST_TEST(error == "");
  BOOST_TEST(got == "hello");
  BOOST_TEST((std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(2500)));
  BOOST_TEST(patient.stats().attempts > 3u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb
