#include "engine/core/order_scan.h"

#include <algorithm>
#include <future>
#include <system_error>
#include <utility>
#include <vector>

#include "util/thread_pool.h"

namespace gulpdb::engine {
namespace {

// Blocks fetched at once, on as many threads: one window is in flight while
// the scan reads the one before it.
constexpr size_t kWindow = 16;

// Fetches the blocks of a scan one window ahead of it.
class ReadAhead {
 public:
  ReadAhead(const IndexSource& source, std::vector<uint64_t> starts)
      : source_(source), starts_(std::move(starts)) {
    Start();
    Join();  // the first window: the scan needs it at once
    Start();
  }
  ~ReadAhead() { Join(); }
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // The scan has read `position`: at the end of a window, the next one
  // (fetched meanwhile) is waited for, and the one after it started.
  void Reached(uint64_t position) {
    if (position + 1 != boundary_) return;
    Join();
    Start();
  }

 private:
  // Starts fetching the next window, if any.
  void Start() {
    const size_t first = next_;
    const size_t end = std::min(starts_.size(), first + kWindow);
    next_ = end;
    // The scan waits for this window when it reaches the position before
    // the window's first one.
    boundary_ = first < starts_.size() ? starts_[first] : UINT64_MAX;
    if (first == end) return;
    try {
      pending_ = std::async(std::launch::async, [this, first, end] {
        util::ParallelFor(end - first, kWindow, [&](size_t i) {
          try {
            source_.OrderAt(starts_[first + i]);
          } catch (...) {  // the scan fetches it again, and reports what fails
          }
        });
      });
    } catch (const std::system_error&) {
      // No thread to be had: the scan fetches this window itself.
    }
  }
  void Join() noexcept {
    try {
      if (pending_.valid()) pending_.get();
    } catch (...) {  // nothing of a fetch ahead is reported (above)
    }
  }

  const IndexSource& source_;
  const std::vector<uint64_t> starts_;  // the first position of each block to fetch
  size_t next_ = 0;                     // the first block of the next window
  uint64_t boundary_ = UINT64_MAX;      // the first position of the window in flight
  std::future<void> pending_;
};

}  // namespace

void ScanOrderIds(const IndexSource& source, uint64_t limit,
                  const std::function<bool(std::string_view id)>& fn) {
  limit = std::min(limit, source.OrderCount());
  if (limit == 0) return;
  std::vector<uint64_t> starts = source.OrderBoundaries();
  starts.erase(std::lower_bound(starts.begin(), starts.end(), limit), starts.end());
  if (starts.size() <= 1) {  // one block: nothing to overlap
    uint64_t position = 0;
    source.ScanOrder({}, {}, [&](std::string_view, std::string_view id) {
      return fn(id) && ++position < limit;
    });
    return;
  }
  ReadAhead ahead(source, std::move(starts));
  uint64_t position = 0;
  source.ScanOrder({}, {}, [&](std::string_view, std::string_view id) {
    if (!fn(id)) return false;
    ahead.Reached(position);
    return ++position < limit;
  });
}

}  // namespace gulpdb::engine
