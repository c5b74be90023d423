// Partitioned snapshots in object storage, against s3rver (and the S3 proxy
// for faults): a partitioned push publishes content-addressed partitions and
// a root that a version 2 manifest names, and a push after a 1% append
// uploads about 1% of the index; the node cache fetches a partition on
// first use (one download per machine, also from 4 processes at once),
// verifies it, shares it with later readers and generations, re-fetches a
// damaged cached copy, refuses a replaced object, survives a download
// killed half-way, and keeps to GULPDB_CACHE_BYTES by evicting only
// partitions no open reader holds.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/partition_cache.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/remote.h"
#include "index/partition_root.h"
#include "s3/s3_config.h"
#include "support/remote_fixture.h"
#include "support/test_util.h"
#include "tests/harness/s3_server.h"
#include "util/sha256.h"

namespace gulpdb {
namespace {

namespace fs = std::filesystem;
using test::Contains;
using test::S3ProxyServer;
using test::S3rverServer;
using test::ScopedEnv;
using test::TempDir;

test::S3rverServer& Server() {
  static std::unique_ptr<S3rverServer> server = std::make_unique<S3rverServer>();
  return *server;
}

test::S3ProxyServer& Proxy() {
  static std::unique_ptr<S3ProxyServer> proxy = std::make_unique<S3ProxyServer>(Server().port());
  proxy->Reset();
  return *proxy;
}

// A test's world: s3rver (or the proxy), a private cache, short timeouts.
struct World {
  TempDir tmp;
  ScopedEnv env;
  std::string prefix = test::UniquePrefix("part");
  std::string url;

  explicit World(const std::string& endpoint = Server().endpoint()) {
    url = "s3://" + Server().bucket() + "/" + prefix.substr(0, prefix.size() - 1);
    Endpoint(endpoint);
    env.Set("GULPDB_CACHE", tmp / "cache");
    env.Unset("GULPDB_CACHE_DIR");
    env.Unset("GULPDB_CACHE_BYTES");
    env.Unset("GULPDB_TEST_PARTITION_BYTES");
    env.Set("GULPDB_S3_CONNECT_TIMEOUT_MS", "2000");
    env.Set("GULPDB_S3_STALL_TIMEOUT_MS", "5000");
    env.Set("GULPDB_S3_REQUEST_TIMEOUT_MS", "20000");
    env.Set("GULPDB_S3_MAX_ATTEMPTS", "4");
    env.Set("GULPDB_S3_BACKOFF_BASE_MS", "5");
    env.Set("GULPDB_S3_BACKOFF_MAX_MS", "40");
    env.Set("AWS_REGION", "us-east-1");
    env.Unset("AWS_SESSION_TOKEN");
    env.Unset("AWS_PROFILE");
    env.Unset("GULPDB_PUSH_GRACE");
  }
  void Endpoint(const std::string& endpoint) {
    const bool proxy = endpoint != Server().endpoint();
    env.Set("AWS_ENDPOINT_URL", endpoint);
    env.Set("AWS_ACCESS_KEY_ID", proxy ? S3ProxyServer::kAccessKey : S3rverServer::kAccessKey);
    env.Set("AWS_SECRET_ACCESS_KEY", proxy ? S3ProxyServer::kSecretKey : S3rverServer::kSecretKey);
  }
  // Another node: its own cache, and a process that has found no object
  // damaged yet.
  void FreshCache(const std::string& name) {
    env.Set("GULPDB_CACHE", tmp / name);
    engine::ForgetBadObjects();
  }
  std::string CacheDir() const { return engine::PartitionCacheDirectory(); }
  std::shared_ptr<engine::ObjectStore> Store() const {
    return engine::OpenS3Store(url, remote::S3Config::FromEnvironment());
  }
  engine::Manifest Manifest() const {
    return engine::ParseManifest(Store()->Get(engine::kManifestKey, uint64_t{1} << 30), url);
  }
};

std::string HashedId(uint64_t n) { return util::Sha256Hex(std::to_string(n)).substr(0, 40); }

// Appends videos [from, to): 16 tiny frames each, a label of 100 values.
void AppendVideos(const std::string& dir, uint64_t from, uint64_t to) {
  std::unique_ptr<Dataset> ds;
  if (Dataset::Exists(dir)) {
    OpenOptions rw;
    rw.read_only = false;
    ds = Dataset::Open(dir, rw);
  } else {
    ds = Dataset::Create(dir);
  }
  static const std::string frame = test::FakeJpeg(64, 7);
  const std::vector<std::string_view> frames(16, frame);
  {
    auto w = ds->NewWriter();
    for (uint64_t n = from; n < to; ++n) {
      w->Append(HashedId(n), frames,
                "{\"label\": " + std::to_string(n % 100) + ", \"n\": " + std::to_string(n) + "}");
    }
    w->Commit();
  }
  if (from == 0) ds->CreateMetaIndex("label");
}

// The record is video n's (its meta says so).
bool IsVideo(const std::optional<index::VideoRecord>& r, uint64_t n) {
  return r.has_value() &&
         r->meta_data.find("\"n\": " + std::to_string(n) + "}") != std::string::npos;
}

constexpr uint64_t kTarget = 64 << 10;
// What a lookup by id fetches: the videos partition that locates the id,
// the order partition that holds its record.
constexpr uint64_t kLookupPartitions = 2;

PushOptions Partitioned() {
  PushOptions o;
  o.layout = IndexLayout::kPartitioned;
  o.partition_bytes = kTarget;
  return o;
}

PushOptions Whole() {
  PushOptions o;
  o.layout = IndexLayout::kWhole;
  return o;
}

uint64_t IndexBytes(const index::PartitionRoot& root) {
  uint64_t total = 0;
  for (const index::PartitionEntry& p : root.partitions) total += p.size;
  return total;
}

// A reader of the published partitioned snapshot through the node cache.
struct Reader {
  std::shared_ptr<engine::ObjectStore> store;
  std::shared_ptr<engine::PartitionCacheCounters> counters =
      std::make_shared<engine::PartitionCacheCounters>();
  std::unique_ptr<engine::PartitionedIndex> index;

