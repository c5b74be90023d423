// The node-level frame cache (docs/frame_cache.md; its files in
// docs/format/frame_cache_format.md): bytes of remote chunk objects, kept in
// blocks under CacheDirectory()/frames/ and shared by every process of the
// node (DataLoader workers, DDP ranks, separate jobs).
//
//   frames/blocks/<2 hex>/<64 hex>  a block (block_file.h), named by the
//                                    SHA-256 of its object's identity, the
//                                    block size and its number
//   frames/tmp/<pid>.<n>             a block being filled (never served;
//                                    removed once its process is gone)
//   frames/locks/<3 hex>             flock stripes: one filler per block
//   frames/stats                     node-wide counters (cache_stats.h)
//   frames/evict                     flock: one eviction pass at a time
//
// Identity: a caller names each object by an identity string that changes
// whenever the bytes could (the store, the dataset's UUID, the key and the
// committed prefix the reader's manifest gives: its length and CRC-32C), and
// a block holds bytes [n * block, min((n + 1) * block, committed length)) of
// it. A block is served only to a reader that names the same identity, so a
// replaced object, a wiped prefix or another dataset pushed to the same URL
// never serves old bytes.
//
// Filling: a read looks for each block it needs; for the missing ones it
// takes the stripe lock (LOCK_NB), looks again, GETs the missing blocks
// (adjacent ones of an object in one request), writes each into tmp/ and
// renames it into place, then releases the lock. Blocks whose stripe another
// filler holds are waited for (polling the lock every 2 ms at most, for at
// most `fill_wait`), then read from the file, or fetched by this process if
// the other filler failed.
// So concurrent misses for one block make one GET.
//
// Eviction: every use sets a block's mtime (LRU order). When the bytes under
// frames/ exceed the bound, a pass (one at a time per node) measures them and
// deletes least recently used blocks that no reader holds (a reader holds a
// shared flock while it copies out; the pass takes an exclusive one, without
// waiting) down to 90% of the bound. Reads never map a file (pread only), so
// a block deleted or truncated under a reader is a failed check, never a
// signal.
//
// Failures: the cache is only a cache. A block that fails its checks is
// deleted and fetched again (counted as damaged); a cache file that cannot
// be written (disk full, permissions) leaves the bytes served from memory.
// Errors of the store keep their type.
//
// Thread safety: every method may be called from any number of threads and
// processes at once.
#ifndef GULPDB_ENGINE_FRAME_CACHE_FRAME_CACHE_H_
#define GULPDB_ENGINE_FRAME_CACHE_FRAME_CACHE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/frame_cache/block_file.h"
#include "engine/frame_cache/cache_stats.h"

namespace gulpdb::engine {

inline constexpr uint64_t kDefaultFrameCacheBytes = uint64_t{10} << 30;
inline constexpr uint64_t kDefaultFrameBlockBytes = uint64_t{1} << 20;
// A GET fills at most this many bytes of adjacent blocks.
inline constexpr uint64_t kMaxFillBytes = uint64_t{16} << 20;

struct FrameCacheConfig {
  std::string dir;  // <cache>/frames
  uint64_t bound = kDefaultFrameCacheBytes;
  uint64_t block_bytes = kDefaultFrameBlockBytes;
  std::chrono::milliseconds fill_wait{120000};
};

// The object whose bytes a range reads.
struct CachedObject {
  std::string key;       // in its store
  std::string name;      // in messages (its URL)
  std::string identity;  // see above; empty: never cached
  uint64_t committed_length = 0;
};

// `length` bytes at `offset` of `object`, into `out`.
struct CacheRange {
  const CachedObject* object = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
  char* out = nullptr;
};

// Reads exact ranges from the store (each `length` bytes at `offset` of
// `key`, into `out`), throwing as the store does.
struct StoreRead {
  std::string key;
  uint64_t offset = 0;
  uint64_t length = 0;
  char* out = nullptr;
};
using StoreFetch = std::function<void(const std::vector<StoreRead>&)>;

class FrameCache {
 public:
  // Creates frames/ (mode 0700) under `config.dir`'s parent as needed.
  // Throws IoError when it cannot be created.
  explicit FrameCache(FrameCacheConfig config);
  FrameCache(const FrameCache&) = delete;
  FrameCache& operator=(const FrameCache&) = delete;

  const FrameCacheConfig& config() const { return config_; }

  // Fills every range: from cache files where they hold its bytes, the rest
  // fetched with `fetch` (in whole blocks, kept for the next reader).
  // Throws what `fetch` throws.
  void Read(const std::vector<CacheRange>& ranges, const StoreFetch& fetch) const;

  // Makes sure the blocks of `ranges` are cached (read-ahead: counted as
  // prefetched, not as misses). `out` is unused. Throws what `fetch` throws.
  void Fill(const std::vector<CacheRange>& ranges, const StoreFetch& fetch) const;

  // Deletes the cached blocks holding bytes of `ranges` (their frames failed
  // a check after a read): the next read fetches them again. Returns true
  // when there was any. Never throws.
  bool Forget(const std::vector<CacheRange>& ranges) const noexcept;

  // One eviction pass now (when the bytes under frames/ exceed the bound);
  // returns the bytes deleted. Never throws.
  uint64_t Evict() const noexcept;

  // The node-wide counters.
  CacheCounters Counters() const noexcept { return stats_.Read(); }

 private:
  struct Block;
  struct Piece;
  // The blocks `ranges` touch, and the pieces of each range in them.
  std::vector<Block> BlocksOf(const std::vector<CacheRange>& ranges) const;
  std::string PathOf(const std::string& name) const;
  // Copies the pieces of a cached block out (with none: checks its header);
  // false when it is not there or fails its checks (then it is deleted, and
  // `damaged` counted).
  bool CopyOut(const Block& block, CacheCounters* delta) const;
  // Serves, fills and waits for `blocks` (see above); `prefetch` counts
  // what it fetches as prefetched.
  void Serve(std::vector<Block>& blocks, const StoreFetch& fetch, bool prefetch,
             CacheCounters* delta) const;
  // GETs the blocks (adjacent ones in one request) and writes their files.
  void FetchAndKeep(std::vector<Block*>& blocks, const StoreFetch& fetch,
                    CacheCounters* delta) const;
  // Writes a block file (tmp/ then rename); false when it could not.
  bool Keep(const Block& block, const std::string& data) const noexcept;
  // Evicts when the stored byte figure is over the bound.
  void MaybeEvict() const noexcept;

  FrameCacheConfig config_;
  mutable NodeStats stats_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_FRAME_CACHE_FRAME_CACHE_H_
