// Publishing (gulpdb/remote.h): Push, a dataset to an object store, and
// PublishSnapshot, a snapshot of its index beside it for readers on a shared
// file system. One Publisher does both against engine/remote/object_store.h; the
// layout it writes, and what the lease and the conditions guarantee, is
// docs/format/remote_format.md.
//
// A push, in order:
//   1. copy the index (one read transaction, compacted: the copy of an
//      unchanged index is the same bytes, so an unchanged dataset publishes
//      nothing) and open the copy: everything below reads that one state. An
//      index made before gulpdb recorded dataset identities gets its UUID
//      first (one write transaction);
//   2. GET the published manifest (with its ETag) and LIST the prefix; HEAD
//      what no manifest of this dataset names, and refuse (nothing written)
//      a prefix holding objects that pushes of this dataset did not write,
//      unless told to overwrite them;
//   3. upload every chunk object that is new or grew (jobs at a time, large
//      ones in parallel parts). Before replacing an object that a published
//      manifest (or an obsolete entry still in its grace period) promised
//      L bytes of, check that the CRC-32C of the local file's first L bytes
//      is the promised one: a chunk rewritten locally is refused, so no
//      reader of an older manifest ever reads changed bytes;
//   4. write and upload the .gmeta of every chunk whose videos changed, and
//      label2idx.json; empty the .gmeta of chunks that are gone (a GulpIO
//      reader then sees their videos once, in their new chunk);
//   5. upload the snapshot (content-addressed: skipped when present); or,
//      partitioned (PushOptions::layout), build the partitions against
//      the published root (fetched and verified in step 2; the partitions it
//      lists come through the node cache) and upload those the store does
//      not hold, then the root (both content-addressed). Every object the
//      new generation names and this push does not upload is checked first
//      (push_verify.h): one missing or damaged is uploaded again from this
//      machine's copy, or the push stops naming it (the overwrite option
//      builds the whole index, and checks every chunk's bytes);
//   6. claim the generation (its manifest copy, created only if absent), then
//      swap the manifest (only if it still has the ETag read in step 2): the
//      one step that makes the new state visible;
//   7. delete what older pushes made obsolete and whose grace period is over
//      (and, when overwriting, what pushes of this dataset did not write),
//      never what this generation or the one it replaces names, the
//      manifest or the lease (published_objects.h).
// On S3 the first write takes the push lease (push_lease.h) and then reads
// the manifest again: one published since step 2 stops the push (2c). Every
// write is conditional: If-None-Match: * for a key the listing did not show,
// If-Match on the listed ETag otherwise. Another push that changed an object
// meanwhile makes this one stop with BusyError, having replaced nothing a
// manifest names. A failure at any step leaves the published manifest, and
// every byte its readers may read, as they were.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <set>

#include "engine/core/dataset_view.h"
#include "engine/core/fault_injection.h"
#include "engine/gulpio/gmeta.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/partition_cache.h"
#include "engine/remote/published_objects.h"
#include "engine/remote/push_lease.h"
#include "engine/remote/push_verify.h"
#include "engine/remote/snapshot_cache.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/remote.h"
#include "index/partition_root.h"
#include "s3/errors.h"
#include "s3/s3_config.h"
#include "s3/s3_url.h"
#include "util/crc32c.h"
#include "util/env.h"
#include "util/file_io.h"
#include "util/relative_name.h"
#include "util/sha256.h"
#include "util/test_bug.h"
#include "util/thread_pool.h"
#include "util/url_text.h"

namespace gulpdb {

std::chrono::seconds ParseDuration(std::string_view text) { return util::ParseDuration(text); }

std::chrono::seconds DefaultGracePeriod() {
  return util::EnvDuration("GULPDB_PUSH_GRACE").value_or(std::chrono::hours(24));
}

namespace engine {
namespace {

using Clock = std::chrono::steady_clock;

// CRC-32C of the first `length` bytes of the file `path`, and of its first
// `checkpoint` bytes (checkpoint <= length).
struct PrefixCrc {
  uint32_t at_checkpoint = 0;
  uint32_t whole = 0;
};

PrefixCrc CrcOfFile(const std::string& path, uint64_t length, uint64_t checkpoint) {
  util::UniqueFd fd = util::OpenFile(path, O_RDONLY);
  std::string block(static_cast<size_t>(std::min<uint64_t>(length, uint64_t{4} << 20)), '\0');
  PrefixCrc out;
  uint32_t crc = 0;
  for (uint64_t done = 0; done < length;) {
    uint64_t want = std::min<uint64_t>(block.size(), length - done);
    if (done < checkpoint) want = std::min(want, checkpoint - done);  // stop at the checkpoint
    const size_t got =
        util::PreadFull(fd.get(), block.data(), static_cast<size_t>(want), done, path);
    if (got != want) {
      throw CorruptionError("read " + path + ": the file ends at " + std::to_string(done + got) +
                            ", before its committed length " + std::to_string(length));
    }
    crc = util::Crc32c(block.data(), got, crc);
    done += got;
    if (done == checkpoint) out.at_checkpoint = crc;
  }
  if (checkpoint == 0) out.at_checkpoint = 0;
  out.whole = crc;
  return out;
}

std::string Sha256OfFile(const std::string& path, uint64_t* size) {
  util::UniqueFd fd = util::OpenFile(path, O_RDONLY);
  *size = util::FileSize(fd.get(), path);
  return util::Sha256HexOfFile(fd.get(), path, 0, *size);
}

// What a published manifest promised about an object's first bytes.
struct Promise {
  uint64_t length = 0;
  std::optional<uint32_t> crc32c;
  std::string from;  // "generation N" or "an obsolete entry kept until ..."
};

// The generation of a manifest copy's key ("gulpdb.manifests/<20 digits>.json"),
// or nullopt for another key.
std::optional<uint64_t> HistoryGeneration(const std::string& key) {
  const std::string dir = std::string(kManifestHistoryDir) + "/";
  if (key.size() != dir.size() + 25 || key.compare(0, dir.size(), dir) != 0 ||
      key.compare(key.size() - 5, 5, ".json") != 0) {
    return std::nullopt;
  }
  uint64_t g = 0;
  for (size_t i = dir.size(); i < key.size() - 5; ++i) {
    if (key[i] < '0' || key[i] > '9') return std::nullopt;
    if (g > (UINT64_MAX - 9) / 10) return std::nullopt;
    g = g * 10 + static_cast<uint64_t>(key[i] - '0');
  }
  return g;
}

class Publisher {
 public:
  Publisher(std::string dir, ObjectStore& store, bool publish_chunks, const PushOptions& options)
      : dir_(std::move(dir)),
        store_(store),
        publish_chunks_(publish_chunks),
        conditional_(publish_chunks && store.SupportsConditions()),
        options_(options),
        grace_(options.grace ? *options.grace : DefaultGracePeriod()),
        jobs_(options.jobs == 0 ? 1 : options.jobs),
        what_((publish_chunks ? "push " + dir_ + " to " : "snapshot " + dir_ + " to ") +
              store.url()),
        verified_(store.Identity()) {
    if (grace_.count() < 0) throw InvalidArgumentError("push: the grace period is negative");
  }

  PushReport Run() {
    const auto start = Clock::now();
    now_ = NowUnix();
    push_id_ = util::RandomUuid();
    if (conditional_) EnsureIdentity();
    TempDir tmp;
    CopyIndex(tmp.path());
    partitioned_ = Partitioned();
    std::vector<ManifestChunk> chunks = ChunkKeys();
    ReadPublished();
    Manifest next;
    next.generation = base_generation_ + 1;
    next.created_unix = now_;
    next.creator = "gulpdb " GULPDB_VERSION;
    next.dataset = dataset_;
    next.push_id = push_id_;
    next.chunks_published = publish_chunks_;
    if (partitioned_) {
      BuildIndexPartitions(tmp.path());
      next.version = kManifestVersionChunkPages;
      if (SameIndex(build_.root, old_root_) && PublishedRootIsWhole()) {
        // An unchanged index keeps its root (the new one would differ only
        // in its generation number), so that nothing is published.
        next.root_key = old_->root_key;
        next.root_size = old_->root_size;
        next.root_sha256 = old_->root_sha256;
        next_index_keys_.erase(RootKey(build_.root_sha256));
        next_index_keys_.insert(next.root_key);
      } else {
        next.root_key = RootKey(build_.root_sha256);
        next.root_size = build_.root_bytes.size();
        next.root_sha256 = build_.root_sha256;
      }
    } else {
      next.snapshot_key = SnapshotKey(snapshot_sha256_);
      next.snapshot_size = snapshot_size_;
      next.snapshot_sha256 = snapshot_sha256_;
    }
    const DatasetStats stats = snapshot_->Stats();
    next.videos = stats.videos;
    next.frames = stats.frames;
    next.grace_seconds = grace_.count();
    PlanUploads(&chunks);
    next.chunks = std::move(chunks);
    report_.chunks = next.chunks.size();
    fault::Reached(fault::Point::kPushPlanned);
    if (publish_chunks_) {
      UploadChunks(&next.chunks);
      UploadGmeta(tmp.path(), &next.chunks);
      UploadLabels(&next);
    }
    if (partitioned_) {
      UploadChunkPages(&next);
      UploadPartitions(next);
    } else {
      const LocalCopy copy = LocalCopy::File(snapshot_file_, snapshot_size_);
      if (NeedsUpload(next.snapshot_key, snapshot_size_, &copy)) {
        Writing();
        WriteFile(next.snapshot_key, snapshot_file_, snapshot_size_, WriteFor(next.snapshot_key));
        report_.snapshot_uploaded = true;
      }
      report_.snapshot_bytes = snapshot_size_;
    }
    std::vector<std::string> expired;
    next.obsolete = Obsolete(next, &expired);
    if (!old_ || Changed(next) || !expired.empty()) {
      fault::Reached(fault::Point::kPushBeforePublish);
      Publish(next);
      report_.published = true;
      report_.generation = next.generation;
      // What older pushes made obsolete and whose grace period is over. The
      // new manifest no longer lists them.
      if (!expired.empty()) {
        CheckLease();
        store_.Delete(expired);
        report_.objects_deleted = expired.size();
      }
      DeleteForeign(next);
    } else {
      report_.generation = old_->generation;
    }
    if (lease_) lease_->Release();
    if (partitioned_) SeedCache();
    report_.objects_repaired = repaired_.load();
    if (conditional_) verified_.Save(NamedByNext(next));
    report_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return report_;
  }

 private:
  // 1a. The dataset's identity. An index made before gulpdb recorded one
  // gets one now, in one write transaction under the writer lock (so that no
  // writer's commit, which rewrites the dataset info, can lose it).
  void EnsureIdentity() {
    OpenOptions options;
    options.allow_network_index = true;
    options.index_dir = options_.index_dir;
    if (!OpenLocalChecked(dir_, options)->Stats().uuid.empty()) return;
    try {
      options.read_only = false;
      const std::unique_ptr<Dataset> live = OpenLocalChecked(dir_, options);
      const util::FileLock lock(WriterLockPathOf(*live), std::chrono::seconds(30), dir_);
      const std::string uuid = util::RandomUuid();
      IndexTxn::Update(*live, [&](IndexTxn& txn) {
        index::DatasetInfo info = txn.Info();
        if (!info.uuid.empty()) return;
        info.uuid = uuid;
        txn.PutInfo(info);
      });
    } catch (const Error& e) {
      e.ThrowWithContext(what_ +
                         ": the dataset has no identity yet (its index predates gulpdb's dataset "
                         "UUIDs), and recording one in its index failed: ");
    }
  }

  // 1b. A consistent, compacted copy of the index, opened as a dataset.
  void CopyIndex(const std::string& tmp) {
    OpenOptions live_options;
    live_options.allow_network_index = true;  // the pusher runs where the dataset is written
    live_options.index_dir = options_.index_dir;
    const std::unique_ptr<Dataset> live = OpenLocalChecked(dir_, live_options);
    const std::string index_dir = tmp + "/index";
    util::MakeDirectories(index_dir);
    snapshot_file_ = index_dir + "/data.mdb";
    CopyIndexTo(*live, snapshot_file_, /*compact=*/true);
    snapshot_sha256_ = Sha256OfFile(snapshot_file_, &snapshot_size_);
    snapshot_ = OpenOnIndex(dir_, OpenOptions(), OpenSnapshotEnv(index_dir), nullptr);
    dataset_ = snapshot_->Stats().uuid;
    if (conditional_ && !IsUuid(dataset_)) {
      throw CorruptionError(what_ + ": the index's dataset UUID '" + dataset_ + "' is not a UUID");
    }
  }

  // 2b. The root the published manifest names, GET and verified (never
  // more bytes than the manifest says): the build diffs against it, and the
  // partitions it lists are named objects of the published dataset.
  void ReadPublishedRoot() {
    // The store outlives the fetch; it holds it only meanwhile.
    std::shared_ptr<ObjectStore> store(&store_, [](ObjectStore*) {});
    try {
      old_root_ =
          ExpandPartitionRoot(FetchRoot(store_, *old_, what_), NodeCachePageFetch(store, what_),
                              store_.Name(old_->root_key));
    } catch (const CorruptionError& e) {
      // Overwriting rebuilds the whole index: a damaged published root is
      // replaced, its partitions retired as leftovers of this dataset.
      if (!options_.overwrite) throw DamagedIndex(e);
    }
  }

  // A published index this push cannot build on.
  CorruptionError DamagedIndex(const Error& e) const {
    return CorruptionError(std::string(e.what()) +
                           "; the published index is damaged: push with the overwrite option "
                           "(gulpdb push --overwrite; Python push(..., overwrite=True); C++ "
                           "PushOptions::overwrite) to build the whole index and upload what "
                           "the store lacks or holds damaged");
  }

  // Whether the published root object holds the root the manifest names:
  // listed with its size, and its ETag one this machine checked, or (one GET
  // of at most its size) its SHA-256 the manifest's. An unchanged index
  // keeps it only then; otherwise the new root (the same index, another
  // generation number) replaces it.
  bool PublishedRootIsWhole() {
    const auto listed = listing_.find(old_->root_key);
    if (listed == listing_.end() || listed->second.size != old_->root_size) {
      repaired_.fetch_add(1);
      return false;
    }
    if (verified_.Holds(old_->root_key, listed->second.etag) ||
        util::TestBugEnabled("push-named-unchecked")) {
      return true;
    }
    try {
      StoreObject got;
      const std::string bytes = store_.Get(old_->root_key, old_->root_size, &got);
      if (bytes.size() == old_->root_size && util::Sha256Hex(bytes) == old_->root_sha256) {
        verified_.Add(old_->root_key, got.etag);
        return true;
      }
    } catch (const NotFoundError&) {
    } catch (const remote::ObjectTooLargeError&) {
    }
    repaired_.fetch_add(1);
    return false;
  }

