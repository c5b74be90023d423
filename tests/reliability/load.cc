// The load test: one writer process appends videos in committed batches while
// reader processes, reader threads and a .gmeta exporter work on the same
// dataset (checksums on), and shows that readers never wait for the writer.
//
//   gulpdb_load [--videos V] [--seed S] [--dir D] [--readers-procs P]
//               [--reader-threads T] [--pause-reads N]
//
//   quick mode (CTest reliability_load):  gulpdb_load --videos 1500
//   long mode:                            gulpdb_load --videos 10000
//
// Defaults: --videos 1500 --seed 1 --readers-procs 4 --reader-threads 8.
// --dir D works in D (the dataset in D/dataset, exports in D/exports) and
// keeps it; without it a temporary directory is used and removed after a
// passing run.
//
// Processes, all forked before any thread starts:
//   - the writer appends V videos in batches of 20-50 and commits each batch.
//     Video n's id, frames (reliability::MakeFrames), meta and the batch
//     boundaries follow from (seed, n), so every process can regenerate what
//     any committed video must hold.
//   - P reader processes, and one process running T reader threads on one
//     shared Dataset, open the dataset with verify_checksums. Each read first
//     asks the dataset how many videos are committed (Count() in a fresh read
//     transaction: it must be a whole number of batches, never below what the
//     writer has confirmed nor above what it has begun), then reads a random
//     committed video: all frames, a list of indices, a slice, a batch
//     (ReadJpegBatch), decoded pixels (ReadFrames, compared with a decode of
//     the regenerated JPEG) or its index entry (Find: frame_info, checksums,
//     meta). Everything is compared byte for byte with the regenerated video.
//   - the opener opens the dataset afresh over and over while the writer
//     commits (every other open with verify_index), reads one committed
//     video and closes it again, so every open runs the index-file header
//     check against a file the writer is growing. An index that only grows
//     must never be called truncated or damaged by a concurrent open.
//   - the exporter runs ExportGmeta into fresh directories while the writer
//     works, and once more after it finished. Every export is parsed back
//     (engine/gulpio/gmeta.h) and must be a consistent snapshot: exactly the videos
//     of a whole number of committed batches, each entry's frame_info equal
//     to the dataset's and pointing at the right bytes of its data file.
//
// Readers never wait for the writer: every read's latency goes into a
// histogram, and reads that overlapped a commit (the writer publishes a commit
// generation, odd while a commit runs, in a MAP_SHARED page) are reported
// apart. On a machine with fewer cores than readers the tail is the
// scheduler's, so each read also notes its thread's context switches
// (getrusage): "calm" reads were neither preempted nor put to sleep, and
// their maximum is the reads' own cost. And deterministically: once inside a
// commit at the before_index_commit point (the LMDB write transaction and the
// writer lock are held) and once at before_data_sync, the writer stops until
// every reader process and thread has completed --pause-reads (default 20)
// further reads. If that takes longer than 30 s the run fails with "readers
// blocked by the writer". While paused before the index commit, readers must
// not see the paused batch.
//
// Output: "key: value" lines on stdout (videos_written, reads_total and
// reads_<reader>, read_errors, incomplete_or_wrong_reads, checksum_failures,
// exports_completed, export_errors, latency_p50_us, latency_p99_us,
// latency_max_us, the same during commits, paused_commit_reads, ..., then
// result: PASS or FAIL); details of failures on stderr. Exit status 0 when
// everything holds, 1 otherwise, 2 for a usage error. A failed run keeps its
// directory for inspection.
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/core/fault_injection.h"
#include "engine/gulpio/gmeta.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/jpeg.h"
#include "tests/reliability/common.h"
#include "util/crc32c.h"
#include "util/file_io.h"
#include "util/sys_error.h"

