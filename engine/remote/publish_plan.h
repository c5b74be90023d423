// The plan of a push (engine/remote/publisher.h; steps 1 and 2 of
// publish.cc's list): what the local copy holds, and what the published
// generation holds. Internal to engine/remote.
// Thread safety: each is filled on the push's thread, then only read (by
// the upload pools too).
#ifndef GULPDB_ENGINE_REMOTE_PUBLISH_PLAN_H_
#define GULPDB_ENGINE_REMOTE_PUBLISH_PLAN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/publish_context.h"
#include "gulpdb/dataset.h"
#include "index/partition_root.h"

namespace gulpdb::engine {

// The local copy: the dataset's identity (recorded first in an index that
// predates them), a consistent compacted copy of its index (its file,
// SHA-256 and size) opened as a dataset that every later step reads, and its
// chunks with their keys and files. Sets the push's dataset UUID.
class IndexCopy {
 public:
  explicit IndexCopy(PushContext& push) : push_(push) {}

  // 1a. Gives an index without a dataset UUID one (one write transaction).
  void EnsureIdentity();
  // 1b. Copies the index into `tmp`/index and opens the copy.
  void Make(const std::string& tmp);
  // 1c. Every chunk of the copy, keyed as the store names it.
  std::vector<ManifestChunk> ChunkKeys();

  Dataset& snapshot() const { return *snapshot_; }
  const std::string& file() const { return file_; }
  const std::string& sha256() const { return sha256_; }
  uint64_t size() const { return size_; }
  // Chunk key -> its file in the dataset (relative to the directory).
  const std::map<std::string, std::string>& local_files() const { return local_files_; }
  std::string PathOf(const std::string& key) const {
    return push_.dir + "/" + local_files_.at(key);
  }

 private:
  PushContext& push_;
  std::string file_;
  std::string sha256_;
  uint64_t size_ = 0;
  std::unique_ptr<Dataset> snapshot_;
  std::map<std::string, std::string> local_files_;
};

// The published generation: the manifest read (its text and ETag) if it is
// this dataset's, or another dataset's to overwrite; the highest generation
// published or claimed; its chunks and obsolete entries by key; its root
// and what its tags name; everything it names; the listing of the prefix,
// and the objects in it that no push of this dataset wrote (refused unless
// overwriting) or that interrupted pushes of this dataset left.
class PublishedState {
 public:
  explicit PublishedState(const PushContext& push) : push_(push) {}

  // 2. GETs the manifest (its chunk pages, root and tags' objects) and
  // LISTs the prefix; `local` is the index copy, whose chunks decide whether
  // a manifest without a dataset identity is this dataset's.
  void Read(const IndexCopy& local);

  // The promise the object `key` is under: a chunk of the published
  // manifest, or an obsolete data object whose grace period is not over.
  std::optional<Promise> PromiseFor(const std::string& key) const;
  // The index objects the published manifest names: its snapshot, or its
  // root and the root's partitions, and the objects of its tags.
  std::vector<std::string> OldIndexKeys() const;
  // Every object the published generation names (its root expanded) and
  // every object its tags name; empty when there is none.
  const std::set<std::string>& old_named() const { return old_named_; }

  const std::optional<Manifest>& old() const { return old_; }
  const std::optional<index::PartitionRoot>& old_root() const { return old_root_; }
  // The generation this push read (0 when the prefix held no manifest).
  uint64_t read_generation() const;
  uint64_t base_generation() const { return base_generation_; }
  const std::optional<std::string>& manifest_text() const { return manifest_text_; }
  const std::string& manifest_etag() const { return manifest_etag_; }
  const ManifestChunk* OldChunk(const std::string& key) const;
  const StoreObject* Listed(const std::string& key) const;
  bool Foreign(const std::string& key) const { return foreign_.count(key) != 0; }
  const std::set<std::string>& foreign() const { return foreign_; }
  const std::vector<std::string>& leftovers() const { return leftovers_; }

 private:
  static constexpr size_t kForeignListed = 5;
  bool AdoptLegacy(const Manifest& m, const IndexCopy& local) const;
  void FindForeign();
  void ReadRoot();
  void ReadTags();

  const PushContext& push_;
  std::optional<Manifest> old_;                   // this dataset's published manifest
  std::optional<Manifest> foreign_manifest_;      // another dataset's, to overwrite
  std::optional<std::string> manifest_text_;      // the manifest read, if any
  std::string manifest_etag_;                     // of the manifest read, "" if none
  uint64_t base_generation_ = 0;                  // the highest published or claimed generation
  std::optional<index::PartitionRoot> old_root_;  // partitioned: the published root
  std::map<std::string, ManifestChunk> old_chunks_;
  std::map<std::string, ManifestObsolete> old_obsolete_;
  std::map<std::string, StoreObject> listing_;
  std::set<std::string> foreign_;       // objects no push of this dataset wrote
  std::vector<std::string> leftovers_;  // unnamed objects of this dataset's pushes
  // What the published generation names, and every object its tags name.
  std::set<std::string> old_named_;
  std::set<std::string> old_tag_named_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISH_PLAN_H_
