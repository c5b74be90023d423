// The index of a push (engine/remote/publish_index.h; step 5 of
// publish.cc's list): the snapshot, or the partitions built against the
// published root, the chunk pages and partitions uploaded, and the node
// cache seeded with what this push built.
#include "engine/remote/publish_index.h"

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
#include "engine/gulpio/gmeta.h"
#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/partition_cache.h"
#include "engine/remote/push_lease.h"
#include "engine/remote/push_verify.h"
#include "engine/remote/snapshot_cache.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "index/partition_root.h"
#include "s3/errors.h"
#include "util/env.h"
#include "util/file_io.h"
#include "util/sha256.h"
#include "util/test_bug.h"
#include "util/thread_pool.h"

namespace gulpdb::engine {

// Whether the published root object holds the root the manifest names:
// listed with its size, and its ETag one this machine checked, or (one GET
// of at most its size) its SHA-256 the manifest's. An unchanged index
// keeps it only then; otherwise the new root (the same index, another
// generation number) replaces it.
bool IndexPublisher::PublishedRootIsWhole() {
  const Manifest& old = *published_.old();
  const StoreObject* listed = published_.Listed(old.root_key);
  if (listed == nullptr || listed->size != old.root_size) {
    uploader_.CountRepair();
    return false;
  }
  if (uploader_.verified().Holds(old.root_key, listed->etag) ||
      util::TestBugEnabled("push-named-unchecked")) {
    return true;
  }
  try {
    StoreObject got;
    const std::string bytes = push_.store.Get(old.root_key, old.root_size, &got);
    if (bytes.size() == old.root_size && util::Sha256Hex(bytes) == old.root_sha256) {
      uploader_.verified().Add(old.root_key, got.etag);
      return true;
    }
  } catch (const NotFoundError&) {
  } catch (const remote::ObjectTooLargeError&) {
  }
  uploader_.CountRepair();
  return false;
}

void IndexPublisher::NameSnapshot(Manifest* next) const {
  next->snapshot_key = SnapshotKey(local_.sha256());
  next->snapshot_size = local_.size();
  next->snapshot_sha256 = local_.sha256();
}

void IndexPublisher::UploadSnapshot(const Manifest& next) {
  const LocalCopy copy = LocalCopy::File(local_.file(), local_.size());
  if (uploader_.NeedsUpload(next.snapshot_key, local_.size(), &copy)) {
    uploader_.Writing();
    uploader_.WriteFile(next.snapshot_key, local_.file(), local_.size(),
                        uploader_.WriteFor(next.snapshot_key));
    push_.report.snapshot_uploaded = true;
  }
  push_.report.snapshot_bytes = local_.size();
}

// 5a. The partitions of the snapshot copy, against the published root.
// The published root's partitions come through the node cache (a pusher
// that pushed before, or read the dataset, has them).
void IndexPublisher::Build(const std::string& tmp, Manifest* next) {
  PartitionOptions options;
  options.target_bytes = PartitionTarget();
  options.page_bytes = RootPageTarget();
  partition_dir_ = tmp + "/partitions";
  // Overwriting builds every partition here (the published ones may be
  // damaged); otherwise the build diffs against the published root.
  const std::optional<index::PartitionRoot>& old_root = published_.old_root();
  const index::PartitionRoot* previous =
      old_root && !push_.options.overwrite ? &*old_root : nullptr;
  if (previous != nullptr) {
    // The store outlives the build; the fetch holds it only meanwhile.
    std::shared_ptr<ObjectStore> store(&push_.store, [](ObjectStore*) {});
    options.previous = NodeCacheFetch(store, push_.what, std::chrono::minutes(10));
  }
  try {
    build_ = engine::BuildPartitions(local_.snapshot(), previous, options, partition_dir_);
  } catch (const CorruptionError& e) {
    if (previous != nullptr) throw DamagedIndex(e);
    e.ThrowWithContext(push_.what + ": ");
  } catch (const Error& e) {
    e.ThrowWithContext(push_.what + ": ");
  }
  built_.insert(build_.new_partitions.begin(), build_.new_partitions.end());
  next_index_keys_.insert(RootKey(build_.root_sha256));
  for (const index::PartitionEntry& p : build_.root.partitions) {
    next_index_keys_.insert(PartitionKey(p.sha256));
  }
  for (const index::RootPage& p : build_.root.pages) {
    next_index_keys_.insert(RootPageKey(p.sha256));
  }
  next->version = kManifestVersionChunkPages;
  if (SameIndex(build_.root, old_root) && PublishedRootIsWhole()) {
    // An unchanged index keeps its root (the new one would differ only
    // in its generation number), so that nothing is published.
    const Manifest& old = *published_.old();
    next->root_key = old.root_key;
    next->root_size = old.root_size;
    next->root_sha256 = old.root_sha256;
    next_index_keys_.erase(RootKey(build_.root_sha256));
    next_index_keys_.insert(next->root_key);
  } else {
    next->root_key = RootKey(build_.root_sha256);
    next->root_size = build_.root_bytes.size();
    next->root_sha256 = build_.root_sha256;
  }
}

// The partitions this push built go into the machine's partition cache
// (hard links: the temporary folder is in the cache's file system), so
// that the next push, or a reader here, does not download them. Best
// effort.
void IndexPublisher::SeedCache() {
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
bool IndexPublisher::SameIndex(const index::PartitionRoot& root,
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

uint64_t IndexPublisher::PartitionTarget() const {
  if (push_.options.partition_bytes != 0) return push_.options.partition_bytes;
  // 256 KiB: a fresh node's open + one random read at 10^5 videos (20 ms
  // proxy, bench/partition_bench.py) fetched 2.52 MB at 1 MiB, 1.49 MB at
  // 512 KiB and 0.98 MB at 256 KiB (the manifest's 0.30 MB included), and
  // a warm re-open after a 1% append 1.73 / 1.77 / 0.99 MB; the root grows
  // to about 26 kB per 10^5 videos (docs/remote_datasets.md).
  return TestBytes("GULPDB_TEST_PARTITION_BYTES", uint64_t{256} << 10);
}

// Root pages (PartitionOptions::page_bytes); smaller for tests only.
uint64_t IndexPublisher::RootPageTarget() {
  return TestBytes("GULPDB_TEST_ROOT_PAGE_BYTES", PartitionOptions().page_bytes);
}

// The positive number of bytes in the variable `name`, else `otherwise`.
uint64_t IndexPublisher::TestBytes(const char* name, uint64_t otherwise) {
  return util::EnvCount(name, 1, UINT64_MAX).value_or(otherwise);
}

// 5a'. The chunk list of a version 3 manifest, in pages named by their
// content: a page the store holds (listed with its size) is not written
// again, so an append writes only the last pages.
void IndexPublisher::UploadChunkPages(Manifest* next) {
  next->chunk_pages.clear();
  next->chunk_count = next->chunks.size();
  for (ChunkPageText& t : MakeChunkPages(next->chunks)) {
    next_index_keys_.insert(t.page.key);
    const LocalCopy copy = LocalCopy::Bytes(t.text);
    if (uploader_.NeedsUpload(t.page.key, t.page.size, &copy)) {
      uploader_.Writing();
      uploader_.Write(t.page.key, t.text, uploader_.WriteFor(t.page.key));
      ++push_.report.chunk_pages_uploaded;
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
void IndexPublisher::UploadPartitions(const Manifest& next) {
  std::vector<const index::PartitionEntry*> unique;
  std::set<std::string> seen;
  for (const index::PartitionEntry& p : build_.root.partitions) {
    if (seen.insert(p.sha256).second) unique.push_back(&p);
  }
  std::vector<char> upload(unique.size(), 0);
  util::ParallelFor(unique.size(), std::max<uint32_t>(push_.jobs, 1), [&](size_t k) {
    const index::PartitionEntry& p = *unique[k];
    const std::string key = PartitionKey(p.sha256);
    const std::optional<LocalCopy> copy = PartitionCopy(p);
    if (!uploader_.NeedsUpload(key, p.size, copy ? &*copy : nullptr)) return;
    if (!copy || !copy->Md5()) {
      const StoreObject* listed = published_.Listed(key);
      throw DamagedIndex(CorruptionError(
          push_.what + ": the partition " + push_.store.Name(key) +
          " that the published root lists is " +
          (listed == nullptr ? std::string("not in the store")
                             : std::to_string(listed->size) +
                                   " bytes in the store, the root says " + std::to_string(p.size)) +
          " (deleted or replaced behind the manifest's back), and this machine has no copy "
          "of it"));
    }
    upload[k] = 1;
  });
  std::vector<const index::PartitionEntry*> todo;
  for (size_t k = 0; k < unique.size(); ++k) {
    if (upload[k] != 0) todo.push_back(unique[k]);
  }
  if (!todo.empty()) uploader_.Writing();
  std::atomic<uint64_t> bytes{0};
  util::ParallelFor(todo.size(), std::max<uint32_t>(push_.jobs, 1), [&](size_t k) {
    const index::PartitionEntry& p = *todo[k];
    const std::string key = PartitionKey(p.sha256);
    uploader_.WriteFile(key, partition_dir_ + "/" + p.sha256, p.size, uploader_.WriteFor(key));
    bytes.fetch_add(p.size);
  });
  // The root's pages (a two-level root), as the partitions.
  for (const index::RootPage& p : build_.root.pages) {
    const std::string key = RootPageKey(p.sha256);
    const LocalCopy copy = LocalCopy::File(partition_dir_ + "/" + p.sha256, p.size);
    if (uploader_.NeedsUpload(key, p.size, &copy)) {
      uploader_.Writing();
      uploader_.WriteFile(key, partition_dir_ + "/" + p.sha256, p.size, uploader_.WriteFor(key));
      ++push_.report.root_pages_uploaded;
    }
    try {
      KeepObject(p.sha256, util::ReadFile(partition_dir_ + "/" + p.sha256));
    } catch (const Error&) {
      // Only a cache.
    }
  }
  PushReport& report = push_.report;
  report.partitioned = true;
  report.root_pages = build_.root.pages.size();
  report.partitions = build_.root.partitions.size();
  report.partitions_uploaded = todo.size();
  report.partition_bytes_uploaded = bytes.load();
  report.root_bytes = next.root_size;
  // (An unchanged index keeps the published root, checked by size only:
  // this push has no copy of its bytes.)
  const LocalCopy root = LocalCopy::Bytes(build_.root_bytes);
  if (uploader_.NeedsUpload(next.root_key, next.root_size,
                            next.root_sha256 == build_.root_sha256 ? &root : nullptr)) {
    if (next.root_sha256 != build_.root_sha256) {
      throw DamagedIndex(CorruptionError(push_.what + ": the root " +
                                         push_.store.Name(next.root_key) +
                                         " that the published manifest names is missing or "
                                         "has another size"));
    }
    uploader_.Writing();
    uploader_.Write(next.root_key, build_.root_bytes, uploader_.WriteFor(next.root_key));
    report.root_uploaded = true;
  }
  if (next.root_sha256 == build_.root_sha256) KeepObject(build_.root_sha256, build_.root_bytes);
}

// This push's copy of partition `p`: built by it, or linked from the node
// cache (then trusted only if its SHA-256 is the partition's); nullopt
// when it has none.
std::optional<LocalCopy> IndexPublisher::PartitionCopy(const index::PartitionEntry& p) const {
  const std::string path = partition_dir_ + "/" + p.sha256;
  if (built_.count(p.sha256) != 0) return LocalCopy::File(path, p.size);
  const std::string cached = PartitionCacheDirectory() + "/" + p.sha256;
  if (!util::PathExists(path) && ::link(cached.c_str(), path.c_str()) != 0) return std::nullopt;
  return LocalCopy::File(path, p.size, p.sha256);
}

}  // namespace gulpdb::engine