  // The index objects the published manifest names: its snapshot, or its
  // root and the root's partitions.
  std::vector<std::string> OldIndexKeys() const {
    std::vector<std::string> keys;
    if (!old_) return keys;
    if (!old_->snapshot_key.empty()) keys.push_back(old_->snapshot_key);
    if (old_->partitioned()) keys.push_back(old_->root_key);
    for (const ManifestChunkPage& p : old_->chunk_pages) keys.push_back(p.key);
    if (old_root_) {
      for (const index::PartitionEntry& p : old_root_->partitions) {
        keys.push_back(PartitionKey(p.sha256));
      }
      for (const index::RootPage& p : old_root_->pages) keys.push_back(RootPageKey(p.sha256));
    }
    return keys;
  }

  // 5a. The partitions of the snapshot copy, against the published root.
  // The published root's partitions come through the node cache (a pusher
  // that pushed before, or read the dataset, has them).
  void BuildIndexPartitions(const std::string& tmp) {
    PartitionOptions options;
    options.target_bytes = PartitionTarget();
    options.page_bytes = RootPageTarget();
    partition_dir_ = tmp + "/partitions";
    // Overwriting builds every partition here (the published ones may be
    // damaged); otherwise the build diffs against the published root.
    const index::PartitionRoot* previous = old_root_ && !options_.overwrite ? &*old_root_ : nullptr;
    if (previous != nullptr) {
      // The store outlives the build; the fetch holds it only meanwhile.
      std::shared_ptr<ObjectStore> store(&store_, [](ObjectStore*) {});
      options.previous = NodeCacheFetch(store, what_, std::chrono::minutes(10));
    }
    try {
      build_ = BuildPartitions(*snapshot_, previous, options, partition_dir_);
    } catch (const CorruptionError& e) {
      if (previous != nullptr) throw DamagedIndex(e);
      e.ThrowWithContext(what_ + ": ");
    } catch (const Error& e) {
      e.ThrowWithContext(what_ + ": ");
    }
    built_.insert(build_.new_partitions.begin(), build_.new_partitions.end());
    next_index_keys_.insert(RootKey(build_.root_sha256));
    for (const index::PartitionEntry& p : build_.root.partitions) {
      next_index_keys_.insert(PartitionKey(p.sha256));
    }
    for (const index::RootPage& p : build_.root.pages) {
      next_index_keys_.insert(RootPageKey(p.sha256));
    }
  }

  // The partitions this push built go into the machine's partition cache
  // (hard links: the temporary folder is in the cache's file system), so
  // that the next push, or a reader here, does not download them. Best
  // effort.
  void SeedCache() {
    const std::string cache = PartitionCacheDirectory();
    for (const std::string& sha : build_.new_partitions) {
      const std::string from = partition_dir_ + "/" + sha;
      const std::string to = cache + "/" + sha;
      try {
        util::MakeDirectories(cache);
      } catch (const Error&) {
        return;
      }
      if (::link(from.c_str(), to.c_str()) != 0 && errno != EEXIST) return;
    }
    try {
      if (const uint64_t bound = CacheBytesBound(); bound != 0) EvictPartitions(cache, bound);
    } catch (const Error&) {
      // A malformed bound is reported by the next read.
    }
  }

  // Whether `root` lists the same partitions, dataset info and meta fields
  // as the published root.
  static bool SameIndex(const index::PartitionRoot& root,
                        const std::optional<index::PartitionRoot>& old) {
    if (!old || root.dataset_info != old->dataset_info ||
        root.partitions.size() != old->partitions.size() ||
        root.meta_fields.size() != old->meta_fields.size()) {
      return false;
    }
    for (size_t i = 0; i < root.meta_fields.size(); ++i) {
      if (root.meta_fields[i].name != old->meta_fields[i].name ||
          root.meta_fields[i].number != old->meta_fields[i].number) {
        return false;
      }
    }
    for (size_t i = 0; i < root.partitions.size(); ++i) {
      const index::PartitionEntry& a = root.partitions[i];
      const index::PartitionEntry& b = old->partitions[i];
      if (a.sha256 != b.sha256 || a.kind != b.kind || a.generation != b.generation ||
          a.first_key != b.first_key || a.last_key != b.last_key ||
          a.first_position != b.first_position || a.count != b.count || a.size != b.size) {
        return false;
      }
    }
    return true;
  }

  uint64_t PartitionTarget() const {
    if (options_.partition_bytes != 0) return options_.partition_bytes;
    // 256 KiB: a fresh node's open + one random read at 10^5 videos (20 ms
    // proxy, bench/partition_bench.py) fetched 2.52 MB at 1 MiB, 1.49 MB at
    // 512 KiB and 0.98 MB at 256 KiB (the manifest's 0.30 MB included), and
    // a warm re-open after a 1% append 1.73 / 1.77 / 0.99 MB; the root grows
    // to about 26 kB per 10^5 videos (docs/remote_datasets.md).
    return TestBytes("GULPDB_TEST_PARTITION_BYTES", uint64_t{256} << 10);
  }

  // Root pages (PartitionOptions::page_bytes); smaller for tests only.
  static uint64_t RootPageTarget() {
    return TestBytes("GULPDB_TEST_ROOT_PAGE_BYTES", PartitionOptions().page_bytes);
  }

  // The positive number of bytes in the variable `name`, else `otherwise`.
  static uint64_t TestBytes(const char* name, uint64_t otherwise) {
    return util::EnvCount(name, 1, UINT64_MAX).value_or(otherwise);
  }

  // 5a'. The chunk list of a version 3 manifest, in pages named by their
  // content: a page the store holds (listed with its size) is not written
  // again, so an append writes only the last pages.
  void UploadChunkPages(Manifest* next) {
    next->chunk_pages.clear();
    next->chunk_count = next->chunks.size();
    for (ChunkPageText& t : MakeChunkPages(next->chunks)) {
      next_index_keys_.insert(t.page.key);
      const LocalCopy copy = LocalCopy::Bytes(t.text);
      if (NeedsUpload(t.page.key, t.page.size, &copy)) {
        Writing();
        Write(t.page.key, t.text, WriteFor(t.page.key));
        ++report_.chunk_pages_uploaded;
      }
      KeepObject(t.page.sha256, t.text);  // the next push here reads it locally
      next->chunk_pages.push_back(std::move(t.page));
    }
  }