  explicit Reader(const World& w) : store(w.Store()) {
    const engine::Manifest m = w.Manifest();
    index::PartitionRoot root = engine::FetchRoot(*store, m, "test");
    engine::PartitionFetch fetch =
        engine::NodeCacheFetch(store, "open " + w.url, std::chrono::seconds(30), counters);
    index = std::make_unique<engine::PartitionedIndex>(std::move(root), std::move(fetch), w.url,
                                                       engine::NodeCachePageFetch(store, w.url));
  }
  uint64_t downloads() const { return counters->downloads.load(); }
};

std::set<std::string> CachedPartitions(const std::string& dir) {
  std::set<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() == 64 && name[0] != '.') out.insert(name);
  }
  return out;
}

// The partition of `kind` whose key range holds `key`, of the base.
const index::PartitionEntry& BaseHolding(const index::PartitionRoot& root,
                                         index::PartitionKind kind, const std::string& key) {
  for (const index::PartitionEntry& p : root.partitions) {
    if (p.kind == kind && p.generation == 0 && p.first_key <= key && key <= p.last_key) return p;
  }
  BOOST_FAIL("no partition holds " << key);
  throw;
}

// The message of an object the bucket holds other bytes for, or none.
bool DamagedOrMissing(const std::string& message) {
  return message.find("is damaged in the bucket") != std::string::npos ||
         message.find("is missing: it was deleted behind the manifest's back") != std::string::npos;
}

// The base videos partition of the published root that holds `id`.
index::PartitionEntry VideosPartitionOf(const World& w, const std::string& id) {
  const index::PartitionRoot root = engine::FetchRoot(*w.Store(), w.Manifest(), "test");
  return BaseHolding(root, index::PartitionKind::kVideos, id);
}

BOOST_AUTO_TEST_SUITE(partitioned_remote_test)

BOOST_AUTO_TEST_CASE(partitioned_push_names_a_root_and_a_1_percent_append_uploads_little) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 10000);
  const PushReport first = Push(dir, w.url, Partitioned());
  BOOST_TEST(first.published);
  BOOST_TEST(first.partitioned);
  BOOST_TEST(!first.snapshot_uploaded);
  BOOST_TEST(first.root_uploaded);
  BOOST_TEST(first.partitions > 10u);
  BOOST_TEST(first.partitions_uploaded == first.partitions);

  const std::string text =
      w.Store()->Get(engine::kManifestKey, uint64_t{1} << 30);  // as an older reader sees it
  BOOST_TEST(text.find("\"version\": 3") != std::string::npos, text.substr(0, 200));
  BOOST_TEST(text.find("\"snapshot\"") == std::string::npos);
  // The chunk list is in pages the manifest names, not in the manifest.
  BOOST_TEST(text.find("\"chunks\"") == std::string::npos);
  BOOST_TEST(w.Manifest().chunk_pages.size() >= 1u);
  BOOST_TEST(first.chunk_pages_uploaded == w.Manifest().chunk_pages.size());
  const engine::Manifest m = w.Manifest();
  BOOST_TEST(m.partitioned());
  BOOST_TEST(m.root_key == engine::RootKey(m.root_sha256));
  BOOST_TEST(m.root_size == first.root_bytes);
  auto store = w.Store();
  const index::PartitionRoot root = engine::FetchRoot(*store, m, "test");
  std::set<std::string> listed;
  for (const engine::StoreObject& o : store->List()) listed.insert(o.key);
  for (const index::PartitionEntry& p : root.partitions) {
    BOOST_TEST(listed.count(engine::PartitionKey(p.sha256)) == 1u, p.sha256);
  }
  BOOST_TEST(first.partition_bytes_uploaded == IndexBytes(root));
  // Nothing changed: nothing is uploaded, nothing published.
  const PushReport again = Push(dir, w.url, Partitioned());
  BOOST_TEST(!again.published);
  BOOST_TEST(again.partitions_uploaded == 0u);

  // 1% more, hashed ids (all over the key space).
  AppendVideos(dir, 10000, 10100);
  const PushReport append = Push(dir, w.url, Partitioned());
  BOOST_TEST(append.published);
  const uint64_t index_bytes = IndexBytes(root);
  BOOST_TEST_MESSAGE("index " << index_bytes << " B in " << root.partitions.size()
                              << " partitions, root " << first.root_bytes
                              << " B; after 1%: " << append.partitions_uploaded << " partitions, "
                              << append.partition_bytes_uploaded << " B, root " << append.root_bytes
                              << " B");
  BOOST_TEST(append.partitions_uploaded >= 1u);
  BOOST_TEST(append.partition_bytes_uploaded <= index_bytes * 3 / 100);
  // Only the chunk list's last page changed (the new chunks are at its end).
  BOOST_TEST(append.chunk_pages_uploaded == 1u);
  // The partitions the new root no longer lists wait out the grace period.
  const engine::Manifest m2 = w.Manifest();
  const index::PartitionRoot root2 = engine::FetchRoot(*store, m2, "test");
  std::set<std::string> now;
  for (const index::PartitionEntry& p : root2.partitions) now.insert(p.sha256);
  std::set<std::string> obsolete;
  for (const engine::ManifestObsolete& o : m2.obsolete) obsolete.insert(o.key);
  uint64_t dropped = 0;
  for (const index::PartitionEntry& p : root.partitions) {
    if (now.count(p.sha256) != 0) continue;
    ++dropped;
    BOOST_TEST(obsolete.count(engine::PartitionKey(p.sha256)) == 1u, p.sha256);
  }
  BOOST_TEST(obsolete.count(m.root_key) == 1u);
  // And the chunk pages it no longer names.
  std::set<std::string> pages_now;
  for (const engine::ManifestChunkPage& p : m2.chunk_pages) pages_now.insert(p.key);
  for (const engine::ManifestChunkPage& p : m.chunk_pages) {
    if (pages_now.count(p.key) != 0) continue;
    ++dropped;
    BOOST_TEST(obsolete.count(p.key) == 1u, p.key);
  }
  BOOST_TEST(append.objects_obsoleted == dropped + 1);
}

