// Parallel loops: the one parallel-for of gulpdb. A ThreadPool keeps its
// threads for many loops (decoding the frames of batch after batch,
// verifying checksums); ParallelFor below runs one loop on threads started
// for it (a push's uploads, the bindings' encoding).
//
// A pool of size N runs a loop on N threads: N - 1 workers owned by the pool
// plus the thread that calls ParallelFor, which always takes part. Size 1 starts
// no thread at all and runs every loop inline on the caller.
//
// Thread safety: ParallelFor may be called from any number of threads at once,
// including from inside a loop body running on this pool (nested loops cannot
// deadlock, because every caller works through its own loop; the workers only
// add speed). Concurrent loops share the workers, so more than size() threads
// may be busy in total. The destructor must not run while a ParallelFor on this
// pool is in progress.
#ifndef GULPDB_UTIL_THREAD_POOL_H_
#define GULPDB_UTIL_THREAD_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gulpdb::util {

class ThreadPool {
 public:
  // std::thread::hardware_concurrency(), or 1 if that is unknown.
  static size_t DefaultSize();

  // Starts num_threads - 1 worker threads (0 is treated as 1). Throws
  // std::system_error if a thread cannot be started (after stopping the ones
  // that were).
  explicit ThreadPool(size_t num_threads = DefaultSize());
  // Stops and joins the workers.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Total parallelism of one loop, the calling thread included.
  size_t size() const { return workers_.size() + 1; }

  // Calls fn(i) once for every i in [0, n), in no particular order and on any
  // of the pool's threads or the calling one, and returns when all calls have
  // finished. If a call throws, the indices not yet started are skipped, and
  // once the running calls have finished the first exception is rethrown here.
  // `fn` must be safe to call concurrently with itself.
  void ParallelFor(size_t n, const std::function<void(size_t i)>& fn);

 private:
  struct Loop;

  void WorkerMain();
  static void RunLoop(Loop& loop);

  std::mutex mu_;
  std::condition_variable work_cv_;  // a loop was queued, or the pool is stopping
  std::condition_variable done_cv_;  // a worker left a loop
  std::deque<Loop*> loops_;          // loops that may still have unclaimed indices; guarded by mu_
  bool stopping_ = false;            // guarded by mu_
  std::vector<std::thread> workers_;
};

// Calls fn(i) once for every i in [0, n) on up to `max_threads` threads, the
// calling one included (0: ThreadPool::DefaultSize()), as
// ThreadPool::ParallelFor does: the first exception is rethrown once the
// running calls have finished, and the indices not yet started are skipped.
// When no thread can be started the loop runs on the calling thread alone.
void ParallelFor(size_t n, size_t max_threads, const std::function<void(size_t i)>& fn);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_THREAD_POOL_H_