  // 5b. Partitions the store does not hold (new ones, and any the listing
  // lacks) or holds damaged, then the root. Every object is named by its
  // content: one that is listed with the right size, and whose ETag is the
  // MD5 of the copy this push has of it (built now, or in the node cache),
  // is not written again (push_verify.h).
  void UploadPartitions(const Manifest& next) {
    std::vector<const index::PartitionEntry*> unique;
    std::set<std::string> seen;
    for (const index::PartitionEntry& p : build_.root.partitions) {
      if (seen.insert(p.sha256).second) unique.push_back(&p);
    }
    std::vector<char> upload(unique.size(), 0);
    util::ParallelFor(unique.size(), std::max<uint32_t>(jobs_, 1), [&](size_t k) {
      const index::PartitionEntry& p = *unique[k];
      const std::string key = PartitionKey(p.sha256);
      const std::optional<LocalCopy> copy = PartitionCopy(p);
      if (!NeedsUpload(key, p.size, copy ? &*copy : nullptr)) return;
      if (!copy || !copy->Md5()) {
        const auto listed = listing_.find(key);
        throw DamagedIndex(CorruptionError(
            what_ + ": the partition " + store_.Name(key) + " that the published root lists is " +
            (listed == listing_.end()
                 ? std::string("not in the store")
                 : std::to_string(listed->second.size) + " bytes in the store, the root says " +
                       std::to_string(p.size)) +
            " (deleted or replaced behind the manifest's back), and this machine has no copy "
            "of it"));
      }
      upload[k] = 1;
    });
    std::vector<const index::PartitionEntry*> todo;
    for (size_t k = 0; k < unique.size(); ++k) {
      if (upload[k] != 0) todo.push_back(unique[k]);
    }
    if (!todo.empty()) Writing();
    std::atomic<uint64_t> bytes{0};
    util::ParallelFor(todo.size(), std::max<uint32_t>(jobs_, 1), [&](size_t k) {
      const index::PartitionEntry& p = *todo[k];
      const std::string key = PartitionKey(p.sha256);
      WriteFile(key, partition_dir_ + "/" + p.sha256, p.size, WriteFor(key));
      bytes.fetch_add(p.size);
    });
    // The root's pages (a two-level root), as the partitions.
    for (const index::RootPage& p : build_.root.pages) {
      const std::string key = RootPageKey(p.sha256);
      const LocalCopy copy = LocalCopy::File(partition_dir_ + "/" + p.sha256, p.size);
      if (NeedsUpload(key, p.size, &copy)) {
        Writing();
        WriteFile(key, partition_dir_ + "/" + p.sha256, p.size, WriteFor(key));
        ++report_.root_pages_uploaded;
      }
      try {
        KeepObject(p.sha256, util::ReadFile(partition_dir_ + "/" + p.sha256));
      } catch (const Error&) {
        // Only a cache.
      }
    }
    report_.partitioned = true;
    report_.root_pages = build_.root.pages.size();
    report_.partitions = build_.root.partitions.size();
    report_.partitions_uploaded = todo.size();
    report_.partition_bytes_uploaded = bytes.load();
    report_.root_bytes = next.root_size;
    // (An unchanged index keeps the published root, checked by size only:
    // this push has no copy of its bytes.)
    const LocalCopy root = LocalCopy::Bytes(build_.root_bytes);
    if (NeedsUpload(next.root_key, next.root_size,
                    next.root_sha256 == build_.root_sha256 ? &root : nullptr)) {
      if (next.root_sha256 != build_.root_sha256) {
        throw DamagedIndex(CorruptionError(what_ + ": the root " + store_.Name(next.root_key) +
                                           " that the published manifest names is missing or "
                                           "has another size"));
      }
      Writing();
      Write(next.root_key, build_.root_bytes, WriteFor(next.root_key));
      report_.root_uploaded = true;
    }
    if (next.root_sha256 == build_.root_sha256) KeepObject(build_.root_sha256, build_.root_bytes);
  }

  // 1c. Every chunk of the snapshot and its keys.
  //
  // Keys: a chunk file directly in the dataset directory keeps its name. A
  // chunk in a sub-directory (a shard attached by `merge` or by the
  // distributed ingest) is published as data_<N>.gulp beside meta_<N>.gmeta,
  // so that the bucket is one flat GulpIO directory whose every data file has
  // its .gmeta; it keeps its path only if either name is taken by another
  // chunk's file.
  std::vector<ManifestChunk> ChunkKeys() {
    std::vector<ManifestChunk> chunks;
    const std::vector<ChunkInfo> infos = snapshot_->Chunks();
    std::set<std::string> top_level;
    for (const ChunkInfo& c : infos) {
      if (c.file_name.find('/') == std::string::npos) top_level.insert(c.file_name);
      if (!c.meta_file.empty() && c.meta_file.find('/') == std::string::npos) {
        top_level.insert(c.meta_file);
      }
    }
    for (const ChunkInfo& c : infos) {
      if (!util::IsRelativeName(c.file_name) ||
          (!c.meta_file.empty() && !util::IsRelativeName(c.meta_file))) {
        throw CorruptionError("push " + dir_ + ": chunk " + std::to_string(c.number) +
                              " names a file outside the dataset ('" + c.file_name + "')");
      }
      ManifestChunk m;
      m.number = c.number;
      m.key = c.file_name;
      std::string gmeta_key =
          c.meta_file.empty() ? "meta_" + std::to_string(c.number) + ".gmeta" : c.meta_file;
      if (publish_chunks_ && c.file_name.find('/') != std::string::npos) {
        const std::string data = GulpioDataFileName(c.number);
        const std::string meta = "meta_" + std::to_string(c.number) + ".gmeta";
        if (top_level.count(data) == 0 && top_level.count(meta) == 0) {
          m.key = data;
          gmeta_key = meta;
          top_level.insert(data);
          top_level.insert(meta);
        }
      }
      remote::JoinKey("", m.key);  // a key the store accepts
      local_files_[m.key] = c.file_name;
      m.committed_length = c.committed_length;
      m.live_videos = c.live_videos;
      m.live_bytes = c.live_bytes;
      m.meta_edits = c.meta_edits;
      if (publish_chunks_) m.gmeta_key = gmeta_key;
      chunks.push_back(std::move(m));
    }
    return chunks;
  }

  // 2. What is published, and whether it is this dataset's.
  void ReadPublished() {
    std::optional<Manifest> published;
    try {
      StoreObject info;
      manifest_text_ = store_.Get(kManifestKey, kMaxManifestBytes, &info);
      published = ParseManifest(*manifest_text_, store_.Name(kManifestKey));
      manifest_etag_ = info.etag;
    } catch (const NotFoundError&) {
    }
    // A version 3 manifest's chunk list is in its pages: needed for this
    // dataset's (or one without an identity, to see whether it is this
    // dataset's), not for another dataset's.
    if (published &&
        (!conditional_ || published->dataset.empty() || published->dataset == dataset_)) {
      try {
        LoadChunkPages(store_, &*published, what_);
      } catch (const CorruptionError& e) {
        // Overwriting publishes every chunk again: a damaged chunk list is
        // replaced (its promises are lost with it).
        if (!options_.overwrite) throw DamagedIndex(e);
        published->chunks.clear();
      }
    }
    if (published && publish_chunks_ != published->chunks_published) {
      throw InvalidArgumentError(
          what_ + ": " + store_.Name(kManifestKey) + " is the manifest of a " +
          (published->chunks_published ? "pushed dataset" : "local snapshot") +
          "; publish to another place");
    }
    for (StoreObject& o : store_.List()) listing_.emplace(o.key, std::move(o));
    for (const auto& [key, object] : listing_) {
      if (const std::optional<uint64_t> g = HistoryGeneration(key)) {
        base_generation_ = std::max(base_generation_, *g);
      }
    }
    if (published) base_generation_ = std::max(base_generation_, published->generation);
    if (!conditional_) {
      old_ = std::move(published);
    } else if (published && (published->dataset == dataset_ ||
                             (published->dataset.empty() && AdoptLegacy(*published)))) {
      old_ = std::move(published);
    } else if (published) {
      foreign_manifest_ = std::move(published);
    }
    if (old_) {
      for (const ManifestChunk& c : old_->chunks) old_chunks_.emplace(c.key, c);
      for (const ManifestObsolete& o : old_->obsolete) old_obsolete_.emplace(o.key, o);
      if (old_->partitioned()) ReadPublishedRoot();
      old_named_ = NamedObjects(*old_, old_root_ ? &*old_root_ : nullptr);
    }
    if (conditional_) FindForeign();
  }

  // A manifest a gulpdb without dataset identities published is this
  // dataset's if every chunk it names that the dataset still has holds the
  // bytes it promised (CRC-32C of the local file's prefix), and there is at
  // least one such chunk (or it names none).
  bool AdoptLegacy(const Manifest& m) {
    size_t matched = 0;
    for (const ManifestChunk& c : m.chunks) {
      const auto local = local_files_.find(c.key);
      if (local == local_files_.end()) continue;
      const std::string path = dir_ + "/" + local->second;
      try {
        if (!c.crc32c ||
            CrcOfFile(path, c.committed_length, c.committed_length).whole != *c.crc32c) {
          return false;
        }
      } catch (const CorruptionError&) {
        return false;  // shorter than promised
      }
      ++matched;
    }
    return matched > 0 || m.chunks.empty();
  }

