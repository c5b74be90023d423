// What a push must never do to what is published, against a real S3 server
// (s3rver, started by the suite):
//   - two pushes at once: the one that read the manifest before the other
//     published (and listed the other's uploads) replaces nothing the
//     winner's manifest names, deterministically reproduced with the push
//     test points;
//   - a manifest whose obsolete list names the manifest, a lease, a history
//     copy or what a generation names makes no push delete (or empty) it;
//   - a push verifies what its generation names and did not upload: a
//     damaged or missing object it has a good copy of is uploaded again, and
//     --overwrite recovers a damaged prefix.
#include <boost/test/unit_test.hpp>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/fault_injection.h"
#include "engine/remote/manifest.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/remote.h"
#include "index/partition_root.h"
#include "s3/s3_client.h"
#include "support/push_world.h"
#include "support/remote_fixture.h"
#include "support/test_util.h"
#include "tests/harness/s3_server.h"

namespace gulpdb {
namespace {

using test::AllJpegs;
using test::AppendTagged;
using test::Contains;
using test::CopyDataset;
using test::ExpectPublishedIntact;
using test::ExpectSameJpegs;
using test::PublishedManifest;
using test::PushPoints;
using test::PushWorld;
using Point = engine::fault::Point;

// A one-shot signal between threads.
class Signal {
 public:
  void Raise() {
    std::lock_guard<std::mutex> lock(mutex_);
    raised_ = true;
    cv_.notify_all();
  }
  // False when `seconds` passed first.
  bool Wait(int seconds = 60) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(seconds), [&] { return raised_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool raised_ = false;
};

// The manifest with its chunk list read from its pages.
engine::Manifest LoadedManifest(const PushWorld& w, remote::S3Client& client) {
  engine::Manifest m = PublishedManifest(w, client);
  for (const engine::ManifestChunkPage& p : m.chunk_pages) {
    for (engine::ManifestChunk& c : engine::ParseChunkPage(client.Get(w.Key(p.key)), p, p.key)) {
      m.chunks.push_back(std::move(c));
    }
  }
  return m;
}

// Every key the published generation names (manifest, history copy, index
// objects, chunks, .gmeta, label map).
std::set<std::string> NamedKeys(const PushWorld& w, remote::S3Client& client) {
  const engine::Manifest m = LoadedManifest(w, client);
  std::set<std::string> keys = {engine::kManifestKey, engine::ManifestHistoryKey(m.generation)};
  if (!m.snapshot_key.empty()) keys.insert(m.snapshot_key);
  for (const engine::ManifestChunkPage& p : m.chunk_pages) keys.insert(p.key);
  for (const engine::ManifestChunk& c : m.chunks) {
    keys.insert(c.key);
    if (!c.gmeta_key.empty()) keys.insert(c.gmeta_key);
  }
  if (!m.label2idx_key.empty()) keys.insert(m.label2idx_key);
  if (m.partitioned()) {
    keys.insert(m.root_key);
    const index::PartitionRoot root =
        index::DecodePartitionRoot(client.Get(w.Key(m.root_key)), m.root_key);
    BOOST_REQUIRE(root.pages.empty());  // the test datasets are small
    for (const index::PartitionEntry& p : root.partitions) {
      keys.insert(engine::PartitionKey(p.sha256));
    }
  }
  return keys;
}

// Replaces the published manifest (and its history copy) with `m`.
void PublishCrafted(const PushWorld& w, remote::S3Client& client, const engine::Manifest& m) {
  const std::string text = engine::SerializeManifest(m);
  client.Put(w.Key(engine::ManifestHistoryKey(m.generation)), text);
  client.Put(w.Key(engine::kManifestKey), text);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(push_safety_test)

BOOST_AUTO_TEST_CASE(a_push_that_planned_before_another_published_replaces_nothing_it_names) {
  // Push A holds the lease and has uploaded its grown chunk 1 and new chunk
  // 2; push B reads the manifest and lists the prefix then (seeing A's
  // objects with A's ETags); A publishes and releases the lease; B goes on.
  // B's copy grew chunk 1 with other bytes: B must not replace A's chunk 1.
  for (const bool partitioned : {true, false}) {
    BOOST_TEST_CONTEXT((partitioned ? "partitioned" : "whole snapshot")) {
      PushWorld w;
      const PushOptions options = partitioned ? PushOptions() : test::WholeSnapshot();
      const std::string base = w.tmp / "base";
      AppendTagged(base, "v", 0, 6, 0);  // chunks 0 (4 videos) and 1 (2, open)
      Push(base, w.url, options);
      const std::string a = w.tmp / "a";
      const std::string b = w.tmp / "b";
      CopyDataset(base, a);
      CopyDataset(base, b);
      AppendTagged(a, "a", 6, 9, 5);   // chunk 1 full, chunk 2 holds one
      AppendTagged(b, "b", 6, 8, 11);  // chunk 1 full, other bytes
      const test::Jpegs want = AllJpegs(*Dataset::Open(a));

      const std::thread::id a_thread = std::this_thread::get_id();
      Signal b_planned, a_done;
      std::exception_ptr b_error;
      bool b_published = false;
      std::thread b_push;
      {
        PushPoints points([&](Point point) {
          const bool in_a = std::this_thread::get_id() == a_thread;
          if (in_a && point == Point::kPushBeforePublish && !b_push.joinable()) {
            b_push = std::thread([&] {
              try {
                b_published = Push(b, w.url, options).published;
              } catch (...) {
                b_error = std::current_exception();
              }
              b_planned.Raise();  // in case it failed before planning
            });
            BOOST_REQUIRE(b_planned.Wait());
          } else if (!in_a && point == Point::kPushPlanned) {
            b_planned.Raise();
            BOOST_REQUIRE(a_done.Wait());
          }
        });
        const PushReport ra = Push(a, w.url, options);
        BOOST_TEST(ra.published);
        BOOST_TEST(ra.generation == 2u);
        a_done.Raise();
        b_push.join();
      }
      BOOST_TEST(!b_published, "the push that planned on generation 1 published");
      BOOST_REQUIRE(b_error != nullptr);
      try {
        std::rethrow_exception(b_error);
      } catch (const BusyError& e) {
        BOOST_TEST(Contains(e.what(), "published nothing"), e.what());
      } catch (const std::exception& e) {
        BOOST_FAIL("push B failed with another error than BusyError: " << e.what());
      }
      auto client = w.Client();
      BOOST_TEST(PublishedManifest(w, *client).generation == 2u);
      ExpectPublishedIntact(w, want, partitioned ? "cache-p" : "cache-w");
      // B, pushed again now, sees A's generation: its chunk 1 differs from
      // what generation 2 promised, and it says so without writing.
      try {
        Push(b, w.url, options);
        BOOST_FAIL("a diverged copy replaced a published chunk");
      } catch (const CorruptionError& e) {
        BOOST_TEST(Contains(e.what(), "data_1.gulp"), e.what());
      }
      ExpectPublishedIntact(w, want, partitioned ? "cache-p2" : "cache-w2");
    }
  }
}

BOOST_AUTO_TEST_CASE(an_obsolete_list_naming_what_is_published_deletes_nothing_of_it) {
  // A hand-edited (or crafted) manifest whose obsolete list names, as
  // expired, the manifest, the lease, the history copies and every object
  // the generation names, and an old chunk whose .gmeta is the manifest.
  for (const bool partitioned : {true, false}) {
    BOOST_TEST_CONTEXT((partitioned ? "partitioned" : "whole snapshot")) {
      PushWorld w;
      const PushOptions options = partitioned ? PushOptions() : test::WholeSnapshot();
      const std::string dir = w.tmp / "local";
      AppendTagged(dir, "v", 0, 6, 0);
      Push(dir, w.url, options);
      auto client = w.Client();
      const std::set<std::string> named = NamedKeys(w, *client);
      engine::Manifest m = PublishedManifest(w, *client);
      std::set<std::string> crafted = named;
      crafted.insert(engine::kPushLeaseKey);
      crafted.insert(engine::ManifestHistoryKey(m.generation + 1));
      for (const std::string& key : crafted) {
        engine::ManifestObsolete o;
        o.key = key;
        o.since_unix = 1;  // long expired
        o.gmeta_key = engine::kManifestKey;
        m.obsolete.push_back(o);
      }
      if (!partitioned) {
        // A chunk the local dataset does not have, whose .gmeta is the
        // manifest: the push empties the .gmeta of chunks that are gone.
        engine::ManifestChunk gone = m.chunks.back();
        gone.number = 40;
        gone.key = "data_40.gulp";
        gone.gmeta_key = engine::kManifestKey;
        m.chunks.push_back(gone);
      }
      auto reader = Dataset::Open(w.url);  // a reader of the generation as pushed
      const test::Jpegs before = AllJpegs(*reader);
      PublishCrafted(w, *client, m);
      AppendTagged(dir, "v", 6, 9, 0);
      const PushReport r = Push(dir, w.url, options);
      BOOST_TEST(r.published);
      BOOST_TEST(r.generation == 2u);
      for (const std::string& key : named) {
        BOOST_TEST(client->HeadIfExists(w.Key(key)).has_value(),
                   key << " (named by generation 1) was deleted");
      }
      const engine::Manifest now = PublishedManifest(w, *client);
      BOOST_TEST(now.generation == 2u);
      for (const std::string& key : NamedKeys(w, *client)) {
        BOOST_TEST(client->HeadIfExists(w.Key(key)).has_value(), key << " is missing");
      }
      ExpectSameJpegs(*reader, before);
      ExpectPublishedIntact(w, AllJpegs(*Dataset::Open(dir)), partitioned ? "c-p" : "c-w");
      // The next push too (the entries it inherited are still expired).
      AppendTagged(dir, "v", 9, 10, 0);
      BOOST_TEST(Push(dir, w.url, options).generation == 3u);
      ExpectPublishedIntact(w, AllJpegs(*Dataset::Open(dir)), partitioned ? "c-p3" : "c-w3");
    }
  }
}

// A fresh node's deep check of the URL: every partition, page and chunk
// read and verified.
void ExpectHealthy(PushWorld& w, const std::string& cache) {
  w.FreshCache(cache);
  CheckOptions deep;
  deep.deep = true;
  const CheckReport report = Check(w.url, deep);
  for (const CheckProblem& p : report.problems) BOOST_TEST_MESSAGE(p.where << ": " << p.what);
  BOOST_TEST(report.healthy());
  BOOST_TEST(report.videos > 0u);
}

// `bytes` with one byte flipped in the middle.
std::string Flipped(std::string bytes) {
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  return bytes;
}

std::vector<std::string> PartitionKeys(const PushWorld& w, remote::S3Client& client) {
  const engine::Manifest m = PublishedManifest(w, client);
  const index::PartitionRoot root =
      index::DecodePartitionRoot(client.Get(w.Key(m.root_key)), m.root_key);
  std::vector<std::string> keys;
  for (const index::PartitionEntry& p : root.partitions) {
    keys.push_back(engine::PartitionKey(p.sha256));
  }
  return keys;
}

BOOST_AUTO_TEST_CASE(a_push_uploads_again_what_it_names_damaged_or_missing_from_its_copy) {
  PushWorld w;
  const std::string dir = w.tmp / "local";
  AppendTagged(dir, "v", 0, 10, 0);
  Push(dir, w.url);
  auto client = w.Client();
  const std::vector<std::string> parts = PartitionKeys(w, *client);
  BOOST_REQUIRE(parts.size() >= 3u);  // one per kind at least
  const engine::Manifest m = LoadedManifest(w, *client);
  // Behind the manifest's back: one partition with a byte flipped (same
  // size), one deleted, a chunk page flipped, a chunk object flipped.
  client->Put(w.Key(parts[0]), Flipped(client->Get(w.Key(parts[0]))));
  client->Delete(w.Key(parts[1]));
  const std::string page = m.chunk_pages.at(0).key;
  client->Put(w.Key(page), Flipped(client->Get(w.Key(page))));
  client->Put(w.Key("data_0.gulp"), Flipped(client->Get(w.Key("data_0.gulp"))));
  client->Put(w.Key(m.root_key), Flipped(client->Get(w.Key(m.root_key))));
  // The pusher (whose node cache holds what it built) pushes again, with
  // nothing changed locally: it publishes a new generation (the chunk's
  // ETag changes, and a new root replaces the damaged one) naming only
  // whole objects.
  const PushReport r = Push(dir, w.url);
  BOOST_TEST(r.objects_repaired == 5u);
  BOOST_TEST(PublishedManifest(w, *client).root_key != m.root_key);
  BOOST_TEST(r.partitions_uploaded == 2u);
  BOOST_TEST(r.chunks_uploaded == 1u);
  ExpectHealthy(w, "cache-check1");
  ExpectPublishedIntact(w, AllJpegs(*Dataset::Open(dir)), "cache-read1");
  // And after an append as well: the damage is found by the check of what
  // the new generation names, whatever else changed. The append goes to
  // chunk 2 (4 videos a chunk) and rebuilds this small index's partitions,
  // so chunk 0's object is what both generations name; a .gmeta or a label
  // map written again with new text is an upload, not a repair.
  w.FreshCache("cache");  // the pusher's cache again
  client->Put(w.Key(parts[2]), Flipped(client->Get(w.Key(parts[2]))));
  client->Put(w.Key("data_0.gulp"), Flipped(client->Get(w.Key("data_0.gulp"))));
  AppendTagged(dir, "v", 10, 11, 0);
  const PushReport r2 = Push(dir, w.url);
  BOOST_TEST(r2.published);
  BOOST_TEST(r2.objects_repaired == 1u);
  ExpectHealthy(w, "cache-check2");
  // A push that finds nothing wrong publishes nothing. It checks from its
  // record of what it checked and uploaded (every named object's ETag), so
  // that it reads locally only what changed.
  w.FreshCache("cache");
  const PushReport r3 = Push(dir, w.url);
  BOOST_TEST(!r3.published);
  BOOST_TEST(r3.objects_repaired == 0u);
  std::string record;
  for (const auto& e : std::filesystem::directory_iterator(w.tmp / "cache/pushed")) {
    record += test::ReadFile(e.path().string());
  }
  for (const std::string& key : NamedKeys(w, *client)) {
    if (key == engine::kManifestKey || key.rfind("gulpdb.manifests/", 0) == 0) continue;
    BOOST_TEST(Contains(record, "\t" + key + "\n"), key << " is not in the record");
  }
}

BOOST_AUTO_TEST_CASE(a_damaged_index_without_a_local_copy_is_refused_and_overwrite_repairs_it) {
  for (const char* damage :
       {"partition deleted", "partition flipped", "root flipped", "chunk page deleted"}) {
    BOOST_TEST_CONTEXT(damage) {
      PushWorld w;
      const std::string dir = w.tmp / "local";
      AppendTagged(dir, "v", 0, 10, 0);
      Push(dir, w.url);
      auto client = w.Client();
      const std::vector<std::string> parts = PartitionKeys(w, *client);
      const engine::Manifest m = PublishedManifest(w, *client);
      const std::string what = damage;
      if (what == "partition deleted") {
        for (const std::string& key : parts) client->Delete(w.Key(key));
      } else if (what == "partition flipped") {
        for (const std::string& key : parts) {
          client->Put(w.Key(key), Flipped(client->Get(w.Key(key))));
        }
      } else if (what == "root flipped") {
        client->Put(w.Key(m.root_key), Flipped(client->Get(w.Key(m.root_key))));
      } else {
        client->Delete(w.Key(m.chunk_pages.at(0).key));
      }
      // Another machine (no copy of anything) appends and pushes.
      w.FreshCache("other-machine");
      AppendTagged(dir, "v", 10, 12, 0);
      try {
        Push(dir, w.url);
        // A flipped partition the build does not need is not seen without
        // a copy (only `check` reads every partition): then the push
        // succeeds, and the overwrite below repairs it.
        BOOST_TEST(what == "partition flipped", "the push named damaged objects");
      } catch (const CorruptionError& e) {
        BOOST_TEST(Contains(e.what(), "--overwrite"), e.what());
      }
      PushOptions overwrite;
      overwrite.overwrite = true;
      const PushReport r = Push(dir, w.url, overwrite);
      BOOST_TEST(r.generation >= 2u);
      ExpectHealthy(w, "cache-check");
      ExpectPublishedIntact(w, AllJpegs(*Dataset::Open(dir)), "cache-read");
      // The repaired prefix takes ordinary pushes again.
      AppendTagged(dir, "v", 12, 13, 0);
      w.FreshCache("other-machine");
      BOOST_TEST(Push(dir, w.url).published);
      ExpectHealthy(w, "cache-check2");
    }
  }
}

BOOST_AUTO_TEST_CASE(a_chunk_a_store_kept_damaged_on_the_way_is_uploaded_again_before_publishing) {
  // A store that checks neither the payload hash nor Content-MD5 stores a
  // chunk whose body changed after the checks (the proxy flips a byte of
  // the PUT after verifying it): the ETag it answers tells, and the push
  // sends the chunk again before it names it.
  static std::unique_ptr<test::S3ProxyServer> proxy =
      std::make_unique<test::S3ProxyServer>(test::SharedS3rver().port());
  proxy->Reset();
  for (const bool partitioned : {true, false}) {
    BOOST_TEST_CONTEXT((partitioned ? "partitioned" : "whole snapshot")) {
      PushWorld w(proxy->endpoint(), test::S3ProxyServer::kAccessKey,
                  test::S3ProxyServer::kSecretKey);
      const std::string dir = w.tmp / "local";
      AppendTagged(dir, "v", 0, 6, 0, /*checksums=*/false);
      proxy->AddFault(R"({"kind": "corrupt_stored", "count": 1, "method": "PUT", )"
                      R"("path": "data_1.gulp"})");
      const PushReport r = Push(dir, w.url, partitioned ? PushOptions() : test::WholeSnapshot());
      BOOST_TEST(r.published);
      BOOST_TEST(proxy->Stats().faults_injected == 1u);
      ExpectHealthy(w, partitioned ? "check-p" : "check-w");
      ExpectPublishedIntact(w, AllJpegs(*Dataset::Open(dir)), partitioned ? "read-p" : "read-w");
      proxy->Reset();
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb
