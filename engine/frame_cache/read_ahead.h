// Read-ahead for one remote reader (docs/frame_cache.md, "Read-ahead"): the
// byte ranges a reader will read next (Dataset::Prefetch: the next batches
// of a sampler's order) are fetched by background threads, while the reader
// reads what it asked for before.
//
// With the node's frame cache, what is fetched goes into the cache, in whole
// blocks (adjacent missing blocks of an object in one GET, the GETs of one
// Prefetch call concurrent); kFillers calls are filled at once, the oldest
// first, so that one call's request latency overlaps another's transfer (one
// at a time, a link with 20 ms of latency idles while each call's first
// bytes are on their way). A read of a block still being filled waits for it
// there (the cache's fill lock), so nothing is fetched twice. Without it, adjacent ranges of an
// object whose gap is at most kMergeGap are merged into one GET (up to kMaxMergedBytes) and kept in
// memory until read, at most `memory_bound` bytes of them (in flight
// included): the oldest ones not read yet are dropped first, and read-ahead
// waits when everything held is still in flight. A read takes its bytes from
// there when one fetched range holds all of them (waiting for a fetch in
// flight), else from the store.
//
// Failures in the background are dropped: the read that needs the bytes
// fetches them itself and meets the error. The threads stop (their fetches
// in flight finished, queued work dropped) when the ReadAhead is destroyed: no
// background fetch outlives its reader.
//
// Thread safety: every method may be called from any number of threads.
// The CachedObjects ranges point to must outlive the ReadAhead.
#ifndef GULPDB_ENGINE_FRAME_CACHE_READ_AHEAD_H_
#define GULPDB_ENGINE_FRAME_CACHE_READ_AHEAD_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/frame_cache/frame_cache.h"

namespace gulpdb::engine {

inline constexpr uint64_t kMergeGap = 64 * 1024;
inline constexpr uint64_t kMaxMergedBytes = uint64_t{8} << 20;
inline constexpr uint64_t kDefaultPrefetchMemory = uint64_t{256} << 20;
// Prefetch calls filled into the cache at once.
inline constexpr int kFillers = 2;

// Merges the ranges (of any objects, in any order) into fewer: sorted by
// object and offset, a range joins the one before when both are of one
// object, the gap between them is at most `gap` and the result at most
// `max_bytes`. `out` of the result is null.
std::vector<CacheRange> MergeRanges(std::vector<CacheRange> ranges, uint64_t gap,
                                    uint64_t max_bytes);

struct ReadAheadStats {
  uint64_t ranges = 0;           // ranges asked for
  uint64_t gets = 0;             // merged ranges fetched into memory (without a cache)
  uint64_t bytes = 0;            // fetched into memory
  uint64_t held_bytes = 0;       // in memory now
  uint64_t peak_held_bytes = 0;  // in memory at most, so far
  uint64_t dropped_bytes = 0;    // dropped before being read (the bound)
  uint64_t fills = 0;            // Prefetch calls filled into the cache (finished)
  uint64_t peak_fills = 0;       // of them filled at once, at most
};

class ReadAhead {
 public:
  // `cache` may be null (memory mode). `fetch` reads from the store.
  ReadAhead(std::shared_ptr<const FrameCache> cache, StoreFetch fetch, uint64_t memory_bound);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Queues the ranges (`out` unused) for the background threads. Never
  // throws for the store's sake; std::system_error if no thread can start.
  void Prefetch(std::vector<CacheRange> ranges);

  // Fills `ranges` (from memory, the cache or the store through `fetch`,
  // see above). Throws what `fetch` throws.
  void Read(const std::vector<CacheRange>& ranges, const StoreFetch& fetch) const;

  ReadAheadStats stats() const;

 private:
  struct Extent;
  void Run();
  // With the cache: fills the queued calls, oldest first, until stopped.
  void RunFills();
  // Memory mode: fetches the registered extents, until stopped.
  void RunMemory();
  // Memory mode: the bytes of `r` from a fetched range, waiting for one in
  // flight; false when none holds them.
  bool FromMemory(const CacheRange& r) const;
  // Makes room for `bytes` more (under mutex_): drops the oldest ready
  // extents; false when that is not enough.
  bool MakeRoom(uint64_t bytes);

  const std::shared_ptr<const FrameCache> cache_;
  const StoreFetch fetch_;
  const uint64_t memory_bound_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<std::vector<CacheRange>> queue_;           // with the cache: to fill
  std::deque<std::shared_ptr<Extent>> pending_;         // without: registered, to fetch
  mutable std::list<std::shared_ptr<Extent>> extents_;  // oldest first
  mutable ReadAheadStats stats_;
  int filling_ = 0;  // with the cache: calls being filled
  bool stop_ = false;
  std::vector<std::thread> threads_;  // started by the first Prefetch
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_FRAME_CACHE_READ_AHEAD_H_
