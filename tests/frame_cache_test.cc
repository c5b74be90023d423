// The node-level frame cache (engine/frame_cache) on its own, against a
// store played by a function that counts what it is asked for: block files
// and what a damaged one reads as, one fetch per block across threads and
// across processes, what a process killed mid-fill leaves, eviction down to
// the bound with a reader holding a block, identities that never share a
// block, range merging and read-ahead's memory bound, and the K/M/G sizes.
// Through a real S3 server and DataLoader workers: tests/python/test_frame_cache.py.
#include "engine/frame_cache/frame_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/frame_cache/block_file.h"
#include "engine/frame_cache/read_ahead.h"
#include "support/test_util.h"
#include "util/byte_size.h"
#include "util/file_io.h"

namespace gulpdb::engine {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

constexpr uint64_t kBlock = 64 * 1024;

// An object of the fake store: deterministic bytes.
std::string ObjectBytes(uint64_t size, uint32_t seed) {
  std::string out(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : out) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return out;
}

// The store: serves `bytes` for every key, counting requests and bytes.
struct FakeStore {
  std::string bytes;
  std::atomic<int> requests{0};
  std::atomic<uint64_t> served{0};
  StoreFetch Fetch() {
    return [this](const std::vector<StoreRead>& reads) {
      for (const StoreRead& r : reads) {
        ++requests;
        served += r.length;
        std::memcpy(r.out, bytes.data() + r.offset, r.length);
      }
    };
  }
};

CachedObject Object(const std::string& identity, uint64_t length) {
  CachedObject o;
  o.key = "data_0.gulp";
  o.name = "s3://bucket/ds/data_0.gulp";
  o.identity = identity;
  o.committed_length = length;
  return o;
}

FrameCacheConfig Config(const TempDir& tmp, uint64_t bound = uint64_t{1} << 30) {
  FrameCacheConfig c;
  c.dir = tmp / "frames";
  c.bound = bound;
  c.block_bytes = kBlock;
  return c;
}

// Reads `length` bytes at `offset` of `object` through `cache`.
std::string ReadThrough(const FrameCache& cache, const CachedObject& object, uint64_t offset,
                        uint64_t length, const StoreFetch& fetch) {
  std::string out(length, '\0');
  cache.Read({CacheRange{&object, offset, length, out.data()}}, fetch);
  return out;
}

std::vector<std::string> BlockFiles(const std::string& frames) {
  std::vector<std::string> out;
  if (!fs::exists(frames + "/blocks")) return out;
  for (const auto& e : fs::recursive_directory_iterator(frames + "/blocks")) {
    if (e.is_regular_file()) out.push_back(e.path().string());
  }
  return out;
}

uint64_t BytesUnder(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) total += e.file_size();
  }
  return total;
}

BOOST_AUTO_TEST_SUITE(frame_cache_test)

BOOST_AUTO_TEST_CASE(sizes_take_bytes_and_k_m_g_t_suffixes_and_refuse_the_rest) {
  BOOST_TEST(*util::ParseByteSize("0") == 0u);
  BOOST_TEST(*util::ParseByteSize("4096") == 4096u);
  BOOST_TEST(*util::ParseByteSize("64K") == 64u << 10);
  BOOST_TEST(*util::ParseByteSize("64k") == 64u << 10);
  BOOST_TEST(*util::ParseByteSize("3M") == 3u << 20);
  BOOST_TEST(*util::ParseByteSize("10G") == uint64_t{10} << 30);
  BOOST_TEST(*util::ParseByteSize("2T") == uint64_t{2} << 40);
  BOOST_TEST(*util::ParseByteSize("5MiB") == 5u << 20);
  for (const char* bad : {"", "-1", "1.5G", "G", "10 G", "12X", "lots", "99999999999999999999"}) {
    BOOST_TEST_INFO("value '" << bad << "'");
    BOOST_TEST(!util::ParseByteSize(bad).has_value());
  }
}

