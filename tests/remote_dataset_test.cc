// Remote datasets end to end, against a real S3 server (s3rver) started by
// the suite, and the signature-checking, fault-injecting proxy in front of
// it: push, read every frame back, reopen cheaply, keep old readers right
// across appends and compaction, refuse to change promised bytes, survive a
// server restart, and say clearly what a 403 or a 404 means. Also the
// shared-file-system rule (a read-only open on a network file system reads
// the published snapshot or refuses), through the GULPDB_TEST_FS_TYPE hook.
// And the push's safety: a prefix holding what this dataset's pushes did not
// write is refused; a push that loses a race (stopped at a test point while
// another one publishes) replaces nothing the winner's manifest names; the
// push lease; a store that ignores conditional writes; readers that refuse a
// replaced object and follow a grown one; copies of a reader that open only
// the snapshot they were made from.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/fault_injection.h"
#include "engine/remote/manifest.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/maintenance.h"
#include "gulpdb/remote.h"
#include "index/records.h"
#include "s3/s3_client.h"
#include "support/push_world.h"
#include "support/remote_fixture.h"
#include "support/test_util.h"
#include "tests/harness/s3_server.h"
#include "util/sha256.h"

namespace gulpdb {
namespace {

using test::S3ProxyServer;
using test::S3rverServer;
using test::ScopedEnv;
using test::TempDir;

test::S3rverServer& Server() { return test::SharedS3rver(); }

test::S3ProxyServer& Proxy() {
  static std::unique_ptr<S3ProxyServer> proxy = std::make_unique<S3ProxyServer>(Server().port());
  proxy->Reset();
  return *proxy;
}

using test::AllJpegs;
using test::AppendTagged;
using test::AtPushPoint;
using test::Contains;
using test::CopyDataset;
using test::ExpectPublishedIntact;
using test::ExpectSameJpegs;
using test::PublishedManifest;
using World = test::PushWorld;

// Appends the fixture videos [first, last) of frames_src, as ids "v<n>".
void AppendFixtureVideos(const std::string& dir, int first, int last,
                         uint32_t videos_per_chunk = 4) {
  std::unique_ptr<Dataset> ds;
  if (Dataset::Exists(dir)) {
    OpenOptions rw;
    rw.read_only = false;
    ds = Dataset::Open(dir, rw);
  } else {
    CreateOptions c;
    c.videos_per_chunk = videos_per_chunk;
    ds = Dataset::Create(dir, c);
  }
  auto writer = ds->NewWriter();
  for (int i = first; i < last; ++i) {
    const std::vector<std::string> frames = test::FixtureFrames(std::to_string(i % 22));
    writer->Append("v" + std::to_string(i), test::Views(frames),
                   "{\"label\": \"c" + std::to_string(i % 3) + "\"}");
  }
  writer->Commit();
}

std::vector<FrameRequest> AllRequests(const Dataset& ds) {
  std::vector<FrameRequest> requests;
  for (const std::string& id : ds.Ids()) requests.push_back(FrameRequest{id, Selection::All()});
  return requests;
}

uint64_t Requests(const Dataset& ds) { return GetRemoteInfo(ds)->requests; }

// The keys under the test's prefix, with each object's bytes.
std::map<std::string, std::string> PrefixContents(const World& w) {
  auto client = w.Client();
  std::map<std::string, std::string> out;
  for (const remote::ListedObject& o : client->List(w.prefix).objects) {
    out[o.key.substr(w.prefix.size())] = client->Get(o.key);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(remote_dataset_test)

BOOST_AUTO_TEST_CASE(push_then_every_frame_reads_back_byte_and_pixel_exact) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 22);
  const PushReport report = Push(dir, w.url);
  BOOST_TEST(report.published);
  BOOST_TEST(report.generation == 1u);
  BOOST_TEST(report.chunks == 6u);
  BOOST_TEST(report.chunks_uploaded == 6u);

  auto local = Dataset::Open(dir);
  auto remote_ds = Dataset::Open(w.url);
  BOOST_TEST(remote_ds->dir() == w.url);
  BOOST_TEST(remote_ds->read_only());
  BOOST_TEST(remote_ds->Ids() == local->Ids(), boost::test_tools::per_element());
  BOOST_TEST(remote_ds->Stats().frames == local->Stats().frames);
  ExpectSameJpegs(*remote_ds, AllJpegs(*local));
  // Pixels, one video at a time and as one batch.
  const std::vector<FrameRequest> requests = AllRequests(*local);
  const std::vector<DecodedFrames> want = local->ReadBatch(requests);
  const std::vector<DecodedFrames> got = remote_ds->ReadBatch(requests);
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    BOOST_REQUIRE_EQUAL(got[r].byte_size(), want[r].byte_size());
    BOOST_TEST(std::memcmp(got[r].data(0), want[r].data(0), got[r].byte_size()) == 0);
    const DecodedFrames one = remote_ds->ReadFrames(requests[r].id, Selection::Slice(1, 3, 1));
    const DecodedFrames ref = local->ReadFrames(requests[r].id, Selection::Slice(1, 3, 1));
    BOOST_REQUIRE_EQUAL(one.size(), ref.size());
    if (!one.empty()) BOOST_TEST(std::memcmp(one.data(0), ref.data(0), one.byte_size()) == 0);
  }
  // Meta and chunk records come from the snapshot.
  BOOST_TEST(remote_ds->Get("v5").meta_data == local->Get("v5").meta_data);
  BOOST_TEST(remote_ds->Chunks().size() == local->Chunks().size());
  // The bucket is a GulpIO directory: data and .gmeta objects side by side.
  auto client = w.Client();
  BOOST_TEST(client->Get(w.Key("meta_0.gmeta")).substr(0, 6) == "{\"v0\":");
  BOOST_TEST(client->Head(w.Key("data_5.gulp")).size == local->Chunks()[5].committed_length);
  // A deep check over the URL reads every frame and finds nothing wrong.
  CheckOptions deep;
  deep.deep = true;
  const CheckReport check = Check(w.url, deep);
  BOOST_TEST(check.healthy());
  BOOST_TEST(check.frames == local->Stats().frames);
}

// A dataset whose shards were merged in place (as the distributed ingest
// does) has chunk files in sub-directories; in the bucket every chunk is
// data_<N>.gulp beside meta_<N>.gmeta, so GulpIO readers of the prefix pair
// each data file with its .gmeta.
BOOST_AUTO_TEST_CASE(attached_shards_are_published_as_one_flat_gulpio_directory) {
  World w;
  const std::string out = w.tmp / "out";
  AppendFixtureVideos(out, 0, 5);
  std::filesystem::create_directories(out + "/shards");
  AppendFixtureVideos(out + "/shards/a", 5, 14);
  AppendFixtureVideos(out + "/shards/b", 14, 18);
  Merge(out, {out + "/shards/a", out + "/shards/b"});
  Push(out, w.url);

  auto local = Dataset::Open(out);
  // A local export leaves out the chunks of attached shards (their data
  // files are in the shards' sub-directories); an export of the pushed
  // dataset, flat, writes a .gmeta for every chunk.
  const std::string exported = w.tmp / "exported";
  const std::string exported_local = w.tmp / "exported_local";
  std::filesystem::create_directories(exported);
  std::filesystem::create_directories(exported_local);
  ExportGmeta(*Dataset::Open(w.url), exported);
  ExportGmeta(*local, exported_local);
  auto client = w.Client();
  std::set<std::string> keys;
  for (const remote::ListedObject& o : client->List(w.prefix).objects) {
    keys.insert(o.key.substr(w.prefix.size()));
  }
  size_t attached = 0;
  for (const ChunkInfo& c : local->Chunks()) {
    const std::string n = std::to_string(c.number);
    BOOST_TEST_INFO("chunk " << n << " (" << c.file_name << ")");
    BOOST_TEST(keys.count("data_" + n + ".gulp") == 1u);
    BOOST_TEST(keys.count("meta_" + n + ".gmeta") == 1u);
    const bool in_shard = c.file_name.find('/') != std::string::npos;
    if (in_shard) ++attached;
    BOOST_TEST(std::filesystem::exists(exported_local + "/meta_" + n + ".gmeta") == !in_shard);
    if (!in_shard) {
      BOOST_TEST((test::ReadFile(exported_local + "/meta_" + n + ".gmeta") ==
                  test::ReadFile(exported + "/meta_" + n + ".gmeta")));
    }
    // The objects are what a GulpIO reader needs: the chunk's bytes and the
    // .gmeta that an export writes for it.
    const std::string data = client->Get(w.Key("data_" + n + ".gulp"));
    BOOST_TEST((data == test::ReadFile(out + "/" + c.file_name).substr(0, c.committed_length)));
    BOOST_TEST((client->Get(w.Key("meta_" + n + ".gmeta")) ==
                test::ReadFile(exported + "/meta_" + n + ".gmeta")));
  }
  BOOST_TEST(attached == 4u);  // 3 chunks of shard a, 1 of shard b
  for (const std::string& key : keys) BOOST_TEST(key.find("shards/") == std::string::npos, key);
  ExpectSameJpegs(*Dataset::Open(w.url), AllJpegs(*local));
}

BOOST_AUTO_TEST_CASE(large_chunks_upload_in_parts_and_read_back) {
  S3ProxyServer& proxy = Proxy();
  World w(proxy.endpoint(), S3ProxyServer::kAccessKey, S3ProxyServer::kSecretKey);
  w.env.Set("GULPDB_S3_MULTIPART_THRESHOLD", std::to_string(6u << 20));
  w.env.Set("GULPDB_S3_PART_SIZE", std::to_string(5u << 20));
  const std::string dir = w.tmp / "local";
  std::vector<std::string> frames;
  for (uint32_t i = 0; i < 13; ++i) frames.push_back(test::FakeJpeg(1000003 + i, i));
  {
    auto ds = Dataset::Create(dir);
    auto writer = ds->NewWriter();
    writer->Append("big", test::Views(frames), "{}");
    writer->Commit();
  }
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  PushOptions options;
  options.progress = [&](uint64_t done, uint64_t total) { progress.emplace_back(done, total); };
  const PushReport report = Push(dir, w.url, options);
  BOOST_TEST(report.bytes_uploaded > (13u << 20) - (1u << 20));
  BOOST_REQUIRE(!progress.empty());
  BOOST_TEST(progress.back().first == progress.back().second);
  const std::string log = proxy.Log();
  BOOST_TEST(Contains(log, "data_0.gulp?partNumber=3"), log.substr(0, 2000));
  BOOST_TEST(proxy.Stats().signature_failures == 0u);
  auto ds = Dataset::Open(w.url);
  const StoredFrames got = ds->ReadJpegs("big");
  BOOST_REQUIRE_EQUAL(got.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) BOOST_TEST(got[i] == frames[i]);
}

BOOST_AUTO_TEST_CASE(one_range_request_per_run_and_a_batch_issues_them_together) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 8);
  Push(dir, w.url, test::WholeSnapshot());
  auto ds = Dataset::Open(w.url);
  uint64_t before = Requests(*ds);
  ds->ReadJpegs("v1", Selection::Slice(0, 3, 1));  // three adjacent frames: one run
  BOOST_TEST(Requests(*ds) - before == 1u);
  before = Requests(*ds);
  ds->ReadJpegs("v1", Selection::Indices({0, 2}));  // two runs
  BOOST_TEST(Requests(*ds) - before == 2u);
  before = Requests(*ds);
  std::vector<FrameRequest> batch;
  for (int i = 0; i < 8; ++i) batch.push_back({"v" + std::to_string(i), Selection::Slice(0, 2, 1)});
  ds->ReadJpegBatch(batch);
  BOOST_TEST(Requests(*ds) - before == 8u);

  // Concurrently: with every GET delayed by 400 ms, 8 clips take about one
  // delay, not eight.
  S3ProxyServer& proxy = Proxy();
  w.UseEndpoint(proxy.endpoint(), S3ProxyServer::kAccessKey, S3ProxyServer::kSecretKey);
  auto through_proxy = Dataset::Open(w.url);
  proxy.AddFault(R"({"kind": "delay", "delay_ms": 400, "count": 8, "method": "GET"})");
  const auto start = std::chrono::steady_clock::now();
  const std::vector<StoredFrames> got = through_proxy->ReadJpegBatch(batch);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(proxy.Stats().faults_injected == 8u);
  BOOST_TEST(seconds < 4 * 0.4, "8 delayed requests took " << seconds << " s: not concurrent");
  const StoredFrames v3 = ds->ReadJpegs("v3");
  BOOST_TEST(got[3][0] == v3[0]);

  // A deep check reads each video's adjacent frames in one request too,
  // and each (small) chunk object whole in one more, for its CRC-32C.
  proxy.Reset();
  CheckOptions deep;
  deep.deep = true;
  const CheckReport check = Check(w.url, deep);
  BOOST_TEST(check.healthy());
  const uint64_t chunks = ds->Chunks().size();
  BOOST_TEST(check.frames > check.videos + 2 * chunks + 1);
  BOOST_TEST(proxy.Stats().requests <= check.videos + 2 * chunks + 1,
             proxy.Stats().requests << " requests to check " << check.videos << " videos in "
                                    << chunks << " chunks");
}

