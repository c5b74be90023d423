// Test hooks on the write path, for the reliability suite (tests/reliability)
// and the remote suite: crash torture observes or stops a writer at named
// points, race tests run a second push at a point of the first. The hook on
// file I/O (fail a read, write, sync or rename, or cut it short, the way a
// full disk, a flaky device or a signal would) is util/file_io.h's.
//
// With no hook installed each point costs one relaxed atomic load. Hooks are
// process-wide; install them before the threads that should see them start,
// and remove them (pass nullptr) before `context` dies.
#ifndef GULPDB_ENGINE_CORE_FAULT_INJECTION_H_
#define GULPDB_ENGINE_CORE_FAULT_INJECTION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "util/file_io.h"

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
  // Push (engine/remote/publish.cc), for the remote suite's races:
  kPushPlanned,        // read the manifest and listed the prefix; nothing written yet
  kPushBeforePublish,  // every object is uploaded; the manifest is not written yet
};
constexpr int kPointCount = 10;
const char* PointName(Point point);

using PointHook = void (*)(Point point, void* context);
void SetPointHook(PointHook hook, void* context);

// The I/O hook lives in the file layer (util/file_io.h), where every read,
// write, sync, rename and removal passes; named here too for the tests that
// drive both.
using util::fault::Injection;
using util::fault::IoHook;
using util::fault::Op;
using util::fault::OpName;
using util::fault::SetIoHook;

namespace detail {
extern std::atomic<PointHook> point_hook;
void CallPointHook(Point point);
}  // namespace detail

inline void Reached(Point point) {
  if (detail::point_hook.load(std::memory_order_relaxed) != nullptr) detail::CallPointHook(point);
}

}  // namespace gulpdb::engine::fault

#endif  // GULPDB_ENGINE_CORE_FAULT_INJECTION_H_
