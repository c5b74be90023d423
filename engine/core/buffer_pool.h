// Recently freed large read buffers, for the next read of a similar size:
// the decoded pixels of DecodedFrames and the JPEG bytes of StoredFrames.
//
// A large allocation that malloc serves fresh (mmapped, or heap it has just
// given back to the kernel) is page-faulted in on first touch. A ReadBatch of
// 8 16-frame 320x240 clips frees its 8 JPEG buffers (~270 KB each) together,
// which makes glibc trim its heap, and faulted them in again on the next
// batch: ~80 page faults per clip, 0.25 s of system time over 24 batches, and
// ReadBatch at 2 threads only 0.75-0.8x the bare loop per CPU-second
// (decode_ab, bench/README.md "Decoding"). Reusing buffers costs none of it.
//
// Bounded in count and bytes; buffers under 128 KiB go straight back to the
// heap. Thread-safe (one mutex, held for a scan of at most kMaxBuffers).
#ifndef GULPDB_ENGINE_CORE_BUFFER_POOL_H_
#define GULPDB_ENGINE_CORE_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace gulpdb::engine {

// StoredFrames' buffers start this many bytes before their first frame, with
// the block's capacity (a size_t) there; 16 keeps the frames 16-byte aligned.
inline constexpr size_t kJpegBufferHeader = 16;

class BufferPool {
 public:
  // The process's pool, never destroyed (buffers may be freed after statics).
  static BufferPool& Get();

  // A buffer of at least `size` bytes (malloc'ed when none fits; null when
  // that fails); `*capacity` receives its real size, which Give needs.
  uint8_t* Take(size_t size, size_t* capacity);

  // Returns a buffer from Take (or any malloc'ed buffer of `capacity`
  // bytes); null is ignored.
  void Give(uint8_t* p, size_t capacity);

 private:
  static constexpr size_t kMinPooled = size_t{128} << 10;
  static constexpr size_t kMaxBuffers = 64;
  static constexpr size_t kMaxBytes = size_t{128} << 20;
  std::mutex mutex_;
  std::vector<std::pair<uint8_t*, size_t>> free_;  // guarded by mutex_
  size_t bytes_ = 0;                               // guarded by mutex_
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_BUFFER_POOL_H_