  // The objects under the prefix that no push of this dataset wrote: not
  // named by its published manifest, and not carrying its identity in their
  // metadata (HEAD). Refused unless options_.overwrite.
  void FindForeign() {
    std::set<std::string> named = {kManifestKey, kPushLeaseKey};
    if (old_) {
      named = NamedObjects(*old_, old_root_ ? &*old_root_ : nullptr);
      named.insert(kManifestKey);
      named.insert(kPushLeaseKey);
      for (const ManifestObsolete& o : old_->obsolete) {
        named.insert(o.key);
        if (!o.gmeta_key.empty()) named.insert(o.gmeta_key);
      }
    }
    std::vector<std::string> unnamed;
    for (const auto& [key, object] : listing_) {
      if (named.count(key) == 0) unnamed.push_back(key);
    }
    std::mutex mutex;
    std::vector<std::string> foreign;
    std::atomic<size_t> found{0};
    util::ParallelFor(unnamed.size(), std::max<uint32_t>(jobs_, 8), [&](size_t i) {
      // Enough to refuse with.
      if (!options_.overwrite && found.load() >= kForeignListed) return;
      const std::optional<StoreObject> head = store_.Head(unnamed[i]);
      if (!head) return;  // deleted meanwhile
      const auto it = head->metadata.find(kMetaDataset);
      std::lock_guard<std::mutex> lock(mutex);
      if (it != head->metadata.end() && it->second == dataset_) {
        leftovers_.push_back(unnamed[i]);  // an interrupted push of this dataset
      } else {
        foreign.push_back(unnamed[i]);
        ++found;
      }
    });
    if (foreign_manifest_) foreign.push_back(kManifestKey);
    std::sort(foreign.begin(), foreign.end());
    std::sort(leftovers_.begin(), leftovers_.end());
    foreign_set_.insert(foreign.begin(), foreign.end());
    if (foreign.empty() || options_.overwrite) return;
    std::string list;
    for (size_t i = 0; i < foreign.size() && i < kForeignListed; ++i) {
      list += (i == 0 ? "" : ", ") + foreign[i];
    }
    if (foreign.size() > kForeignListed) list += ", ...";
    std::string whose;
    if (foreign_manifest_) {
      whose = foreign_manifest_->dataset.empty()
                  ? " It holds a manifest (generation " +
                        std::to_string(foreign_manifest_->generation) +
                        ") of a dataset whose chunks differ from this one's."
                  : " It holds the manifest of another dataset (" + foreign_manifest_->dataset +
                        ", generation " + std::to_string(foreign_manifest_->generation) +
                        "), not of this one (" + dataset_ + ").";
    }
    throw InvalidArgumentError(
        what_ + ": the prefix holds objects that pushes of this dataset did not write (" + list +
        ")." + whose +
        " Pushing would mix two datasets there (a GulpIO reader would see both); nothing was "
        "uploaded. Push to an empty prefix, or replace what is there with the overwrite option "
        "(gulpdb push --overwrite; Python push(..., overwrite=True); C++ PushOptions::overwrite)");
  }

  // Before this push's first write: the push lease, and whether the store
  // honours conditions. From the main thread only.
  void Writing() {
    if (!conditional_ || lease_) return;
    lease_ = std::make_unique<PushLease>(store_, what_, ThisProcessLease(push_id_, dataset_, now_),
                                         Metadata());
    std::string problem;
    const PushLease::Conditions conditions = lease_->Acquire(&problem);
    if (conditions == PushLease::Conditions::kHonoured) {
      RequireManifestAsRead();
      return;
    }
    if (!options_.allow_unconditional_writes) {
      lease_->Release();
      throw InvalidArgumentError(
          what_ + ": the store does not honour conditional writes (" + problem +
          "), so this push could not stop another from replacing objects a published manifest "
          "names; nothing was uploaded. Use a store that has them (AWS S3, MinIO, Ceph RGW, "
          "Cloudflare R2), or, if no two pushes to this place ever run at once, pass the "
          "allow-unconditional-writes option (gulpdb push --allow-unconditional-writes; Python "
          "push(..., allow_unconditional_writes=True); C++ "
          "PushOptions::allow_unconditional_writes)");
    }
    conditions_honoured_ = false;
    if (conditions == PushLease::Conditions::kRefused) {
      lease_->TakeUnconditionally();
      send_conditions_ = false;
    }
    RequireManifestAsRead();
  }

  // 2c. Under the lease, before anything else is written: the manifest must
  // still be the one step 2 read. A push that planned while another held
  // the lease (and listed the other's uploads, with their ETags) would
  // otherwise check its chunks against a superseded generation's promises
  // and replace objects the new one names. Throws BusyError, having written
  // only the lease (released).
  void RequireManifestAsRead() {
    std::optional<std::string> text;
    StoreObject info;
    try {
      text = store_.Get(kManifestKey, kMaxManifestBytes, &info);
    } catch (const NotFoundError&) {
    }
    bool same = text.has_value() == manifest_text_.has_value();
    if (same && text) {
      same = !info.etag.empty() && !manifest_etag_.empty() ? info.etag == manifest_etag_
                                                           : *text == *manifest_text_;
    }
    if (same) return;
    std::string published = "a change (the manifest is gone)";
    if (text) {
      try {
        published = "generation " +
                    std::to_string(ParseManifest(*text, store_.Name(kManifestKey)).generation);
      } catch (const CorruptionError&) {
        published = "a manifest this push cannot read";
      }
    }
    const uint64_t read =
        old_ ? old_->generation : (foreign_manifest_ ? foreign_manifest_->generation : 0);
    if (lease_) lease_->Release();
    throw BusyError(
        what_ + ": another push published " + published + " after this push read " +
        store_.Name(kManifestKey) +
        (manifest_text_ ? " (generation " + std::to_string(read) + ")" : " (there was none)") +
        "; this push published nothing and replaced nothing: run it again");
  }

  void CheckLease() const {
    if (lease_) lease_->Check();
  }

  // Whether the object `key` that the new generation names with `size`
  // bytes must be uploaded: another dataset's, not in the listing, listed
  // with another size, or with an MD5 ETag that is not the one of `copy`
  // (this push's copy of its bytes, if it has one); with `unverified_too`,
  // also when its bytes cannot be checked (push_verify.h). One the published
  // generation named counts as repaired.
  // `changed`: the copy's content is not what the published generation has
  // at `key` (a .gmeta or label map written again with other text, maybe of
  // the same size): uploaded whatever the store or the record of checked
  // objects says of the old bytes.
  bool NeedsUpload(const std::string& key, uint64_t size, const LocalCopy* copy,
                   bool unverified_too = false, bool changed = false) {
    if (changed || foreign_set_.count(key) != 0) return true;
    const auto listed = listing_.find(key);
    // (GULPDB_TEST_BUG=push-named-unchecked: by size alone, as before.)
    const NamedObjectState state =
        CheckNamedObject(key, listed == listing_.end() ? nullptr : &listed->second, size,
                         util::TestBugEnabled("push-named-unchecked") ? nullptr : copy, verified_);
    if (state == NamedObjectState::kGood ||
        (state == NamedObjectState::kUnverified && !unverified_too)) {
      return false;
    }
    if (old_named_.count(key) != 0 && copy != nullptr && copy->Md5()) repaired_.fetch_add(1);
    return true;
  }

