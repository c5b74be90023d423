#include "engine/remote/remote_dataset.h"

#include <sys/vfs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/core/chunk_bytes.h"
#include "engine/core/dataset_view.h"
#include "engine/partition/partitions.h"
#include "engine/remote/cached_reads.h"
#include "engine/remote/partition_cache.h"
#include "engine/remote/published_tags.h"
#include "engine/remote/snapshot_cache.h"
#include "engine/version/version_store.h"
#include "gulpdb/error.h"
#include "s3/errors.h"
#include "s3/s3_config.h"
#include "s3/s3_url.h"
#include "util/env.h"
#include "util/file_io.h"
#include "util/sha256.h"
#include "util/test_bug.h"
#include "util/url_text.h"

namespace gulpdb {

std::optional<RemoteInfo> GetRemoteInfo(const Dataset& dataset) {
  const engine::RemoteSource* source = engine::RemoteSourceOf(dataset);
  if (source == nullptr) return std::nullopt;
  return source->info();
}

namespace engine {
namespace {

// What GetRemoteInfo reports of the dataset `manifest` describes, opened from
// the snapshot of `sha256` and `bytes` at `path`.
RemoteInfo InfoOf(const ObjectStore& store, const Manifest& manifest, const std::string& sha256,
                  uint64_t bytes, bool downloaded, std::string path) {
  RemoteInfo info;
  info.url = store.url();
  info.generation = manifest.generation;
  info.created = IsoTime(manifest.created_unix);
  info.snapshot_sha256 = sha256;
  info.dataset_uuid = manifest.dataset;
  info.snapshot_bytes = bytes;
  info.snapshot_downloaded = downloaded;
  info.snapshot_path = std::move(path);
  return info;
}

// A label2idx.json larger than this is not one (about 10^6 labels).
constexpr uint64_t kMaxLabelMapBytes = uint64_t{64} << 20;

// How long an opener waits for another process downloading the same snapshot.
std::chrono::milliseconds DownloadWait(const remote::S3Config& config) {
  const uint64_t request_ms = config.request_timeout_ms == 0 ? 3600000 : config.request_timeout_ms;
  return std::chrono::milliseconds(request_ms + 60000);
}

// Opens the partitioned snapshot a version 2 manifest describes: its root
// GET and verified, every partition through the node cache on first use.
std::unique_ptr<Dataset> OpenPartitioned(std::shared_ptr<ObjectStore> store, Manifest manifest,
                                         const std::string& dir, const OpenOptions& options,
                                         std::chrono::milliseconds lock_wait) {
  const std::string what = "open dataset " + dir;
  // Objects found damaged are not fetched again while this generation is read.
  const BadObjectScope remember = ScopeOf(*store, manifest.generation);
  index::PartitionRoot root = FetchRoot(*store, manifest, what, &remember);
  // O(1) agreement of the manifest with its root, before anything is read.
  const uint64_t chunks = root.Count(index::PartitionKind::kChunks);
  const uint64_t videos = root.Count(index::PartitionKind::kOrder);
  const index::DatasetInfo info_record = index::DecodeDatasetInfo(
      root.dataset_info, "partition root " + store->Name(manifest.root_key));
  if (manifest.ChunkCount() != chunks || manifest.videos != videos ||
      manifest.frames != info_record.total_frames) {
    throw CorruptionError(
        what + ": the manifest (generation " + std::to_string(manifest.generation) + ") lists " +
        std::to_string(manifest.ChunkCount()) + " chunks, " + std::to_string(manifest.videos) +
        " videos and " + std::to_string(manifest.frames) + " frames, its root " +
        std::to_string(chunks) + ", " + std::to_string(videos) + " and " +
        std::to_string(info_record.total_frames) + ": the manifest does not describe its snapshot");
  }
  const bool splits_omitted = root.splits_omitted;
  auto counters = std::make_shared<PartitionCacheCounters>();
  PartitionFetch fetch = NodeCacheFetch(store, what, lock_wait, counters, remember);
  auto index = std::make_shared<const PartitionedIndex>(std::move(root), std::move(fetch), dir,
                                                        NodeCachePageFetch(store, what, remember));
  RemoteInfo info = InfoOf(*store, manifest, manifest.root_sha256, manifest.root_size,
                           /*downloaded=*/true, PartitionCacheDirectory());
  info.partitioned = true;
  info.splits_omitted = splits_omitted;
  auto source =
      std::make_shared<RemoteSource>(std::move(store), std::move(manifest), std::move(info));
  source->CountPartitions(counters);
  return OpenOnIndexSource(dir, options, std::move(index), std::move(source));
}

// Opens the dataset `manifest` describes: its snapshot from the cache (or
// downloaded now), opened as the dataset `dir`.
std::unique_ptr<Dataset> OpenManifest(std::shared_ptr<ObjectStore> store, Manifest manifest,
                                      const std::string& dir, const OpenOptions& options,
                                      std::chrono::milliseconds lock_wait) {
  if (manifest.partitioned()) {
    return OpenPartitioned(std::move(store), std::move(manifest), dir, options, lock_wait);
  }
  const CachedSnapshot snapshot = EnsureSnapshot(*store, manifest, lock_wait);
  std::shared_ptr<index::Env> env = OpenSnapshotEnv(snapshot.dir);
  // Before anything walks a tree of it (AttachEnv reads the databases).
  if (options.verify_index) {
    const index::IndexFileReport report = env->VerifyFile();
    if (!report.healthy()) {
      throw CorruptionError("open dataset " + dir + ": the cached index snapshot " + snapshot.dir +
                            "/data.mdb is damaged: " + report.problems[0] +
                            " (delete it: the next open downloads it again)");
    }
  }
  RemoteInfo info = InfoOf(*store, manifest, manifest.snapshot_sha256, manifest.snapshot_size,
                           snapshot.downloaded, snapshot.dir + "/data.mdb");
  auto source =
      std::make_shared<const RemoteSource>(std::move(store), std::move(manifest), std::move(info));
  std::unique_ptr<Dataset> dataset = OpenOnIndex(dir, options, std::move(env), source);
  if (const std::string problem = ManifestDisagreement(source->manifest(), *dataset);
      !problem.empty()) {
    throw CorruptionError("open dataset " + dir + ": " + problem);
  }
  return dataset;
}

struct FileSystemType {
  int64_t magic;
  const char* name;
};

// statfs f_type values of file systems shared between hosts (linux/magic.h
// and the file systems' own sources).
constexpr FileSystemType kNetworkFileSystems[] = {
    {0x6969, "nfs"},        {0x517B, "smb"},          {0xFF534D42, "cifs"}, {0xFE534D42, "smb2"},
    {0x0BD00BD0, "lustre"}, {0x65735546, "fuse"},     {0x00C36400, "ceph"}, {0x47504653, "gpfs"},
    {0x01021997, "9p"},     {0x5346414F, "afs"},      {0x6B414653, "afs"},  {0x73757245, "coda"},
    {0x564C, "ncp"},        {0x7461636F, "ocfs2"},    {0x01161970, "gfs2"}, {0x19830326, "beegfs"},
    {0xAAD7AAEA, "panfs"},  {0x20030528, "orangefs"},
};

std::string NameOfMagic(int64_t magic) {
  for (const FileSystemType& t : kNetworkFileSystems) {
    if ((magic & 0xFFFFFFFF) == t.magic) return t.name;
  }
  return "";
}

}  // namespace

// ---- RemoteSource ------------------------------------------------------------

namespace {

// The ranges of the frame cache's reads as ranges of the store.
std::vector<StoreRange> StoreRangesOf(const std::vector<StoreRead>& reads) {
  std::vector<StoreRange> ranges;
  ranges.reserve(reads.size());
  for (const StoreRead& r : reads) ranges.push_back(StoreRange{r.key, r.offset, r.length, r.out});
  return ranges;
}

}  // namespace

RemoteSource::RemoteSource(std::shared_ptr<ObjectStore> store, Manifest manifest, RemoteInfo info)
    : store_(std::move(store)),
      manifest_(std::move(manifest)),
      info_(std::move(info)),
      chunks_(*store_, manifest_),
      objects_(*store_, manifest_, chunks_) {
  const std::string what = "open dataset " + store_->url();
  std::optional<FrameCacheConfig> cache;
  if (manifest_.chunks_published) cache = FrameCacheFromEnvironment(what);
  uint64_t memory = kDefaultPrefetchMemory;
  try {
    memory = util::EnvBytes("GULPDB_PREFETCH_BYTES").value_or(kDefaultPrefetchMemory);
  } catch (const InvalidArgumentError& e) {
    e.ThrowWithContext(what + ": ");
  }
  const std::string ahead = "read ahead in " + store_->url();
  reads_ = std::make_unique<CachedReads>(
      std::move(cache),
      [this, ahead](const std::vector<StoreRead>& reads) {
        objects_.Read(StoreRangesOf(reads), ahead);
      },
      memory);
}

RemoteSource::~RemoteSource() {
  reads_.reset();  // its read-ahead thread stops first; chunks_ then waits for its prefetches
}

const ManifestChunk* RemoteSource::Chunk(uint32_t number) const { return chunks_.Chunk(number); }

std::vector<ManifestChunk> RemoteSource::AllChunks() const { return chunks_.AllChunks(); }

const ManifestChunk& RemoteSource::VerifiedManifestChunk(
    uint32_t number, std::string_view id, const std::string& dir,
    const std::function<index::ChunkRecord()>& record) const {
  return chunks_.Verified(number, id, dir, record);
}

void RemoteSource::PrefetchChunk(uint32_t number, std::function<void()> record) const {
  chunks_.PrefetchChunk(number, std::move(record));
}

void RemoteSource::Read(const std::vector<StoreRange>& ranges, const std::string& what) const {
  objects_.Read(ranges, what);
}

void RemoteSource::ThrowMissing(const std::string& what, const std::string& cause) const {
  objects_.ThrowMissing(what, cause);
}

RemoteInfo RemoteSource::info() const {
  RemoteInfo out = info_;
  const remote::ClientStats stats = store_->stats();
  out.requests = stats.requests;
  out.bytes_received = stats.bytes_received;
  if (partitions_) out.partitions_downloaded = partitions_->downloads.load();
  if (const std::optional<ReadAheadStats> ahead = reads_->read_ahead()) {
    out.prefetch_gets = ahead->gets;
    out.prefetch_bytes = ahead->bytes;
    out.prefetch_peak_bytes = ahead->peak_held_bytes;
    out.prefetch_fills = ahead->fills;
    out.prefetch_peak_fills = ahead->peak_fills;
  }
  return out;
}

std::string ManifestDisagreement(const Manifest& manifest, const Dataset& dataset) {
  const IndexTxn txn(dataset);
  const uint64_t chunks = txn.ChunkCount();
  const uint64_t videos = txn.VideoCount();
  const uint64_t frames = txn.Info().total_frames;
  if (manifest.ChunkCount() == chunks && manifest.videos == videos && manifest.frames == frames) {
    return "";
  }
  return "the manifest (generation " + std::to_string(manifest.generation) + ") lists " +
         std::to_string(manifest.ChunkCount()) + " chunks, " + std::to_string(manifest.videos) +
         " videos and " + std::to_string(manifest.frames) + " frames, its index snapshot has " +
         std::to_string(chunks) + ", " + std::to_string(videos) + " and " + std::to_string(frames) +
         ": the manifest does not describe its snapshot";
}

void CopyPublishedLabels(const RemoteSource& source, const std::string& path) {
  const Manifest& manifest = source.manifest();
  const std::string& key = manifest.label2idx_key;
  if (key.empty()) return;
  const std::string what = "copy " + source.store().Name(key);
  std::string text;
  try {
    text = source.store().Get(key, kMaxLabelMapBytes);
  } catch (const NotFoundError& e) {
    source.ThrowMissing(what, e.what());
  } catch (const remote::ObjectTooLargeError& e) {
    throw CorruptionError(what + ": larger than any label map (" + e.what() +
                          "): it was replaced behind the manifest's back");
  }
  if (!manifest.label2idx_sha256.empty() && util::Sha256Hex(text) != manifest.label2idx_sha256) {
    throw CorruptionError(what + ": its SHA-256 is not the one the manifest (generation " +
                          std::to_string(manifest.generation) +
                          ") gives: it was changed behind the manifest's back");
  }
  util::WriteFileAtomically(path, text);
}

// ---- opening -----------------------------------------------------------------

std::unique_ptr<Dataset> OpenRemoteDataset(const std::string& url_in, const OpenOptions& options) {
  const std::string url = util::RedactUrl(url_in);  // for messages: never user information
  if (!options.read_only) {
    throw InvalidArgumentError("open dataset " + url +
                               " for writing: datasets in object storage are read-only; change "
                               "the local dataset and publish it with `gulpdb push DIR " +
                               url + "`");
  }
  if (!options.index_dir.empty()) {
    throw InvalidArgumentError("open dataset " + url +
                               ": index_dir does not apply to a remote dataset (its index is "
                               "the published snapshot, cached in " +
                               CacheDirectory() + ")");
  }
  const remote::S3Config config = remote::S3Config::FromEnvironment();
  const std::chrono::milliseconds wait = DownloadWait(config);
  std::shared_ptr<ObjectStore> store = OpenS3Store(url_in, config);
  const std::string key =
      options.generation == 0 ? std::string(kManifestKey) : ManifestHistoryKey(options.generation);
  std::string text;
  try {
    text = store->Get(key, kMaxManifestBytes);
  } catch (const remote::NoSuchBucketError& e) {
    throw NotFoundError("open dataset " + store->url() + ": the bucket '" +
                        remote::S3Url::Parse(store->url()).bucket + "' does not exist at " +
                        util::RedactUrls(config.EffectiveEndpoint()) +
                        " (check the URL, AWS_ENDPOINT_URL and AWS_REGION; a push needs an "
                        "existing bucket) (" +
                        e.what() + ")");
  } catch (const NotFoundError& e) {
    if (options.generation == 0) {
      throw NotFoundError("open dataset " + store->url() +
                          ": nothing is published there: the "
                          "bucket exists, but holds no gulpdb manifest " +
                          store->Name(key) +
                          "; publish a local dataset there with `gulpdb push "
                          "DIR " +
                          store->url() + "` (" + e.what() + ")");
    }
    throw NotFoundError("open dataset " + store->url() + " generation " +
                        std::to_string(options.generation) + ": its manifest " + store->Name(key) +
                        " is gone: a push deleted it after the grace period, or that generation "
                        "was never published; open the newest generation instead (" +
                        e.what() + ")");
  } catch (const Error& e) {
    e.ThrowWithContext("open dataset " + store->url() + ": ");
  }
  Manifest manifest = ParseManifest(text, store->Name(key));
  if (!manifest.chunks_published) {
    throw CorruptionError("open dataset " + store->url() + ": the manifest " + store->Name(key) +
                          " describes a snapshot of a local dataset whose chunks are not in "
                          "the store");
  }
  if (options.generation != 0 && manifest.generation != options.generation) {
    throw CorruptionError("open dataset " + store->url() + ": the manifest " + store->Name(key) +
                          " says generation " + std::to_string(manifest.generation));
  }
  // A tag (published_tags.h): the manifest that describes it, read as a
  // generation is.
  if (!options.version.empty() && options.version != kHeadVersion) {
    const std::string what = "open version " + options.version + " of " + store->url();
    CheckTagName(options.version, what);
    const BadObjectScope remember = ScopeOf(*store, manifest.generation);
    TagObject tag = FetchTagObject(
        *store, FindPublishedTag(manifest, options.version, store->url(), what), what, &remember);
    manifest = TagManifest(manifest, tag);
  }
  // (GULPDB_TEST_BUG=pickle-generation: the generation alone, as before.)
  if (((!options.expected_snapshot_sha256.empty() &&
        manifest.index_sha256() != options.expected_snapshot_sha256) ||
       (!options.expected_dataset_uuid.empty() &&
        manifest.dataset != options.expected_dataset_uuid)) &&
      !util::TestBugEnabled("pickle-generation")) {
    const auto identity = [](const std::string& sha, const std::string& uuid) {
      return "index snapshot " + (sha.empty() ? std::string("(any)") : sha) + " of dataset " +
             (uuid.empty() ? std::string("(unrecorded)") : uuid);
    };
    throw CorruptionError(
        "open dataset " + store->url() +
        (options.generation != 0 ? " generation " + std::to_string(options.generation) : "") +
        ": the manifest " + store->Name(key) + " now names " +
        identity(manifest.index_sha256(), manifest.dataset) + ", not the " +
        identity(options.expected_snapshot_sha256, options.expected_dataset_uuid) +
        " this reader was opened on: the prefix was overwritten (wiped and pushed to again, or "
        "another dataset pushed there); open the URL anew to read what is there now");
  }
  const std::string dir = store->url();
  return OpenManifest(std::move(store), std::move(manifest), dir, options, wait);
}

bool RemoteDatasetExists(const std::string& url) {
  std::unique_ptr<ObjectStore> store = OpenS3Store(url, remote::S3Config::FromEnvironment());
  return store->Head(kManifestKey).has_value();
}

// ---- shared file systems ----------------------------------------------------

std::string NetworkFileSystemName(const std::string& path) {
  if (const std::optional<std::string> fake = util::EnvText("GULPDB_TEST_FS_TYPE")) {
    char* end = nullptr;
    const long long magic = std::strtoll(fake->c_str(), &end, 0);
    if (end != nullptr && *end == '\0') return NameOfMagic(magic);
    for (const FileSystemType& t : kNetworkFileSystems) {
      if (*fake == t.name) return t.name;
    }
    return "";
  }
  struct statfs st;
  if (::statfs(path.c_str(), &st) != 0) return "";
  return NameOfMagic(static_cast<int64_t>(st.f_type));
}

bool NetworkIndexAllowed(const OpenOptions& options) {
  if (options.allow_network_index) return true;
  return util::EnvFlag("GULPDB_ALLOW_NETWORK_INDEX");
}

std::unique_ptr<Dataset> OpenFromPublishedSnapshot(const std::string& dir,
                                                   const OpenOptions& options,
                                                   const std::string& fs_name) {
  std::shared_ptr<ObjectStore> store = OpenLocalStore(dir + "/" + kLocalSnapshotStore);
  std::string text;
  try {
    text = store->Get(kManifestKey, kMaxManifestBytes);
  } catch (const NotFoundError&) {
    throw IoError(
        "open dataset " + dir + ": its index is on a network file system (" + fs_name +
        "), and LMDB cannot share an index file between hosts: a reader here could read pages "
        "that a writer on another host is reusing. On the host that writes the dataset, run "
        "`gulpdb snapshot " +
        dir +
        "` after writing (readers here then open that snapshot), or copy the dataset to a "
        "local disk; if no other host ever writes it, set GULPDB_ALLOW_NETWORK_INDEX=1 "
        "(OpenOptions::allow_network_index) to open the live index");
  }
  Manifest manifest = ParseManifest(text, store->Name(kManifestKey));
  if (manifest.chunks_published) {
    throw CorruptionError("open dataset " + dir + ": " + store->Name(kManifestKey) +
                          " is not the manifest of a local snapshot");
  }
  return OpenManifest(std::move(store), std::move(manifest), dir, options,
                      std::chrono::minutes(10));
}

// ---- RemoteSource as the core's ChunkSource ---------------------------------------

namespace {

// A chunk object read whole by `check`, through its RemoteSource.
class RemoteChunkBytes : public ChunkBytes {
 public:
  RemoteChunkBytes(std::shared_ptr<const RemoteSource> source, std::string key, uint64_t size)
      : source_(std::move(source)),
        key_(std::move(key)),
        name_(source_->store().Name(key_)),
        size_(size) {}
  uint64_t Size() const override { return size_; }
  void ReadAt(uint64_t offset, void* dst, size_t size) const override {
    source_->Read(std::vector<StoreRange>{StoreRange{key_, offset, size, static_cast<char*>(dst)}},
                  "read " + name_);
  }
  const std::string& name() const override { return name_; }

