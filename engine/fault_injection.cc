#include "engine/fault_injection.h"

namespace gulpdb::engine::fault {
namespace detail {

std::atomic<PointHook> point_hook{nullptr};
std::atomic<IoHook> io_hook{nullptr};
namespace {
std::atomic<void*> point_context{nullptr};
std::atomic<void*> io_context{nullptr};
}  // namespace

void CallPointHook(Point point) {
  if (PointHook hook = point_hook.load(std::memory_order_acquire)) {
    hook(point, point_context.load(std::memory_order_acquire));
  }
}

Injection CallIoHook(Op op, const std::string& path, uint64_t offset, size_t size) {
  if (IoHook hook = io_hook.load(std::memory_order_acquire)) {
    return hook(op, path, offset, size, io_context.load(std::memory_order_acquire));
  }
  return {};
}

}  // namespace detail

void SetPointHook(PointHook hook, void* context) {
  detail::point_context.store(context, std::memory_order_release);
  detail::point_hook.store(hook, std::memory_order_release);
}

void SetIoHook(IoHook hook, void* context) {
  detail::io_context.store(context, std::memory_order_release);
  detail::io_hook.store(hook, std::memory_order_release);
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

const char* OpName(Op op) {
  switch (op) {
    case Op::kRead:
      return "read";
    case Op::kWrite:
      return "write";
    case Op::kSync:
      return "sync";
    case Op::kTruncate:
      return "truncate";
  }
  return "unknown";
}

}  // namespace gulpdb::engine::fault