BOOST_AUTO_TEST_CASE(a_fresh_node_fetches_two_partitions_per_lookup_and_shares_them) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 3000);
  Push(dir, w.url, Partitioned());
  w.FreshCache("fresh");
  const std::string id = HashedId(1234);
  {
    Reader r(w);
    BOOST_REQUIRE(IsVideo(r.index->FindVideo(id), 1234));
    BOOST_TEST(r.downloads() == kLookupPartitions);
    const uint64_t bytes = r.store->stats().bytes_received;
    BOOST_TEST_MESSAGE("fresh lookup: " << bytes << " bytes received");
    BOOST_TEST(bytes <=
               (kLookupPartitions + 1) * kTarget + r.index->root().partitions.size() * 200 + 4096);
    // A second reader (another dataset, or another process) finds it cached.
    Reader again(w);
    BOOST_REQUIRE(again.index->FindVideo(id).has_value());
    BOOST_TEST(again.downloads() == 0u);
  }
  BOOST_TEST(CachedPartitions(w.CacheDir()).size() == kLookupPartitions);
  // A later generation that kept the partition does not fetch it again.
  AppendVideos(dir, 3000, 3010);
  Push(dir, w.url, Partitioned());
  Reader later(w);
  const index::PartitionEntry& holding =
      BaseHolding(later.index->root(), index::PartitionKind::kVideos, id);
  BOOST_TEST(CachedPartitions(w.CacheDir()).count(holding.sha256) == 1u);
  BOOST_REQUIRE(later.index->FindVideo(id).has_value());
  // The delta partitions (new this generation) are fetched; the base one is not.
  for (const index::PartitionEntry& p : later.index->root().partitions) {
    if (p.sha256 == holding.sha256) BOOST_TEST(p.generation == 0u);
  }
  BOOST_TEST(later.downloads() <= 2u);
}

BOOST_AUTO_TEST_CASE(a_damaged_cached_partition_is_fetched_again) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 2000);
  Push(dir, w.url, Partitioned());
  w.FreshCache("fresh");
  const std::string id = HashedId(77);
  { BOOST_REQUIRE(Reader(w).index->FindVideo(id).has_value()); }
  const std::set<std::string> cached = CachedPartitions(w.CacheDir());
  BOOST_REQUIRE_EQUAL(cached.size(), kLookupPartitions);
  const std::string path = w.CacheDir() + "/" + *cached.begin();
  std::string bytes = test::ReadFile(path);
  bytes[bytes.size() / 2] ^= 0x5a;
  fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);
  test::WriteFile(path, bytes);
  Reader r(w);
  BOOST_REQUIRE(IsVideo(r.index->FindVideo(id), 77));
  BOOST_TEST(r.downloads() == 1u);
  BOOST_TEST(test::ReadFile(path) != bytes);
}

