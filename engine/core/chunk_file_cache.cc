#include "engine/core/chunk_file_cache.h"

#include <memory>
#include <mutex>
#include <utility>

namespace gulpdb {

std::shared_ptr<const engine::ChunkFile> ChunkFileCache::Get(uint32_t chunk) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(chunk);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ChunkFileCache::Put(uint32_t chunk, std::shared_ptr<const engine::ChunkFile> file) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(chunk);
  if (it != map_.end()) {
    it->second->second = std::move(file);
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(chunk, std::move(file));
  map_[chunk] = lru_.begin();
  while (lru_.size() > capacity_) {
    map_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void ChunkFileCache::Clear() const {
  std::lock_guard<std::mutex> lock(mutex_);
  map_.clear();
  lru_.clear();
}

}  // namespace gulpdb