namespace gulpdb::reliability {
namespace {

using Clock = std::chrono::steady_clock;
namespace fault = engine::fault;

constexpr size_t kMaxSlots = 64;  // reader processes + reader threads
constexpr auto kPauseTimeout = std::chrono::seconds(30);
constexpr unsigned kStopTimeoutSeconds = 120;  // for children to finish once stopped
constexpr uint64_t kMinBatch = 20;
constexpr uint64_t kMaxBatch = 50;

struct Config {
  uint64_t videos = 1500;
  uint64_t seed = 1;
  std::string dir;  // empty: a temporary directory, removed after a passing run
  size_t reader_procs = 4;
  size_t reader_threads = 8;
  uint64_t pause_reads = 20;
  std::string dataset_dir() const { return dir + "/dataset"; }
  std::string exports_dir() const { return dir + "/exports"; }
};

// ---- What every video holds ------------------------------------------------------

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string VideoId(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "video_%07llu", static_cast<unsigned long long>(n));
  return buf;
}

// The n of "video_<n>", or nullopt for anything else.
std::optional<uint64_t> ParseVideoId(std::string_view id) {
  constexpr std::string_view kPrefix = "video_";
  if (id.size() <= kPrefix.size() || id.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  uint64_t n = 0;
  for (char c : id.substr(kPrefix.size())) {
    if (c < '0' || c > '9' || n > UINT64_MAX / 10 - 1) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

int FrameCountOf(uint64_t seed, uint64_t n) {
  return 2 + static_cast<int>(Mix(seed * 0x100000001b3ULL + n) % 5);  // 2..6
}
uint64_t VideoSeed(uint64_t seed, uint64_t n) { return seed * 1000003ULL + n; }
// The meta given to Append, already in the form json.dumps writes, so the
// index stores it unchanged (as the one-element meta_data list).
std::string MetaOf(uint64_t n) {
  return "{\"n\": " + std::to_string(n) + ", \"label\": \"class_" + std::to_string(n % 17) + "\"}";
}

// Cumulative video counts at batch ends: {0, b1, b2, ..., V}.
std::vector<uint64_t> BatchBounds(uint64_t videos, uint64_t seed) {
  std::mt19937_64 rng(Mix(seed ^ 0x5bd1e995ULL));
  std::vector<uint64_t> bounds{0};
  while (bounds.back() < videos) {
    const uint64_t size = kMinBatch + rng() % (kMaxBatch - kMinBatch + 1);
    bounds.push_back(std::min(videos, bounds.back() + size));
  }
  return bounds;
}

bool IsBound(const std::vector<uint64_t>& bounds, uint64_t count) {
  return std::binary_search(bounds.begin(), bounds.end(), count);
}

struct Expected {
  std::vector<std::string> frames;
  std::vector<uint32_t> crcs;
  std::string meta_data;  // the stored GulpIO meta_data list
};

// Regenerated videos, kept once made. Thread-safe.
class ExpectedCache {
 public:
  explicit ExpectedCache(uint64_t seed) : seed_(seed) {}

  std::shared_ptr<const Expected> Get(uint64_t n) {
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      auto it = videos_.find(n);
      if (it != videos_.end()) return it->second;
    }
    auto video = std::make_shared<Expected>();
    video->frames = MakeFrames(VideoSeed(seed_, n), FrameCountOf(seed_, n));
    for (const std::string& f : video->frames) {
      video->crcs.push_back(util::Crc32c(f.data(), f.size()));
    }
    video->meta_data = "[" + MetaOf(n) + "]";
    std::unique_lock<std::shared_mutex> lock(mutex_);
    return videos_.emplace(n, std::move(video)).first->second;
  }

 private:
  uint64_t seed_;
  std::shared_mutex mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<const Expected>> videos_;
};

// ---- Latency histogram -------------------------------------------------------------

// Log-linear buckets of nanoseconds: exact below 64, then 64 buckets per
// power of two (1.6% resolution).
constexpr int kSubBits = 6;
constexpr uint64_t kSub = uint64_t{1} << kSubBits;
constexpr size_t kBuckets = kSub + (64 - kSubBits) * kSub;

size_t BucketOf(uint64_t ns) {
  if (ns < kSub) return static_cast<size_t>(ns);
  const int e = 63 - __builtin_clzll(ns);
  const uint64_t mantissa = (ns >> (e - kSubBits)) - kSub;
  return static_cast<size_t>(kSub + static_cast<uint64_t>(e - kSubBits) * kSub + mantissa);
}

// The largest value that falls into bucket `b`.
uint64_t BucketTop(size_t b) {
  if (b < kSub) return b;
  const uint64_t e = (b - kSub) / kSub + kSubBits;
  const uint64_t mantissa = (b - kSub) % kSub;
  return ((kSub + mantissa + 1) << (e - kSubBits)) - 1;
}

// ---- The shared page ----------------------------------------------------------------

enum Kind { kCount, kJpegs, kIndices, kSlice, kBatch, kDecoded, kFind, kKinds };
const char* const kKindNames[kKinds] = {"count",      "jpegs",   "indices", "slice",
                                        "jpeg_batch", "decoded", "find"};

enum PausePoint : uint32_t { kPauseIndexCommit = 0, kPauseDataSync = 1 };
constexpr size_t kPauses = 2;
const char* const kPauseNames[kPauses] = {"before_index_commit", "before_data_sync"};

// One reader process or thread. reads_completed is watched by the writer
// while it is paused; the rest is written by the reader alone and read by
// the parent once the reader's process has exited.
struct alignas(64) Slot {
  std::atomic<uint64_t> reads_completed;
  uint64_t reads[kKinds];
  uint64_t read_errors;
  uint64_t wrong_reads;
  uint64_t checksum_failures;
  uint64_t commit_reads;   // reads that overlapped a commit
  uint64_t commit_max_ns;  // their longest
  uint64_t max_ns;
  uint64_t paused_reads[kPauses];  // reads that began and ended inside a writer pause
  uint64_t hist[kBuckets];         // latencies of all reads
  uint64_t commit_hist[kBuckets];  // latencies of the reads that overlapped a commit
  // Context switches during reads: a read that slept waited in the kernel (a
  // lock, I/O); a calm read was neither preempted nor slept, so its latency
  // is its own cost, free of the scheduler.
  uint64_t slept_reads;
  uint64_t commit_slept_reads;
  uint64_t preempted_reads;  // preempted, never slept
  uint64_t calm_max_ns;
  uint64_t commit_calm_max_ns;
};

struct PauseRecord {
  uint64_t batch;
  uint64_t wait_ns;    // how long the writer stayed paused
  uint64_t min_reads;  // fewest reads any reader completed meanwhile
  uint32_t done;
  uint32_t timed_out;
};

struct Shared {
  // Futex words: `events` is bumped (and waited on) when a batch commits or
  // the run stops; `progress` is bumped by readers while the writer is paused.
  std::atomic<uint32_t> events;
  std::atomic<uint32_t> progress;
  std::atomic<uint32_t> stop;
  std::atomic<uint32_t> writer_done;
  std::atomic<uint32_t> pause_active;
  std::atomic<uint32_t> pause_epoch;
  std::atomic<uint32_t> pause_point;
  // The committed videos when the current pause began (set before
  // pause_epoch moves): what a read inside the pause must see. Not
  // committed_videos, which a reader may have loaded before the writer
  // confirmed the batch before the pause.
  std::atomic<uint64_t> pause_committed;
  std::atomic<uint64_t> commit_gen;        // odd while a commit is in progress
  std::atomic<uint64_t> committed_videos;  // after Commit() returned
  std::atomic<uint64_t> attempted_videos;  // once the current batch has begun

  // Written by the writer.
  uint64_t commits;
  uint64_t writer_ns;
  PauseRecord pauses[kPauses];

  // Written by the opener.
  uint64_t opens;
  uint64_t opens_during_commits;  // opens that overlapped a commit
  uint64_t open_errors;

  // Written by the exporter.
  uint64_t exports_completed;
  uint64_t exports_during_writes;
  uint64_t export_errors;        // ExportGmeta or reading its files failed
  uint64_t export_inconsistent;  // an export that is not a committed snapshot
  uint64_t export_max_ns;
  uint64_t export_total_ns;
  uint64_t export_max_videos;
  uint64_t final_export_videos;

  Slot slots[kMaxSlots];
};

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "futex words must be plain 32-bit integers");

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  const auto ns = std::max<int64_t>(0, timeout.count());
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1000000000);
  ts.tv_nsec = static_cast<long>(ns % 1000000000);
  // A shared (not FUTEX_PRIVATE) wait: the word lives in a MAP_SHARED page.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void Bump(std::atomic<uint32_t>* word) {
  word->fetch_add(1);
  FutexWakeAll(word);
}

std::string SlotName(size_t slot, const Config& config) {
  if (slot < config.reader_procs) return "reader_proc_" + std::to_string(slot);
  return "reader_thread_" + std::to_string(slot - config.reader_procs);
}