BOOST_AUTO_TEST_CASE(a_partition_replaced_in_the_bucket_is_a_corruption_error_naming_it) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 2000);
  Push(dir, w.url, Partitioned());
  const std::string id = HashedId(5);
  auto store = w.Store();
  const index::PartitionEntry p = VideosPartitionOf(w, id);
  const std::string key = engine::PartitionKey(p.sha256);
  std::string bytes = store->Get(key, p.size);
  for (const bool same_size : {true, false}) {
    std::string changed = bytes;
    changed[changed.size() / 3] ^= 0x01;
    if (!same_size) changed += "more";
    store->Put(key, changed);
    w.FreshCache(same_size ? "a" : "b");
    Reader r(w);
    try {
      r.index->FindVideo(id);
      BOOST_FAIL("a replaced partition was read");
    } catch (const CorruptionError& e) {
      BOOST_TEST(std::string(e.what()).find(p.sha256) != std::string::npos, e.what());
    }
    BOOST_TEST(CachedPartitions(w.CacheDir()).empty());
  }
  // The root replaced: refused before any partition is fetched.
  engine::Manifest m = w.Manifest();
  std::string root_bytes = store->Get(m.root_key, m.root_size);
  root_bytes[10] ^= 0x01;
  store->Put(m.root_key, root_bytes);
  // A node that holds the root (verified when it came) keeps reading it.
  BOOST_TEST(engine::FetchRoot(*store, m, "open").generation == m.generation);
  w.FreshCache("no-root");
  try {
    engine::FetchRoot(*store, m, "open");
    BOOST_FAIL("a replaced root was read");
  } catch (const CorruptionError& e) {
    BOOST_TEST(std::string(e.what()).find(m.root_key) != std::string::npos, e.what());
  }
}

// GETs the proxy logged for each object whose path holds `part`.
std::map<std::string, size_t> ProxyGets(S3ProxyServer& proxy, const std::string& part) {
  const std::string log = proxy.Log();
  const std::string get = "{\"method\": \"GET\", \"path\": \"";
  std::map<std::string, size_t> out;
  for (size_t at = log.find(get); at != std::string::npos; at = log.find(get, at + 1)) {
    const size_t start = at + get.size();
    const std::string path = log.substr(start, log.find('"', start) - start);
    if (path.find(part) != std::string::npos) ++out[path];
  }
  return out;
}

// The number of GETs in `gets`.
size_t Total(const std::map<std::string, size_t>& gets) {
  size_t n = 0;
  for (const auto& [path, count] : gets) n += count;
  return n;
}

// A partition whose bytes changed in the bucket was downloaded three times
// for every read that needed it. Now: twice (the same wrong bytes twice are
// not damage on the way), then every read in the process fails at once,
// also after a re-open of the same generation; a publisher's fetch (no
// memory) checks again.
BOOST_AUTO_TEST_CASE(a_partition_damaged_in_the_bucket_costs_two_downloads_however_many_reads) {
  S3ProxyServer& proxy = Proxy();  // (Proxy() clears its log and faults)
  World w(proxy.endpoint());
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 2000);
  Push(dir, w.url, Partitioned());
  const std::string id = HashedId(5);
  auto store = w.Store();
  const index::PartitionEntry p = VideosPartitionOf(w, id);
  std::string bytes = store->Get(engine::PartitionKey(p.sha256), p.size);
  bytes[bytes.size() / 3] ^= 0x01;
  store->Put(engine::PartitionKey(p.sha256), bytes);
  w.FreshCache("fresh");
  proxy.Reset();
  std::string first;
  for (int open = 0; open < 2; ++open) {
    auto ds = Dataset::Open(w.url);
    for (int read = 0; read < 50; ++read) {
      try {
        ds->ReadJpegs(id);
        BOOST_FAIL("read through a partition damaged in the bucket");
      } catch (const CorruptionError& e) {
        if (first.empty()) first = e.what();
        BOOST_TEST(std::string(e.what()).rfind(first, 0) == 0u, e.what());
      }
    }
  }
  BOOST_TEST(Contains(first, engine::PartitionKey(p.sha256) + " is damaged in the bucket"), first);
  BOOST_TEST(Total(ProxyGets(proxy, p.sha256)) == 2u);
  BOOST_CHECK_THROW(Reader(w).index->FindVideo(id), CorruptionError);
  BOOST_TEST(Total(ProxyGets(proxy, p.sha256)) == 4u);
}

