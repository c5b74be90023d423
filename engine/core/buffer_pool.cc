#include "engine/core/buffer_pool.h"

#include <cstdlib>

namespace gulpdb::engine {

BufferPool& BufferPool::Get() {
  static BufferPool* pool = new BufferPool();  // never destroyed: freed buffers outlive statics
  return *pool;
}

uint8_t* BufferPool::Take(size_t size, size_t* capacity) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The most recently freed fitting buffer: the likeliest to be in cache.
    for (size_t i = free_.size(); i-- > 0;) {
      if (free_[i].second >= size && free_[i].second <= 2 * size + 4096) {
        uint8_t* p = free_[i].first;
        *capacity = free_[i].second;
        bytes_ -= free_[i].second;
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        return p;
      }
    }
  }
  *capacity = size == 0 ? 1 : size;
  return static_cast<uint8_t*>(std::malloc(*capacity));
}

void BufferPool::Give(uint8_t* p, size_t capacity) {
  if (p == nullptr) return;
  if (capacity >= kMinPooled) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kMaxBuffers && bytes_ + capacity <= kMaxBytes) {
      free_.emplace_back(p, capacity);
      bytes_ += capacity;
      return;
    }
  }
  std::free(p);
}

}  // namespace gulpdb::engine
