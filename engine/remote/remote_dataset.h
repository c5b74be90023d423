// Datasets opened from a published manifest (gulpdb/remote.h): a dataset in
// an object store ("s3://bucket/prefix"), or a local dataset on a network file
// system read through the snapshot `gulpdb snapshot` published beside it.
//
// Both open the same way: GET the manifest, make sure its index snapshot is
// in the machine's cache (engine/remote/snapshot_cache.h), open that read-only, and
// attach it to a Dataset::Impl. An object-store dataset also gets a
// RemoteSource, through which the read path (engine/core/chunk_reader.h) fetches
// frames with ranged GETs; a network-file-system dataset reads its chunk
// files in place.
//
// Shared file systems: LMDB's lock table lives in shared memory of one host,
// so a reader on host B cannot stop a writer on host A from reusing pages B
// is reading. A read-only Open of a local dataset whose index is on a network
// file system (statfs: NFS, SMB/CIFS, Lustre, FUSE, Ceph, GPFS, 9P, AFS, ...)
// therefore never maps the live index: it reads the published snapshot, or
// refuses with an error saying why and what to do. The environment variable
// GULPDB_TEST_FS_TYPE (a file-system name such as "nfs", or a statfs magic
// number) makes every path look like it is on that file system, for tests.
//
// Chunk reads are conditional (docs/format/remote_format.md, "Readers"):
// each ranged GET carries If-Match with the ETag the manifest gives its
// object. A push that grows a chunk replaces its object under the same key,
// so the ETag changes while the bytes a reader may read do not; on 412 the
// RemoteSource accepts the object's new ETag only when a newer published
// manifest of the same dataset names it for at least the same committed
// length, or when the object's metadata says the push that wrote it checked
// its prefix against such a promise (a push in flight), and retries. Any
// other replacement is a CorruptionError naming the object. The normal case
// costs no request more.
//
// A RemoteSource forwards to the classes that own each part: the manifest's
// chunk list with the ETags accepted (manifest_chunks.h, which also declares
// ChunkDisagreement), the conditional reads and their revalidation
// (conditional_reads.h), and the frame cache and read-ahead (cached_reads.h).
//
// Thread safety: a RemoteSource may be used from any number of threads; the
// ETags it accepts are guarded by a mutex. Its store is thread-safe.
#ifndef GULPDB_ENGINE_REMOTE_REMOTE_DATASET_H_
#define GULPDB_ENGINE_REMOTE_REMOTE_DATASET_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/chunk_source.h"
#include "engine/core/dataset_view.h"
#include "engine/remote/conditional_reads.h"
#include "engine/remote/manifest.h"
#include "engine/remote/manifest_chunks.h"
#include "engine/remote/object_store.h"
#include "gulpdb/dataset.h"
#include "gulpdb/remote.h"

namespace gulpdb::engine {

struct PartitionCacheCounters;  // partition_cache.h
class CachedReads;              // cached_reads.h
struct CacheRange;              // engine/frame_cache/frame_cache.h

// The ChunkSource (engine/core/chunk_source.h) of a dataset opened from a
// published manifest: the storage core reads chunks and the label map
// through it.
class RemoteSource : public ChunkSource, public std::enable_shared_from_this<RemoteSource> {
 public:
  // Throws as FrameCacheFromEnvironment (cached_reads.h) when the chunks
  // are in a store: a malformed GULPDB_FRAME_CACHE_BYTES fails every open.
  RemoteSource(std::shared_ptr<ObjectStore> store, Manifest manifest, RemoteInfo info);

  ObjectStore& store() const { return *store_; }
  const Manifest& manifest() const { return manifest_; }
  // What GetRemoteInfo reports (request counters filled in on the way out).
  RemoteInfo info() const;
  // A partitioned snapshot's reader: info() reports its downloads. Before
  // the source is shared.
  void CountPartitions(std::shared_ptr<const PartitionCacheCounters> counters) {
    partitions_ = std::move(counters);
  }

  // The manifest's entry for chunk `number`, or null. A version 3
  // manifest's page holding it is fetched on first use (FetchChunkPage).
  const ManifestChunk* Chunk(uint32_t number) const;
  // Every entry of the manifest's chunk list, by number (every page fetched).
  std::vector<ManifestChunk> AllChunks() const;

  // The manifest's entry for chunk `number`, checked against the snapshot's
  // record of the chunk (read in `txn`) the first time this source uses it:
  // the read path takes a chunk's object only from here (`check`, through
  // OpenChunkBytes, compares the same way). Throws CorruptionError "read id
  // '<id>' in <url>: ..." when the manifest has no such chunk or its entry
  // disagrees with the record (ChunkDisagreement). O(1) after the first use
  // of a chunk.
  const ManifestChunk& VerifiedManifestChunk(
      uint32_t number, std::string_view id, const std::string& dir,
      const std::function<index::ChunkRecord()>& record) const;

