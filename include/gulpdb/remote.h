// Datasets in object storage: publish a local dataset to an S3-compatible
// store (Push), and open what was published from any number of machines
// (Dataset::Open("s3://bucket/prefix"), read-only).
//
// What a push leaves under the prefix (docs/format/remote_format.md): a
// GulpIO directory (data_N.gulp, meta_N.gmeta, label2idx.json: GulpIO and
// GulpIO2 read it through any S3 mount), an index snapshot
// (gulpdb.snapshots/<sha256>.mdb), and, written last, the manifest
// gulpdb.manifest.json naming the snapshot and every chunk object with its
// committed length, ETag and CRC-32C. Readers see whole pushes only.
//
// Opening: one GET of the manifest; the snapshot is downloaded once per
// machine into the cache (CacheDirectory(); a file lock makes concurrent
// openers download it once; never more bytes than the manifest's size; its
// SHA-256 and pages are checked, and what was checked is recorded) and
// opened read-only. A cached snapshot that is not the recorded file is
// checked again, or downloaded again (docs/format/remote_format.md).
// Reopening an unchanged dataset costs the manifest GET. Reads: one HTTP
// range request per run of adjacent frames, all runs of a batch read
// concurrently over kept-alive connections, every frame checked against its
// CRC-32C when the index has checksums (the default).
//
// Consistency: chunk objects only grow, and a push never changes a byte that
// an older manifest's reader may read (it checks the CRC-32C of each object's
// published prefix against the local file before replacing it). Objects a
// newer manifest no longer names (chunks emptied by compaction, old
// snapshots) are deleted by a later push once the grace period has passed
// since they were superseded; a reader holding an older manifest reads
// correctly until then. Readers read with If-Match on the ETags their
// manifest gives: an object replaced behind the manifest's back is a
// CorruptionError, a chunk a newer push grew is followed.
//
// Pushes at once: a push holds a lease on the prefix while it runs, and
// every write it makes is conditional (S3 conditional writes): a push that
// loses a race stops with BusyError, having replaced nothing a published
// manifest names. A prefix holds one dataset (the index's UUID, recorded in
// the manifest and on every object): a push refuses a prefix holding
// anything else unless PushOptions::overwrite. The details, and what a push
// that dies leaves, are in docs/format/remote_format.md.
//
// Configuration: as every S3 tool (gulpdb(1), ENVIRONMENT): AWS_ENDPOINT_URL,
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN or
// ~/.aws/credentials (AWS_PROFILE), AWS_REGION (default us-east-1), and
// GULPDB_S3_* for timeouts, retries and connections. The cache is
// $GULPDB_CACHE (or $GULPDB_CACHE_DIR), else $XDG_CACHE_HOME/gulpdb, else
// ~/.cache/gulpdb.
//
// Errors: transient failures (refused or reset connections, timeouts, 5xx,
// 503 SlowDown, truncated bodies) are retried with exponential backoff and
// jitter (honouring Retry-After, for at least GULPDB_S3_RETRY_BUDGET_MS),
// then thrown as IoError naming the URL, the object and the HTTP status.
// HTTP 403 is AccessDeniedError naming the bucket and where the credentials
// came from. A chunk object the manifest names that is missing (404) or
// shorter than its committed length is a CorruptionError: it was deleted or
// replaced behind the manifest's back, or the dataset was opened from a
// manifest older than the grace period. No call returns wrong bytes; a store
// that comes back serves the same Dataset again.
//
// Thread safety: Push and PublishSnapshot may run in any thread. Pushes to
// one prefix from any number of processes and hosts are safe (the lease and
// the conditions); PublishSnapshot, to a local directory without either,
// must run one at a time per dataset.
#ifndef GULPDB_REMOTE_H_
#define GULPDB_REMOTE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "gulpdb/export.h"