  // This push's copy of partition `p`: built by it, or linked from the node
  // cache (then trusted only if its SHA-256 is the partition's); nullopt
  // when it has none.
  std::optional<LocalCopy> PartitionCopy(const index::PartitionEntry& p) const {
    const std::string path = partition_dir_ + "/" + p.sha256;
    if (built_.count(p.sha256) != 0) return LocalCopy::File(path, p.size);
    const std::string cached = PartitionCacheDirectory() + "/" + p.sha256;
    if (!util::PathExists(path) && ::link(cached.c_str(), path.c_str()) != 0) return std::nullopt;
    return LocalCopy::File(path, p.size, p.sha256);
  }

  std::map<std::string, std::string> Metadata() const {
    return {{kMetaDataset, dataset_}, {kMetaPush, push_id_}};
  }

  // How this push writes `key`: with its metadata, and (S3) only if the
  // key is still absent, or still has the ETag the listing showed.
  remote::WriteOptions WriteFor(const std::string& key) const {
    remote::WriteOptions w;
    if (!conditional_) return w;
    w.metadata = Metadata();
    if (!send_conditions_) return w;
    const auto it = listing_.find(key);
    if (it == listing_.end()) {
      w.if_absent = true;
    } else {
      w.if_match = it->second.etag;
    }
    return w;
  }

  BusyError Raced(const std::string& key, const std::exception& e) const {
    return BusyError(what_ + ": another push changed " + store_.Name(key) +
                     " while this one ran (" + e.what() +
                     "); this push stopped, and published nothing: run it again");
  }

  std::string Write(const std::string& key, std::string_view data,
                    const remote::WriteOptions& write) {
    CheckLease();
    try {
      const std::string etag = store_.Put(key, data, write);
      Wrote(key, etag);
      return etag;
    } catch (const remote::PreconditionFailedError& e) {
      throw Raced(key, e);
    }
  }

  std::string WriteFile(const std::string& key, const std::string& path, uint64_t length,
                        const remote::WriteOptions& write) {
    CheckLease();
    try {
      const std::string etag = store_.PutFile(key, path, length, 0, write);
      Wrote(key, etag);
      return etag;
    } catch (const remote::PreconditionFailedError& e) {
      throw Raced(key, e);
    }
  }

  void Wrote(const std::string& key, const std::string& etag) {
    verified_.Add(key, etag);  // its bytes were checked on the way (Content-MD5, ETag)
    std::lock_guard<std::mutex> lock(written_mutex_);
    written_.insert(key);
    if (foreign_set_.count(key) != 0) ++report_.foreign_objects_replaced;
  }

  bool Expired(int64_t since) const { return since + grace_.count() <= now_; }

  // The promise an object `key` is under: a chunk of the published manifest,
  // or an obsolete data object whose grace period is not over.
  std::optional<Promise> PromiseFor(const std::string& key) const {
    if (auto it = old_chunks_.find(key); it != old_chunks_.end()) {
      return Promise{it->second.committed_length, it->second.crc32c,
                     "generation " + std::to_string(old_->generation)};
    }
    if (auto it = old_obsolete_.find(key); it != old_obsolete_.end() &&
                                           it->second.committed_length > 0 &&
                                           !Expired(it->second.since_unix)) {
      return Promise{it->second.committed_length, it->second.crc32c,
                     "an older generation; it is kept for its readers until " +
                         IsoTime(it->second.since_unix + grace_.count())};
    }
    return std::nullopt;
  }

  // 3a. Which chunk objects need uploading.
  void PlanUploads(std::vector<ManifestChunk>* chunks) {
    if (!publish_chunks_) return;
    for (size_t i = 0; i < chunks->size(); ++i) {
      ManifestChunk& m = (*chunks)[i];
      const auto old = old_chunks_.find(m.key);
      const auto object = listing_.find(m.key);
      bool unchanged = old != old_chunks_.end() &&
                       old->second.committed_length == m.committed_length &&
                       old->second.crc32c.has_value() && object != listing_.end() &&
                       object->second.size == m.committed_length &&
                       (object->second.etag.empty() || object->second.etag == old->second.etag);
      // Overwriting checks the bytes too (one local read of every chunk),
      // and uploads again what it cannot check.
      if (unchanged && options_.overwrite) {
        const LocalCopy copy =
            LocalCopy::File(dir_ + "/" + local_files_.at(m.key), m.committed_length);
        unchanged = !NeedsUpload(m.key, m.committed_length, &copy, /*unverified_too=*/true);
      } else if (!unchanged && old != old_chunks_.end() &&
                 old->second.committed_length == m.committed_length &&
                 old->second.crc32c.has_value()) {
        repaired_.fetch_add(1);  // missing, or replaced behind the manifest's back
      }
      if (unchanged) {
        m.etag = old->second.etag;
        m.crc32c = old->second.crc32c;
        // Overwriting does not take the published CRC-32C on trust either
        // (the object's bytes are the local ones, checked above).
        if (options_.overwrite) {
          const std::string path = dir_ + "/" + local_files_.at(m.key);
          m.crc32c = CrcOfFile(path, m.committed_length, m.committed_length).whole;
        }
      } else {
        uploads_.push_back(i);
      }
    }
  }

  // 3b. Uploads new and grown chunk objects, never changing a promised prefix.
  void UploadChunks(std::vector<ManifestChunk>* chunks) {
    uint64_t total = 0;
    for (size_t i : uploads_) total += (*chunks)[i].committed_length;
    if (!uploads_.empty()) Writing();
    std::atomic<uint64_t> done{0};
    std::mutex progress_mutex;
    util::ParallelFor(uploads_.size(), std::max<uint32_t>(jobs_, 1), [&](size_t k) {
      ManifestChunk& c = (*chunks)[uploads_[k]];
      const std::string path = dir_ + "/" + local_files_.at(c.key);
      const std::optional<Promise> promise = PromiseFor(c.key);
      if (promise && promise->length > c.committed_length) {
        throw CorruptionError(
            "push " + dir_ + " to " + store_.url() + ": chunk " + c.key + " has " +
            std::to_string(c.committed_length) + " committed bytes, but " + promise->from +
            " promised its readers " + std::to_string(promise->length) +
            ": the local chunk was rewritten, and the push will not change bytes those readers "
            "may read; publish to a new prefix");
      }
      const PrefixCrc crc = CrcOfFile(path, c.committed_length, promise ? promise->length : 0);
      if (promise && promise->crc32c && crc.at_checkpoint != *promise->crc32c) {
        throw CorruptionError(
            "push " + dir_ + " to " + store_.url() + ": the first " +
            std::to_string(promise->length) + " bytes of chunk " + c.key + " differ from what " +
            promise->from +
            " published (CRC-32C mismatch): the local chunk was rewritten, and the push will not "
            "change bytes readers of the published dataset may read; publish to a new prefix");
      }
      c.crc32c = crc.whole;
      remote::WriteOptions write = WriteFor(c.key);
      if (conditional_ && promise && promise->crc32c) {
        write.metadata[kMetaPrefix] = PromiseText(promise->length, *promise->crc32c);
      }
      c.etag = WriteFile(c.key, path, c.committed_length, write);
      const uint64_t now_done = done.fetch_add(c.committed_length) + c.committed_length;
      if (options_.progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        options_.progress(now_done, total);
      }
    });
    report_.chunks_uploaded = uploads_.size();
    report_.bytes_uploaded = total;
  }

