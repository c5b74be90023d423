// The index of a push (engine/remote/publisher.h; step 5 of publish.cc's
// list): the whole snapshot, or the partitions of the index copy built
// against the published root, the chunk pages, the partitions and root
// pages the store lacks or holds damaged, then the root, and the node cache
// seeded with what this push built. It owns the build (its root, the
// folder of its partitions, the partitions it made) and the keys of every
// index object the new generation names (the tags' objects join them).
// Internal to engine/remote.
// Thread safety: called on the push's thread; the uploads run on a pool.
#ifndef GULPDB_ENGINE_REMOTE_PUBLISH_INDEX_H_
#define GULPDB_ENGINE_REMOTE_PUBLISH_INDEX_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/publish_context.h"
#include "engine/remote/publish_plan.h"
#include "engine/remote/publish_upload.h"
#include "engine/remote/push_verify.h"
#include "index/partition_root.h"

namespace gulpdb::engine {

class IndexPublisher {
 public:
  IndexPublisher(PushContext& push, const IndexCopy& local, const PublishedState& published,
                 Uploader& uploader)
      : push_(push), local_(local), published_(published), uploader_(uploader) {}

  // Whole layout: `next` names the index copy as its snapshot.
  void NameSnapshot(Manifest* next) const;
  // 5. Uploads the snapshot unless the store holds it.
  void UploadSnapshot(const Manifest& next);
  // 5a. Builds the partitions of the index copy into `tmp`/partitions,
  // against the published root, and names the root in `next` (the
  // published one when the index is unchanged and the store holds it).
  void Build(const std::string& tmp, Manifest* next);
  // 5a'. The chunk list of `next` in pages, those the store lacks sent.
  void UploadChunkPages(Manifest* next);
  // 5b. Partitions and root pages the store lacks or holds damaged, then
  // the root.
  void UploadPartitions(const Manifest& next);
  // The partitions this push built into the machine's partition cache.
  // Best effort.
  void SeedCache();

  // The index objects the new generation names (and its tags' objects).
  const std::set<std::string>& keys() const { return next_index_keys_; }
  bool Names(const std::string& key) const { return next_index_keys_.count(key) != 0; }
  void Name(const std::string& key) { next_index_keys_.insert(key); }

 private:
  bool PublishedRootIsWhole();
  static bool SameIndex(const index::PartitionRoot& root,
                        const std::optional<index::PartitionRoot>& old);
  uint64_t PartitionTarget() const;
  static uint64_t RootPageTarget();
  static uint64_t TestBytes(const char* name, uint64_t otherwise);
  std::optional<LocalCopy> PartitionCopy(const index::PartitionEntry& p) const;

  PushContext& push_;
  const IndexCopy& local_;
  const PublishedState& published_;
  Uploader& uploader_;
  BuildResult build_;
  std::string partition_dir_;
  std::set<std::string> built_;  // the partitions this push built (SHA-256)
  std::set<std::string> next_index_keys_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISH_INDEX_H_