 private:
  std::shared_ptr<const RemoteSource> source_;
  std::string key_;
  std::string name_;
  uint64_t size_;
};

}  // namespace

ChunkSource::Object RemoteSource::VerifiedChunk(
    uint32_t number, std::string_view id, const std::string& dir,
    const std::function<index::ChunkRecord()>& record) const {
  const ManifestChunk& m = VerifiedManifestChunk(number, id, dir, record);
  return Object{m.key, m.committed_length};
}

std::string RemoteSource::Name(const std::string& key) const { return store_->Name(key); }

std::vector<CacheRange> RemoteSource::CacheRanges(const std::vector<Range>& ranges) const {
  std::vector<CacheRange> out;
  out.reserve(ranges.size());
  for (const Range& r : ranges) {
    const CachedObject& object = reads_->Object(r.key, [&] {
      CachedObject o;
      o.key = r.key;
      o.name = store_->Name(r.key);
      if (const ManifestChunk* chunk = chunks_.LoadedChunkOfKey(r.key)) {
        o.identity = CacheIdentity(store_->Identity(), manifest_.dataset, *chunk);
        o.committed_length = chunk->committed_length;
      }
      return o;
    });
    out.push_back(CacheRange{&object, r.offset, r.length, r.out});
  }
  return out;
}

void RemoteSource::Read(const std::vector<Range>& ranges, const std::string& what) const {
  reads_->Read(CacheRanges(ranges), [&](const std::vector<StoreRead>& reads) {
    objects_.Read(StoreRangesOf(reads), what);
  });
}

void RemoteSource::Prefetch(const std::vector<Range>& ranges) const {
  reads_->Prefetch(CacheRanges(ranges));
}

bool RemoteSource::Forget(const std::vector<Range>& ranges) const {
  return reads_->Forget(CacheRanges(ranges));
}

std::shared_ptr<const ChunkBytes> RemoteSource::OpenChunk(uint32_t number,
                                                          const index::ChunkRecord& record,
                                                          const std::string& dir) const {
  const std::string what = "open chunk " + std::to_string(number) + " of " + dir;
  const std::string generation = std::to_string(manifest_.generation);
  const ManifestChunk* found = Chunk(number);
  if (found == nullptr) {
    throw CorruptionError(what + ": it is not in the manifest (generation " + generation +
                          "): the manifest does not describe its snapshot");
  }
  const ManifestChunk& m = *found;
  if (const std::string problem = ChunkDisagreement(m, number, record); !problem.empty()) {
    throw CorruptionError(what + ": the manifest (generation " + generation + ") " + problem +
                          ": the manifest does not describe its snapshot");
  }
  const std::optional<StoreObject> object = store_->Head(m.key);
  if (!object) {
    throw NotFoundError("open " + store_->Name(m.key) + ": the chunk object is missing (HTTP 404)");
  }
  return std::make_shared<RemoteChunkBytes>(shared_from_this(), m.key, object->size);
}

void RemoteSource::CopyLabelMap(const std::string& path) const { CopyPublishedLabels(*this, path); }

std::optional<std::vector<VersionInfo>> RemoteSource::PublishedVersions() const {
  if (!manifest_.chunks_published) return std::nullopt;  // a local dataset's snapshot
  return engine::PublishedVersions(manifest_);
}

const RemoteSource* RemoteSourceOf(const Dataset& dataset) {
  return dynamic_cast<const RemoteSource*>(ChunkSourceOf(dataset));
}

}  // namespace engine
}  // namespace gulpdb