  // 4a. The .gmeta of every chunk whose videos changed since the last push.
  void UploadGmeta(const std::string& tmp, std::vector<ManifestChunk>* chunks) {
    const std::string gmeta_dir = tmp + "/gmeta";
    util::MakeDirectories(gmeta_dir);
    std::vector<size_t> todo;
    for (size_t i = 0; i < chunks->size(); ++i) {
      ManifestChunk& c = (*chunks)[i];
      const auto old = old_chunks_.find(c.key);
      const bool same =
          old != old_chunks_.end() && old->second.gmeta_key == c.gmeta_key &&
          !old->second.gmeta_sha256.empty() && old->second.committed_length == c.committed_length &&
          old->second.live_videos == c.live_videos && old->second.live_bytes == c.live_bytes &&
          old->second.meta_edits == c.meta_edits && listing_.count(c.gmeta_key) != 0 &&
          foreign_set_.count(c.gmeta_key) == 0;
      if (same && !options_.overwrite) {  // overwriting writes each one and checks it
        c.gmeta_sha256 = old->second.gmeta_sha256;
      } else {
        todo.push_back(i);
      }
    }
    if (!todo.empty()) Writing();
    std::atomic<uint64_t> uploaded{0};
    util::ParallelFor(todo.size(), std::max<uint32_t>(jobs_, 1), [&](size_t k) {
      ManifestChunk& c = (*chunks)[todo[k]];
      const std::string path = gmeta_dir + "/" + std::to_string(c.number) + ".gmeta";
      GmetaWriter writer(path);
      snapshot_->ForEachInChunk(c.number, [&](const VideoInfo& v) {
        writer.Add(v.id, v.frames, v.meta_data);
        return true;
      });
      writer.Commit();
      uint64_t size = 0;
      c.gmeta_sha256 = Sha256OfFile(path, &size);
      const LocalCopy copy = LocalCopy::File(path, size);
      const auto old = old_chunks_.find(c.key);
      const bool changed = old == old_chunks_.end() || old->second.gmeta_key != c.gmeta_key ||
                           old->second.gmeta_sha256 != c.gmeta_sha256;
      if (!NeedsUpload(c.gmeta_key, size, &copy, false, changed)) return;  // the same text
      WriteFile(c.gmeta_key, path, size, WriteFor(c.gmeta_key));
      uploaded.fetch_add(1);
    });
    report_.gmeta_uploaded = uploaded.load();
  }

  // 4b. label2idx.json, when the dataset has one.
  void UploadLabels(Manifest* next) {
    const std::string path = dir_ + "/label2idx.json";
    if (!util::PathExists(path)) return;
    uint64_t size = 0;
    next->label2idx_key = "label2idx.json";
    next->label2idx_sha256 = Sha256OfFile(path, &size);
    const LocalCopy copy = LocalCopy::File(path, size);
    const bool changed = !old_ || old_->label2idx_key != next->label2idx_key ||
                         old_->label2idx_sha256 != next->label2idx_sha256;
    if (!NeedsUpload(next->label2idx_key, size, &copy, false, changed)) return;
    Writing();
    WriteFile(next->label2idx_key, path, size, WriteFor(next->label2idx_key));
  }

  // The obsolete list of `next`: the published one without what `next`
  // names again and without what expired (returned in `expired`, to delete
  // after publishing), plus what `next` supersedes now, and what interrupted
  // pushes of this dataset left (kept for the grace period too). An entry
  // naming what either generation names is not the published list's to
  // retire: the one `next` supersedes is listed afresh, from now.
  std::vector<ManifestObsolete> Obsolete(const Manifest& next, std::vector<std::string>* expired) {
    const std::set<std::string> named = NamedByNext(next);
    const std::set<std::string> kept = Untouchable(next);
    std::vector<ManifestObsolete> out;
    std::set<std::string> listed;  // keys in `out`
    const auto supersede = [&](const std::string& key) {
      if (named.count(key) != 0 || !listed.insert(key).second) return;
      ManifestObsolete o;
      o.key = key;
      o.since_unix = now_;
      out.push_back(std::move(o));
    };
    if (old_) {
      for (const ManifestObsolete& o : old_->obsolete) {
        if (kept.count(o.key) != 0 || !listed.insert(o.key).second) continue;
        if (Expired(o.since_unix)) {
          expired->push_back(o.key);
          if (!o.gmeta_key.empty()) expired->push_back(o.gmeta_key);
        } else {
          out.push_back(o);
        }
      }
      // Chunks that are gone (emptied by compaction): their data objects stay
      // for the grace period; their .gmeta is emptied now, so that GulpIO
      // readers see each video once (and every data file keeps its .gmeta).
      std::set<std::string> data_objects;  // never emptied as a .gmeta
      for (const ManifestChunk& c : old_->chunks) data_objects.insert(c.key);
      for (const ManifestChunk& c : next.chunks) data_objects.insert(c.key);
      for (const ManifestChunk& c : old_->chunks) {
        // A local snapshot's chunks are the dataset's own files, not objects.
        if (named.count(c.key) != 0 || !old_->chunks_published || IsGulpdbObject(c.key)) continue;
        ManifestObsolete o;
        o.key = c.key;
        o.since_unix = now_;
        o.committed_length = c.committed_length;
        o.crc32c = c.crc32c;
        if (!c.gmeta_key.empty() && named.count(c.gmeta_key) == 0 &&
            data_objects.count(c.gmeta_key) == 0 && !IsGulpdbObject(c.gmeta_key)) {
          o.gmeta_key = c.gmeta_key;
          if (listing_.count(c.gmeta_key) != 0) {
            Writing();
            Write(c.gmeta_key, "{}", WriteFor(c.gmeta_key));
          }
        }
        if (listed.insert(o.key).second) out.push_back(std::move(o));
        ++removed_chunks_;
      }
      uint64_t superseded = 0;
      for (const std::string& key : OldIndexKeys()) {
        if (named.count(key) == 0 && listed.count(key) == 0) ++superseded;
        supersede(key);
      }
      if (!old_->label2idx_key.empty()) supersede(old_->label2idx_key);
      report_.objects_obsoleted = removed_chunks_ + superseded;
    }
    for (const std::string& key : leftovers_) supersede(key);
    std::vector<std::string> deletable;
    for (std::string& key : *expired) {
      if (kept.count(key) == 0) deletable.push_back(std::move(key));
    }
    *expired = std::move(deletable);
    return out;
  }

  // Every object `next` names (its index objects as this push built them).
  std::set<std::string> NamedByNext(const Manifest& next) const {
    std::set<std::string> named = NamedObjects(next, nullptr);
    named.insert(next_index_keys_.begin(), next_index_keys_.end());
    return named;
  }

  // 7. What this push never deletes, whatever an obsolete list says: the
  // manifest and the lease, what `next` names, and what the published
  // generation names (its readers read it for the grace period yet).
  std::set<std::string> Untouchable(const Manifest& next) const {
    std::set<std::string> kept = NamedByNext(next);
    kept.insert(kManifestKey);
    kept.insert(kPushLeaseKey);
    if (old_) {
      for (const std::string& key : NamedObjects(*old_, old_root_ ? &*old_root_ : nullptr)) {
        kept.insert(key);
      }
    }
    return kept;
  }

  // Whether `next` says anything the published manifest does not.
  bool Changed(const Manifest& next) const {
    if (next.snapshot_sha256 != old_->snapshot_sha256 || next.root_sha256 != old_->root_sha256 ||
        removed_chunks_ != 0) {
      return true;
    }
    if (next.dataset != old_->dataset) return true;
    if (next.chunks.size() != old_->chunks.size()) return true;
    for (size_t i = 0; i < next.chunks.size(); ++i) {
      const ManifestChunk& a = next.chunks[i];
      const ManifestChunk& b = old_->chunks[i];
      if (a.key != b.key || a.committed_length != b.committed_length || a.etag != b.etag ||
          a.crc32c != b.crc32c || a.gmeta_key != b.gmeta_key || a.gmeta_sha256 != b.gmeta_sha256) {
        return true;
      }
    }
    return next.label2idx_sha256 != old_->label2idx_sha256 ||
           next.grace_seconds != old_->grace_seconds;
  }