BOOST_AUTO_TEST_CASE(reopening_an_unchanged_dataset_costs_one_small_get) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 6);
  Push(dir, w.url, test::WholeSnapshot());
  {
    auto first = Dataset::Open(w.url);
    const RemoteInfo info = *GetRemoteInfo(*first);
    BOOST_TEST(info.snapshot_downloaded);
    BOOST_TEST(info.requests == 2u);  // the manifest, the snapshot
    BOOST_TEST(info.generation == 1u);
  }
  auto again = Dataset::Open(w.url);
  const RemoteInfo info = *GetRemoteInfo(*again);
  BOOST_TEST(!info.snapshot_downloaded);
  BOOST_TEST(info.requests == 1u);
  BOOST_TEST(info.bytes_received < 8192u);
  // Pushing an unchanged dataset publishes nothing.
  const PushReport report = Push(dir, w.url, test::WholeSnapshot());
  BOOST_TEST(!report.published);
  BOOST_TEST(report.generation == 1u);
  BOOST_TEST(report.chunks_uploaded == 0u);

  // Partitioned (push's default): a re-open GETs the manifest and the root
  // (small), and a read of a video whose partitions this node holds fetches
  // none of them again.
  const PushReport partitioned = Push(dir, w.url + "-p");
  BOOST_TEST(partitioned.partitioned);
  Dataset::Open(w.url + "-p")->ReadJpegs("v1");
  auto reopened = Dataset::Open(w.url + "-p");
  reopened->ReadJpegs("v1");
  const RemoteInfo p = *GetRemoteInfo(*reopened);
  BOOST_TEST(p.partitioned);
  BOOST_TEST(p.partitions_downloaded == 0u);
  // The manifest and v1's frames: the root and the chunk page are in the
  // node cache too.
  BOOST_TEST(p.requests == 2u);
  BOOST_TEST(!Push(dir, w.url + "-p").published);
  // A damaged cached root or page is fetched again, and reads stay right.
  const std::string objects = w.tmp / "cache/objects";
  BOOST_REQUIRE(std::filesystem::is_directory(objects));
  size_t damaged = 0;
  for (const auto& e : std::filesystem::directory_iterator(objects)) {
    std::string bytes = test::ReadFile(e.path().string());
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x20);
    test::WriteFile(e.path().string(), bytes);
    ++damaged;
  }
  BOOST_TEST(damaged == 2u);  // the root and the one chunk page
  auto repaired = Dataset::Open(w.url + "-p");
  const StoredFrames got = repaired->ReadJpegs("v1");
  const StoredFrames want = Dataset::Open(dir)->ReadJpegs("v1");
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) BOOST_TEST(got[i] == want[i]);
  BOOST_TEST(GetRemoteInfo(*repaired)->requests == 4u);  // the manifest, root, page, frames
}

BOOST_AUTO_TEST_CASE(old_readers_keep_reading_across_appends_and_compaction) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 10);
  Push(dir, w.url);
  auto reader1 = Dataset::Open(w.url);
  const auto want1 = AllJpegs(*Dataset::Open(dir));

  // Appends grow the last chunk object and add new ones.
  AppendFixtureVideos(dir, 10, 15);
  const PushReport appended = Push(dir, w.url);
  BOOST_TEST(appended.generation == 2u);
  BOOST_TEST(appended.chunks_uploaded >= 2u);
  ExpectSameJpegs(*reader1, want1);
  BOOST_TEST(reader1->Count() == 10u);

  // Removal + compaction: chunks are emptied, their objects kept for the
  // grace period.
  {
    OpenOptions rw;
    rw.read_only = false;
    auto local = Dataset::Open(dir, rw);
    local->Remove({"v1", "v2", "v5", "v6"});
    Compact(*local);
  }
  const PushReport compacted = Push(dir, w.url);
  BOOST_TEST(compacted.generation == 3u);
  BOOST_TEST(compacted.objects_obsoleted >= 1u);
  BOOST_TEST(compacted.objects_deleted == 0u);
  ExpectSameJpegs(*reader1, want1);
  const auto want3 = AllJpegs(*Dataset::Open(dir));
  auto reader3 = Dataset::Open(w.url);
  BOOST_TEST(reader3->Count() == 11u);
  ExpectSameJpegs(*reader3, want3);
  // A pinned generation opens as it was published.
  OpenOptions pinned;
  pinned.generation = 1;
  auto again1 = Dataset::Open(w.url, pinned);
  BOOST_TEST(again1->Count() == 10u);
  ExpectSameJpegs(*again1, want1);

  // Once the grace period is over, a later push deletes what compaction made
  // obsolete: the old reader then gets a CorruptionError that says why.
  PushOptions no_grace;
  no_grace.grace = std::chrono::seconds(0);
  AppendFixtureVideos(dir, 15, 16);
  const PushReport later = Push(dir, w.url, no_grace);
  BOOST_TEST(later.objects_deleted >= 1u);
  bool failed = false;
  for (const auto& [id, frames] : want1) {
    try {
      reader1->ReadJpegs(id);
    } catch (const CorruptionError& e) {
      failed = true;
      BOOST_TEST(Contains(e.what(), "grace period"));
      BOOST_TEST(Contains(e.what(), "deleted behind the manifest's back"));
      break;
    }
  }
  BOOST_TEST(failed, "a reader of generation 1 read after its objects were deleted");
  ExpectSameJpegs(*Dataset::Open(w.url), AllJpegs(*Dataset::Open(dir)));
  // The next push deletes generation 1's manifest copy too (superseded by
  // generation 3's push, grace now 0).
  AppendFixtureVideos(dir, 16, 17);
  Push(dir, w.url, no_grace);
  BOOST_CHECK_THROW(Dataset::Open(w.url, pinned), NotFoundError);
}

