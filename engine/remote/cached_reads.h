// Where a RemoteSource (remote_dataset.h) meets the node's frame cache and
// read-ahead (engine/frame_cache): the cache the environment configures, the
// identity under which an object's bytes are cached, and the reads of one
// source through them. docs/frame_cache.md says what a user sees.
//
// Configuration, read at every open of a remote dataset (a malformed value
// fails every open, warm cache or cold):
//   GULPDB_FRAME_CACHE_BYTES  the bound of CacheDirectory()/frames (K/M/G/T
//                             suffixes, util/byte_size.h); default 10 GiB;
//                             0 turns the cache off
//   GULPDB_FRAME_CACHE_BLOCK  the block size: a power of two from 64 KiB to
//                             64 MiB; default 1 MiB
//   GULPDB_PREFETCH_BYTES     read-ahead's memory when the cache is off;
//                             default 256 MiB
// A cache directory (CacheDirectory() or its frames/) that another user owns
// or that its group or others can write is refused (IoError): a CRC stops
// accidents, not forgery. One on a network file system is used, with a
// warning on stderr (once per process): its locks may not hold between
// hosts, so give each node its own.
//
// Thread safety: CachedReads may be used from any number of threads.
#ifndef GULPDB_ENGINE_REMOTE_CACHED_READS_H_
#define GULPDB_ENGINE_REMOTE_CACHED_READS_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/frame_cache/frame_cache.h"
#include "engine/frame_cache/read_ahead.h"
#include "engine/remote/manifest.h"

namespace gulpdb::engine {

// The frame cache the environment configures, or nullopt when it is off.
// Throws InvalidArgumentError "<what>: GULPDB_FRAME_CACHE_BYTES '<value>':
// ..." for a malformed variable, IoError for a directory others can write.
std::optional<FrameCacheConfig> FrameCacheFromEnvironment(const std::string& what);

// The identity under which chunk `chunk` of the dataset `dataset` in the
// store `store_identity` is cached: what changes whenever its committed
// bytes could. "" (not cached) when the manifest gives neither a CRC-32C nor
// an ETag for it.
std::string CacheIdentity(const std::string& store_identity, const std::string& dataset,
                          const ManifestChunk& chunk);

// The reads of one source.
class CachedReads {
 public:
  // `cache` null: no frame cache (read-ahead then holds bytes in memory).
  // `background` reads the store for read-ahead.
  CachedReads(std::optional<FrameCacheConfig> cache, StoreFetch background,
              uint64_t prefetch_memory);

  bool caching() const { return cache_ != nullptr; }

  // The CachedObject of the object `key`, made by `make` on first use; it
  // lives as long as this object.
  const CachedObject& Object(const std::string& key, const std::function<CachedObject()>& make);
  // Reads through the cache and read-ahead; `fetch` reads the store.
  void Read(const std::vector<CacheRange>& ranges, const StoreFetch& fetch) const;
  // Queues read-ahead of the ranges.
  void Prefetch(std::vector<CacheRange> ranges);
  // Drops cached copies of the ranges; true when there was one.
  bool Forget(const std::vector<CacheRange>& ranges) const;
  std::optional<ReadAheadStats> read_ahead() const;

 private:
  std::shared_ptr<const FrameCache> cache_;
  StoreFetch background_;
  uint64_t prefetch_memory_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<CachedObject>> objects_;  // by key
  std::unique_ptr<ReadAhead> read_ahead_;                         // made by the first Prefetch
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_CACHED_READS_H_
