// The node-wide counters of the frame cache, kept in one small file of the
// cache directory (frames/stats) so that every process of the node adds to
// the same numbers: the main process of a training job sees what its
// DataLoader workers fetched. The format is in
// docs/format/frame_cache_format.md.
//
// Each update takes an exclusive flock on the file, reads it, adds and
// writes it back (pread/pwrite: a file another process truncates never
// raises a signal). A file that is not a valid counter record (damaged,
// truncated, foreign) counts from zero again. Counters are informational:
// every failure is swallowed.
//
// Thread safety: a NodeStats may be used from any number of threads.
#ifndef GULPDB_ENGINE_FRAME_CACHE_CACHE_STATS_H_
#define GULPDB_ENGINE_FRAME_CACHE_CACHE_STATS_H_

#include <cstdint>
#include <mutex>
#include <string>

#include "util/file_io.h"

namespace gulpdb::engine {

struct CacheCounters {
  uint64_t hits = 0;        // blocks served to reads from cache files
  uint64_t misses = 0;      // blocks reads needed that were not cached (fetched)
  uint64_t prefetched = 0;  // blocks fetched ahead of reads (read-ahead)
  uint64_t bytes_from_store = 0;
  uint64_t bytes_from_cache = 0;
  uint64_t evictions = 0;  // block files deleted to keep to the bound
  uint64_t bytes_evicted = 0;
  uint64_t damaged = 0;  // block files found damaged, truncated or foreign (fetched again)
  // Blocks that passed their own checks but held frames failing their
  // CRC-32C (dropped, read from the store again): a store that answered
  // wrongly when they were filled. Never from what a crash leaves.
  uint64_t refetched = 0;
  // The bytes under frames/: added to by fills, set by every eviction pass
  // (which measures them). A delta in an update.
  int64_t bytes = 0;
  bool empty() const;
};

class NodeStats {
 public:
  explicit NodeStats(std::string path) : path_(std::move(path)) {}
  // Adds `delta` (its `bytes` added to the stored figure, floored at 0).
  void Add(const CacheCounters& delta) noexcept;
  // Replaces the stored `bytes` figure.
  void SetBytes(uint64_t bytes) noexcept;
  // The counters now (zeros when there is no valid file).
  CacheCounters Read() const noexcept;
  const std::string& path() const { return path_; }

 private:
  // Applies `change` to the counters under the file's lock.
  template <typename Change>
  void Update(const Change& change) noexcept;
  std::string path_;
  mutable std::mutex mutex_;
  mutable util::UniqueFd fd_;  // opened on first use
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_FRAME_CACHE_CACHE_STATS_H_