BOOST_AUTO_TEST_CASE(push_refuses_to_change_bytes_an_older_reader_may_read) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 6);  // chunks 0 (4 videos) and 1 (2 videos, open)
  Push(dir, w.url);
  auto client = w.Client();
  const std::string before = client->Get(w.Key("data_1.gulp"));
  // The local chunk is rewritten inside its published bytes, then grows.
  {
    const std::string path = dir + "/data_1.gulp";
    std::string bytes = test::ReadFile(path);
    bytes[100] = static_cast<char>(bytes[100] ^ 0x40);
    test::WriteFile(path, bytes);
  }
  AppendFixtureVideos(dir, 6, 7);
  try {
    Push(dir, w.url);
    BOOST_FAIL("push changed published bytes");
  } catch (const CorruptionError& e) {
    BOOST_TEST(Contains(e.what(), "data_1.gulp"));
    BOOST_TEST(Contains(e.what(), "CRC-32C"));
  }
  BOOST_TEST(client->Get(w.Key("data_1.gulp")) == before);
  BOOST_TEST(PublishedManifest(w, *client).generation == 1u);
}

BOOST_AUTO_TEST_CASE(a_server_killed_in_the_middle_of_reads_comes_back_to_the_same_dataset) {
  World w;
  // Reads fail while the server is away (no retry budget to ride it out:
  // remote_hardening_test shows the budget doing that).
  w.env.Set("GULPDB_S3_RETRY_BUDGET_MS", "0");
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 8);
  Push(dir, w.url);
  const auto want = AllJpegs(*Dataset::Open(dir));
  auto ds = Dataset::Open(w.url);
  ExpectSameJpegs(*ds, want);

  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, failures{0}, successes{0};
  std::string failure_text;
  std::mutex mutex;
  std::thread reader([&] {
    while (!stop) {
      for (const auto& [id, frames] : want) {
        try {
          const StoredFrames got = ds->ReadJpegs(id);
          for (size_t i = 0; i < got.size(); ++i) {
            if (got[i] != frames[i]) ++wrong;
          }
          ++successes;
        } catch (const IoError& e) {
          ++failures;
          std::lock_guard<std::mutex> lock(mutex);
          failure_text = e.what();
        }
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Server().Stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  const int failed_while_down = failures.load();
  Server().Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int successes_after = successes.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  stop = true;
  reader.join();
  BOOST_TEST(wrong.load() == 0);
  BOOST_TEST(failed_while_down > 0);
  BOOST_TEST(successes.load() > successes_after, "no read succeeded after the restart");
  BOOST_TEST(Contains(failure_text, w.url + "/data_"), failure_text);
  BOOST_TEST(Contains(failure_text, "attempts"), failure_text);
  ExpectSameJpegs(*ds, want);
}

BOOST_AUTO_TEST_CASE(a_wrong_secret_key_is_an_access_denied_error_naming_the_bucket) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 3);
  Push(dir, w.url);
  S3ProxyServer& proxy = Proxy();
  w.UseEndpoint(proxy.endpoint(), S3ProxyServer::kAccessKey, "not-the-secret");
  try {
    Dataset::Open(w.url);
    BOOST_FAIL("opened with a wrong secret key");
  } catch (const AccessDeniedError& e) {
    BOOST_TEST(Contains(e.what(), "bucket '" + Server().bucket() + "'"), e.what());
    BOOST_TEST(Contains(e.what(), "SignatureDoesNotMatch"), e.what());
  }
  BOOST_TEST(proxy.Stats().signature_failures >= 1u);
  BOOST_CHECK_THROW(Push(dir, w.url), AccessDeniedError);
  // The right key through the same proxy works.
  w.UseEndpoint(proxy.endpoint(), S3ProxyServer::kAccessKey, S3ProxyServer::kSecretKey);
  BOOST_TEST(Dataset::Open(w.url)->Count() == 3u);
}

BOOST_AUTO_TEST_CASE(an_object_deleted_behind_the_manifests_back_is_a_corruption_error) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 8);
  Push(dir, w.url);
  auto ds = Dataset::Open(w.url);
  w.Client()->Delete(w.Key("data_1.gulp"));
  BOOST_TEST(ds->ReadJpegs("v0").size() > 0u);  // chunk 0 is still there
  try {
    ds->ReadJpegs("v5");  // chunk 1
    BOOST_FAIL("read a deleted object");
  } catch (const CorruptionError& e) {
    BOOST_TEST(Contains(e.what(), w.url + "/data_1.gulp"), e.what());
    BOOST_TEST(Contains(e.what(), "404"), e.what());
    BOOST_TEST(Contains(e.what(), "deleted behind the manifest's back"), e.what());
  }
  const CheckReport check = Check(w.url);
  BOOST_TEST(!check.healthy());
  BOOST_TEST(Contains(check.problems.at(0).where, "data_1.gulp"));
}

BOOST_AUTO_TEST_CASE(an_object_changed_behind_the_manifests_back_is_a_corruption_error) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 4);
  Push(dir, w.url);
  auto ds = Dataset::Open(w.url);  // verify_checksums off: remote reads check anyway
  auto client = w.Client();
  std::string bytes = client->Get(w.Key("data_0.gulp"));
  const VideoInfo v2 = ds->Get("v2");
  bytes[v2.frames[0].offset + 200] ^= 0x01;  // inside the first frame of v2, same size
  client->Put(w.Key("data_0.gulp"), bytes);
  // Every frame of the object is refused now, changed or not: the object is
  // not the one the manifest names.
  for (const char* id : {"v2", "v1"}) {
    try {
      ds->ReadFrames(id);
      BOOST_FAIL("read an object that changed behind the manifest's back");
    } catch (const CorruptionError& e) {
      BOOST_TEST(Contains(e.what(), "replaced behind the manifest's back"), e.what());
      BOOST_TEST(Contains(e.what(), w.url + "/data_0.gulp"), e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(
    an_object_of_a_no_checksum_dataset_replaced_with_same_length_bytes_is_refused) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 6, 0, /*checksums=*/false);
  Push(dir, w.url);
  auto ds = Dataset::Open(w.url);
  const auto want = AllJpegs(*Dataset::Open(dir));
  ExpectSameJpegs(*ds, want);
  const uint64_t requests = Requests(*ds);
  ds->ReadJpegs("v1");
  BOOST_TEST(Requests(*ds) == requests + 1, "a normal read costs one range GET");
  auto client = w.Client();
  std::string bytes = client->Get(w.Key("data_0.gulp"));
  const VideoInfo v1 = ds->Get("v1");
  BOOST_REQUIRE(v1.checksums.empty());
  bytes[v1.frames[0].offset + 300] ^= 0x10;  // same length: only the ETag tells
  client->Put(w.Key("data_0.gulp"), bytes);
  try {
    ds->ReadJpegs("v1");
    BOOST_FAIL("a no-checksum dataset served bytes replaced behind the manifest's back");
  } catch (const CorruptionError& e) {
    BOOST_TEST(Contains(e.what(), w.url + "/data_0.gulp"), e.what());
    BOOST_TEST(Contains(e.what(), "replaced behind the manifest's back"), e.what());
  }
  // A reader of the dataset opened afresh refuses it as well; chunk 1 reads.
  w.FreshCache("cache2");
  auto fresh = Dataset::Open(w.url);
  BOOST_CHECK_THROW(fresh->ReadJpegs("v0"), CorruptionError);
  BOOST_TEST(fresh->ReadJpegs("v5")[0] == want.at("v5")[0]);
}

BOOST_AUTO_TEST_CASE(an_old_reader_keeps_reading_while_a_grown_chunk_is_pushed_again) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 6, 0, /*checksums=*/false);  // chunk 1 holds 2 videos, open
  Push(dir, w.url);
  const auto want1 = AllJpegs(*Dataset::Open(dir));
  auto reader1 = Dataset::Open(w.url);
  ExpectSameJpegs(*reader1, want1);
  const std::string etag1 = w.Client()->Head(w.Key("data_1.gulp")).etag;
  // The grown chunk 1 is uploaded under the same key: while its manifest is
  // not yet published, and after.
  AppendTagged(dir, "v", 6, 8, 0, false);
  int read_in_flight = 0;
  AtPushPoint hook(engine::fault::Point::kPushBeforePublish, [&] {
    BOOST_REQUIRE(w.Client()->Head(w.Key("data_1.gulp")).etag != etag1);
    ExpectSameJpegs(*reader1, want1);
    ++read_in_flight;
  });
  BOOST_TEST(Push(dir, w.url).generation == 2u);
  BOOST_TEST(read_in_flight == 1);
  ExpectSameJpegs(*reader1, want1);
  BOOST_TEST(reader1->Count() == 6u);
  // And once more, two generations behind.
  AppendTagged(dir, "v", 8, 9, 0, false);
  Push(dir, w.url);
  ExpectSameJpegs(*reader1, want1);
  // A normal read after that costs one request again (the new ETag is kept).
  const uint64_t requests = Requests(*reader1);
  reader1->ReadJpegs("v5");
  BOOST_TEST(Requests(*reader1) == requests + 1);
}