uint64_t Nanos(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

// ---- Readers ------------------------------------------------------------------------

class Reader {
 public:
  Reader(Shared* shared, const Config& config, const std::vector<uint64_t>& bounds,
         const Dataset& ds, ExpectedCache* cache, size_t slot)
      : sh_(*shared),
        config_(config),
        bounds_(bounds),
        ds_(ds),
        cache_(*cache),
        slot_(shared->slots[slot]),
        name_(SlotName(slot, config)),
        rng_(Mix(config.seed * 7919 + slot + 1)) {}

  void Run() {
    WaitForFirstCommit();
    while (sh_.stop.load() == 0) {
      try {
        ReadOnce();
      } catch (const IdNotFoundError& e) {
        Wrong(std::string("a committed video is missing: ") + e.what());
      } catch (const CorruptionError& e) {
        if (std::strstr(e.what(), "checksum mismatch") != nullptr) {
          ++slot_.checksum_failures;
        } else {
          ++slot_.read_errors;
        }
        Report(e.what());
      } catch (const std::exception& e) {
        ++slot_.read_errors;
        Report(e.what());
      }
    }
    // Once the writer is done, every reader must see all of it.
    if (sh_.writer_done.load() != 0) {
      const uint64_t count = ds_.Count();
      if (count != config_.videos) {
        Wrong("after the writer finished, Count() = " + std::to_string(count) + ", not " +
              std::to_string(config_.videos));
      }
    }
  }

 private:
  struct Probe {
    uint64_t gen;
    uint32_t pause_active;
    uint32_t pause_epoch;
    uint32_t pause_point;
    uint64_t pause_committed;
    long voluntary_switches;
    long involuntary_switches;
    Clock::time_point start;
  };

  // This thread's context switches so far: voluntary ones mean it slept in
  // the kernel (a lock, I/O), involuntary ones that it was preempted.
  static void ContextSwitches(long* voluntary, long* involuntary) {
    struct rusage usage;
    if (::getrusage(RUSAGE_THREAD, &usage) != 0)
      util::ThrowErrno("getrusage", "RUSAGE_THREAD", errno);
    *voluntary = usage.ru_nvcsw;
    *involuntary = usage.ru_nivcsw;
  }

  Probe Start() const {
    Probe p;
    ContextSwitches(&p.voluntary_switches, &p.involuntary_switches);
    p.pause_active = sh_.pause_active.load();
    p.pause_epoch = sh_.pause_epoch.load();
    p.pause_point = sh_.pause_point.load();
    p.pause_committed = sh_.pause_committed.load();
    p.gen = sh_.commit_gen.load();
    p.start = Clock::now();
    return p;
  }

  // Records one read (failed or not) that began at `p`. Returns true when the
  // whole read happened while the writer was paused at `p.pause_point`.
  bool Finish(Kind kind, const Probe& p) {
    const uint64_t ns = Nanos(Clock::now() - p.start);
    const uint64_t gen = sh_.commit_gen.load();
    const uint32_t active = sh_.pause_active.load();
    const uint32_t epoch = sh_.pause_epoch.load();
    long voluntary = 0, involuntary = 0;
    ContextSwitches(&voluntary, &involuntary);
    const bool slept = voluntary != p.voluntary_switches;
    const bool calm = !slept && involuntary == p.involuntary_switches;
    const bool during_commit = (p.gen & 1) != 0 || gen != p.gen;
    ++slot_.hist[BucketOf(ns)];
    ++slot_.reads[kind];
    slot_.max_ns = std::max(slot_.max_ns, ns);
    if (slept) ++slot_.slept_reads;
    if (!calm && !slept) ++slot_.preempted_reads;
    if (calm) slot_.calm_max_ns = std::max(slot_.calm_max_ns, ns);
    if (during_commit) {
      ++slot_.commit_hist[BucketOf(ns)];
      ++slot_.commit_reads;
      slot_.commit_max_ns = std::max(slot_.commit_max_ns, ns);
      if (slept) ++slot_.commit_slept_reads;
      if (calm) slot_.commit_calm_max_ns = std::max(slot_.commit_calm_max_ns, ns);
    }
    const bool inside_pause = p.pause_active != 0 && active != 0 && epoch == p.pause_epoch;
    if (inside_pause) ++slot_.paused_reads[p.pause_point];
    slot_.reads_completed.fetch_add(1);
    if (active != 0) Bump(&sh_.progress);
    return inside_pause;
  }

  template <typename Fn>
  auto Timed(Kind kind, Fn&& fn, bool* inside_pause = nullptr, Probe* probe = nullptr)
      -> decltype(fn()) {
    const Probe p = Start();
    if (probe != nullptr) *probe = p;
    try {
      auto result = fn();
      const bool inside = Finish(kind, p);
      if (inside_pause != nullptr) *inside_pause = inside;
      return result;
    } catch (...) {
      Finish(kind, p);
      throw;
    }
  }

  void Report(const std::string& what) {
    if (reported_++ < 5) std::fprintf(stderr, "%s: %s\n", name_.c_str(), what.c_str());
  }
  void Wrong(const std::string& what) {
    ++slot_.wrong_reads;
    Report(what);
  }

  void WaitForFirstCommit() {
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    for (;;) {
      const uint32_t e = sh_.events.load();
      if (sh_.committed_videos.load() > 0 || sh_.stop.load() != 0) return;
      if (Clock::now() > deadline) {
        throw std::runtime_error("no batch was committed within 120 s");
      }
      FutexWait(&sh_.events, e, std::chrono::seconds(1));
    }
  }

  // How many videos are committed, asked of the dataset, with the checks
  // that number must pass.
  uint64_t CommittedCount() {
    const uint64_t confirmed = sh_.committed_videos.load();
    bool inside_pause = false;
    Probe p;
    const uint64_t count = Timed(
        kCount, [&] { return ds_.Count(); }, &inside_pause, &p);
    const uint64_t begun = sh_.attempted_videos.load();
    const std::string what = "Count() = " + std::to_string(count);
    if (!IsBound(bounds_, count)) Wrong(what + " is not a whole number of committed batches");
    if (count < confirmed) {
      Wrong(what + " but the writer had already committed " + std::to_string(confirmed));
    }
    if (count > begun) Wrong(what + " but the writer had begun only " + std::to_string(begun));
    if (count < last_count_) Wrong(what + " after " + std::to_string(last_count_) + " before");
    if (inside_pause && p.pause_point == kPauseIndexCommit && count != p.pause_committed) {
      Wrong(what + " while the writer was paused before committing the batch after " +
            std::to_string(p.pause_committed) + " videos: the uncommitted batch is visible");
    }
    last_count_ = std::max(last_count_, count);
    return count;
  }

  uint64_t PickVideo(uint64_t count) {
    // A quarter of the reads go to the newest batches, which live in the
    // chunk being appended to.
    if (rng_() % 4 == 0) return count - 1 - rng_() % std::min<uint64_t>(count, 60);
    return rng_() % count;
  }

  void CheckJpegs(uint64_t n, const StoredFrames& got, const std::vector<uint32_t>& want_indices) {
    const auto expected = cache_.Get(n);
    const std::string where = "read '" + VideoId(n) + "'";
    if (got.size() != want_indices.size() || got.indices() != want_indices) {
      Wrong(where + ": " + std::to_string(got.size()) + " frames returned, " +
            std::to_string(want_indices.size()) + " selected");
      return;
    }
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != expected->frames[want_indices[i]]) {
        Wrong(where + " frame " + std::to_string(want_indices[i]) + ": wrong bytes (" +
              std::to_string(got[i].size()) + " bytes, expected " +
              std::to_string(expected->frames[want_indices[i]].size()) + ")");
        return;
      }
    }
  }

  std::vector<uint32_t> AllIndices(uint64_t n) {
    std::vector<uint32_t> all(static_cast<size_t>(FrameCountOf(config_.seed, n)));
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint32_t>(i);
    return all;
  }

  std::vector<uint32_t> RandomIndices(uint64_t n) {
    const uint64_t frames = static_cast<uint64_t>(FrameCountOf(config_.seed, n));
    std::vector<uint32_t> picked(1 + rng_() % 6);
    for (uint32_t& i : picked) i = static_cast<uint32_t>(rng_() % frames);
    return picked;
  }

  static Selection IndicesSelection(const std::vector<uint32_t>& picked) {
    return Selection::Indices(std::vector<int64_t>(picked.begin(), picked.end()));
  }

  void ReadOnce() {
    const uint64_t count = CommittedCount();
    if (count == 0) return;
    const uint64_t n = PickVideo(count);
    const std::string id = VideoId(n);
    const uint64_t r = rng_() % 100;
    if (r < 40) {
      const StoredFrames got = Timed(kJpegs, [&] { return ds_.ReadJpegs(id); });
      CheckJpegs(n, got, AllIndices(n));
    } else if (r < 52) {
      const std::vector<uint32_t> picked = RandomIndices(n);
      const StoredFrames got =
          Timed(kIndices, [&] { return ds_.ReadJpegs(id, IndicesSelection(picked)); });
      CheckJpegs(n, got, picked);
    } else if (r < 62) {
      const int64_t frames = FrameCountOf(config_.seed, n);
      const int64_t start = static_cast<int64_t>(rng_() % static_cast<uint64_t>(frames));
      const int64_t stop =
          start + 1 + static_cast<int64_t>(rng_() % static_cast<uint64_t>(frames + 1));
      const int64_t step = 1 + static_cast<int64_t>(rng_() % 3);
      std::vector<uint32_t> want;
      for (int64_t i = start; i < std::min(stop, frames); i += step) {
        want.push_back(static_cast<uint32_t>(i));
      }
      const StoredFrames got =
          Timed(kSlice, [&] { return ds_.ReadJpegs(id, Selection::Slice(start, stop, step)); });
      CheckJpegs(n, got, want);
    } else if (r < 75) {
      std::vector<FrameRequest> requests(2 + rng_() % 5);
      std::vector<uint64_t> ns;
      std::vector<std::vector<uint32_t>> wants;
      for (FrameRequest& q : requests) {
        const uint64_t m = ns.empty() ? n : PickVideo(count);
        q.id = VideoId(m);
        if (rng_() % 2 == 0) {
          wants.push_back(AllIndices(m));
        } else {
          wants.push_back(RandomIndices(m));
          q.selection = IndicesSelection(wants.back());
        }
        ns.push_back(m);
      }
      const std::vector<StoredFrames> got =
          Timed(kBatch, [&] { return ds_.ReadJpegBatch(requests); });
      if (got.size() != requests.size()) {
        Wrong("ReadJpegBatch of " + std::to_string(requests.size()) + " requests returned " +
              std::to_string(got.size()));
        return;
      }
      for (size_t i = 0; i < got.size(); ++i) CheckJpegs(ns[i], got[i], wants[i]);
    } else if (r < 87) {
      DecodeOptions options;
      const PixelFormat formats[] = {PixelFormat::kAuto, PixelFormat::kRGB, PixelFormat::kGray,
                                     PixelFormat::kBGR};
      options.format = formats[rng_() % 4];
      options.dct = rng_() % 2 == 0 ? DctMethod::kFast : DctMethod::kAccurate;
      options.scale_denom = rng_() % 3 == 0 ? 2 : 1;
      const std::vector<uint32_t> picked = rng_() % 2 == 0 ? AllIndices(n) : RandomIndices(n);
      const DecodedFrames got =
          Timed(kDecoded, [&] { return ds_.ReadFrames(id, IndicesSelection(picked), options); });
      CheckDecoded(n, got, picked, options);
    } else {
      const std::optional<VideoInfo> info = Timed(kFind, [&] { return ds_.Find(id); });
      CheckInfo(n, info);
    }
  }

  void CheckDecoded(uint64_t n, const DecodedFrames& got, const std::vector<uint32_t>& picked,
                    const DecodeOptions& options) {
    const auto expected = cache_.Get(n);
    const std::string where = "decode '" + VideoId(n) + "'";
    if (got.size() != picked.size() || got.indices() != picked) {
      Wrong(where + ": " + std::to_string(got.size()) + " frames returned, " +
            std::to_string(picked.size()) + " selected");
      return;
    }
    for (size_t i = 0; i < got.size(); ++i) {
      const std::string& jpeg = expected->frames[picked[i]];
      ImageShape shape;
      const std::vector<uint8_t> pixels = ThreadLocalDecoder().Decode(
          reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size(), options, &shape);
      if (got.shape(i) != shape || std::memcmp(got.data(i), pixels.data(), pixels.size()) != 0) {
        Wrong(where + " frame " + std::to_string(picked[i]) + ": wrong pixels");
        return;
      }
    }
  }

  void CheckInfo(uint64_t n, const std::optional<VideoInfo>& info) {
    const auto expected = cache_.Get(n);
    const std::string where = "find '" + VideoId(n) + "'";
    if (!info) {
      Wrong(where + ": a committed video is missing");
      return;
    }
    if (info->id != VideoId(n) || info->frames.size() != expected->frames.size()) {
      Wrong(where + ": " + std::to_string(info->frames.size()) + " frames, expected " +
            std::to_string(expected->frames.size()));
      return;
    }
    if (info->checksums != expected->crcs) Wrong(where + ": wrong checksums");
    if (info->meta_data != expected->meta_data) {
      Wrong(where + ": meta_data " + info->meta_data + ", expected " + expected->meta_data);
    }
    for (size_t i = 0; i < info->frames.size(); ++i) {
      const FrameInfo& f = info->frames[i];
      const uint64_t size = expected->frames[i].size();
      if (f.pad != PadFor(size) || f.length != size + f.pad || f.offset % 4 != 0) {
        Wrong(where + " frame " + std::to_string(i) + ": wrong frame_info");
        return;
      }
    }
  }

  Shared& sh_;
  const Config& config_;
  const std::vector<uint64_t>& bounds_;
  const Dataset& ds_;
  ExpectedCache& cache_;
  Slot& slot_;
  std::string name_;
  std::mt19937_64 rng_;
  uint64_t last_count_ = 0;
  int reported_ = 0;
};