BOOST_AUTO_TEST_CASE(a_block_file_reads_back_and_every_kind_of_damage_is_refused) {
  TempDir tmp;
  const std::string data = ObjectBytes(40000, 7);
  BlockId id{std::string(64, 'a'), 65536, data.size()};
  const std::string file = EncodeBlockHeader(id, data) + data;
  const auto read = [&](const std::string& bytes, const BlockId& as, uint64_t offset, uint64_t size,
                        std::string* out) {
    test::WriteFile(tmp / "b", bytes);
    util::UniqueFd fd(::open((tmp / "b").c_str(), O_RDONLY));
    out->assign(size, '\0');
    return ReadBlockBytes(fd.get(), bytes.size(), as, offset, size, out->data());
  };
  std::string out;
  BOOST_TEST(read(file, id, 0, data.size(), &out) == "");
  BOOST_TEST(out == data);
  BOOST_TEST(read(file, id, 20000, 100, &out) == "");
  BOOST_TEST(out == data.substr(20000, 100));

  std::string flipped = file;
  flipped[flipped.size() - 5] ^= 0x10;  // in the last page
  BOOST_TEST(read(flipped, id, 39990, 10, &out).find("page 2 fails its CRC-32C") == 0u);
  BOOST_TEST(read(flipped, id, 0, 100, &out) == "");  // the pages read are sound
  std::string header = file;
  header[20] ^= 1;
  BOOST_TEST(read(header, id, 0, 10, &out) == "its header fails its CRC-32C");
  BOOST_TEST(read(file.substr(0, file.size() / 2), id, 0, 10, &out).find("its size is") == 0u);
  BOOST_TEST(read(std::string(), id, 0, 10, &out).find("its size is") == 0u);
  BOOST_TEST(read(std::string(file.size(), '\0'), id, 0, 10, &out) == "not a frame-cache block");
  BlockId other = id;
  other.name = std::string(64, 'b');
  BOOST_TEST(read(file, other, 0, 10, &out) == "its header describes another block");
  other = id;
  other.offset = 0;
  BOOST_TEST(read(file, other, 0, 10, &out) == "its header describes another block");
  BOOST_TEST(read(file, id, data.size() - 5, 10, &out) == "a read outside the block");
}

BOOST_AUTO_TEST_CASE(a_second_read_is_served_from_the_cache_without_the_store) {
  TempDir tmp;
  FakeStore store;
  store.bytes = ObjectBytes(5 * kBlock + 1000, 1);
  const CachedObject o = Object("id 1", store.bytes.size());
  const FrameCache cache(Config(tmp));
  // A range across three blocks, then one inside the last (partial) block.
  BOOST_TEST(ReadThrough(cache, o, kBlock - 10, 2 * kBlock, store.Fetch()) ==
             store.bytes.substr(kBlock - 10, 2 * kBlock));
  BOOST_TEST(store.requests.load() == 1);  // adjacent missing blocks: one GET
  BOOST_TEST(store.served.load() == 3 * kBlock);
  BOOST_TEST(ReadThrough(cache, o, 5 * kBlock, 1000, store.Fetch()) ==
             store.bytes.substr(5 * kBlock, 1000));
  BOOST_TEST(store.served.load() == 3 * kBlock + 1000);  // a block wholly below the length
  const int before = store.requests.load();
  BOOST_TEST(ReadThrough(cache, o, kBlock + 5, 3000, store.Fetch()) ==
             store.bytes.substr(kBlock + 5, 3000));
  BOOST_TEST(store.requests.load() == before);
  const CacheCounters c = cache.Counters();
  BOOST_TEST(c.misses == 4u);
  BOOST_TEST(c.hits == 1u);
  BOOST_TEST(c.bytes_from_store == 3 * kBlock + 1000);
  BOOST_TEST(c.bytes_from_cache == 3000u);
}