BOOST_AUTO_TEST_CASE(a_push_that_loses_a_race_replaces_nothing_the_winners_manifest_names) {
  // Two states of one dataset (one a later state of the other), and two
  // copies that diverged: the first push stops after planning, the second
  // runs whole meanwhile and publishes.
  for (const bool diverged : {false, true}) {
    BOOST_TEST_CONTEXT((diverged ? "two copies that diverged" : "two states of one dataset")) {
      World w;
      const std::string base = w.tmp / "base";
      AppendTagged(base, "v", 0, 6, 0);  // chunks 0 (4 videos) and 1 (2, open)
      Push(base, w.url);
      const std::string loser = w.tmp / "loser";
      const std::string winner = w.tmp / "winner";
      CopyDataset(base, loser);
      CopyDataset(base, winner);
      if (diverged) {
        AppendTagged(loser, "a", 6, 9, 5);
        AppendTagged(winner, "b", 6, 8, 11);
      } else {
        AppendTagged(loser, "v", 6, 7, 0);    // an older state ...
        AppendTagged(winner, "v", 6, 11, 0);  // ... of this one
      }
      const auto want = AllJpegs(*Dataset::Open(winner));
      AtPushPoint hook(engine::fault::Point::kPushPlanned,
                       [&] { BOOST_TEST(Push(winner, w.url).generation == 2u); });
      try {
        Push(loser, w.url);
        BOOST_FAIL("the losing push succeeded");
      } catch (const BusyError& e) {
        // It read the manifest again under the lease, before its first write.
        BOOST_TEST(Contains(e.what(), "another push published generation 2"), e.what());
        BOOST_TEST(Contains(e.what(), "published nothing"), e.what());
      }
      BOOST_TEST(hook.fired());
      auto client = w.Client();
      BOOST_TEST(PublishedManifest(w, *client).generation == 2u);
      ExpectPublishedIntact(w, want, diverged ? "cache-d" : "cache-s");
    }
  }
}

BOOST_AUTO_TEST_CASE(a_push_whose_listed_object_changed_meanwhile_stops_at_that_write) {
  // A push that died after uploading (no manifest of it) changed an object
  // after this push listed it: the manifest is as this push read it, but
  // its conditional write of that object is refused.
  World w;
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 6, 0);
  Push(dir, w.url, test::WholeSnapshot());
  const auto want = AllJpegs(*Dataset::Open(dir));
  const engine::ManifestChunk promised = PublishedManifest(w, *w.Client()).chunks.at(1);
  AppendTagged(dir, "v", 6, 8, 0);  // grows chunk 1
  auto client = w.Client();
  const std::string uuid = Dataset::Open(dir)->Stats().uuid;
  AtPushPoint hook(engine::fault::Point::kPushPlanned, [&] {
    remote::WriteOptions as_a_dead_push;
    as_a_dead_push.metadata = {
        {"gulpdb-dataset", uuid},
        {"gulpdb-push", "dead"},
        {"gulpdb-prefix", engine::PromiseText(promised.committed_length, *promised.crc32c)}};
    client->Put(w.Key("data_1.gulp"), test::ReadFile(dir + "/data_1.gulp"), as_a_dead_push);
  });
  try {
    Push(dir, w.url, test::WholeSnapshot());
    BOOST_FAIL("a push replaced an object that changed after it listed it");
  } catch (const BusyError& e) {
    BOOST_TEST(Contains(e.what(), "another push changed " + w.url + "/data_1.gulp"), e.what());
    BOOST_TEST(Contains(e.what(), "published nothing"), e.what());
  }
  BOOST_TEST(hook.fired());
  w.FreshCache("cache-raced");  // the grown object vouches for its first bytes
  ExpectSameJpegs(*Dataset::Open(w.url), want);
  BOOST_TEST(Push(dir, w.url, test::WholeSnapshot()).generation ==
             2u);  // run again, it goes through
  ExpectPublishedIntact(w, AllJpegs(*Dataset::Open(dir)), "cache-after");
}

BOOST_AUTO_TEST_CASE(what_an_interrupted_push_left_is_read_around_then_replaced_or_retired) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 6, 0, /*checksums=*/false);  // chunk 1 open, 2 videos
  Push(dir, w.url, test::WholeSnapshot());
  const auto want1 = AllJpegs(*Dataset::Open(dir));
  auto reader1 = Dataset::Open(w.url);
  auto client = w.Client();
  const engine::Manifest published = PublishedManifest(w, *client);
  // A push that uploads a grown chunk 1, a new chunk 2 and their .gmeta, and
  // dies before its manifest.
  AppendTagged(dir, "v", 6, 10, 0, false);
  {
    AtPushPoint die(engine::fault::Point::kPushBeforePublish,
                    [] { throw std::runtime_error("the pusher died"); });
    BOOST_CHECK_THROW(Push(dir, w.url, test::WholeSnapshot()), std::runtime_error);
  }
  BOOST_TEST(PublishedManifest(w, *client).generation == 1u);
  BOOST_REQUIRE(client->HeadIfExists(w.Key("data_2.gulp")).has_value());
  const remote::ObjectInfo grown = client->Head(w.Key("data_1.gulp"));
  BOOST_TEST(grown.etag != published.chunks.at(1).etag);
  BOOST_TEST(
      grown.metadata.at("gulpdb-prefix") ==
      engine::PromiseText(published.chunks.at(1).committed_length, *published.chunks.at(1).crc32c));
  // Its readers read on: the grown object says its first bytes are theirs.
  ExpectSameJpegs(*reader1, want1);
  w.FreshCache("cache-leftovers");
  ExpectSameJpegs(*Dataset::Open(w.url), want1);
  // The next push takes what was left as this dataset's: it replaces what it
  // writes again, and retires the rest (the dead push's snapshot).
  std::string dead_snapshot;
  for (const remote::ListedObject& o : client->List(w.prefix + "gulpdb.snapshots/").objects) {
    if (o.key != w.Key(published.snapshot_key)) dead_snapshot = o.key.substr(w.prefix.size());
  }
  BOOST_REQUIRE(!dead_snapshot.empty());
  {
    OpenOptions rw;
    rw.read_only = false;
    auto local = Dataset::Open(dir, rw);
    local->Remove({"v8", "v9"});
  }
  const PushReport r = Push(dir, w.url, test::WholeSnapshot());
  BOOST_TEST(r.published);
  BOOST_TEST(r.generation == 2u);
  BOOST_TEST(r.foreign_objects_deleted == 0u);
  ExpectPublishedIntact(w, AllJpegs(*Dataset::Open(dir)), "cache-after");
  ExpectSameJpegs(*reader1, want1);
  bool retired = false;
  for (const engine::ManifestObsolete& o : PublishedManifest(w, *client).obsolete) {
    retired = retired || o.key == dead_snapshot;
  }
  BOOST_TEST(retired, dead_snapshot << " is not listed as obsolete");
}

BOOST_AUTO_TEST_CASE(
    a_push_that_claims_a_taken_generation_or_a_changed_manifest_publishes_nothing) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 4, 0);
  Push(dir, w.url);
  AppendTagged(dir, "v", 4, 6, 0);
  auto client = w.Client();
  // Another writer of generation 2's copy meanwhile (a push that died between
  // its two manifest PUTs would leave one too).
  {
    AtPushPoint hook(engine::fault::Point::kPushBeforePublish, [&] {
      remote::WriteOptions as_a_push_of_it;
      as_a_push_of_it.metadata = {{"gulpdb-dataset", Dataset::Open(dir)->Stats().uuid},
                                  {"gulpdb-push", "another"}};
      client->Put(w.Key(engine::ManifestHistoryKey(2)), "{}", as_a_push_of_it);
    });
    try {
      Push(dir, w.url);
      BOOST_FAIL("claimed a generation whose copy exists");
    } catch (const BusyError& e) {
      BOOST_TEST(Contains(e.what(), "claimed generation 2"), e.what());
    }
  }
  BOOST_TEST(PublishedManifest(w, *client).generation == 1u);
  BOOST_TEST(client->Get(w.Key(engine::ManifestHistoryKey(2))) == "{}");
  // The manifest replaced meanwhile: the swap fails, and the copy this push
  // claimed is removed again.
  {
    AtPushPoint hook(engine::fault::Point::kPushBeforePublish, [&] {
      const std::string text = client->Get(w.Key(engine::kManifestKey));
      client->Put(w.Key(engine::kManifestKey), text + " ");  // another object, same generation
    });
    BOOST_CHECK_THROW(Push(dir, w.url), BusyError);
  }
  BOOST_TEST(PublishedManifest(w, *client).generation == 1u);
  BOOST_TEST(!client->HeadIfExists(w.Key(engine::ManifestHistoryKey(3))).has_value());
  // The next push goes past the taken generation 2, and keeps its stray copy
  // until the grace period is over.
  const PushReport r = Push(dir, w.url);
  BOOST_TEST(r.generation == 3u);
  BOOST_TEST(Dataset::Open(w.url)->Count() == 6u);
}