  // Reads the ranges (concurrently), each only from the object whose ETag
  // this source accepts for its key (see above). `what` says what was being
  // read, for messages. A missing object (404), one shorter than asked (416)
  // or one replaced behind the manifest's back is a CorruptionError that
  // says what probably happened; other failures keep their type with `what`
  // added.
  void Read(const std::vector<StoreRange>& ranges, const std::string& what) const;

  // The CorruptionError for a chunk object the manifest names that is not
  // there (`cause` is the store's message).
  [[noreturn]] void ThrowMissing(const std::string& what, const std::string& cause) const;

  // ChunkSource. Chunks are served when the manifest published them (a
  // local dataset's snapshot manifest does not: its readers read its files).
  bool ServesChunks() const override { return manifest_.chunks_published; }
  Object VerifiedChunk(uint32_t number, std::string_view id, const std::string& dir,
                       const std::function<index::ChunkRecord()>& record) const override;
  // For a chunk not verified yet: fetches its page of the chunk list and
  // calls `record` in the background, each in its own thread (at most once
  // per chunk), so that both arrive while the caller fetches the video's
  // record. Errors are left for VerifiedChunk to meet again.
  void PrefetchChunk(uint32_t number, std::function<void()> record) const override;
  ~RemoteSource() override;
  std::string Name(const std::string& key) const override;
  // Through the node's frame cache and read-ahead (cached_reads.h), when
  // the chunks are in a store and the cache is on.
  void Read(const std::vector<Range>& ranges, const std::string& what) const override;
  void Prefetch(const std::vector<Range>& ranges) const override;
  bool Forget(const std::vector<Range>& ranges) const override;
  // One HEAD request; CorruptionError when the manifest has no such chunk or
  // its entry disagrees with the record, NotFoundError when the object is
  // missing.
  std::shared_ptr<const ChunkBytes> OpenChunk(uint32_t number, const index::ChunkRecord& record,
                                              const std::string& dir) const override;
  void CopyLabelMap(const std::string& path) const override;
  // The tags the manifest lists (published_tags.h), when it published chunks.
  std::optional<std::vector<VersionInfo>> PublishedVersions() const override;

 private:
  // Ranges of the core as ranges of the cache.
  std::vector<CacheRange> CacheRanges(const std::vector<Range>& ranges) const;

  std::shared_ptr<ObjectStore> store_;
  Manifest manifest_;
  RemoteInfo info_;
  std::shared_ptr<const PartitionCacheCounters> partitions_;
  // The manifest's chunk list, loaded a page at a time, with the ETag each
  // chunk object is read under (manifest_chunks.h); waits for its
  // prefetches when destroyed.
  ManifestChunks chunks_;
  // The conditional reads of the chunk objects (conditional_reads.h).
  ConditionalReads objects_;
  // The frame cache and read-ahead; destroyed first (its thread reads
  // through this source).
  std::unique_ptr<CachedReads> reads_;
};

// "" when `manifest` can describe the snapshot `dataset` opened (O(1): its
// chunk, video and frame counts are the snapshot's); otherwise what
// disagrees.
std::string ManifestDisagreement(const Manifest& manifest, const Dataset& dataset);

// Copies the label2idx.json the manifest names (if any) to the local file
// `path` (written atomically).
void CopyPublishedLabels(const RemoteSource& source, const std::string& path);

// The RemoteSource of a dataset opened from a published manifest, or null.
const RemoteSource* RemoteSourceOf(const Dataset& dataset);

// Dataset::Open of an "s3://" URL.
std::unique_ptr<Dataset> OpenRemoteDataset(const std::string& url, const OpenOptions& options);
// Dataset::Exists of an "s3://" URL: is there a manifest (one HEAD)?
bool RemoteDatasetExists(const std::string& url);

// The name of the network file system holding `path` ("nfs", "fuse", ...),
// or "" for a local one (or when statfs fails: the open that follows reports
// that).
std::string NetworkFileSystemName(const std::string& path);

// Dataset::Open, read-only, of the local dataset `dir` whose index is on the
// network file system `fs_name`: from its published snapshot, or an error.
std::unique_ptr<Dataset> OpenFromPublishedSnapshot(const std::string& dir,
                                                   const OpenOptions& options,
                                                   const std::string& fs_name);

// True when the override of the shared-file-system rule is set (the option
// or GULPDB_ALLOW_NETWORK_INDEX=1).
bool NetworkIndexAllowed(const OpenOptions& options);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_REMOTE_DATASET_H_