BOOST_AUTO_TEST_CASE(another_identity_never_finds_the_blocks_of_the_first) {
  // A replaced object, a wiped prefix or another dataset: the reader's
  // identity differs, and the old bytes are never served.
  TempDir tmp;
  FakeStore first, second;
  first.bytes = ObjectBytes(kBlock, 1);
  second.bytes = ObjectBytes(kBlock, 2);
  const FrameCache cache(Config(tmp));
  const CachedObject a = Object("dataset A, crc32c 1", kBlock);
  const CachedObject b = Object("dataset B, crc32c 2", kBlock);
  BOOST_TEST(ReadThrough(cache, a, 0, kBlock, first.Fetch()) == first.bytes);
  BOOST_TEST(ReadThrough(cache, b, 0, kBlock, second.Fetch()) == second.bytes);
  BOOST_TEST(second.requests.load() == 1);
  BOOST_TEST(BlockFiles(tmp / "frames").size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_damaged_block_file_is_fetched_again_and_counted) {
  TempDir tmp;
  FakeStore store;
  store.bytes = ObjectBytes(kBlock, 3);
  const FrameCache cache(Config(tmp));
  const CachedObject o = Object("id", kBlock);
  ReadThrough(cache, o, 0, kBlock, store.Fetch());
  const std::vector<std::string> files = BlockFiles(tmp / "frames");
  BOOST_TEST_REQUIRE(files.size() == 1u);
  std::string bytes = test::ReadFile(files[0]);
  bytes[bytes.size() - 1] ^= 0x40;
  test::WriteFile(files[0], bytes);
  BOOST_TEST(ReadThrough(cache, o, kBlock - 10, 10, store.Fetch()) ==
             store.bytes.substr(kBlock - 10));
  BOOST_TEST(store.requests.load() == 2);
  BOOST_TEST(cache.Counters().damaged == 1u);
  BOOST_TEST(ReadThrough(cache, o, 0, kBlock, store.Fetch()) == store.bytes);
  BOOST_TEST(store.requests.load() == 2);  // repaired
}

BOOST_AUTO_TEST_CASE(concurrent_misses_of_threads_make_one_fetch_per_block) {
  TempDir tmp;
  FakeStore store;
  store.bytes = ObjectBytes(8 * kBlock, 4);
  const CachedObject o = Object("id", store.bytes.size());
  const FrameCache cache(Config(tmp));
  std::mutex m;
  std::multiset<uint64_t> fetched;  // block offsets
  const StoreFetch slow = [&](const std::vector<StoreRead>& reads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // lets the others miss too
    for (const StoreRead& r : reads) {
      std::lock_guard<std::mutex> lock(m);
      for (uint64_t at = r.offset; at < r.offset + r.length; at += kBlock) fetched.insert(at);
      std::memcpy(r.out, store.bytes.data() + r.offset, r.length);
    }
  };
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      if (ReadThrough(cache, o, 0, store.bytes.size(), slow) != store.bytes) ++wrong;
    });
  }
  for (std::thread& t : threads) t.join();
  BOOST_TEST(wrong.load() == 0);
  BOOST_TEST(fetched.size() == 8u);
  BOOST_TEST(std::set<uint64_t>(fetched.begin(), fetched.end()).size() == 8u);
}