BOOST_AUTO_TEST_CASE(a_live_push_lease_makes_another_push_busy_and_an_expired_one_is_taken_over) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 4, 0);
  auto client = w.Client();
  engine::PushLeaseRecord held;
  held.push_id = "other-push";
  held.dataset = "00000000-0000-4000-8000-000000000000";
  held.host = "elsewhere";
  held.pid = 4242;
  held.started_unix = std::time(nullptr) - 60;
  held.expires_unix = std::time(nullptr) + 600;
  client->Put(w.Key(engine::kPushLeaseKey), engine::SerializePushLease(held));
  try {
    Push(dir, w.url);
    BOOST_FAIL("pushed while another push holds the lease");
  } catch (const BusyError& e) {
    BOOST_TEST(Contains(e.what(), "other-push"), e.what());
    BOOST_TEST(Contains(e.what(), "elsewhere"), e.what());
    BOOST_TEST(Contains(e.what(), engine::IsoTime(held.started_unix)), e.what());
  }
  BOOST_TEST(!client->HeadIfExists(w.Key(engine::kManifestKey)).has_value());
  BOOST_TEST(!client->HeadIfExists(w.Key("data_0.gulp")).has_value(), "uploaded while refused");
  // A push that died: its lease expired.
  held.expires_unix = std::time(nullptr) - 1;
  client->Put(w.Key(engine::kPushLeaseKey), engine::SerializePushLease(held));
  BOOST_TEST(Push(dir, w.url).published);
  BOOST_TEST(!client->HeadIfExists(w.Key(engine::kPushLeaseKey)).has_value(),
             "the push left its lease behind");
  // Every object it wrote says whose it is.
  const engine::Manifest m = PublishedManifest(w, *client);
  BOOST_TEST(m.dataset == Dataset::Open(dir)->Stats().uuid);
  BOOST_TEST(engine::IsUuid(m.dataset));
  for (const remote::ListedObject& o : client->List(w.prefix).objects) {
    const remote::ObjectInfo head = client->Head(o.key);
    BOOST_TEST(head.metadata.count("gulpdb-dataset") == 1u, o.key);
    if (head.metadata.count("gulpdb-dataset") != 0) {
      BOOST_TEST(head.metadata.at("gulpdb-dataset") == m.dataset, o.key);
      BOOST_TEST(head.metadata.at("gulpdb-push") == m.push_id, o.key);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_push_whose_lease_is_lost_stops_before_its_next_write) {
  World w;
  w.env.Set("GULPDB_PUSH_LEASE", "2s");  // renewed every 0.5 s
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 6, 0);
  auto client = w.Client();
  AtPushPoint hook(engine::fault::Point::kPushBeforePublish, [&] {
    // Another process takes the lease (as a push that thought this one
    // dead would); the next renewal fails.
    engine::PushLeaseRecord other;
    other.push_id = "thief";
    other.dataset = "00000000-0000-4000-8000-000000000000";
    other.host = "elsewhere";
    other.expires_unix = std::time(nullptr) + 600;
    client->Put(w.Key(engine::kPushLeaseKey), engine::SerializePushLease(other));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  });
  try {
    Push(dir, w.url);
    BOOST_FAIL("a push went on without its lease");
  } catch (const BusyError& e) {
    BOOST_TEST(Contains(e.what(), "push lease"), e.what());
    BOOST_TEST(Contains(e.what(), "stopped before its next write"), e.what());
  }
  BOOST_TEST(!client->HeadIfExists(w.Key(engine::kManifestKey)).has_value());
  BOOST_TEST(!client->HeadIfExists(w.Key(engine::ManifestHistoryKey(1))).has_value());
  // The thief's lease is left alone.
  BOOST_TEST(Contains(client->Get(w.Key(engine::kPushLeaseKey)), "thief"));
}

BOOST_AUTO_TEST_CASE(a_store_that_ignores_conditional_writes_is_refused_unless_allowed) {
  S3rverServer careless("gulpdb-careless", S3rverServer::Conditions::kIgnoredOnWrites);
  World w(careless.endpoint());
  w.url = "s3://" + careless.bucket() + "/" + w.prefix.substr(0, w.prefix.size() - 1);
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 5, 0);
  remote::S3Client client(
      test::TestConfig(careless.endpoint(), S3rverServer::kAccessKey, S3rverServer::kSecretKey),
      careless.bucket());
  try {
    Push(dir, w.url);
    BOOST_FAIL("pushed to a store that ignores conditional writes");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(Contains(e.what(), "does not honour conditional writes"), e.what());
    BOOST_TEST(Contains(e.what(), "--allow-unconditional-writes"), e.what());
    BOOST_TEST(Contains(e.what(), "allow_unconditional_writes"), e.what());
  }
  BOOST_TEST(client.List(w.prefix).objects.empty(), "the refused push left objects behind");
  PushOptions unsafe;
  unsafe.allow_unconditional_writes = true;
  BOOST_TEST(Push(dir, w.url, unsafe).published);
  BOOST_TEST(Dataset::Open(w.url)->Count() == 5u);
  BOOST_TEST(!client.HeadIfExists(w.prefix + engine::kPushLeaseKey).has_value());
}

BOOST_AUTO_TEST_CASE(another_datasets_prefix_is_refused_untouched_unless_overwritten) {
  World w;
  const std::string first = w.tmp / "first";
  const std::string second = w.tmp / "second";
  AppendTagged(first, "f", 0, 9, 0);  // three chunks
  AppendTagged(second, "s", 0, 5, 7);
  Push(first, w.url);
  BOOST_TEST(Dataset::Open(first)->Stats().uuid != Dataset::Open(second)->Stats().uuid);
  const auto before = PrefixContents(w);
  try {
    Push(second, w.url);
    BOOST_FAIL("pushed over another dataset");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(Contains(e.what(), "did not write"), e.what());
    BOOST_TEST(Contains(e.what(), "the manifest of another dataset"), e.what());
    BOOST_TEST(Contains(e.what(), "overwrite"), e.what());
  }
  BOOST_TEST((PrefixContents(w) == before), "a refused push changed the prefix");
  // A copy of the first (same identity, same published bytes) pushes there.
  const std::string copy = w.tmp / "copy";
  CopyDataset(first, copy);
  AppendTagged(copy, "f", 9, 10, 0);
  BOOST_TEST(Push(copy, w.url).generation == 2u);
  // Overwritten: the prefix then holds the second dataset alone.
  PushOptions overwrite;
  overwrite.overwrite = true;
  const PushReport r = Push(second, w.url, overwrite);
  BOOST_TEST(r.generation == 3u);  // past the other dataset's generations
  BOOST_TEST(r.foreign_objects_deleted >= 2u);
  const auto want = AllJpegs(*Dataset::Open(second));
  ExpectPublishedIntact(w, want, "cache-over");
  std::set<std::string> gulpio;
  for (const auto& [key, bytes] : PrefixContents(w)) {
    if (key.rfind("data_", 0) == 0 || key.rfind("meta_", 0) == 0) gulpio.insert(key);
  }
  BOOST_TEST((gulpio ==
              std::set<std::string>{"data_0.gulp", "data_1.gulp", "meta_0.gmeta", "meta_1.gmeta"}));
  // And later pushes of it need no option.
  AppendTagged(second, "s", 5, 6, 7);
  BOOST_TEST(Push(second, w.url).generation == 4u);
}