OpenOptions ReaderOpenOptions() {
  OpenOptions options;
  options.verify_checksums = true;
  options.decode_threads = 1;
  return options;
}

int ReaderProcessMain(Shared* sh, const Config& config, const std::vector<uint64_t>& bounds,
                      size_t slot) {
  auto ds = Dataset::Open(config.dataset_dir(), ReaderOpenOptions());
  ExpectedCache cache(config.seed);
  Reader(sh, config, bounds, *ds, &cache, slot).Run();
  return 0;
}

// T threads on one Dataset and one cache. A small chunk-file cache makes the
// threads evict each other's open files all the time.
int ThreadedReaderMain(Shared* sh, const Config& config, const std::vector<uint64_t>& bounds) {
  OpenOptions options = ReaderOpenOptions();
  options.max_open_chunk_files = 3;
  auto ds = Dataset::Open(config.dataset_dir(), options);
  ExpectedCache cache(config.seed);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < config.reader_threads; ++t) {
    const size_t slot = config.reader_procs + t;
    threads.emplace_back([&, slot] {
      try {
        Reader(sh, config, bounds, *ds, &cache, slot).Run();
      } catch (const std::exception& e) {
        ++sh->slots[slot].read_errors;
        std::fprintf(stderr, "%s: %s\n", SlotName(slot, config).c_str(), e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return 0;
}

// ---- The writer ----------------------------------------------------------------------

struct WriterHook {
  Shared* sh = nullptr;
  const Config* config = nullptr;
  std::optional<fault::Point> armed;  // where the current commit stops
  PausePoint pause = kPauseIndexCommit;
  uint64_t batch = 0;
};

size_t ReaderSlots(const Config& config) { return config.reader_procs + config.reader_threads; }

// Called inside Commit with the writer lock held (and, before the index
// commit, the LMDB write transaction open): waits until every reader has
// completed config.pause_reads more reads.
void PauseForReaders(const WriterHook& hook) {
  Shared& sh = *hook.sh;
  const Config& config = *hook.config;
  const size_t slots = ReaderSlots(config);
  PauseRecord& record = sh.pauses[hook.pause];
  std::vector<uint64_t> base(slots);
  for (size_t i = 0; i < slots; ++i) base[i] = sh.slots[i].reads_completed.load();
  sh.pause_point.store(hook.pause);
  sh.pause_committed.store(sh.committed_videos.load());
  sh.pause_epoch.fetch_add(1);
  sh.pause_active.store(1);
  const auto start = Clock::now();
  const auto deadline = start + kPauseTimeout;
  uint64_t fewest = 0;
  for (;;) {
    const uint32_t progress = sh.progress.load();
    size_t slowest = 0;
    fewest = UINT64_MAX;
    for (size_t i = 0; i < slots; ++i) {
      const uint64_t done = sh.slots[i].reads_completed.load() - base[i];
      if (done < fewest) {
        fewest = done;
        slowest = i;
      }
    }
    if (fewest >= config.pause_reads) break;
    if (sh.stop.load() != 0) break;  // another process failed; the run is over
    const auto now = Clock::now();
    if (now >= deadline) {
      record.timed_out = 1;
      std::fprintf(stderr,
                   "writer: readers blocked by the writer: paused at %s in batch %llu for %lld s, "
                   "%s completed only %llu of %llu reads\n",
                   kPauseNames[hook.pause], static_cast<unsigned long long>(hook.batch),
                   static_cast<long long>(kPauseTimeout.count()), SlotName(slowest, config).c_str(),
                   static_cast<unsigned long long>(fewest),
                   static_cast<unsigned long long>(config.pause_reads));
      break;
    }
    FutexWait(&sh.progress, progress,
              std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(200)));
  }
  sh.pause_active.store(0);
  record.batch = hook.batch;
  record.wait_ns = Nanos(Clock::now() - start);
  record.min_reads = fewest;
  record.done = 1;
}

void OnWritePoint(fault::Point point, void* context) {
  auto* hook = static_cast<WriterHook*>(context);
  if (!hook->armed || *hook->armed != point) return;
  hook->armed.reset();  // once per commit, even if the index transaction is retried
  PauseForReaders(*hook);
}

int WriterMain(Shared* sh, const Config& config, const std::vector<uint64_t>& bounds) {
  OpenOptions options;
  options.read_only = false;
  auto ds = Dataset::Open(config.dataset_dir(), options);
  auto writer = ds->NewWriter();
  WriterHook hook;
  hook.sh = sh;
  hook.config = &config;
  fault::SetPointHook(&OnWritePoint, &hook);
  const size_t batches = bounds.size() - 1;
  // Never in the first batch: readers start once something is committed.
  const size_t pause_index_batch = std::max<size_t>(1, batches / 3);
  const size_t pause_sync_batch = std::max<size_t>(2, 2 * batches / 3);
  const auto start = Clock::now();
  for (size_t b = 0; b < batches; ++b) {
    if (sh->stop.load() != 0) throw std::runtime_error("stopped: another process failed");
    sh->attempted_videos.store(bounds[b + 1]);
    for (uint64_t n = bounds[b]; n < bounds[b + 1]; ++n) {
      const std::vector<std::string> frames =
          MakeFrames(VideoSeed(config.seed, n), FrameCountOf(config.seed, n));
      writer->Append(VideoId(n), Views(frames), MetaOf(n));
    }
    hook.batch = b;
    if (b == pause_index_batch) {
      hook.armed = fault::Point::kBeforeIndexCommit;
      hook.pause = kPauseIndexCommit;
    } else if (b == pause_sync_batch) {
      hook.armed = fault::Point::kBeforeDataSync;
      hook.pause = kPauseDataSync;
    }
    sh->commit_gen.fetch_add(1);  // odd: a commit is in progress
    writer->Commit();
    sh->commit_gen.fetch_add(1);
    if (hook.armed) {
      throw std::runtime_error(std::string("commit of batch ") + std::to_string(b) +
                               " never reached " + fault::PointName(*hook.armed));
    }
    sh->committed_videos.store(bounds[b + 1]);
    ++sh->commits;
    Bump(&sh->events);
  }
  sh->writer_ns = Nanos(Clock::now() - start);
  fault::SetPointHook(nullptr, nullptr);
  writer.reset();
  sh->writer_done.store(1);
  Bump(&sh->events);
  for (const PauseRecord& p : sh->pauses) {
    if (p.timed_out != 0) return 1;
  }
  return 0;
}

// ---- The opener ----------------------------------------------------------------------

// Opens the dataset again and again while the writer commits. Each open gets
// a fresh LMDB environment (the previous Dataset is closed first), so each
// runs the header check of Env::Open, and every other one the full
// verify_index walk, against an index file that the writer is growing.
int OpenerMain(Shared* sh, const Config& config, const std::vector<uint64_t>& bounds) {
  ExpectedCache cache(config.seed);
  int reported = 0;
  for (uint64_t k = 0; sh->writer_done.load() == 0 && sh->stop.load() == 0; ++k) {
    const uint64_t gen_before = sh->commit_gen.load();
    const uint64_t confirmed = sh->committed_videos.load();
    try {
      OpenOptions options;
      options.verify_index = (k % 2) == 1;
      options.decode_threads = 1;
      auto ds = Dataset::Open(config.dataset_dir(), options);
      const uint64_t count = ds->Count();
      if (count < confirmed || !IsBound(bounds, count)) {
        throw std::runtime_error("open " + std::to_string(k) + " sees " + std::to_string(count) +
                                 " videos, not a whole number of committed batches (at least " +
                                 std::to_string(confirmed) + ")");
      }
      if (count > 0) {
        const uint64_t n = k % count;
        const StoredFrames got = ds->ReadJpegs(VideoId(n));
        const auto want = cache.Get(n);
        bool same = got.size() == want->frames.size();
        for (size_t i = 0; same && i < got.size(); ++i) same = got[i] == want->frames[i];
        if (!same)
          throw std::runtime_error("open " + std::to_string(k) + " read a wrong " + VideoId(n));
      }
    } catch (const std::exception& e) {
      ++sh->open_errors;
      if (reported++ < 10) std::fprintf(stderr, "opener: %s\n", e.what());
    }
    ++sh->opens;
    const uint64_t gen_after = sh->commit_gen.load();
    if (gen_after != gen_before || (gen_before & 1) != 0) ++sh->opens_during_commits;
  }
  return 0;
}

// ---- The exporter --------------------------------------------------------------------

class Exporter {
 public:
  Exporter(Shared* sh, const Config& config, const std::vector<uint64_t>& bounds)
      : sh_(*sh), config_(config), bounds_(bounds), cache_(config.seed) {}

  int Run() {
    ds_ = Dataset::Open(config_.dataset_dir());
    if (::mkdir(config_.exports_dir().c_str(), 0755) != 0 && errno != EEXIST) {
      util::ThrowErrno("create", config_.exports_dir(), errno);
    }
    for (uint64_t k = 0;; ++k) {
      const bool last = sh_.writer_done.load() != 0;
      if (!last && sh_.stop.load() != 0) break;  // the writer failed
      Export(k, last);
      if (last) break;
    }
    return 0;
  }

 private:
  void Problem(const std::string& what) {
    ok_ = false;
    if (reported_++ < 10) std::fprintf(stderr, "exporter: %s\n", what.c_str());
  }

  void Export(uint64_t k, bool last) {
    const std::string dir = config_.exports_dir() + "/export_" + std::to_string(k);
    ok_ = true;
    try {
      if (::mkdir(dir.c_str(), 0755) != 0) util::ThrowErrno("create", dir, errno);
      const uint64_t confirmed = sh_.committed_videos.load();
      const auto start = Clock::now();
      const ExportReport report = ExportGmeta(*ds_, dir);
      const uint64_t ns = Nanos(Clock::now() - start);
      const uint64_t begun = sh_.attempted_videos.load();
      const uint64_t videos = Verify(dir, report);
      const std::string what = "export " + dir + " holds " + std::to_string(videos) + " videos";
      if (videos < confirmed) {
        Problem(what + " but " + std::to_string(confirmed) + " were committed before it began");
      }
      if (videos > begun) Problem(what + " but only " + std::to_string(begun) + " were begun");
      if (last && videos != config_.videos) {
        Problem(what + " after the writer finished, not " + std::to_string(config_.videos));
      }
      util::RemoveFlatDirectory(dir);
      ++sh_.exports_completed;
      if (!last) ++sh_.exports_during_writes;
      if (last) sh_.final_export_videos = videos;
      sh_.export_max_ns = std::max(sh_.export_max_ns, ns);
      sh_.export_total_ns += ns;
      sh_.export_max_videos = std::max(sh_.export_max_videos, videos);
      if (!ok_) ++sh_.export_inconsistent;
    } catch (const std::exception& e) {
      ++sh_.export_errors;
      if (reported_++ < 10) {
        std::fprintf(stderr, "exporter: export %s: %s\n", dir.c_str(), e.what());
      }
    }
  }

  // Parses every file of one export and checks it against the dataset and
  // the regenerated videos; returns how many videos it holds.
  uint64_t Verify(const std::string& dir, const ExportReport& report) {
    std::vector<uint8_t> seen(config_.videos, 0);
    uint64_t entries = 0;
    uint64_t files = 0;
    for (const std::string& name : util::ListDirectory(dir)) {
      unsigned chunk = 0;
      char tail = 0;
      if (std::sscanf(name.c_str(), "meta_%u.gmet%c", &chunk, &tail) != 2 || tail != 'a' ||
          name != "meta_" + std::to_string(chunk) + ".gmeta") {
        Problem("unexpected file " + dir + "/" + name);
        continue;
      }
      ++files;
      const std::string data_path =
          config_.dataset_dir() + "/data_" + std::to_string(chunk) + ".gulp";
      const util::UniqueFd data = util::OpenFile(data_path, O_RDONLY);
      engine::ReadGmeta(dir + "/" + name, [&](engine::GmetaEntry&& e) {
        const std::string where = dir + "/" + name + ": '" + e.id + "'";
        const std::optional<uint64_t> n = ParseVideoId(e.id);
        if (!n || *n >= config_.videos) {
          Problem(where + ": not a video the writer appends");
          return;
        }
        if (seen[*n] != 0) {
          Problem(where + ": exported twice");
          return;
        }
        seen[*n] = 1;
        ++entries;
        CheckEntry(where, *n, chunk, e, data.get(), data_path);
      });
    }
    if (files != report.chunks || entries != report.videos) {
      Problem("export " + dir + " reports " + std::to_string(report.chunks) + " chunks and " +
              std::to_string(report.videos) + " videos; its files hold " + std::to_string(files) +
              " and " + std::to_string(entries));
    }
    // A snapshot of whole batches is exactly the videos 0 .. b-1 for a batch end b.
    if (!IsBound(bounds_, entries)) {
      Problem("export " + dir + " holds " + std::to_string(entries) +
              " videos: not a whole number of committed batches (a torn batch)");
    }
    for (uint64_t n = 0; n < std::min<uint64_t>(entries, config_.videos); ++n) {
      if (seen[n] == 0) {
        Problem("export " + dir + " holds " + std::to_string(entries) + " videos but lacks '" +
                VideoId(n) + "'");
        break;
      }
    }
    return entries;
  }

  void CheckEntry(const std::string& where, uint64_t n, unsigned chunk, const engine::GmetaEntry& e,
                  int data_fd, const std::string& data_path) {
    const auto expected = cache_.Get(n);
    if (e.meta_data != expected->meta_data) {
      Problem(where + ": meta_data " + e.meta_data + ", expected " + expected->meta_data);
    }
    const std::optional<VideoInfo> info = ds_->Find(e.id);
    if (!info) {
      Problem(where + ": exported but not in the dataset");
      return;
    }
    if (info->chunk != chunk || info->frames != e.frame_info) {
      Problem(where + ": frame_info or chunk differ from the dataset's (chunk " +
              std::to_string(info->chunk) + ")");
      return;
    }
    if (e.frame_info.size() != expected->frames.size()) {
      Problem(where + ": " + std::to_string(e.frame_info.size()) + " frames, expected " +
              std::to_string(expected->frames.size()));
      return;
    }
    std::string bytes;
    for (size_t i = 0; i < e.frame_info.size(); ++i) {
      const FrameInfo& f = e.frame_info[i];
      const std::string& want = expected->frames[i];
      if (f.pad != PadFor(want.size()) || f.length != want.size() + f.pad) {
        Problem(where + " frame " + std::to_string(i) + ": wrong frame_info");
        return;
      }
      // What GulpIO2 would read through this frame_info.
      bytes.resize(f.length);
      if (util::PreadFull(data_fd, bytes.data(), f.length, f.offset, data_path) != f.length ||
          std::string_view(bytes).substr(0, want.size()) != want ||
          bytes.find_first_not_of('\0', want.size()) != std::string::npos) {
        Problem(where + " frame " + std::to_string(i) + ": " + data_path + " at offset " +
                std::to_string(f.offset) + " does not hold the frame");
        return;
      }
    }
  }

  Shared& sh_;
  const Config& config_;
  const std::vector<uint64_t>& bounds_;
  ExpectedCache cache_;
  std::unique_ptr<Dataset> ds_;
  bool ok_ = true;
  int reported_ = 0;
};

// ---- The parent -----------------------------------------------------------------------

volatile sig_atomic_t g_alarm = 0;
void OnAlarm(int) { g_alarm = 1; }

struct Child {
  std::string name;
  bool writer = false;
};

// Forks a child that runs `body` and exits with its result (101 after an
// escaping exception); the child dies with the parent.
pid_t Spawn(const std::string& name, const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) util::ThrowErrno("fork", name, errno);
  if (pid > 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(102);
  int code = 101;
  try {
    code = body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
  }
  std::fflush(nullptr);
  ::_exit(code);
}

double Micros(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

[[noreturn]] void Usage(const char* message) {
  std::fprintf(stderr,
               "gulpdb_load: %s\n"
               "usage: gulpdb_load [--videos V] [--seed S] [--dir D] [--readers-procs P]\n"
               "                   [--reader-threads T] [--pause-reads N]\n",
               message);
  std::exit(2);
}

uint64_t ParseNumber(const std::string& flag, const char* text) {
  if (text == nullptr) Usage(("missing value for " + flag).c_str());
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-') {
    Usage(("bad value for " + flag + ": " + text).c_str());
  }
  return v;
}

Config ParseArgs(int argc, char** argv) {
  Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (flag == "--videos") {
      config.videos = ParseNumber(flag, value);
    } else if (flag == "--seed") {
      config.seed = ParseNumber(flag, value);
    } else if (flag == "--dir") {
      if (value == nullptr) Usage("missing value for --dir");
      config.dir = value;
    } else if (flag == "--readers-procs") {
      config.reader_procs = static_cast<size_t>(ParseNumber(flag, value));
    } else if (flag == "--reader-threads") {
      config.reader_threads = static_cast<size_t>(ParseNumber(flag, value));
    } else if (flag == "--pause-reads") {
      config.pause_reads = ParseNumber(flag, value);
    } else if (flag == "--help" || flag == "-h") {
      Usage("the load test (see the top of tests/reliability/load.cc)");
    } else {
      Usage(("unknown option " + flag).c_str());
    }
    ++i;
  }
  if (config.videos < 3 * kMaxBatch) Usage("--videos must be at least 150 (three batches)");
  if (config.videos > UINT32_MAX) Usage("--videos is too large");
  if (ReaderSlots(config) == 0) Usage("at least one reader process or thread is needed");
  if (ReaderSlots(config) > kMaxSlots) Usage("at most 64 reader processes and threads in all");
  return config;
}

int Main(int argc, char** argv) {
  Config config = ParseArgs(argc, argv);
  const auto run_start = Clock::now();
  bool temporary = false;
  if (config.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gulpdb_load.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) util::ThrowErrno("create", pattern, errno);
    config.dir = pattern;
    temporary = true;
  } else if (::mkdir(config.dir.c_str(), 0755) != 0 && errno != EEXIST) {
    util::ThrowErrno("create", config.dir, errno);
  }
  const std::vector<uint64_t> bounds = BatchBounds(config.videos, config.seed);
  std::printf(
      "load: videos=%llu batches=%zu seed=%llu reader_procs=%zu reader_threads=%zu "
      "pause_reads=%llu dir=%s\n",
      static_cast<unsigned long long>(config.videos), bounds.size() - 1,
      static_cast<unsigned long long>(config.seed), config.reader_procs, config.reader_threads,
      static_cast<unsigned long long>(config.pause_reads), config.dir.c_str());
  {
    CreateOptions create;
    create.checksums = true;
    Dataset::Create(config.dataset_dir(), create);  // closed again before any fork
  }

  void* page =
      ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) util::ThrowErrno("mmap", "the shared page", errno);
  Shared* sh = new (page) Shared();

  // Every process is forked here, before any thread exists.
  std::map<pid_t, Child> children;
  children[Spawn("writer", [&] { return WriterMain(sh, config, bounds); })] = {"writer", true};
  for (size_t i = 0; i < config.reader_procs; ++i) {
    const std::string name = SlotName(i, config);
    children[Spawn(name, [&, i] { return ReaderProcessMain(sh, config, bounds, i); })] = {name,
                                                                                          false};
  }
  if (config.reader_threads > 0) {
    children[Spawn("threaded_reader", [&] { return ThreadedReaderMain(sh, config, bounds); })] = {
        "threaded_reader", false};
  }
  children[Spawn("opener", [&] { return OpenerMain(sh, config, bounds); })] = {"opener", false};
  children[Spawn("exporter", [&] { return Exporter(sh, config, bounds).Run(); })] = {"exporter",
                                                                                     false};

  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = &OnAlarm;  // no SA_RESTART: waitpid returns EINTR
  ::sigaction(SIGALRM, &action, nullptr);
  bool failed = false;
  bool stopping = false;
  bool writer_ok = false;
  while (!children.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR && g_alarm != 0) {
        for (const auto& [child_pid, child] : children) {
          std::fprintf(stderr, "load: %s did not finish within %u s of the stop; killing it\n",
                       child.name.c_str(), kStopTimeoutSeconds);
          ::kill(child_pid, SIGKILL);
        }
        failed = true;
        g_alarm = 0;
        continue;
      }
      if (errno == EINTR) continue;
      util::ThrowErrno("wait for", "children", errno);
    }
    auto it = children.find(pid);
    if (it == children.end()) continue;
    const Child child = it->second;
    children.erase(it);
    const bool ok = ExitedWith(status, 0);
    if (!ok) {
      std::fprintf(stderr, "load: %s %s\n", child.name.c_str(), DescribeStatus(status).c_str());
      failed = true;
    }
    if (child.writer) writer_ok = ok;
    if ((child.writer || !ok) && !stopping) {
      stopping = true;
      sh->stop.store(1);
      Bump(&sh->events);
      ::alarm(kStopTimeoutSeconds);
    }
  }
  ::alarm(0);

  // ---- Figures ----
  const size_t slots = ReaderSlots(config);
  std::vector<uint64_t> hist(kBuckets, 0), commit_hist(kBuckets, 0);
  uint64_t slept = 0, commit_slept = 0, preempted = 0, calm_max = 0, commit_calm_max = 0;
  uint64_t slept_in_procs = 0;  // single-threaded readers share no lock with anyone but the writer
  uint64_t reads = 0, errors = 0, wrong = 0, checksum = 0, commit_reads = 0, commit_max = 0;
  uint64_t max_ns = 0, paused[kPauses] = {0, 0}, threaded = 0;
  uint64_t by_kind[kKinds] = {};
  std::vector<uint64_t> per_slot(slots, 0);
  for (size_t i = 0; i < slots; ++i) {
    const Slot& s = sh->slots[i];
    for (size_t b = 0; b < kBuckets; ++b) {
      hist[b] += s.hist[b];
      commit_hist[b] += s.commit_hist[b];
    }
    slept += s.slept_reads;
    if (i < config.reader_procs) slept_in_procs += s.slept_reads;
    commit_slept += s.commit_slept_reads;
    preempted += s.preempted_reads;
    calm_max = std::max(calm_max, s.calm_max_ns);
    commit_calm_max = std::max(commit_calm_max, s.commit_calm_max_ns);
    for (int k = 0; k < kKinds; ++k) {
      per_slot[i] += s.reads[k];
      by_kind[k] += s.reads[k];
    }
    reads += per_slot[i];
    if (i >= config.reader_procs) threaded += per_slot[i];
    errors += s.read_errors;
    wrong += s.wrong_reads;
    checksum += s.checksum_failures;
    commit_reads += s.commit_reads;
    commit_max = std::max(commit_max, s.commit_max_ns);
    max_ns = std::max(max_ns, s.max_ns);
    for (size_t p = 0; p < kPauses; ++p) paused[p] += s.paused_reads[p];
  }
  // The q-quantile of a histogram holding `total` reads, at most `max`.
  auto percentile = [](const std::vector<uint64_t>& h, uint64_t total, uint64_t max,
                       double q) -> uint64_t {
    const uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total));
    uint64_t seen = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      seen += h[b];
      if (seen > rank) return std::min(BucketTop(b), max);
    }
    return max;
  };

  // The dataset as the writer left it, checked from the parent.
  uint64_t final_count = 0;
  bool check_ok = false;
  try {
    final_count = Dataset::Open(config.dataset_dir())->Count();
    CheckOptions check_options;
    check_options.deep = true;
    const CheckReport check = Check(config.dataset_dir(), check_options);
    check_ok = check.healthy() && check.videos == config.videos;
    for (size_t i = 0; i < check.problems.size() && i < 5; ++i) {
      std::fprintf(stderr, "load: check: %s: %s\n", check.problems[i].where.c_str(),
                   check.problems[i].what.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load: final check: %s\n", e.what());
  }

  const auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  const uint64_t videos_written = sh->committed_videos.load();
  std::printf("videos_written: %llu\n", ull(videos_written));
  std::printf("batches_committed: %llu\n", ull(sh->commits));
  std::printf("writer_seconds: %.2f\n", static_cast<double>(sh->writer_ns) / 1e9);
  std::printf("reads_total: %llu\n", ull(reads));
  for (size_t i = 0; i < config.reader_procs; ++i) {
    std::printf("reads_%s: %llu\n", SlotName(i, config).c_str(), ull(per_slot[i]));
  }
  if (config.reader_threads > 0) {
    std::printf("reads_threaded_reader: %llu\n", ull(threaded));
    for (size_t i = config.reader_procs; i < slots; ++i) {
      std::printf("reads_%s: %llu\n", SlotName(i, config).c_str(), ull(per_slot[i]));
    }
  }
  for (int k = 0; k < kKinds; ++k)
    std::printf("reads_kind_%s: %llu\n", kKindNames[k], ull(by_kind[k]));
  std::printf("read_errors: %llu\n", ull(errors));
  std::printf("incomplete_or_wrong_reads: %llu\n", ull(wrong));
  std::printf("checksum_failures: %llu\n", ull(checksum));
  std::printf("opens: %llu\n", ull(sh->opens));
  std::printf("opens_during_commits: %llu\n", ull(sh->opens_during_commits));
  std::printf("open_errors: %llu\n", ull(sh->open_errors));
  std::printf("exports_completed: %llu\n", ull(sh->exports_completed));
  std::printf("exports_during_writes: %llu\n", ull(sh->exports_during_writes));
  std::printf("export_errors: %llu\n", ull(sh->export_errors));
  std::printf("exports_inconsistent: %llu\n", ull(sh->export_inconsistent));
  std::printf("export_final_videos: %llu\n", ull(sh->final_export_videos));
  std::printf("export_max_ms: %.1f\n", static_cast<double>(sh->export_max_ns) / 1e6);
  std::printf("latency_p50_us: %.1f\n", Micros(percentile(hist, reads, max_ns, 0.50)));
  std::printf("latency_p99_us: %.1f\n", Micros(percentile(hist, reads, max_ns, 0.99)));
  std::printf("latency_max_us: %.1f\n", Micros(max_ns));
  std::printf("reads_during_commits: %llu\n", ull(commit_reads));
  std::printf("latency_p50_during_commits_us: %.1f\n",
              Micros(percentile(commit_hist, commit_reads, commit_max, 0.50)));
  std::printf("latency_p99_during_commits_us: %.1f\n",
              Micros(percentile(commit_hist, commit_reads, commit_max, 0.99)));
  std::printf("latency_max_during_commits_us: %.1f\n", Micros(commit_max));
  std::printf("reads_preempted: %llu\n", ull(preempted));
  std::printf("reads_slept: %llu\n", ull(slept));
  std::printf("reads_slept_reader_procs: %llu\n", ull(slept_in_procs));
  std::printf("reads_slept_reader_threads: %llu\n", ull(slept - slept_in_procs));
  std::printf("reads_slept_during_commits: %llu\n", ull(commit_slept));
  std::printf("latency_max_calm_us: %.1f\n", Micros(calm_max));
  std::printf("latency_max_calm_during_commits_us: %.1f\n", Micros(commit_calm_max));
  std::printf("paused_commit_reads: %llu\n", ull(paused[0] + paused[1]));
  bool blocked = false;
  bool pauses_ok = true;
  for (size_t p = 0; p < kPauses; ++p) {
    const PauseRecord& r = sh->pauses[p];
    std::printf("pause_%s_batch: %llu\n", kPauseNames[p], ull(r.batch));
    std::printf("pause_%s_reads: %llu\n", kPauseNames[p], ull(paused[p]));
    std::printf("pause_%s_min_reads_per_reader: %llu\n", kPauseNames[p], ull(r.min_reads));
    std::printf("pause_%s_ms: %.1f\n", kPauseNames[p], static_cast<double>(r.wait_ns) / 1e6);
    if (r.timed_out != 0) blocked = true;
    if (r.done == 0 || r.min_reads < config.pause_reads) pauses_ok = false;
  }
  std::printf("final_count: %llu\n", ull(final_count));
  std::printf("final_check: %s\n", check_ok ? "healthy" : "FAILED");
  std::printf("elapsed_s: %.1f\n", static_cast<double>(Nanos(Clock::now() - run_start)) / 1e9);

  std::vector<std::string> reasons;
  if (failed) reasons.push_back("a child process failed");
  if (videos_written != config.videos) reasons.push_back("videos_written");
  if (errors != 0) reasons.push_back("read_errors");
  if (wrong != 0) reasons.push_back("incomplete_or_wrong_reads");
  if (checksum != 0) reasons.push_back("checksum_failures");
  if (sh->open_errors != 0) reasons.push_back("open_errors");
  if (sh->opens_during_commits == 0) reasons.push_back("no open overlapped a commit");
  if (sh->export_errors != 0) reasons.push_back("export_errors");
  if (sh->export_inconsistent != 0) reasons.push_back("exports_inconsistent");
  if (sh->exports_during_writes == 0) reasons.push_back("no export ran while the writer worked");
  if (writer_ok && sh->final_export_videos != config.videos) reasons.push_back("final export");
  if (blocked) reasons.push_back("readers blocked by the writer");
  if (!pauses_ok) reasons.push_back("a writer pause did not see every reader make progress");
  if (commit_reads == 0) reasons.push_back("no read overlapped a commit");
  for (size_t i = 0; i < slots; ++i) {
    if (per_slot[i] == 0) reasons.push_back(SlotName(i, config) + " made no reads");
  }
  if (final_count != config.videos || !check_ok) reasons.push_back("final dataset check");
  for (const std::string& r : reasons) std::fprintf(stderr, "load: FAILED: %s\n", r.c_str());
  std::printf("result: %s\n", reasons.empty() ? "PASS" : "FAIL");
  std::fflush(nullptr);

  ::munmap(page, sizeof(Shared));
  if (reasons.empty() && temporary) {
    std::error_code ec;
    std::filesystem::remove_all(config.dir, ec);
  } else if (!reasons.empty()) {
    std::fprintf(stderr, "load: the dataset is kept in %s\n", config.dir.c_str());
  }
  return reasons.empty() ? 0 : 1;
}

}  // namespace
}  // namespace gulpdb::reliability

int main(int argc, char** argv) {
  try {
    return gulpdb::reliability::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gulpdb_load: %s\n", e.what());
    return 1;
  }
}