// A root or a root page damaged on the way once is fetched again; damaged
// on every download, the read fails naming it as damaged in the bucket.
BOOST_AUTO_TEST_CASE(a_root_or_root_page_damaged_on_the_way_is_fetched_again) {
  S3ProxyServer& proxy = Proxy();  // (Proxy() clears its log and faults)
  World w(proxy.endpoint());
  w.env.Set("GULPDB_TEST_ROOT_PAGE_BYTES", "256");
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 2000);
  BOOST_REQUIRE(Push(dir, w.url, Partitioned()).root_pages > 0u);
  const auto local = Dataset::Open(dir);
  int trial = 0;
  for (const std::string part : {".root", ".page"}) {
    BOOST_TEST_INFO(part);
    w.FreshCache("once" + std::to_string(trial));
    proxy.Reset();
    proxy.AddFault(R"({"kind": "corrupt_response", "count": 1, "method": "GET", "path": ")" + part +
                   R"("})");
    {
      auto remote = Dataset::Open(w.url);
      for (uint64_t i = 0; i < 2000; i += 111) BOOST_TEST(remote->IdAt(i) == local->IdAt(i));
    }
    BOOST_TEST(proxy.Stats().faults_injected == 1u);
    w.FreshCache("always" + std::to_string(trial++));
    proxy.Reset();
    proxy.AddFault(R"({"kind": "corrupt_response", "fraction": 1.0, "method": "GET", "path": ")" +
                   part + R"("})");
    try {
      auto remote = Dataset::Open(w.url);
      for (uint64_t i = 0; i < 2000; i += 111) remote->IdAt(i);
      BOOST_ERROR("read through a " << part << " damaged on every download");
    } catch (const CorruptionError& e) {
      BOOST_TEST(Contains(e.what(), "is damaged in the bucket"), e.what());
      BOOST_TEST(Contains(e.what(), "/gulpdb.roots/"), e.what());
      BOOST_TEST(Contains(e.what(), part), e.what());
      BOOST_TEST(!Contains(e.what(), "behind the manifest's back"), e.what());
    }
    // Two downloads of each object that failed, the same bytes twice.
    const std::map<std::string, size_t> gets = ProxyGets(proxy, part);
    BOOST_TEST(!gets.empty());
    for (const auto& [path, count] : gets) BOOST_TEST(count == 2u, path);
  }
  proxy.Reset();
}

BOOST_AUTO_TEST_CASE(a_chunk_page_replaced_or_deleted_in_the_bucket_is_an_error_naming_it) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 600);
  Push(dir, w.url, Partitioned());
  const engine::Manifest m = w.Manifest();
  BOOST_REQUIRE_EQUAL(m.chunk_pages.size(), 1u);
  const engine::ManifestChunkPage& page = m.chunk_pages[0];
  auto store = w.Store();
  const std::string good = store->Get(page.key, page.size);
  const std::string id = HashedId(17);
  const auto read = [&] { return Dataset::Open(w.url)->ReadJpegs(id).size(); };
  // Another page's worth of bytes (a valid page, another chunk list), the
  // same page with one byte changed, a longer object, and none at all.
  std::string other = good;
  other.replace(other.find("\"committed_length\": "), 20, "\"committed_length\": 9");
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x01;
  int trial = 0;
  for (const std::optional<std::string>& bytes :
       {std::optional<std::string>(other), std::optional<std::string>(flipped),
        std::optional<std::string>(good + " "), std::optional<std::string>()}) {
    if (bytes) {
      store->Put(page.key, *bytes);
    } else {
      store->Delete({page.key});
    }
    w.FreshCache("fresh" + std::to_string(trial++));
    try {
      read();
      BOOST_ERROR("read through a chunk page that is not the manifest's");
    } catch (const CorruptionError& e) {
      BOOST_TEST(std::string(e.what()).find(page.key) != std::string::npos, e.what());
      BOOST_TEST(DamagedOrMissing(e.what()), e.what());
    }
  }
  // Put back, it reads; a node that had it cached never noticed.
  store->Put(page.key, good);
  w.FreshCache("back");
  BOOST_TEST(read() == 16u);
  store->Put(page.key, flipped);
  BOOST_TEST(read() == 16u);
}