BOOST_AUTO_TEST_CASE(a_dataset_without_identity_gets_one_and_adopts_its_older_publication) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 6, 0);
  // As an older gulpdb made it: no UUID in the index, none in the manifest
  // or on the objects.
  const auto forget = [&] {
    OpenOptions rw;
    rw.read_only = false;
    auto ds = Dataset::Open(dir, rw);
    engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
    impl.env->Update([&](index::Txn& txn) {
      index::DatasetInfo info = impl.GetInfo(txn);
      info.uuid.clear();
      txn.Put(impl.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
  };
  forget();
  Push(dir, w.url);
  BOOST_TEST(engine::IsUuid(Dataset::Open(dir)->Stats().uuid));
  auto client = w.Client();
  engine::Manifest m = PublishedManifest(w, *client);
  m.dataset.clear();
  m.push_id.clear();
  client->Put(w.Key(engine::kManifestKey), engine::SerializeManifest(m));
  for (const remote::ListedObject& o : client->List(w.prefix).objects) {
    if (o.key.find("gulpdb.manifest") == std::string::npos) {
      client->Put(o.key, client->Get(o.key));  // the same bytes, no metadata
    }
  }
  forget();
  AppendTagged(dir, "v", 6, 7, 0);
  // Its chunks hold what the manifest promised: the same dataset.
  const PushReport r = Push(dir, w.url);
  BOOST_TEST(r.published);
  BOOST_TEST(r.foreign_objects_deleted == 0u);
  const std::string uuid = Dataset::Open(dir)->Stats().uuid;
  BOOST_TEST(engine::IsUuid(uuid));
  BOOST_TEST(PublishedManifest(w, *client).dataset == uuid);
  ExpectPublishedIntact(w, AllJpegs(*Dataset::Open(dir)), "cache-adopted");
  // A dataset whose chunks differ is not adopted.
  const std::string other = w.tmp / "other";
  AppendTagged(other, "o", 0, 6, 3);
  m = PublishedManifest(w, *client);
  m.dataset.clear();
  client->Put(w.Key(engine::kManifestKey), engine::SerializeManifest(m));
  BOOST_CHECK_THROW(Push(other, w.url), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(a_reader_copy_opens_only_the_snapshot_it_was_made_from) {
  World w;
  const std::string first = w.tmp / "first";
  AppendTagged(first, "f", 0, 5, 0);
  Push(first, w.url);
  const RemoteInfo info = *GetRemoteInfo(*Dataset::Open(w.url));
  BOOST_TEST(info.dataset_uuid == Dataset::Open(first)->Stats().uuid);
  OpenOptions same;
  same.generation = info.generation;
  same.expected_snapshot_sha256 = info.snapshot_sha256;
  same.expected_dataset_uuid = info.dataset_uuid;
  BOOST_TEST(Dataset::Open(w.url, same)->Count() == 5u);
  // The prefix wiped, and another dataset pushed there: generation 1 again.
  auto client = w.Client();
  std::vector<std::string> keys;
  for (const remote::ListedObject& o : client->List(w.prefix).objects) keys.push_back(o.key);
  client->DeleteMany(keys);
  const std::string second = w.tmp / "second";
  AppendTagged(second, "s", 0, 5, 9);
  BOOST_TEST(Push(second, w.url).generation == 1u);
  try {
    Dataset::Open(w.url, same);
    BOOST_FAIL("a copy of a reader opened another dataset");
  } catch (const CorruptionError& e) {
    BOOST_TEST(Contains(e.what(), "this reader was opened on"), e.what());
    BOOST_TEST(Contains(e.what(), info.snapshot_sha256), e.what());
  }
  OpenOptions any;
  any.generation = 1;
  BOOST_TEST(Dataset::Open(w.url, any)->Ids().at(0) == "s0");
}

BOOST_AUTO_TEST_CASE(faults_on_the_wire_give_exact_bytes_or_an_error_never_wrong_bytes) {
  World w(Proxy().endpoint(), S3ProxyServer::kAccessKey, S3ProxyServer::kSecretKey);
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 12);
  Push(dir, w.url);
  const auto want = AllJpegs(*Dataset::Open(dir));
  auto ds = Dataset::Open(w.url);
  S3ProxyServer& proxy = Proxy();
  int seed = 1;
  for (const char* kind :
       {"drop_body", "truncate", "slowdown", "reset", "shift_range", "error500", "delay"}) {
    proxy.AddFault(std::string(R"({"kind": ")") + kind +
                   R"(", "fraction": 0.04, "method": "GET", "seed": )" + std::to_string(seed++) +
                   "}");
  }
  int ok = 0, errors = 0;
  std::vector<FrameRequest> batch = AllRequests(*ds);
  for (int round = 0; round < 12; ++round) {
    try {
      const std::vector<StoredFrames> got = ds->ReadJpegBatch(batch);
      for (size_t r = 0; r < batch.size(); ++r) {
        const auto& frames = want.at(batch[r].id);
        BOOST_REQUIRE_EQUAL(got[r].size(), frames.size());
        for (size_t i = 0; i < frames.size(); ++i) {
          BOOST_REQUIRE_MESSAGE(got[r][i] == frames[i], "wrong bytes: " << batch[r].id << " " << i);
        }
      }
      ++ok;
    } catch (const IoError& e) {
      ++errors;  // retries ran out: allowed, never wrong bytes
      BOOST_TEST_MESSAGE("a batch failed: " << e.what());
    }
  }
  BOOST_TEST(proxy.Stats().faults_injected > 10u);
  BOOST_TEST(ok >= 8, ok << " of 12 batches succeeded");
  BOOST_TEST_MESSAGE(ok << " batches exact, " << errors << " failed after retries");
  // A server that answers a range with the whole object is an error (the
  // client does not retry it: such a server would keep doing it).
  proxy.Reset();
  proxy.AddFault(R"({"kind": "ignore_range", "count": 1, "method": "GET"})");
  try {
    ds->ReadJpegs("v5", Selection::Slice(1, 2, 1));
    BOOST_FAIL("a whole object was taken for a range");
  } catch (const IoError& e) {
    BOOST_TEST(Contains(e.what(), "ignored the Range header"), e.what());
  }
  BOOST_TEST(ds->ReadJpegs("v5", Selection::Slice(1, 2, 1))[0] == want.at("v5")[1]);
}

BOOST_AUTO_TEST_CASE(a_snapshot_or_manifest_that_lies_is_refused) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 6);
  Push(dir, w.url, test::WholeSnapshot());
  auto client = w.Client();
  engine::Manifest m = PublishedManifest(w, *client);

  // A committed length smaller than the chunk's frames: reads stop there.
  engine::Manifest shorter = m;
  shorter.chunks[1].committed_length = 10;
  client->Put(w.Key(engine::kManifestKey), engine::SerializeManifest(shorter));
  try {
    Dataset::Open(w.url)->ReadJpegs("v5");
    BOOST_FAIL("read past the committed length");
  } catch (const CorruptionError& e) {
    BOOST_TEST(Contains(e.what(), "a committed length of 10 bytes"), e.what());
  }

  // A snapshot object that is not the one the manifest names.
  const std::string snapshot = client->Get(w.Key(m.snapshot_key));
  client->Put(w.Key(m.snapshot_key),
              snapshot.substr(0, snapshot.size() - 4096) + std::string(4096, 'x'));
  client->Put(w.Key(engine::kManifestKey), engine::SerializeManifest(m));
  w.FreshCache("cache2");
  try {
    Dataset::Open(w.url);
    BOOST_FAIL("opened a snapshot that does not match its manifest");
  } catch (const CorruptionError& e) {
    BOOST_TEST(Contains(e.what(), "SHA-256"), e.what());
  }
  // Nothing of it stays in the cache.
  for (const auto& e : std::filesystem::recursive_directory_iterator(w.tmp / "cache2")) {
    BOOST_TEST(e.path().filename() != "data.mdb", "a bad snapshot stayed in the cache");
  }
}

BOOST_AUTO_TEST_CASE(manifests_that_are_not_understood_are_corruption_errors) {
  engine::Manifest m;
  m.generation = 7;
  m.created_unix = 1700000000;
  m.creator = "gulpdb test";
  m.snapshot_key = engine::SnapshotKey(std::string(64, 'a'));
  m.snapshot_size = 4096;
  m.snapshot_sha256 = std::string(64, 'a');
  m.grace_seconds = 60;
  engine::ManifestChunk c;
  c.number = 3;
  c.key = "data_3.gulp";
  c.committed_length = 100;
  c.crc32c = 0xdeadbeef;
  c.etag = "\"e\\\"tag\"";
  m.chunks.push_back(c);
  engine::ManifestObsolete o;
  o.key = "data_1.gulp";
  o.since_unix = 1699999999;
  m.obsolete.push_back(o);
  const std::string text = engine::SerializeManifest(m);
  const engine::Manifest back = engine::ParseManifest(text, "t");
  BOOST_TEST(engine::SerializeManifest(back) == text);
  BOOST_TEST(back.chunks.at(0).etag == c.etag);
  BOOST_TEST(*back.chunks.at(0).crc32c == 0xdeadbeefu);

  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from);
    BOOST_REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  for (const std::string& bad : {
           replaced("\"data_3.gulp\"", "\"../../etc/passwd\""),
           replaced("\"data_3.gulp\"", "\"/abs\""),
           replaced("\"version\": 1", "\"version\": 2"),
           replaced("\"sha256\": \"aaaa", "\"sha256\": \"AAAA"),
           replaced("\"number\": 3", "\"number\": -3"),
           replaced("\"committed_length\": 100", "\"committed_length\": \"100\""),
           replaced("gulpdb-manifest", "something-else"),
           text.substr(0, text.size() / 2),
           std::string("[]"),
       }) {
    BOOST_CHECK_THROW(engine::ParseManifest(bad, "t"), CorruptionError);
  }
}

