#include "util/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <system_error>

namespace gulpdb::util {

// One ParallelFor call. It lives on the caller's stack; workers reach it only
// through loops_ and count themselves in `active`, and the caller returns only
// after removing it from loops_ and seeing `active` drop to zero.
struct ThreadPool::Loop {
  Loop(size_t count, const std::function<void(size_t)>& body) : n(count), fn(body) {}

  bool Exhausted() const { return failed.load() || next.load() >= n; }

  const size_t n;
  const std::function<void(size_t)>& fn;
  std::atomic<size_t> next{0};      // the next unclaimed index
  std::atomic<bool> failed{false};  // set by the first throwing call
  std::mutex error_mu;
  std::exception_ptr error;  // guarded by error_mu
  size_t active = 0;         // workers inside RunLoop; guarded by the pool's mu_
};

size_t ThreadPool::DefaultSize() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

ThreadPool::ThreadPool(size_t num_threads) {
  const size_t num_workers = num_threads > 1 ? num_threads - 1 : 0;
  workers_.reserve(num_workers);
  try {
    for (size_t i = 0; i < num_workers; ++i) workers_.emplace_back([this] { WorkerMain(); });
  } catch (...) {
    // A destructor does not run for a half-built object: stop what started.
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::RunLoop(Loop& loop) {
  while (!loop.failed.load(std::memory_order_relaxed)) {
    const size_t i = loop.next.fetch_add(1);
    if (i >= loop.n) break;
    try {
      loop.fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(loop.error_mu);
      if (!loop.error) loop.error = std::current_exception();
      loop.failed.store(true);
    }
  }
}

void ThreadPool::WorkerMain() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stopping_ || !loops_.empty(); });
    if (stopping_) return;
    Loop* loop = loops_.front();
    if (loop->Exhausted()) {
      // Nothing left to claim; its caller finishes the claimed indices.
      loops_.pop_front();
      continue;
    }
    ++loop->active;
    lock.unlock();
    RunLoop(*loop);
    lock.lock();
    // RunLoop returns only once the loop is exhausted: no one needs to find it.
    auto it = std::find(loops_.begin(), loops_.end(), loop);
    if (it != loops_.end()) loops_.erase(it);
    if (--loop->active == 0) done_cv_.notify_all();
  }
}

void ThreadPool::ParallelFor(size_t n, const std::function<void(size_t i)>& fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);  // an exception skips the rest by itself
    return;
  }
  Loop loop(n, fn);
  {
    std::lock_guard<std::mutex> lock(mu_);
    loops_.push_back(&loop);
  }
  work_cv_.notify_all();
  RunLoop(loop);
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = std::find(loops_.begin(), loops_.end(), &loop);
    if (it != loops_.end()) loops_.erase(it);
    done_cv_.wait(lock, [&loop] { return loop.active == 0; });
  }
  if (loop.error) std::rethrow_exception(loop.error);
}

void ParallelFor(size_t n, size_t max_threads, const std::function<void(size_t i)>& fn) {
  if (max_threads == 0) max_threads = ThreadPool::DefaultSize();
  const size_t threads = std::min(n, max_threads);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::unique_ptr<ThreadPool> pool;
  try {
    pool = std::make_unique<ThreadPool>(threads);
  } catch (const std::system_error&) {
    // No threads to be had: this thread does the whole loop.
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool->ParallelFor(n, fn);
}

}  // namespace gulpdb::util
