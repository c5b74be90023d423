// The index of a push (engine/remote/publisher.h; step 5 of publish.cc's
// list): the published root read and checked, the partitions built against
// it, the chunk pages and partitions uploaded, and the node cache seeded
// with what this push built.
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
#include "engine/remote/publisher.h"
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

// 2b. The root the published manifest names, GET and verified (never
// more bytes than the manifest says): the build diffs against it, and the
// partitions it lists are named objects of the published dataset.
void Publisher::ReadPublishedRoot() {
  // The store outlives the fetch; it holds it only meanwhile.
  std::shared_ptr<ObjectStore> store(&store_, [](ObjectStore*) {});
  try {
    old_root_ = ExpandPartitionRoot(FetchRoot(store_, *old_, what_),
                                    NodeCachePageFetch(store, what_), store_.Name(old_->root_key));
  } catch (const CorruptionError& e) {
    // Overwriting rebuilds the whole index: a damaged published root is
    // replaced, its partitions retired as leftovers of this dataset.
    if (!options_.overwrite) throw DamagedIndex(e);
  }
}

// A published index this push cannot build on.
CorruptionError Publisher::DamagedIndex(const Error& e) const {
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
bool Publisher::PublishedRootIsWhole() {
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
// root and the root's partitions, and the objects of its tags.
std::vector<std::string> Publisher::OldIndexKeys() const {
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
  // What the published tags name: retired when no tag (nor the generation)
  // of the new manifest names it.
  keys.insert(keys.end(), old_tag_named_.begin(), old_tag_named_.end());
  return keys;
}

// 5a. The partitions of the snapshot copy, against the published root.
// The published root's partitions come through the node cache (a pusher
// that pushed before, or read the dataset, has them).
void Publisher::BuildIndexPartitions(const std::string& tmp) {
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
void Publisher::SeedCache() {
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
bool Publisher::SameIndex(const index::PartitionRoot& root,
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

uint64_t Publisher::PartitionTarget() const {
  if (options_.partition_bytes != 0) return options_.partition_bytes;
  // 256 KiB: a fresh node's open + one random read at 10^5 videos (20 ms
  // proxy, bench/partition_bench.py) fetched 2.52 MB at 1 MiB, 1.49 MB at
  // 512 KiB and 0.98 MB at 256 KiB (the manifest's 0.30 MB included), and
  // a warm re-open after a 1% append 1.73 / 1.77 / 0.99 MB; the root grows
  // to about 26 kB per 10^5 videos (docs/remote_datasets.md).
  return TestBytes("GULPDB_TEST_PARTITION_BYTES", uint64_t{256} << 10);
}

// Root pages (PartitionOptions::page_bytes); smaller for tests only.
uint64_t Publisher::RootPageTarget() {
  return TestBytes("GULPDB_TEST_ROOT_PAGE_BYTES", PartitionOptions().page_bytes);
}

// The positive number of bytes in the variable `name`, else `otherwise`.
uint64_t Publisher::TestBytes(const char* name, uint64_t otherwise) {
  return util::EnvCount(name, 1, UINT64_MAX).value_or(otherwise);
}

// 5a'. The chunk list of a version 3 manifest, in pages named by their
// content: a page the store holds (listed with its size) is not written
// again, so an append writes only the last pages.
void Publisher::UploadChunkPages(Manifest* next) {
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
void Publisher::UploadPartitions(const Manifest& next) {
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

// This push's copy of partition `p`: built by it, or linked from the node
// cache (then trusted only if its SHA-256 is the partition's); nullopt
// when it has none.
std::optional<LocalCopy> Publisher::PartitionCopy(const index::PartitionEntry& p) const {
  const std::string path = partition_dir_ + "/" + p.sha256;
  if (built_.count(p.sha256) != 0) return LocalCopy::File(path, p.size);
  const std::string cached = PartitionCacheDirectory() + "/" + p.sha256;
  if (!util::PathExists(path) && ::link(cached.c_str(), path.c_str()) != 0) return std::nullopt;
  return LocalCopy::File(path, p.size, p.sha256);
}

}  // namespace gulpdb::engine