// The texts are hashed (a chunk page is named by its SHA-256, a manifest's
// generations are compared byte for byte by readers of older ones), so the
// writer's layout is part of the format: every key, separator and line break.
BOOST_AUTO_TEST_CASE(manifest_lease_and_page_texts_keep_their_exact_layout) {
  engine::ManifestChunk c;
  c.number = 3;
  c.key = "data_3.gulp";
  c.committed_length = 100;
  c.live_videos = 2;
  c.live_bytes = 90;
  c.etag = "\"e\"";
  c.crc32c = 7;
  c.gmeta_key = "meta_3.gmeta";
  c.gmeta_sha256 = "ab";
  c.meta_edits = 4;
  engine::ManifestChunk plain = c;
  plain.number = 4;
  plain.crc32c.reset();
  plain.meta_edits = 0;
  engine::ManifestObsolete o;
  o.key = "data_1.gulp";
  o.since_unix = 86400;
  o.committed_length = 5;
  o.crc32c = 9;
  o.gmeta_key = "meta_1.gmeta";

  engine::Manifest m;
  m.generation = 7;
  m.created_unix = 0;
  m.creator = "gulpdb t\u00e9st";
  m.dataset = "123e4567-e89b-12d3-a456-426614174000";
  m.push_id = "p1";
  m.snapshot_key = "s.mdb";
  m.snapshot_size = 4096;
  m.snapshot_sha256 = "cd";
  m.videos = 10;
  m.frames = 160;
  m.grace_seconds = 60;
  m.label2idx_key = "label2idx.json";
  m.label2idx_sha256 = "ef";
  m.chunks = {c, plain};
  m.obsolete = {o, o};
  // The two chunks as a manifest and a chunk page list them, one a line.
  const std::string chunk_lines =
      "  {\"number\": 3, \"key\": \"data_3.gulp\", \"committed_length\": 100, "
      "\"live_videos\": 2, \"live_bytes\": 90, \"etag\": \"\\\"e\\\"\", \"crc32c\": 7, "
      "\"gmeta_key\": \"meta_3.gmeta\", \"gmeta_sha256\": \"ab\", \"meta_edits\": 4},\n"
      "  {\"number\": 4, \"key\": \"data_3.gulp\", \"committed_length\": 100, "
      "\"live_videos\": 2, \"live_bytes\": 90, \"etag\": \"\\\"e\\\"\", \"crc32c\": null, "
      "\"gmeta_key\": \"meta_3.gmeta\", \"gmeta_sha256\": \"ab\"}]";
  BOOST_TEST(engine::SerializeManifest(m) ==
             "{\"format\": \"gulpdb-manifest\", \"version\": 1, \"generation\": 7, "
             "\"created\": \"1970-01-01T00:00:00Z\", \"created_unix\": 0, "
             "\"creator\": \"gulpdb t\\u00e9st\",\n"
             " \"dataset\": \"123e4567-e89b-12d3-a456-426614174000\", \"push\": \"p1\",\n"
             " \"chunks_published\": true,\n"
             " \"snapshot\": {\"key\": \"s.mdb\", \"size\": 4096, \"sha256\": \"cd\"},\n"
             " \"videos\": 10, \"frames\": 160, \"grace_seconds\": 60,\n"
             " \"label2idx\": {\"key\": \"label2idx.json\", \"sha256\": \"ef\"},\n"
             " \"chunks\": [\n" +
                 chunk_lines +
                 ",\n"
                 " \"obsolete\": [\n"
                 "  {\"key\": \"data_1.gulp\", \"since\": \"1970-01-02T00:00:00Z\", "
                 "\"since_unix\": 86400, \"committed_length\": 5, \"crc32c\": 9, "
                 "\"gmeta_key\": \"meta_1.gmeta\"},\n"
                 "  {\"key\": \"data_1.gulp\", \"since\": \"1970-01-02T00:00:00Z\", "
                 "\"since_unix\": 86400, \"committed_length\": 5, \"crc32c\": 9, "
                 "\"gmeta_key\": \"meta_1.gmeta\"}]}\n");

  // Partitioned, paged, no dataset, push or label map, nothing obsolete.
  engine::Manifest paged;
  paged.version = engine::kManifestVersionChunkPages;
  paged.generation = 2;
  paged.creator = "c";
  paged.chunks_published = false;
  paged.root_key = "r.root";
  paged.root_size = 12;
  paged.root_sha256 = "01";
  paged.chunk_count = 2;
  const std::vector<engine::ChunkPageText> pages = engine::MakeChunkPages({c, plain});
  BOOST_REQUIRE_EQUAL(pages.size(), 1u);
  BOOST_TEST(pages[0].text ==
             "{\"format\": \"gulpdb-chunk-page\",\n"
             " \"chunks\": [\n" +
                 chunk_lines + "}\n");
  paged.chunk_pages = {pages[0].page, pages[0].page};
  paged.chunk_pages[1].first = 256;
  const std::string sha = pages[0].page.sha256;
  const std::string size = std::to_string(pages[0].page.size);
  const std::string page_entry = "\"count\": 2, \"key\": \"" + pages[0].page.key +
                                 "\", \"size\": " + size + ", \"sha256\": \"" + sha + "\"}";
  BOOST_TEST(engine::SerializeManifest(paged) ==
             "{\"format\": \"gulpdb-manifest\", \"version\": 3, \"generation\": 2, "
             "\"created\": \"1970-01-01T00:00:00Z\", \"created_unix\": 0, \"creator\": \"c\",\n"
             " \"chunks_published\": false,\n"
             " \"root\": {\"key\": \"r.root\", \"size\": 12, \"sha256\": \"01\"},\n"
             " \"videos\": 0, \"frames\": 0, \"grace_seconds\": 0,\n"
             " \"label2idx\": null,\n"
             " \"chunk_count\": 2,\n"
             " \"chunk_pages\": [\n"
             "  {\"first\": 3, " +
                 page_entry +
                 ",\n"
                 "  {\"first\": 256, " +
                 page_entry +
                 "],\n"
                 " \"obsolete\": []}\n");

  engine::PushLeaseRecord lease;
  lease.push_id = "p2";
  lease.dataset = "d";
  lease.host = "h\"ost";
  lease.pid = -1;
  lease.started_unix = 60;
  lease.expires_unix = 3600;
  BOOST_TEST(engine::SerializePushLease(lease) ==
             "{\"format\": \"gulpdb-push-lease\", \"push\": \"p2\", \"dataset\": \"d\",\n"
             " \"host\": \"h\\\"ost\", \"pid\": -1,\n"
             " \"started\": \"1970-01-01T00:01:00Z\", \"started_unix\": 60,\n"
             " \"expires\": \"1970-01-01T01:00:00Z\", \"expires_unix\": 3600}\n");
}

BOOST_AUTO_TEST_CASE(chunk_pages_round_trip_and_refuse_what_is_not_a_page) {
  // 600 chunks with a gap: pages by number range, 256 numbers each.
  std::vector<engine::ManifestChunk> chunks;
  for (uint32_t n = 0; n < 700; ++n) {
    if (n >= 300 && n < 400) continue;
    engine::ManifestChunk c;
    c.number = n;
    c.key = "data_" + std::to_string(n) + ".gulp";
    c.committed_length = 1000 + n;
    c.crc32c = n * 7;
    c.etag = "\"e" + std::to_string(n) + "\"";
    c.gmeta_key = "meta_" + std::to_string(n) + ".gmeta";
    chunks.push_back(c);
  }
  const std::vector<engine::ChunkPageText> pages = engine::MakeChunkPages(chunks);
  BOOST_REQUIRE_EQUAL(pages.size(), 3u);
  BOOST_TEST(pages[0].page.first == 0u);
  BOOST_TEST(pages[0].page.count == 256u);
  BOOST_TEST(pages[1].page.first == 256u);
  BOOST_TEST(pages[1].page.count == 156u);  // 256..299 and 400..511
  BOOST_TEST(pages[2].page.first == 512u);
  std::vector<engine::ManifestChunk> back;
  for (const engine::ChunkPageText& t : pages) {
    BOOST_TEST(t.page.key == engine::ChunkPageKey(t.page.sha256));
    BOOST_TEST(t.page.size <= engine::kMaxChunkPageBytes);
    for (engine::ManifestChunk& c : engine::ParseChunkPage(t.text, t.page, "p")) {
      back.push_back(std::move(c));
    }
  }
  BOOST_REQUIRE_EQUAL(back.size(), chunks.size());
  for (size_t i = 0; i < back.size(); ++i) {
    BOOST_TEST(back[i].key == chunks[i].key);
    BOOST_TEST(back[i].committed_length == chunks[i].committed_length);
    BOOST_TEST(*back[i].crc32c == *chunks[i].crc32c);
    BOOST_TEST(back[i].etag == chunks[i].etag);
  }
  // Appending changes only the last page: the others keep their names.
  chunks.push_back(chunks.back());
  chunks.back().number = 700;
  const std::vector<engine::ChunkPageText> later = engine::MakeChunkPages(chunks);
  BOOST_TEST(later[0].page.key == pages[0].page.key);
  BOOST_TEST(later[1].page.key == pages[1].page.key);
  BOOST_TEST(later[2].page.key != pages[2].page.key);

  // A version 3 manifest names them and round-trips.
  engine::Manifest m;
  m.version = engine::kManifestVersionChunkPages;
  m.generation = 2;
  m.creator = "gulpdb test";
  m.root_key = engine::RootKey(std::string(64, 'b'));
  m.root_size = 100;
  m.root_sha256 = std::string(64, 'b');
  for (const engine::ChunkPageText& t : pages) m.chunk_pages.push_back(t.page);
  m.chunk_count = back.size();
  const std::string text = engine::SerializeManifest(m);
  BOOST_TEST(!Contains(text, "\"chunks\""));
  const engine::Manifest parsed = engine::ParseManifest(text, "t");
  BOOST_TEST(parsed.paged());
  BOOST_TEST(parsed.ChunkCount() == back.size());
  BOOST_TEST(parsed.chunks.empty());
  BOOST_TEST(engine::SerializeManifest(parsed) == text);

  // Pages that are not what the manifest says, or say what no page may.
  const engine::ChunkPageText& t = pages[1];
  const auto refused = [&](const std::string& page_text, const std::string& expect) {
    engine::ManifestChunkPage page = t.page;
    page.size = page_text.size();
    page.sha256 = util::Sha256Hex(page_text);
    try {
      engine::ParseChunkPage(page_text, page, "p");
      BOOST_ERROR("accepted a page: " << page_text.substr(0, 80));
    } catch (const CorruptionError& e) {
      BOOST_TEST(Contains(e.what(), "read chunk page p"), e.what());
      BOOST_TEST(Contains(e.what(), expect), e.what());
    }
  };
  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string out = t.text;
    const size_t at = out.find(from);
    BOOST_REQUIRE(at != std::string::npos);
    return out.replace(at, from.size(), to);
  };
  refused(edited("\"data_256.gulp\"", "\"../../escaped.gulp\""), "not a key inside the dataset");
  refused(edited("\"meta_256.gmeta\"", "\"/abs.gmeta\""), "not a key inside the dataset");
  refused(edited("\"number\": 257", "\"number\": 256"), "not after the previous");
  refused(edited("\"number\": 256", "\"number\": 255"), "of one page");
  refused(edited("gulpdb-chunk-page", "gulpdb-manifest"), "not a gulpdb chunk page");
  // Bytes that are not the ones the manifest names.
  engine::ManifestChunkPage other = t.page;
  other.sha256 = pages[0].page.sha256;
  BOOST_CHECK_THROW(engine::ParseChunkPage(t.text, other, "p"), CorruptionError);
  // Manifests whose page list is not one.
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string out = text;
    const size_t at = out.find(from);
    BOOST_REQUIRE(at != std::string::npos);
    return out.replace(at, from.size(), to);
  };
  for (const std::string& bad : {
           replaced("\"chunk_count\": " + std::to_string(back.size()), "\"chunk_count\": 1"),
           replaced(pages[0].page.key, "gulpdb.chunk-pages/../x.json"),
           replaced(pages[0].page.key, engine::ChunkPageKey(std::string(64, 'c'))),
           replaced("\"first\": 512", "\"first\": 300"),
       }) {
    BOOST_CHECK_THROW(engine::ParseManifest(bad, "t"), CorruptionError);
  }
}