BOOST_AUTO_TEST_CASE(concurrent_misses_of_processes_make_one_fetch_per_block) {
  TempDir tmp;
  const std::string bytes = ObjectBytes(6 * kBlock, 5);
  const std::string log = tmp / "fetches";
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    const pid_t pid = ::fork();
    BOOST_TEST_REQUIRE(pid >= 0);
    if (pid == 0) {
      const FrameCache cache(Config(tmp));
      const CachedObject o = Object("id", bytes.size());
      const StoreFetch fetch = [&](const std::vector<StoreRead>& reads) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0600);
        for (const StoreRead& r : reads) {
          std::memcpy(r.out, bytes.data() + r.offset, r.length);
          const std::string line = std::to_string(r.offset) + " " + std::to_string(r.length) + "\n";
          if (::write(fd, line.data(), line.size()) < 0) ::_exit(3);
        }
        ::close(fd);
      };
      std::string out(bytes.size(), '\0');
      // Each process starts at another block: their fills cross.
      const uint64_t first = static_cast<uint64_t>(p) * kBlock;
      cache.Read({CacheRange{&o, first, bytes.size() - first, out.data() + first},
                  CacheRange{&o, 0, first, out.data()}},
                 fetch);
      ::_exit(out == bytes ? 0 : 2);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    BOOST_TEST_REQUIRE(::waitpid(pid, &status, 0) == pid);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 0);
  }
  uint64_t total = 0;
  std::set<uint64_t> blocks;
  std::istringstream lines(test::ReadFile(log));
  uint64_t offset = 0, length = 0;
  while (lines >> offset >> length) {
    total += length;
    for (uint64_t at = offset; at < offset + length; at += kBlock) blocks.insert(at);
  }
  BOOST_TEST(total == bytes.size());  // each block once
  BOOST_TEST(blocks.size() == 6u);
}

BOOST_AUTO_TEST_CASE(a_process_killed_mid_fill_leaves_nothing_served_and_its_lock_free) {
  TempDir tmp;
  const std::string bytes = ObjectBytes(2 * kBlock, 6);
  int ready[2];
  BOOST_TEST_REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  BOOST_TEST_REQUIRE(pid >= 0);
  if (pid == 0) {
    const FrameCache cache(Config(tmp));
    const CachedObject o = Object("id", bytes.size());
    // A fetch that never returns: the fill locks are held, nothing written yet.
    const StoreFetch hang = [&](const std::vector<StoreRead>&) {
      if (::write(ready[1], "x", 1) != 1) ::_exit(3);
      for (;;) ::pause();
    };
    ReadThrough(cache, o, 0, bytes.size(), hang);
    ::_exit(0);
  }
  char c = 0;
  BOOST_TEST_REQUIRE(::read(ready[0], &c, 1) == 1);
  // A partial block file it was writing, as a kill mid-write leaves one.
  test::WriteFile(tmp / "frames/tmp/" + std::to_string(pid) + ".0", bytes.substr(0, 1000));
  BOOST_TEST_REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  BOOST_TEST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  ::close(ready[0]);
  ::close(ready[1]);
  BOOST_TEST(BlockFiles(tmp / "frames").empty());

  const FrameCache cache(Config(tmp));
  FakeStore store;
  store.bytes = bytes;
  const CachedObject o = Object("id", bytes.size());
  BOOST_TEST(ReadThrough(cache, o, 0, bytes.size(), store.Fetch()) == bytes);
  BOOST_TEST(store.served.load() == bytes.size());
  cache.Evict();  // removes what a dead process left in tmp/
  BOOST_TEST(!fs::exists(tmp / "frames/tmp/" + std::to_string(pid) + ".0"));
}

