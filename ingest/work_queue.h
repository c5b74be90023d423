// The pipeline's mechanism: worker threads that produce results for source
// indices in order, at most a window ahead of the one consumer, which takes
// the results back in index order. Memory is bounded by the window however
// long the list is, and the consumer sees the same order on every run.
// Stopping the queue (on an interrupt, or any way out of the pipeline) also
// kills the workers' child processes, so that no worker stays blocked on a
// decoder.
#ifndef GULPDB_INGEST_WORK_QUEUE_H_
#define GULPDB_INGEST_WORK_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "ingest/child_process.h"

namespace gulpdb::ingest {

// Hands source indices to workers in order, never more than `window` ahead of
// the consumer, and gives their results back to the consumer in index order.
// Thread-safe.
template <typename T>
class OrderedQueue {
 public:
  OrderedQueue(size_t total, size_t window) : total_(total), slots_(window) {}

  // Worker side: the next index to produce, or nullopt when there is none
  // left or the queue is stopped. Blocks while the window is full.
  std::optional<size_t> Claim() {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock,
                [&] { return stopped_ || next_ >= total_ || next_ < taken_ + slots_.size(); });
    if (stopped_ || next_ >= total_) return std::nullopt;
    return next_++;
  }

  void Put(size_t index, T result) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      Slot& slot = slots_[index % slots_.size()];
      slot.result = std::move(result);
      slot.ready = true;
    }
    ready_.notify_all();
  }

  // Consumer side: waits up to `timeout` for the result of `index` (which
  // must be the next one in order); false on timeout.
  bool Take(size_t index, std::chrono::milliseconds timeout, T* out) {
    std::unique_lock<std::mutex> lock(mu_);
    Slot& slot = slots_[index % slots_.size()];
    if (!ready_.wait_for(lock, timeout, [&] { return slot.ready; })) return false;
    *out = std::move(slot.result);
    slot = Slot();
    taken_ = index + 1;
    lock.unlock();
    space_.notify_all();
    return true;
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    space_.notify_all();
  }

 private:
  struct Slot {
    bool ready = false;
    T result;
  };
  std::mutex mu_;
  std::condition_variable space_, ready_;
  const size_t total_;
  std::vector<Slot> slots_;
  size_t next_ = 0;   // next index to hand out
  size_t taken_ = 0;  // indices below this were consumed
  bool stopped_ = false;
};

// Worker threads over an OrderedQueue. The destructor stops the queue, kills
// the children of the workers and joins them, on every path out of Ingest.
template <typename T>
class Workers {
 public:
  Workers(size_t count, OrderedQueue<T>* queue, ChildSet* children,
          std::function<T(size_t)> produce)
      : queue_(queue), children_(children), produce_(std::move(produce)) {
    try {
      for (size_t i = 0; i < count; ++i) threads_.emplace_back([this] { Run(); });
    } catch (...) {
      Stop();
      throw;
    }
  }
  ~Workers() { Stop(); }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

 private:
  void Stop() {
    queue_->Stop();
    children_->CloseAndKillAll();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  void Run() {
    while (std::optional<size_t> index = queue_->Claim()) {
      queue_->Put(*index, produce_(*index));
    }
  }

  OrderedQueue<T>* queue_;
  ChildSet* children_;
  std::function<T(size_t)> produce_;
  std::vector<std::thread> threads_;
};

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_WORK_QUEUE_H_
