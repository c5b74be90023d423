// Test hooks on the write path and on file I/O, for the reliability suite
// (tests/reliability) and the remote suite: crash torture observes or stops a
// writer at named points, race tests run a second push at a point of the
// first; fault tests make a read, write, sync or truncate fail or come back
// short, the way a full disk, a flaky device or a signal would.
//
// With no hook installed each point costs one relaxed atomic load. Hooks are
// process-wide; install them before the threads that should see them start,
// and remove them (pass nullptr) before `context` dies.
#ifndef GULPDB_ENGINE_FAULT_INJECTION_H_
#define GULPDB_ENGINE_FAULT_INJECTION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gulpdb::engine::fault {

// Places on the write path, in the order one batch passes them.
enum class Point : uint8_t {
  kChunkCreated,       // a new chunk file exists; the index does not know it yet
  kChunkRegistered,    // the new chunk is in the index, still empty
  kFramesWritten,      // one video's frames are in its chunk, uncommitted
  kBeforeDataSync,     // Commit: the chunks the batch wrote are about to be fdatasynced
  kAfterDataSync,      // Commit: those chunks are durable; the index is not updated
  kBeforeIndexCommit,  // Commit: the LMDB write transaction holds the batch, not committed
  kAfterIndexCommit,   // Commit: the batch is committed
  kIndexBuilt,         // Create: the new index is whole beside its place, not renamed in
  // Push (engine/publish.cc), for the remote suite's races:
  kPushPlanned,        // read the manifest and listed the prefix; nothing written yet
  kPushBeforePublish,  // every object is uploaded; the manifest is not written yet
};
constexpr int kPointCount = 10;
const char* PointName(Point point);

using PointHook = void (*)(Point point, void* context);
void SetPointHook(PointHook hook, void* context);

// I/O operations that go through engine/file_util.
enum class Op : uint8_t { kRead, kWrite, kSync, kTruncate };
const char* OpName(Op op);

// What a hook asks for one system call: fail it with `error` (an errno
// value), or let at most `max_bytes` of it through (a short transfer).
struct Injection {
  int error = 0;
  size_t max_bytes = SIZE_MAX;
};
using IoHook = Injection (*)(Op op, const std::string& path, uint64_t offset, size_t size,
                             void* context);
void SetIoHook(IoHook hook, void* context);

namespace detail {
extern std::atomic<PointHook> point_hook;
extern std::atomic<IoHook> io_hook;
void CallPointHook(Point point);
Injection CallIoHook(Op op, const std::string& path, uint64_t offset, size_t size);
}  // namespace detail

inline void Reached(Point point) {
  if (detail::point_hook.load(std::memory_order_relaxed) != nullptr) detail::CallPointHook(point);
}

inline Injection Inject(Op op, const std::string& path, uint64_t offset, size_t size) {
  if (detail::io_hook.load(std::memory_order_relaxed) == nullptr) return {};
  return detail::CallIoHook(op, path, offset, size);
}

}  // namespace gulpdb::engine::fault

#endif  // GULPDB_ENGINE_FAULT_INJECTION_H_