BOOST_AUTO_TEST_CASE(a_two_level_root_is_read_by_pages_and_a_page_replaced_is_an_error_naming_it) {
  World w;
  w.env.Set("GULPDB_TEST_ROOT_PAGE_BYTES", "256");  // pages of one or two partitions
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 4000);
  const PushReport first = Push(dir, w.url, Partitioned());
  BOOST_TEST(first.root_pages > 4u);
  BOOST_TEST(first.root_pages_uploaded == first.root_pages);
  const engine::Manifest m = w.Manifest();
  auto store = w.Store();
  const index::PartitionRoot top = engine::FetchRoot(*store, m, "test");
  BOOST_REQUIRE_EQUAL(top.pages.size(), first.root_pages);
  BOOST_TEST(top.format_version == 3u);
  std::set<std::string> listed;
  for (const engine::StoreObject& o : store->List()) listed.insert(o.key);
  for (const index::RootPage& p : top.pages) {
    BOOST_TEST(listed.count(engine::RootPageKey(p.sha256)) == 1u, p.sha256);
  }

  // A fresh node reads by id, by position and by label through the pages.
  const auto local = Dataset::Open(dir);
  w.FreshCache("fresh");
  {
    auto remote = Dataset::Open(w.url);
    for (uint64_t n : {uint64_t{3}, uint64_t{1999}, uint64_t{3998}}) {
      BOOST_TEST(remote->ReadJpegs(HashedId(n)).size() == 16u);
    }
    BOOST_TEST(remote->IdAt(2500) == local->IdAt(2500));
    BOOST_TEST(remote->Select("label", "7") == local->Select("label", "7"));
    BOOST_TEST(remote->Stats().videos == 4000u);
  }
  // check reads every page and every partition, and agrees.
  const CheckReport report = Check(w.url);
  BOOST_TEST(report.healthy(), (report.problems.empty() ? "" : report.problems[0].what));
  BOOST_TEST(report.videos == 4000u);

  // 1% more: the push writes few pages; those the new root no longer names
  // wait out the grace period.
  AppendVideos(dir, 4000, 4040);
  const PushReport append = Push(dir, w.url, Partitioned());
  BOOST_TEST_MESSAGE("two-level root: " << first.root_pages
                                        << " pages; after 1%: " << append.root_pages_uploaded
                                        << " of " << append.root_pages << " pages uploaded");
  BOOST_TEST(append.root_pages_uploaded >= 1u);
  BOOST_TEST(append.root_pages_uploaded * 4 <= append.root_pages);
  const engine::Manifest m2 = w.Manifest();
  const index::PartitionRoot top2 = engine::FetchRoot(*store, m2, "test");
  std::set<std::string> now, obsolete;
  for (const index::RootPage& p : top2.pages) now.insert(p.sha256);
  for (const engine::ManifestObsolete& o : m2.obsolete) obsolete.insert(o.key);
  for (const index::RootPage& p : top.pages) {
    if (now.count(p.sha256) == 0) {
      BOOST_TEST(obsolete.count(engine::RootPageKey(p.sha256)) == 1u, p.sha256);
    }
  }

  // An order page replaced (same size or not) or deleted in the bucket: a
  // node that reads through it gets an error naming it, never other ids.
  const index::RootPage* order = nullptr;
  for (const index::RootPage& p : top2.pages) {
    if (p.kind == index::PartitionKind::kOrder) order = &p;
  }
  BOOST_REQUIRE(order != nullptr);
  const std::string key = engine::RootPageKey(order->sha256);
  const std::string good = store->Get(key, order->size);
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x01;
  int trial = 0;
  for (const std::optional<std::string>& bytes :
       {std::optional<std::string>(flipped), std::optional<std::string>(good + "x"),
        std::optional<std::string>()}) {
    if (bytes) {
      store->Put(key, *bytes);
    } else {
      store->Delete({key});
    }
    w.FreshCache("page" + std::to_string(trial++));
    auto remote = Dataset::Open(w.url);
    try {
      for (uint64_t i = 0; i < remote->Stats().videos; ++i) remote->IdAt(i);
      BOOST_ERROR("read positions through a replaced root page");
    } catch (const CorruptionError& e) {
      BOOST_TEST(std::string(e.what()).find(key) != std::string::npos, e.what());
      BOOST_TEST(DamagedOrMissing(e.what()), e.what());
    }
    BOOST_TEST(!Check(w.url).healthy());
  }
  store->Put(key, good);
  w.FreshCache("back");
  BOOST_TEST(Dataset::Open(w.url)->IdAt(4039) == Dataset::Open(dir)->IdAt(4039));
}

BOOST_AUTO_TEST_CASE(the_cache_bound_evicts_only_partitions_no_open_reader_holds) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 3000);
  Push(dir, w.url, Partitioned());
  w.FreshCache("fresh");
  w.env.Set("GULPDB_CACHE_BYTES", "1");  // smaller than anything open
  std::vector<std::string> ids;
  std::vector<uint64_t> ns;
  for (uint64_t n = 0; n < 3000; n += 97) {
    ids.push_back(HashedId(n));
    ns.push_back(n);
  }
  auto a = std::make_unique<Reader>(w);
  for (size_t i = 0; i < ids.size() / 2; ++i) BOOST_REQUIRE(a->index->FindVideo(ids[i]));
  const std::set<std::string> held_by_a = CachedPartitions(w.CacheDir());
  BOOST_TEST(held_by_a.size() == a->downloads());
  BOOST_TEST(held_by_a.size() >= 2u);
  {
    // Another reader, over the bound too: evicts nothing A holds.
    Reader b(w);
    for (size_t i = ids.size() / 2; i < ids.size(); ++i) {
      BOOST_REQUIRE(b.index->FindVideo(ids[i]));
    }
    for (const std::string& sha : held_by_a) {
      BOOST_TEST(CachedPartitions(w.CacheDir()).count(sha) == 1u, sha);
    }
  }
  // B closed: its partitions (not A's) are gone; A keeps reading.
  BOOST_TEST(CachedPartitions(w.CacheDir()) == held_by_a);
  for (size_t i = 0; i < ids.size() / 2; ++i) {
    BOOST_REQUIRE(IsVideo(a->index->FindVideo(ids[i]), ns[i]));
  }
  a.reset();
  BOOST_TEST(CachedPartitions(w.CacheDir()).empty());
  // Unbounded again: nothing is evicted.
  w.env.Unset("GULPDB_CACHE_BYTES");
  { BOOST_REQUIRE(Reader(w).index->FindVideo(ids[0])); }
  BOOST_TEST(CachedPartitions(w.CacheDir()).size() == kLookupPartitions);
  w.env.Set("GULPDB_CACHE_BYTES", "12X");
  BOOST_CHECK_THROW(engine::CacheBytesBound(), InvalidArgumentError);
  w.env.Set("GULPDB_CACHE_BYTES", "2M");
  BOOST_TEST(engine::CacheBytesBound() == uint64_t{2} << 20);
}

