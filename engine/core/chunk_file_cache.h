// The chunk files a dataset keeps open for reading (Dataset::Impl::files):
// a bounded LRU, so that a process reading many chunks never runs out of
// file descriptors.
//
// Thread safety: every method may be called from any number of threads.
#ifndef GULPDB_ENGINE_CORE_CHUNK_FILE_CACHE_H_
#define GULPDB_ENGINE_CORE_CHUNK_FILE_CACHE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "engine/core/chunk_file.h"

namespace gulpdb {

// Read-only chunk files kept open for reading, at most `capacity` at once,
// least recently used closed first. Thread-safe.
class ChunkFileCache {
 public:
  explicit ChunkFileCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}
  std::shared_ptr<const engine::ChunkFile> Get(uint32_t chunk) const;
  void Put(uint32_t chunk, std::shared_ptr<const engine::ChunkFile> file) const;
  void Clear() const;

 private:
  using Entry = std::pair<uint32_t, std::shared_ptr<const engine::ChunkFile>>;
  size_t capacity_;
  mutable std::mutex mutex_;
  mutable std::list<Entry> lru_;  // most recent first
  mutable std::unordered_map<uint32_t, std::list<Entry>::iterator> map_;
};

}  // namespace gulpdb

#endif  // GULPDB_ENGINE_CORE_CHUNK_FILE_CACHE_H_
