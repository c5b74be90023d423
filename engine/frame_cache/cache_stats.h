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

#include "gulpdb/remote.h"
#include "util/file_io.h"

namespace gulpdb::engine {

// The counters as the file keeps them (FrameCacheCounters, gulpdb/remote.h)
// and the bytes under frames/: added to by fills, set by every eviction pass
// (which measures them). A delta in an update.
struct CacheCounters : FrameCacheCounters {
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