BOOST_AUTO_TEST_CASE(a_malformed_cache_bound_is_refused_at_every_open_warm_cache_too) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 300);
  Push(dir, w.url, Partitioned());
  const std::string id = HashedId(7);
  BOOST_TEST(Dataset::Open(w.url)->Contains(id));  // the cache is warm from here on
  for (const char* bad : {"abc", "12X", "-1"}) {
    w.env.Set("GULPDB_CACHE_BYTES", bad);
    try {
      Dataset::Open(w.url)->Contains(id);  // every partition it needs is cached
      BOOST_ERROR("GULPDB_CACHE_BYTES=" << bad << " was taken");
    } catch (const InvalidArgumentError& e) {
      const std::string what = e.what();
      BOOST_TEST(what.find("GULPDB_CACHE_BYTES '" + std::string(bad) + "'") != std::string::npos,
                 what);
      BOOST_TEST(what.find(w.url) != std::string::npos, what);
    }
  }
  w.env.Set("GULPDB_CACHE_BYTES", "64M");
  BOOST_TEST(Dataset::Open(w.url)->Contains(id));
}

// Runs `fn` in `n` child processes at once; returns their exit codes.
std::vector<int> InChildren(int n, const std::function<int()>& fn) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 100;
      try {
        code = fn();
      } catch (...) {
        code = 101;
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (const pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 200);
  }
  return codes;
}

BOOST_AUTO_TEST_CASE(four_processes_at_first_use_download_a_partition_once) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 2000);
  Push(dir, w.url, Partitioned());
  w.FreshCache("fresh");
  const std::string id = HashedId(42);
  // Each child: 10 + its downloads when it read the right record (the
  // videos partition that locates it, the order partition that holds it).
  const std::vector<int> codes = InChildren(4, [&] {
    Reader r(w);
    if (!IsVideo(r.index->FindVideo(id), 42)) return 1;
    return 10 + static_cast<int>(r.downloads());
  });
  int downloads = 0;
  for (const int code : codes) {
    BOOST_TEST((code >= 10 && code <= 10 + static_cast<int>(kLookupPartitions)),
               "exit code " << code);
    downloads += code - 10;
  }
  BOOST_TEST(downloads == static_cast<int>(kLookupPartitions));
  BOOST_TEST(CachedPartitions(w.CacheDir()).size() == kLookupPartitions);
}

BOOST_AUTO_TEST_CASE(a_download_killed_half_way_leaves_nothing_that_is_used) {
  World w(Proxy().endpoint());
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 2000);
  Push(dir, w.url, Partitioned());
  w.FreshCache("fresh");
  const std::string id = HashedId(9);
  // Partition GETs stall half-way; the child is killed meanwhile.
  Proxy().AddFault(
      R"({"kind": "stall", "delay_ms": 20000, "method": "GET", "path": "gulpdb.partitions/", "count": 5})");
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    try {
      Reader(w).index->FindVideo(id);
    } catch (...) {
    }
    ::_exit(0);
  }
  bool downloading = false;
  for (int i = 0; i < 400 && !downloading; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    if (!fs::exists(w.CacheDir())) continue;
    for (const auto& e : fs::directory_iterator(w.CacheDir())) {
      if (e.path().filename().string().rfind(".download.", 0) == 0 && fs::file_size(e.path()) > 0) {
        downloading = true;
      }
    }
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  BOOST_REQUIRE_MESSAGE(downloading, "the child never started downloading");
  BOOST_TEST(CachedPartitions(w.CacheDir()).empty());
  Proxy().ClearFaults();
  Reader r(w);
  BOOST_REQUIRE(IsVideo(r.index->FindVideo(id), 9));
  BOOST_TEST(r.downloads() == kLookupPartitions);
  for (const auto& e : fs::directory_iterator(w.CacheDir())) {
    BOOST_TEST(e.path().filename().string().rfind(".download.", 0) != 0, e.path());
  }
}

