// The machine-local cache of the partitions of partitioned index snapshots
// (engine/partition/partitions.h), shared by every process and every
// generation: a partition is named by the SHA-256 of its bytes, so one that
// an older root listed is never fetched again.
//
// Layout (under CacheDirectory(), gulpdb/remote.h):
//
//   objects/
//     <sha256>                 a root or a page of a manifest's chunk list
//                              (FetchRoot, FetchChunkPage): verified on every
//                              use, at most 1024 kept, so that re-opening a
//                              dataset GETs only its manifest
//   partitions/
//     <sha256>                 a verified partition (appears by rename)
//     .lock.<2 hex digits>     flock: one process downloads a partition
//                              (striped by the first byte of its hash)
//     .download.<pid>.<n>      a download in progress (removed by the next
//                              download once its process is gone)
//
// A partition is fetched on first use: the fetching process takes its lock,
// looks again, downloads into a temporary file (never more bytes than the
// root's size for it), verifies it (FetchVerified, verified_fetch.h: damage
// on the way is fetched again, the same wrong bytes twice are a damaged
// object; then VerifyPartitionFile: size, SHA-256, page walk), fsyncs it and
// renames it into place; the others wait for the lock and find it there. A
// cached partition is verified again on every first use in a reader; one
// that fails is set aside and downloaded again, and if that fails too the
// read is a CorruptionError naming the partition. Roots, root pages and
// chunk pages are fetched the same way. A reader (a BadObjectScope given)
// remembers an object found damaged in the bucket: later reads that need it
// fail at once, with no download, until a newer manifest is opened.
//
// Size bound: GULPDB_CACHE_BYTES (bytes, or with a K, M, G or T suffix of
// powers of 1024; unset or 0: no bound) bounds the bytes of the partitions
// in the cache. A reader holds a shared flock on each partition file it has
// open (its PartitionLeases); the evictor deletes, least recently used first
// (every use sets the file's times to now), only files it can lock
// exclusively, so a partition an open reader uses is never deleted: with a
// bound smaller than what is open the cache stays over it until readers
// close. Eviction runs after each download and when a reader closes.
//
// Thread safety: every function may be called from any thread and process;
// a fetch function may be called from any number of threads at once.
#ifndef GULPDB_ENGINE_REMOTE_PARTITION_CACHE_H_
#define GULPDB_ENGINE_REMOTE_PARTITION_CACHE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/verified_fetch.h"
#include "index/partition_root.h"

namespace gulpdb::engine {

// CacheDirectory()/partitions.
std::string PartitionCacheDirectory();

// The bound GULPDB_CACHE_BYTES sets (0: none). InvalidArgumentError naming
// the variable and the value for a malformed one; NodeCacheFetch checks it,
// so every open of a partitioned snapshot refuses one, warm cache or cold.
uint64_t CacheBytesBound();

// Deletes partitions of the cache directory `dir`, least recently used
// first, that no process holds open (a shared flock), until their bytes are
// at most `bound`. Returns the bytes deleted. Never throws: the cache is
// only a cache.
uint64_t EvictPartitions(const std::string& dir, uint64_t bound) noexcept;

// What a fetch function reports (shared by the copies of the function).
struct PartitionCacheCounters {
  std::atomic<uint64_t> downloads{0};  // partitions this reader downloaded
  std::atomic<uint64_t> bytes{0};      // their bytes
};

// The PartitionFetch of a reader whose partitions are the
// objects PartitionKey(sha256) of `store`: returns the path of the cached
// partition, downloading it first when needed, and keeps a shared lock on
// it until the last copy of the function is destroyed (then eviction runs
// if the cache is over its bound). `what` names the reader in messages
// ("open dataset s3://..."); `lock_wait` bounds the wait for another
// process downloading the same partition (BusyError). Throws
// CorruptionError when the partition is missing from the store, is damaged
// there (another size or SHA-256 than the root says, the same in two
// downloads, or not a sound index file), IoError when every download was
// damaged on the way (FetchVerified); the store's errors otherwise. With
// `remember`, a partition found damaged is not downloaded again
// (verified_fetch.h). Making it throws InvalidArgumentError
// ("<what>: GULPDB_CACHE_BYTES '<value>': ...") for a malformed bound.
PartitionFetch NodeCacheFetch(std::shared_ptr<ObjectStore> store, std::string what,
                              std::chrono::milliseconds lock_wait,
                              std::shared_ptr<PartitionCacheCounters> counters = nullptr,
                              std::optional<BadObjectScope> remember = std::nullopt);

// The PageFetch of a reader of a two-level root whose pages are the objects
// RootPageKey(sha256) of `store`: from the node cache (objects/), or GETs of
// at most the page's size (FetchVerified), verified and kept there. Throws
// CorruptionError "<what>: the root page <object> ..." when it is missing or
// damaged in the bucket, IoError when damaged on the way every time; the
// store's errors otherwise. `remember` as for NodeCacheFetch.
PageFetch NodeCachePageFetch(std::shared_ptr<ObjectStore> store, std::string what,
                             std::optional<BadObjectScope> remember = std::nullopt);

// The root a version 2 manifest names: from the node cache (objects/), or
// GETs of at most its size (FetchVerified); its size and SHA-256 checked
// against the manifest, decoded and validated, and kept in the node cache.
// Throws CorruptionError "<what>: the root <object> ..." when it is missing,
// damaged in the bucket (another size or hash twice alike, or not a root),
// IoError when damaged on the way every time; the store's errors otherwise.
// `remember` (null: none) as for NodeCacheFetch.
index::PartitionRoot FetchRoot(ObjectStore& store, const Manifest& manifest,
                               const std::string& what, const BadObjectScope* remember = nullptr);

// Keeps a root, root page or chunk page whose SHA-256 is `sha256` in the node cache
// (objects/), as FetchRoot and FetchChunkPage do with what they fetch: a
// push keeps what it wrote. Best effort; never throws.
void KeepObject(const std::string& sha256, std::string_view bytes) noexcept;

// The chunk entries of `page` of a version 3 manifest: from the node cache
// (objects/), or GETs of at most its size (FetchVerified); checked
// (ParseChunkPage) and kept in the node cache. Throws CorruptionError
// "<what>: ..." naming the page when it is missing or not what the
// manifest says. `remember` as for FetchRoot.
std::vector<ManifestChunk> FetchChunkPage(ObjectStore& store, const Manifest& manifest,
                                          const ManifestChunkPage& page, const std::string& what,
                                          const BadObjectScope* remember = nullptr);

// Fills `manifest->chunks` from its pages (a version 3 manifest: every page
// fetched); nothing for a manifest that lists its chunks.
void LoadChunkPages(ObjectStore& store, Manifest* manifest, const std::string& what);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PARTITION_CACHE_H_