namespace gulpdb {

class Dataset;

// True if `path` names a remote dataset ("s3://...").
GULPDB_EXPORT bool IsRemoteUrl(std::string_view path);

// The local cache folder: $GULPDB_CACHE, else $GULPDB_CACHE_DIR (its older
// name), else $XDG_CACHE_HOME/gulpdb, else $HOME/.cache/gulpdb.
GULPDB_EXPORT std::string CacheDirectory();

// The default grace period: $GULPDB_PUSH_GRACE when set (a duration such as
// "3600", "90s", "30m", "24h" or "7d"), else 24 hours. InvalidArgumentError
// for a malformed value.
GULPDB_EXPORT std::chrono::seconds DefaultGracePeriod();
// Parses a duration as above ("0" allowed). InvalidArgumentError naming `text`.
GULPDB_EXPORT std::chrono::seconds ParseDuration(std::string_view text);

// The layouts of a published index (PushOptions::layout).
enum class IndexLayout : uint8_t {
  // Partitioned (the default of push and PublishSnapshot).
  kAuto = 0,
  // Partitioned (named splits included).
  kPartitioned = 1,
  // The whole index snapshot, readable by every gulpdb version.
  kWhole = 2,
};
// "auto", "partitioned", "whole"; IndexLayoutFromName: nullopt for other text.
GULPDB_EXPORT const char* IndexLayoutName(IndexLayout layout);
GULPDB_EXPORT std::optional<IndexLayout> IndexLayoutFromName(std::string_view name);

struct PushOptions {
  // Objects uploaded at once (each large one also in parallel parts).
  uint32_t jobs = 4;
  // How long objects a push makes obsolete stay for readers of older
  // manifests; unset: DefaultGracePeriod().
  std::optional<std::chrono::seconds> grace;
  // Called as bytes of chunk objects are uploaded: (bytes done, bytes to do).
  std::function<void(uint64_t, uint64_t)> progress;
  // Where the dataset's index lives, when not in DIR/gulpdb.index (an
  // imported read-only GulpIO directory).
  std::string index_dir;
  // A push refuses a prefix holding objects that pushes of this dataset did
  // not write (a GulpIO directory uploaded by other tools, another dataset's
  // manifest, anything else): InvalidArgumentError listing the first keys.
  // true replaces them, and deletes those it does not replace once the new
  // manifest is published, so that the prefix holds this dataset alone. It
  // also repairs a damaged prefix: the whole index is built afresh (not
  // against a published root that may be damaged), and every object the new
  // generation names that the store lacks, or holds with other bytes than
  // the local ones (size, and ETag against their MD5; .gmeta written
  // again), is uploaded; a chunk whose ETag says nothing of its bytes (a
  // multipart upload) is uploaded again too.
  bool overwrite = false;
  // A push refuses a store that does not honour conditional writes
  // (If-None-Match / If-Match on PUT: AWS S3, MinIO, Ceph RGW and Cloudflare
  // R2 do): without them two pushes at once could replace objects a
  // published manifest names. true pushes anyway; run one push at a time.
  bool allow_unconditional_writes = false;
  // How the index is published (docs/remote_datasets.md, "Partitioned
  // snapshots"). A partitioned snapshot is immutable partitions named by
  // their SHA-256 (only those the published root does not list are
  // uploaded) and a root the manifest names: readers fetch the root and only
  // the partitions they use. Its manifest is version 2, which a gulpdb that
  // reads only version 1 refuses ("upgrade"). The whole snapshot is the
  // index as one object, fetched whole by every reader (version 1).
  IndexLayout layout = IndexLayout::kAuto;
  // A partitioned push cuts a partition at about this many bytes; 0:
  // $GULPDB_TEST_PARTITION_BYTES (for tests), else 256 KiB.
  uint64_t partition_bytes = 0;
};

struct PushReport {
  bool published = false;   // false: the store was already up to date
  uint64_t generation = 0;  // of the newest manifest, published or not
  uint64_t chunks = 0;
  uint64_t chunks_uploaded = 0;  // new or grown chunk objects
  uint64_t bytes_uploaded = 0;   // of chunk objects
  uint64_t gmeta_uploaded = 0;
  bool snapshot_uploaded = false;
  uint64_t snapshot_bytes = 0;
  // A partitioned push (PushOptions::layout): the partitions the root
  // lists, those uploaded (not listed by the published root, nor in the
  // store already) and their bytes, the root's size and whether it was
  // uploaded. snapshot_* stay false / 0.
  bool partitioned = false;
  uint64_t partitions = 0;
  uint64_t partitions_uploaded = 0;
  uint64_t partition_bytes_uploaded = 0;
  uint64_t root_bytes = 0;
  bool root_uploaded = false;
  // Pages of the chunk list (a partitioned push's manifest names them
  // instead of listing every chunk) written by this push.
  uint64_t chunk_pages_uploaded = 0;
  // Pages of a two-level root (a root too large to list every partition
  // lists them by pages): those it names, and those this push wrote.
  uint64_t root_pages = 0;
  uint64_t root_pages_uploaded = 0;
  uint64_t objects_obsoleted = 0;         // newly superseded, kept for the grace period
  uint64_t objects_deleted = 0;           // whose grace period was over
  uint64_t foreign_objects_replaced = 0;  // with PushOptions::overwrite
  uint64_t foreign_objects_deleted = 0;   // with PushOptions::overwrite
  // Objects the published generation named that were missing or damaged
  // in the store, uploaded again from this machine's copy (push_verify.h).
  uint64_t objects_repaired = 0;
  double seconds = 0;
};

// Publishes the dataset in the local directory `dir` to `url`
// ("s3://bucket/prefix"), or the changes since the last push: new and grown
// chunks, removals (their .gmeta rewritten), compaction (emptied chunks
// become obsolete). Uploads objects first and the manifest last. The dataset
// is read from one consistent index snapshot, so writers may go on meanwhile
// (a compaction that deletes a chunk file during the push fails it; run it
// again). Throws InvalidArgumentError for a bad URL or options, for a prefix
// holding objects this dataset's pushes did not write (unless
// options.overwrite) and for a store that ignores conditional writes (unless
// options.allow_unconditional_writes), in both cases before uploading
// anything; CorruptionError when a local chunk no longer holds the bytes a
// published manifest promised (the push refuses to change what older readers
// may read); IoError / AccessDeniedError from the store; BusyError when
// another push holds the prefix's lease, or changed an object or published
// meanwhile. A failed push leaves the published dataset as it was. An index
// made before gulpdb recorded dataset identities gets its UUID (one write
// transaction under the writer lock).
GULPDB_EXPORT PushReport Push(const std::string& dir, const std::string& url,
                              const PushOptions& options = {});

// Publishes a snapshot of the index of `dir` beside it, in
// `dir`/gulpdb.snapshot/ (the manifest format of Push, chunk files read in
// place), for readers on other hosts of a network file system: a read-only
// Dataset::Open of a dataset there reads the newest snapshot instead of the
// live index (see OpenOptions::allow_network_index). Run it on the host that
// writes the dataset, after the writes readers should see.
GULPDB_EXPORT PushReport PublishSnapshot(const std::string& dir, const PushOptions& options = {});

// What a dataset opened from a published manifest was opened from.
struct RemoteInfo {
  std::string url;  // the store ("s3://bucket/prefix", or the snapshot folder)
  uint64_t generation = 0;
  std::string created;          // UTC, ISO 8601
  std::string snapshot_sha256;  // of the partitioned snapshot's root when `partitioned`
  std::string dataset_uuid;     // the published dataset's identity ("" before gulpdb recorded one)
  uint64_t snapshot_bytes = 0;
  bool snapshot_downloaded = false;  // this open downloaded it (else it was cached)
  std::string snapshot_path;         // the cached copy
  // A partitioned snapshot: snapshot_bytes is the root's size, and
  // partitions are fetched on first use (partitions_downloaded so far by
  // this dataset; the others were in the machine's cache).
  bool partitioned = false;
  uint64_t partitions_downloaded = 0;
  // The dataset had named splits, which its partitioned snapshot does not
  // carry (an older format pushed with --layout partitioned): Splits() and
  // Split() then throw.
  bool splits_omitted = false;
  uint64_t requests = 0;  // made by the dataset so far
  uint64_t bytes_received = 0;
  // Read-ahead (Dataset::Prefetch) without the frame cache: the ranges it
  // fetched into memory (merged), their bytes, and the most it held at once
  // (at most GULPDB_PREFETCH_BYTES).
  uint64_t prefetch_gets = 0;
  uint64_t prefetch_bytes = 0;
  uint64_t prefetch_peak_bytes = 0;
  // With the frame cache: the Prefetch calls read-ahead has filled into it
  // (finished, fetched or found there), and how many it filled at once at most.
  uint64_t prefetch_fills = 0;
  uint64_t prefetch_peak_fills = 0;
};

// Set for datasets opened from a manifest: "s3://" URLs, and local datasets
// on a network file system read through their published snapshot.
GULPDB_EXPORT std::optional<RemoteInfo> GetRemoteInfo(const Dataset& dataset);

// The node-level frame cache (docs/frame_cache.md): chunk bytes of remote
// datasets kept in blocks under CacheDirectory()/frames/, shared by every
// process of the machine, bounded by GULPDB_FRAME_CACHE_BYTES (default
// 10 GiB; 0 turns it off), verified on every read. Its counters are
// node-wide: kept in the cache directory, added to by every process (a
// DataLoader's workers included) since the directory was made.
// The counters every process of the node adds to (in the cache directory).
struct FrameCacheCounters {
  uint64_t hits = 0;        // blocks reads found in the cache
  uint64_t misses = 0;      // blocks reads fetched from the store
  uint64_t prefetched = 0;  // blocks read-ahead fetched from the store
  uint64_t bytes_from_store = 0;
  uint64_t bytes_from_cache = 0;
  uint64_t evictions = 0;  // blocks deleted to keep to the bound
  uint64_t bytes_evicted = 0;
  uint64_t damaged = 0;  // cache files found damaged, truncated or foreign (fetched again)
  // blocks whose frames failed their CRC-32C although the block passed its
  // own checks (the store answered wrongly when it was filled): dropped and
  // read from the store again
  uint64_t refetched = 0;
};

struct FrameCacheStats : FrameCacheCounters {
  std::string dir;  // CacheDirectory()/frames
  bool enabled = false;
  uint64_t bound = 0;        // GULPDB_FRAME_CACHE_BYTES
  uint64_t block_bytes = 0;  // GULPDB_FRAME_CACHE_BLOCK
  uint64_t bytes = 0;        // under frames/, as fills and the last eviction pass counted them
};

// The node's counters (all zero before the first use). Throws
// InvalidArgumentError for a malformed GULPDB_FRAME_CACHE_BYTES or
// GULPDB_FRAME_CACHE_BLOCK.
GULPDB_EXPORT FrameCacheStats GetFrameCacheStats();

}  // namespace gulpdb

#endif  // GULPDB_REMOTE_H_
