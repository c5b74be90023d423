#include "engine/core/fault_injection.h"

namespace gulpdb::engine::fault {
namespace detail {

std::atomic<PointHook> point_hook{nullptr};
namespace {
std::atomic<void*> point_context{nullptr};
}  // namespace

void CallPointHook(Point point) {
  if (PointHook hook = point_hook.load(std::memory_order_acquire)) {
    hook(point, point_context.load(std::memory_order_acquire));
  }
}

}  // namespace detail

void SetPointHook(PointHook hook, void* context) {
  detail::point_context.store(context, std::memory_order_release);
  detail::point_hook.store(hook, std::memory_order_release);
}

const char* PointName(Point point) {
  switch (point) {
    case Point::kChunkCreated:
      return "chunk_created";
    case Point::kChunkRegistered:
      return "chunk_registered";
    case Point::kFramesWritten:
      return "frames_written";
    case Point::kBeforeDataSync:
      return "before_data_sync";
    case Point::kAfterDataSync:
      return "after_data_sync";
    case Point::kBeforeIndexCommit:
      return "before_index_commit";
    case Point::kIndexBuilt:
      return "index_built";
    case Point::kAfterIndexCommit:
      return "after_index_commit";
    case Point::kPushPlanned:
      return "push_planned";
    case Point::kPushBeforePublish:
      return "push_before_publish";
  }
  return "unknown";
}

}  // namespace gulpdb::engine::fault