BOOST_AUTO_TEST_CASE(open_by_url_reads_a_video_fetching_the_root_and_a_partition_or_two) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 4000);
  Push(dir, w.url, Partitioned());
  const auto local = Dataset::Open(dir);
  auto store = w.Store();
  const index::PartitionRoot root = engine::FetchRoot(*store, w.Manifest(), "test");
  const uint64_t index_bytes = IndexBytes(root);
  w.FreshCache("fresh");
  std::mt19937_64 rng(11);
  const uint64_t n = rng() % 4000;
  const std::string id = HashedId(n);
  auto old_reader = Dataset::Open(w.url);
  {
    const StoredFrames got = old_reader->ReadJpegs(id);
    const StoredFrames want = local->ReadJpegs(id);
    BOOST_REQUIRE_EQUAL(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) BOOST_TEST(got[i] == want[i]);
  }
  const RemoteInfo fresh = *GetRemoteInfo(*old_reader);
  BOOST_TEST(fresh.partitioned);
  BOOST_TEST(fresh.snapshot_sha256 == w.Manifest().root_sha256);
  BOOST_TEST_MESSAGE("fresh open + one video: "
                     << fresh.bytes_received << " bytes, " << fresh.partitions_downloaded
                     << " partitions; the index is " << index_bytes << " bytes");
  BOOST_TEST(fresh.partitions_downloaded >= 1u);
  // Its videos partition, its order partition, the chunk list.
  BOOST_TEST(fresh.partitions_downloaded <= kLookupPartitions + 1);
  BOOST_TEST(fresh.bytes_received < index_bytes / 4);
  BOOST_TEST(old_reader->Stats().videos == 4000u);

  // 1% more, pushed: a warm node re-opens fetching little; the old reader
  // keeps reading its generation.
  AppendVideos(dir, 4000, 4040);
  w.FreshCache("pusher");  // the pusher is another machine
  Push(dir, w.url, Partitioned());
  w.FreshCache("fresh");
  auto reopened = Dataset::Open(w.url);
  BOOST_REQUIRE_EQUAL(reopened->ReadJpegs(HashedId(4005)).size(), 16u);
  BOOST_REQUIRE_EQUAL(reopened->ReadJpegs(id).size(), 16u);
  const RemoteInfo warm = *GetRemoteInfo(*reopened);
  BOOST_TEST_MESSAGE("warm re-open + two videos: " << warm.bytes_received << " bytes, "
                                                   << warm.partitions_downloaded << " partitions");
  BOOST_TEST(warm.generation == fresh.generation + 1);
  BOOST_TEST(warm.bytes_received <= index_bytes * 3 / 100 + 2 * 16 * 1024 + 64 * 1024);
  BOOST_TEST(reopened->Stats().videos == 4040u);
  for (uint64_t k = 0; k < 4000; k += 400) {
    BOOST_REQUIRE_EQUAL(old_reader->ReadJpegs(HashedId(k)).size(), 16u);
  }
  BOOST_CHECK_THROW(old_reader->ReadJpegs(HashedId(4005)), NotFoundError);
  BOOST_TEST(old_reader->Stats().videos == 4000u);
  // Positional access and queries on the partitioned snapshot.
  BOOST_TEST(reopened->IdAt(0) == local->IdAt(0));
  BOOST_TEST(reopened->Select("label", "7") == Dataset::Open(dir)->Select("label", "7"));
}

BOOST_AUTO_TEST_CASE(switching_between_whole_and_partitioned_snapshots_obsoletes_the_other) {
  World w;
  const std::string dir = w.tmp / "d";
  AppendVideos(dir, 0, 500);
  Push(dir, w.url, Partitioned());
  const engine::Manifest partitioned = w.Manifest();
  auto store = w.Store();
  const index::PartitionRoot root = engine::FetchRoot(*store, partitioned, "test");
  auto pinned = Dataset::Open(w.url);  // a reader of the partitioned generation
  // The same dataset, whole: a version 1 manifest; the root and its
  // partitions wait out the grace period for readers like `pinned`.
  const PushReport whole = Push(dir, w.url, Whole());
  BOOST_TEST(whole.published);
  BOOST_TEST(whole.snapshot_uploaded);
  const engine::Manifest m = w.Manifest();
  BOOST_TEST(m.version == engine::kManifestVersionSnapshot);
  BOOST_TEST(!m.partitioned());
  std::set<std::string> obsolete;
  for (const engine::ManifestObsolete& o : m.obsolete) obsolete.insert(o.key);
  BOOST_TEST(obsolete.count(partitioned.root_key) == 1u);
  for (const index::PartitionEntry& p : root.partitions) {
    BOOST_TEST(obsolete.count(engine::PartitionKey(p.sha256)) == 1u);
  }
  w.FreshCache("whole");
  BOOST_TEST(Dataset::Open(w.url)->ReadJpegs(HashedId(3)).size() == 16u);
  BOOST_TEST(pinned->ReadJpegs(HashedId(4)).size() == 16u);
  // And back: the partitions are named again (off the obsolete list), the
  // whole snapshot becomes obsolete.
  const PushReport back = Push(dir, w.url, Partitioned());
  BOOST_TEST(back.published);
  BOOST_TEST(back.partitions_uploaded == 0u);  // still in the store
  const engine::Manifest again = w.Manifest();
  BOOST_TEST(again.partitioned());
  std::set<std::string> obsolete_again;
  for (const engine::ManifestObsolete& o : again.obsolete) obsolete_again.insert(o.key);
  BOOST_TEST(obsolete_again.count(m.snapshot_key) == 1u);
  for (const index::PartitionEntry& p : root.partitions) {
    BOOST_TEST(obsolete_again.count(engine::PartitionKey(p.sha256)) == 0u);
  }
  w.FreshCache("back");
  BOOST_TEST(Dataset::Open(w.url)->ReadJpegs(HashedId(5)).size() == 16u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