BOOST_AUTO_TEST_CASE(eviction_keeps_to_the_bound_and_spares_a_block_a_reader_holds) {
  TempDir tmp;
  FakeStore store;
  store.bytes = ObjectBytes(24 * kBlock, 8);
  const uint64_t bound = 8 * kBlock;
  const FrameCache cache(Config(tmp, bound));
  const CachedObject o = Object("id", store.bytes.size());
  ReadThrough(cache, o, 0, kBlock, store.Fetch());
  std::vector<std::string> files = BlockFiles(tmp / "frames");
  BOOST_TEST_REQUIRE(files.size() == 1u);
  const std::string held_path = files[0];
  // The oldest block, held by a reader copying it out (a shared lock).
  util::UniqueFd held(::open(held_path.c_str(), O_RDONLY));
  BOOST_TEST_REQUIRE(::flock(held.get(), LOCK_SH) == 0);
  for (uint64_t b = 1; b < 24; ++b) {
    BOOST_TEST(ReadThrough(cache, o, b * kBlock, 100, store.Fetch()) ==
               store.bytes.substr(b * kBlock, 100));
  }
  cache.Evict();
  BOOST_TEST(BytesUnder(tmp / "frames") <= bound);
  BOOST_TEST(fs::exists(held_path));
  BOOST_TEST(cache.Counters().evictions > 0u);
  // The most recently used blocks stay.
  const int before = store.requests.load();
  ReadThrough(cache, o, 23 * kBlock, 100, store.Fetch());
  BOOST_TEST(store.requests.load() == before);
  ::flock(held.get(), LOCK_UN);
  held = util::UniqueFd();
  for (uint64_t b = 0; b < 24; ++b) ReadThrough(cache, o, b * kBlock, 100, store.Fetch());
  cache.Evict();
  BOOST_TEST(BytesUnder(tmp / "frames") <= bound);
}

BOOST_AUTO_TEST_CASE(merging_joins_ranges_of_one_object_within_the_gap) {
  const CachedObject a = Object("a", 1 << 30), b = Object("b", 1 << 30);
  const std::vector<CacheRange> merged = MergeRanges(
      {CacheRange{&a, 1000, 100, nullptr}, CacheRange{&a, 0, 100, nullptr},
       CacheRange{&a, 100 + kMergeGap, 50, nullptr},
       CacheRange{&a, 200 + 2 * kMergeGap, 10, nullptr}, CacheRange{&b, 150, 10, nullptr}},
      kMergeGap, kMaxMergedBytes);
  uint64_t a_ranges = 0, b_ranges = 0;
  for (const CacheRange& r : merged) {
    if (r.object == &a) {
      ++a_ranges;
      if (r.offset == 0) BOOST_TEST(r.length == 150 + kMergeGap);
    } else {
      ++b_ranges;
    }
  }
  BOOST_TEST(a_ranges == 2u);  // the last is more than the gap past the others
  BOOST_TEST(b_ranges == 1u);
  // A merged range stops at its bound.
  const std::vector<CacheRange> capped = MergeRanges(
      {CacheRange{&a, 0, 600, nullptr}, CacheRange{&a, 600, 600, nullptr}}, kMergeGap, 1000);
  BOOST_TEST(capped.size() == 2u);
}

BOOST_AUTO_TEST_CASE(read_ahead_in_memory_keeps_to_its_bound_and_serves_what_it_fetched) {
  FakeStore store;
  store.bytes = ObjectBytes(64 * 4096, 9);
  const CachedObject o = Object("id", store.bytes.size());
  const uint64_t bound = 5 * 4096;
  ReadAhead ahead(nullptr, store.Fetch(), bound);
  std::vector<CacheRange> ranges;
  for (uint64_t k = 0; k < 64; k += 2) ranges.push_back(CacheRange{&o, k * 4096, 4096, nullptr});
  ahead.Prefetch(ranges);
  // Each range, read in order: from memory or the store, always right.
  for (uint64_t k = 0; k < 64; k += 2) {
    std::string out(4096, '\0');
    ahead.Read({CacheRange{&o, k * 4096, 4096, out.data()}}, store.Fetch());
    BOOST_TEST(out == store.bytes.substr(k * 4096, 4096));
  }
  const ReadAheadStats s = ahead.stats();
  BOOST_TEST(s.peak_held_bytes <= bound);
  BOOST_TEST(s.gets > 0u);
}