BOOST_AUTO_TEST_CASE(write_modes_on_a_url_are_clear_errors) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 2);
  Push(dir, w.url);
  OpenOptions rw;
  rw.read_only = false;
  try {
    Dataset::Open(w.url, rw);
    BOOST_FAIL("opened a URL for writing");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(Contains(e.what(), "gulpdb push"), e.what());
  }
  BOOST_CHECK_THROW(Dataset::Create(w.url), InvalidArgumentError);
  BOOST_CHECK_THROW(Dataset::Open(w.url)->NewWriter(), InvalidArgumentError);
  BOOST_CHECK_THROW(Push(w.url, w.url), InvalidArgumentError);
  BOOST_CHECK_THROW(Push(dir, "/not/a/url"), InvalidArgumentError);
  BOOST_TEST(Dataset::Exists(w.url));
  BOOST_TEST(!Dataset::Exists(w.url + "-nothing"));
  BOOST_CHECK_THROW(Dataset::Open(w.url + "-nothing"), NotFoundError);
}

BOOST_AUTO_TEST_CASE(a_network_file_system_reads_the_published_snapshot_or_refuses) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 6);
  w.env.Set("GULPDB_TEST_FS_TYPE", "nfs");
  try {
    Dataset::Open(dir);
    BOOST_FAIL("opened the live index of a network file system read-only");
  } catch (const IoError& e) {
    BOOST_TEST(Contains(e.what(), "network file system (nfs)"), e.what());
    BOOST_TEST(Contains(e.what(), "gulpdb snapshot " + dir), e.what());
    BOOST_TEST(Contains(e.what(), "GULPDB_ALLOW_NETWORK_INDEX"), e.what());
  }
  // The writer's host may still open it read-write (and append).
  AppendFixtureVideos(dir, 6, 8);
  const PushReport r = PublishSnapshot(dir);
  BOOST_TEST(r.published);
  OpenOptions live;
  live.allow_network_index = true;
  const auto want = AllJpegs(*Dataset::Open(dir, live));
  // Appends after the snapshot are not seen until the next one.
  AppendFixtureVideos(dir, 8, 9);
  {
    auto ds = Dataset::Open(dir);
    BOOST_TEST(GetRemoteInfo(*ds).has_value());
    BOOST_TEST(ds->Count() == 8u);
    ExpectSameJpegs(*ds, want);
  }
  // Readers never touch the live index: damaged, it goes unnoticed.
  std::filesystem::rename(dir + "/gulpdb.index", dir + "/gulpdb.index.moved");
  std::filesystem::create_directory(dir + "/gulpdb.index");
  test::WriteFile(dir + "/gulpdb.index/data.mdb", std::string(8192, 'z'));
  ExpectSameJpegs(*Dataset::Open(dir), want);
  std::filesystem::remove_all(dir + "/gulpdb.index");
  std::filesystem::rename(dir + "/gulpdb.index.moved", dir + "/gulpdb.index");
  BOOST_TEST(PublishSnapshot(dir).generation == 2u);
  BOOST_TEST(Dataset::Open(dir)->Count() == 9u);
  BOOST_TEST(Dataset::Open(dir, live)->Count() == 9u);
  w.env.Set("GULPDB_ALLOW_NETWORK_INDEX", "1");
  BOOST_TEST(!GetRemoteInfo(*Dataset::Open(dir)).has_value());
  w.env.Unset("GULPDB_ALLOW_NETWORK_INDEX");
  // A local file system is never affected.
  w.env.Set("GULPDB_TEST_FS_TYPE", "0xEF53");  // ext4
  BOOST_TEST(!GetRemoteInfo(*Dataset::Open(dir)).has_value());
}

BOOST_AUTO_TEST_CASE(a_partitioned_snapshot_on_a_network_file_system_is_read_through_partitions) {
  World w;
  const std::string dir = w.tmp / "local";
  AppendFixtureVideos(dir, 0, 6);
  {
    OpenOptions rw;
    rw.read_only = false;
    auto ds = Dataset::Open(dir, rw);
    auto writer = ds->NewWriter();
    writer->SetSplit("train", {"v1", "v4"});
    writer->Commit();
  }
  PushOptions partitioned;  // the default ("auto") is partitioned too
  partitioned.layout = IndexLayout::kPartitioned;
  const PushReport r = PublishSnapshot(dir, partitioned);
  BOOST_TEST(r.published);
  BOOST_TEST(r.partitioned);
  BOOST_TEST(r.chunks_uploaded == 0u);  // readers read the dataset's own chunk files
  OpenOptions live;
  live.allow_network_index = true;
  const auto want = AllJpegs(*Dataset::Open(dir, live));
  w.env.Set("GULPDB_TEST_FS_TYPE", "nfs");
  AppendFixtureVideos(dir, 6, 7);  // not in the snapshot until the next one
  {
    auto ds = Dataset::Open(dir);
    const std::optional<RemoteInfo> info = GetRemoteInfo(*ds);
    BOOST_REQUIRE(info.has_value());
    BOOST_TEST(info->partitioned);
    BOOST_TEST(ds->Count() == 6u);
    ExpectSameJpegs(*ds, want);
    BOOST_TEST(ds->Split("train") == (std::vector<std::string>{"v1", "v4"}));
  }
  BOOST_TEST(PublishSnapshot(dir, partitioned).generation == 2u);
  BOOST_TEST(Dataset::Open(dir)->Count() == 7u);
  // Back to the whole snapshot: readers follow.
  BOOST_TEST(PublishSnapshot(dir, test::WholeSnapshot()).published);
  BOOST_TEST(!GetRemoteInfo(*Dataset::Open(dir))->partitioned);
  BOOST_TEST(Dataset::Open(dir)->Count() == 7u);
}

BOOST_AUTO_TEST_CASE(durations_parse_as_documented) {
  BOOST_TEST(ParseDuration("90").count() == 90);
  BOOST_TEST(ParseDuration("90s").count() == 90);
  BOOST_TEST(ParseDuration("30m").count() == 1800);
  BOOST_TEST(ParseDuration("24h").count() == 86400);
  BOOST_TEST(ParseDuration("7d").count() == 604800);
  BOOST_TEST(ParseDuration("0").count() == 0);
  for (const char* bad : {"", "h", "1.5h", "-1", "3w", "1 h"}) {
    BOOST_CHECK_THROW(ParseDuration(bad), InvalidArgumentError);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb
