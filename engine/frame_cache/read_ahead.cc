#include "engine/frame_cache/read_ahead.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace gulpdb::engine {

struct ReadAhead::Extent {
  const CachedObject* object = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string bytes;
  bool admitted = false;  // counted in held_bytes, bytes allocated
  bool ready = false;
  bool failed = false;
  uint64_t served = 0;
  bool Holds(const CacheRange& r) const {
    return object->identity == r.object->identity && object->key == r.object->key &&
           offset <= r.offset && r.offset + r.length <= offset + length;
  }
};

std::vector<CacheRange> MergeRanges(std::vector<CacheRange> ranges, uint64_t gap,
                                    uint64_t max_bytes) {
  std::sort(ranges.begin(), ranges.end(), [](const CacheRange& a, const CacheRange& b) {
    if (a.object != b.object) return std::less<const CachedObject*>()(a.object, b.object);
    return a.offset < b.offset;
  });
  std::vector<CacheRange> out;
  for (const CacheRange& r : ranges) {
    if (r.length == 0) continue;
    if (!out.empty()) {
      CacheRange& last = out.back();
      const uint64_t end = last.offset + last.length;
      const uint64_t new_end = std::max(end, r.offset + r.length);
      if (last.object == r.object && r.offset <= end + gap && new_end - last.offset <= max_bytes) {
        last.length = new_end - last.offset;
        continue;
      }
    }
    out.push_back(CacheRange{r.object, r.offset, r.length, nullptr});
  }
  return out;
}

ReadAhead::ReadAhead(std::shared_ptr<const FrameCache> cache, StoreFetch fetch,
                     uint64_t memory_bound)
    : cache_(std::move(cache)), fetch_(std::move(fetch)), memory_bound_(memory_bound) {}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    queue_.clear();
    pending_.clear();
  }
  changed_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void ReadAhead::Prefetch(std::vector<CacheRange> ranges) {
  if (ranges.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.ranges += ranges.size();
    if (cache_ == nullptr) {
      // Memory: the merged ranges are registered now, so that a read of
      // them from here on waits for their fetch instead of making its own.
      std::vector<CacheRange> merged =
          MergeRanges(std::move(ranges), kMergeGap, std::min(kMaxMergedBytes, memory_bound_));
      for (const CacheRange& m : merged) {
        const bool held = std::any_of(
            extents_.begin(), extents_.end(),
            [&](const std::shared_ptr<Extent>& e) { return !e->failed && e->Holds(m); });
        if (held || m.length > memory_bound_) continue;
        auto e = std::make_shared<Extent>();
        e->object = m.object;
        e->offset = m.offset;
        e->length = m.length;
        extents_.push_back(e);
        pending_.push_back(std::move(e));
      }
    } else {
      queue_.push_back(std::move(ranges));
    }
    if (threads_.empty()) {
      const int n = cache_ != nullptr ? kFillers : 1;
      for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Run(); });
    }
  }
  changed_.notify_all();
}

ReadAheadStats ReadAhead::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

bool ReadAhead::MakeRoom(uint64_t bytes) {
  while (stats_.held_bytes + bytes > memory_bound_) {
    auto oldest = std::find_if(
        extents_.begin(), extents_.end(),
        [](const std::shared_ptr<Extent>& e) { return e->admitted && (e->ready || e->failed); });
    if (oldest == extents_.end()) return false;
    stats_.dropped_bytes += (*oldest)->failed ? 0 : (*oldest)->length - (*oldest)->served;
    stats_.held_bytes -= (*oldest)->length;
    (*oldest)->failed = true;  // a read waiting for it reads the store
    extents_.erase(oldest);
  }
  return true;
}

void ReadAhead::Run() {
  if (cache_ != nullptr) {
    RunFills();
  } else {
    RunMemory();
  }
}

void ReadAhead::RunFills() {
  for (;;) {
    std::vector<CacheRange> call;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      call = std::move(queue_.front());
      queue_.pop_front();
      ++filling_;
      stats_.peak_fills = std::max<uint64_t>(stats_.peak_fills, static_cast<uint64_t>(filling_));
    }
    try {
      cache_->Fill(call, fetch_);
    } catch (...) {
      // The read that needs these bytes fetches them, and reports.
    }
    std::lock_guard<std::mutex> lock(mutex_);
    --filling_;
    ++stats_.fills;
  }
}

void ReadAhead::RunMemory() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (stop_) return;
    }
    // The ranges Prefetch registered, admitted while there is room (the
    // oldest ones read or not make way), then fetched at once.
    for (;;) {
      std::vector<std::shared_ptr<Extent>> group;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!pending_.empty()) {
          const std::shared_ptr<Extent> e = pending_.front();
          if (!MakeRoom(e->length)) {
            if (!group.empty()) break;  // fetch what fits first
            changed_.wait(lock);
            if (stop_) return;
            continue;
          }
          pending_.pop_front();
          e->bytes.resize(e->length);
          e->admitted = true;
          stats_.held_bytes += e->length;
          stats_.peak_held_bytes = std::max(stats_.peak_held_bytes, stats_.held_bytes);
          group.push_back(e);
        }
      }
      if (group.empty()) break;
      std::vector<StoreRead> reads;
      for (const auto& e : group) {
        reads.push_back(StoreRead{e->object->key, e->offset, e->length, e->bytes.data()});
      }
      bool ok = true;
      try {
        fetch_(reads);
      } catch (...) {
        ok = false;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& e : group) {
          e->ready = ok;
          e->failed = !ok;
          if (ok) {
            ++stats_.gets;
            stats_.bytes += e->length;
          }
        }
      }
      changed_.notify_all();
    }
  }
}

bool ReadAhead::FromMemory(const CacheRange& r) const {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto it = std::find_if(extents_.begin(), extents_.end(), [&](const std::shared_ptr<Extent>& e) {
      return !e->failed && e->Holds(r);
    });
    if (it == extents_.end()) return false;
    const std::shared_ptr<Extent> e = *it;
    if (!e->ready) {
      changed_.wait(lock, [&] { return e->ready || e->failed || stop_; });
      if (stop_) return false;
      continue;
    }
    std::memcpy(r.out, e->bytes.data() + (r.offset - e->offset), r.length);
    e->served += r.length;
    if (e->served >= e->length) {
      // Read whole: its memory goes back to read-ahead.
      const auto at = std::find(extents_.begin(), extents_.end(), e);
      if (at != extents_.end()) {
        extents_.erase(at);
        stats_.held_bytes -= e->length;
      }
      lock.unlock();
      changed_.notify_all();
    }
    return true;
  }
}

void ReadAhead::Read(const std::vector<CacheRange>& ranges, const StoreFetch& fetch) const {
  if (cache_ != nullptr) {
    cache_->Read(ranges, fetch);
    return;
  }
  std::vector<StoreRead> rest;
  for (const CacheRange& r : ranges) {
    if (r.length != 0 && !FromMemory(r)) {
      rest.push_back(StoreRead{r.object->key, r.offset, r.length, r.out});
    }
  }
  if (!rest.empty()) fetch(rest);
}

}  // namespace gulpdb::engine