// A store whose fetches wait at a gate the test opens: what is in flight at
// once is counted, never timed.
struct GatedStore {
  std::string bytes;
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  int in_flight = 0;
  int peak = 0;
  std::vector<uint64_t> offsets;  // of every range asked for
  StoreFetch Fetch() {
    return [this](const std::vector<StoreRead>& reads) {
      std::unique_lock<std::mutex> lock(m);
      for (const StoreRead& r : reads) offsets.push_back(r.offset);
      peak = std::max(peak, ++in_flight);
      cv.notify_all();
      cv.wait(lock, [&] { return open; });
      --in_flight;
      for (const StoreRead& r : reads) std::memcpy(r.out, bytes.data() + r.offset, r.length);
    };
  }
  // Waits (at most a minute: a failing test ends) until `n` fetches are in
  // flight at once; returns how many are.
  int AwaitInFlight(int n) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait_for(lock, std::chrono::seconds(60), [&] { return in_flight >= n; });
    return in_flight;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  }
};

BOOST_AUTO_TEST_CASE(read_ahead_into_the_cache_fills_the_next_calls_concurrently) {
  // Two batches queued at once: the second's GET is on its way while the
  // first's is (one at a time, the link idles through every request's latency).
  TempDir tmp;
  GatedStore store;
  store.bytes = ObjectBytes(8 * kBlock, 12);
  const CachedObject o = Object("id", store.bytes.size());
  auto cache = std::make_shared<const FrameCache>(Config(tmp));
  {
    ReadAhead ahead(cache, store.Fetch(), kDefaultPrefetchMemory);
    ahead.Prefetch({CacheRange{&o, 0, 100, nullptr}});
    ahead.Prefetch({CacheRange{&o, 4 * kBlock, 100, nullptr}});
    ahead.Prefetch({CacheRange{&o, 6 * kBlock, 100, nullptr}});
    BOOST_TEST(store.AwaitInFlight(2) == 2);  // the first two at once
    store.Open();
    // All three filled (a bounded wait: a failing test ends).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (ahead.stats().fills < 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    BOOST_TEST(cache->Counters().prefetched == 3u);
    // Each block read once it is in: from the cache, no other fetch.
    for (const uint64_t n : {uint64_t{0}, uint64_t{4}, uint64_t{6}}) {
      std::string out(100, '\0');
      ahead.Read({CacheRange{&o, n * kBlock, 100, out.data()}}, store.Fetch());
      BOOST_TEST(out == store.bytes.substr(n * kBlock, 100));
    }
    BOOST_TEST(ahead.stats().fills == 3u);
    BOOST_TEST(ahead.stats().peak_fills == static_cast<uint64_t>(kFillers));
  }
  BOOST_TEST(store.peak == kFillers);
  BOOST_TEST(store.offsets.size() == 3u);  // one GET per block
}

BOOST_AUTO_TEST_CASE(a_read_of_a_block_read_ahead_is_filling_waits_for_it_and_fetches_nothing) {
  TempDir tmp;
  GatedStore store;
  store.bytes = ObjectBytes(4 * kBlock, 13);
  const CachedObject o = Object("id", store.bytes.size());
  auto cache = std::make_shared<const FrameCache>(Config(tmp));
  ReadAhead ahead(cache, store.Fetch(), kDefaultPrefetchMemory);
  ahead.Prefetch({CacheRange{&o, kBlock, kBlock, nullptr}});
  BOOST_TEST(store.AwaitInFlight(1) == 1);  // read-ahead holds the block's fill lock
  std::string out(1000, '\0');
  std::thread reader([&] {
    ahead.Read({CacheRange{&o, kBlock + 10, 1000, out.data()}}, store.Fetch());
  });
  store.Open();
  reader.join();
  BOOST_TEST(out == store.bytes.substr(kBlock + 10, 1000));
  BOOST_TEST(store.offsets == std::vector<uint64_t>{kBlock});  // the reader fetched nothing
  const CacheCounters c = cache->Counters();
  BOOST_TEST(c.prefetched == 1u);
  BOOST_TEST(c.misses == 0u);
  BOOST_TEST(c.hits == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::engine