  // 6. The manifest, last.
  void Publish(Manifest& next) {
    if (old_) {
      ManifestObsolete o;  // the previous generation's copy, for pinned readers
      o.key = ManifestHistoryKey(old_->generation);
      o.since_unix = now_;
      next.obsolete.push_back(std::move(o));
    }
    const std::string text = SerializeManifest(next);
    const std::string copy = ManifestHistoryKey(next.generation);
    Writing();
    if (!conditional_ || !conditions_honoured_) {
      // No conditions to rely on: refuse to overwrite a generation published
      // while this push ran (a window of the two PUTs below remains).
      RequireManifestAsRead();
      if (!conditional_) {
        store_.Put(copy, text);
        store_.Put(kManifestKey, text);
        return;
      }
    }
    // The generation is claimed by creating its copy: of two pushes building
    // on one manifest, the first claims it, the other stops here.
    remote::WriteOptions claim = WriteFor(copy);
    if (send_conditions_) {
      claim.if_absent = true;
      claim.if_match.clear();
    }
    CheckLease();
    try {
      store_.Put(copy, text, claim);
    } catch (const remote::PreconditionFailedError&) {
      throw BusyError(what_ + ": another push claimed generation " +
                      std::to_string(next.generation) + " (" + store_.Name(copy) +
                      ") while this one ran; this push published nothing: run it again");
    }
    // The swap: only if the manifest is still the one this push read.
    remote::WriteOptions swap = WriteFor(kManifestKey);
    if (send_conditions_) {
      swap.if_absent = manifest_etag_.empty();
      swap.if_match = manifest_etag_;
    }
    try {
      CheckLease();
      store_.Put(kManifestKey, text, swap);
    } catch (const remote::PreconditionFailedError&) {
      DeleteClaim(copy);
      throw BusyError(what_ +
                      ": another push published a new manifest while this one ran; "
                      "this push published nothing: run it again");
    } catch (const Error&) {
      DeleteClaim(copy);
      throw;
    }
  }

  // The copy of a generation this push claimed but did not publish: no
  // manifest names it, and no other push writes it (they create copies only
  // where there is none).
  void DeleteClaim(const std::string& copy) {
    try {
      store_.Delete({copy});
    } catch (const Error&) {
      // Left for a later push, which passes over it and deletes it after
      // the grace period.
    }
  }

  // 7b. With the overwrite option: what no push of this dataset wrote and
  // this push did not replace.
  void DeleteForeign(const Manifest& next) {
    if (foreign_set_.empty()) return;
    const std::set<std::string> kept = Untouchable(next);
    std::vector<std::string> doomed;
    for (const std::string& key : foreign_set_) {
      if (kept.count(key) == 0 && written_.count(key) == 0) doomed.push_back(key);
    }
    if (doomed.empty()) return;
    CheckLease();
    store_.Delete(doomed);
    report_.foreign_objects_deleted = doomed.size();
  }

  // Whether this push publishes a partitioned snapshot (PushOptions::layout).
  bool Partitioned() const {
    switch (options_.layout) {
      case IndexLayout::kPartitioned:
        return true;
      case IndexLayout::kWhole:
        return false;
      case IndexLayout::kAuto:
        return true;
    }
    return false;
  }

  static constexpr size_t kForeignListed = 5;

  std::string dir_;
  ObjectStore& store_;
  bool publish_chunks_;
  bool conditional_;  // S3: lease, conditions, identity checks
  const PushOptions& options_;
  std::chrono::seconds grace_;
  uint32_t jobs_;
  std::string what_;  // "push DIR to URL", for messages
  int64_t now_ = 0;
  std::string push_id_;
  std::string dataset_;

  std::string snapshot_file_;
  std::string snapshot_sha256_;
  uint64_t snapshot_size_ = 0;
  std::unique_ptr<Dataset> snapshot_;
  bool partitioned_ = false;  // Partitioned(), once the snapshot is open
  // Partitioned: the published root (if the published manifest names one),
  // the build, and the keys of the new root and its partitions.
  std::optional<index::PartitionRoot> old_root_;
  BuildResult build_;
  std::string partition_dir_;
  std::set<std::string> next_index_keys_;

  std::optional<Manifest> old_;               // this dataset's published manifest
  std::optional<Manifest> foreign_manifest_;  // another dataset's, to overwrite
  std::optional<std::string> manifest_text_;  // the manifest read, if any
  std::string manifest_etag_;                 // of the manifest read, "" if none
  uint64_t base_generation_ = 0;              // the highest published or claimed generation
  std::map<std::string, ManifestChunk> old_chunks_;
  std::map<std::string, ManifestObsolete> old_obsolete_;
  std::map<std::string, StoreObject> listing_;
  std::set<std::string> foreign_set_;               // objects no push of this dataset wrote
  std::vector<std::string> leftovers_;              // unnamed objects of this dataset's pushes
  std::vector<size_t> uploads_;                     // indices into the new chunk list
  std::map<std::string, std::string> local_files_;  // chunk key -> its file in the dataset
  uint64_t removed_chunks_ = 0;
  PushReport report_;

  std::unique_ptr<PushLease> lease_;
  bool conditions_honoured_ = true;  // false: told to push to a store without them
  bool send_conditions_ = true;      // false: the store refuses the headers
  std::mutex written_mutex_;
  std::set<std::string> written_;
  // What the published generation named, what this push built of the
  // index, the objects it found missing or damaged and uploaded again, and
  // the ETags it checked (push_verify.h).
  std::set<std::string> old_named_;
  std::set<std::string> built_;
  std::atomic<uint64_t> repaired_{0};
  VerifiedEtags verified_;
};

void RequireLocalDataset(const std::string& dir, const char* operation) {
  if (IsRemoteUrl(dir)) {
    throw InvalidArgumentError(std::string(operation) + " " + dir +
                               ": the dataset to publish must be a local directory");
  }
  if (!util::IsDirectory(dir))
    throw NotFoundError(std::string(operation) + " " + dir + ": no such directory");
}

}  // namespace
}  // namespace engine

PushReport Push(const std::string& dir, const std::string& url, const PushOptions& options) {
  engine::RequireLocalDataset(dir, "push");
  if (!IsRemoteUrl(url)) {
    throw InvalidArgumentError("push " + dir + " to '" + util::RedactUrl(url) +
                               "': the destination must be an s3://bucket/prefix URL");
  }
  std::unique_ptr<engine::ObjectStore> store =
      engine::OpenS3Store(url, remote::S3Config::FromEnvironment());
  return engine::Publisher(dir, *store, /*publish_chunks=*/true, options).Run();
}

const char* IndexLayoutName(IndexLayout layout) {
  switch (layout) {
    case IndexLayout::kAuto:
      return "auto";
    case IndexLayout::kPartitioned:
      return "partitioned";
    case IndexLayout::kWhole:
      return "whole";
  }
  return "unknown";
}

std::optional<IndexLayout> IndexLayoutFromName(std::string_view name) {
  if (name == "auto") return IndexLayout::kAuto;
  if (name == "partitioned") return IndexLayout::kPartitioned;
  if (name == "whole") return IndexLayout::kWhole;
  return std::nullopt;
}

PushReport PublishSnapshot(const std::string& dir, const PushOptions& options) {
  engine::RequireLocalDataset(dir, "snapshot");
  std::unique_ptr<engine::ObjectStore> store =
      engine::OpenLocalStore(dir + "/" + engine::kLocalSnapshotStore);
  return engine::Publisher(dir, *store, /*publish_chunks=*/false, options).Run();
}

}  // namespace gulpdb
