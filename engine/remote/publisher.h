// The Publisher: one push of a dataset to an object store, or one snapshot of
// its index beside it (gulpdb/remote.h's Push and PublishSnapshot). Its steps
// live in files of their own, in the order a push takes them
// (engine/remote/publish.cc lists them): the plan (publish_plan.cc: the
// dataset's identity, the index copy, the published manifest and listing,
// and which chunks need uploading), the uploads of chunks, .gmeta and label
// files with the conditions and the lease that guard every write
// (publish_upload.cc), the index partitions (publish_index.cc), the manifest
// swap (publish_commit.cc) and the cleanup of obsolete and foreign objects
// (publish_cleanup.cc). The layout it writes is docs/format/remote_format.md.
// Internal to engine/remote.
// Thread safety: one Publisher runs one push on the calling thread; its
// uploads run on a pool of its own and share only written_ (under
// written_mutex_) and repaired_.
#ifndef GULPDB_ENGINE_REMOTE_PUBLISHER_H_
#define GULPDB_ENGINE_REMOTE_PUBLISHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/push_lease.h"
#include "engine/remote/push_verify.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "index/partition_root.h"

namespace gulpdb::engine {

using Clock = std::chrono::steady_clock;

// CRC-32C of the first `length` bytes of the file `path`, and of its first
// `checkpoint` bytes (checkpoint <= length).
struct PrefixCrc {
  uint32_t at_checkpoint = 0;
  uint32_t whole = 0;
};

PrefixCrc CrcOfFile(const std::string& path, uint64_t length, uint64_t checkpoint);

// The SHA-256 (hex) of the file `path`; sets *size to its size.
std::string Sha256OfFile(const std::string& path, uint64_t* size);

// What a published manifest promised about an object's first bytes.
struct Promise {
  uint64_t length = 0;
  std::optional<uint32_t> crc32c;
  std::string from;  // "generation N" or "an obsolete entry kept until ..."
};

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

  PushReport Run();

 private:
  void EnsureIdentity();
  void CopyIndex(const std::string& tmp);
  void ReadPublishedRoot();
  void ReadPublishedTags();
  void PublishTags(Manifest* next);
  CorruptionError DamagedIndex(const Error& e) const;
  bool PublishedRootIsWhole();
  std::vector<std::string> OldIndexKeys() const;
  void BuildIndexPartitions(const std::string& tmp);
  void SeedCache();
  static bool SameIndex(const index::PartitionRoot& root,
                        const std::optional<index::PartitionRoot>& old);
  uint64_t PartitionTarget() const;
  static uint64_t RootPageTarget();
  static uint64_t TestBytes(const char* name, uint64_t otherwise);
  void UploadChunkPages(Manifest* next);
  void UploadPartitions(const Manifest& next);
  std::vector<ManifestChunk> ChunkKeys();
  void ReadPublished();
  bool AdoptLegacy(const Manifest& m);
  void FindForeign();
  void Writing();
  void RequireManifestAsRead();
  void CheckLease() const;
  // Whether the store lists `key` with the bytes of `copy` (its ETag the
  // copy's MD5), and the key is not another writer's.
  bool ListedWithText(const std::string& key, const LocalCopy& copy) const;
  bool NeedsUpload(const std::string& key, uint64_t size, const LocalCopy* copy,
                   bool unverified_too = false);
  std::optional<LocalCopy> PartitionCopy(const index::PartitionEntry& p) const;
  std::map<std::string, std::string> Metadata() const;
  remote::WriteOptions WriteFor(const std::string& key) const;
  BusyError Raced(const std::string& key, const std::exception& e) const;
  std::string Write(const std::string& key, std::string_view data,
                    const remote::WriteOptions& write);
  std::string WriteFile(const std::string& key, const std::string& path, uint64_t length,
                        const remote::WriteOptions& write);
  void Wrote(const std::string& key, const std::string& etag);
  bool Expired(int64_t since) const { return since + grace_.count() <= now_; }

  std::optional<Promise> PromiseFor(const std::string& key) const;
  void PlanUploads(std::vector<ManifestChunk>* chunks);
  void UploadChunks(std::vector<ManifestChunk>* chunks);
  void UploadGmeta(const std::string& tmp, std::vector<ManifestChunk>* chunks);
  void UploadLabels(Manifest* next);
  std::vector<ManifestObsolete> Obsolete(const Manifest& next, std::vector<std::string>* expired);
  std::set<std::string> NamedByNext(const Manifest& next) const;
  std::set<std::string> Untouchable(const Manifest& next) const;
  bool Changed(const Manifest& next) const;
  void Publish(Manifest& next);
  void DeleteClaim(const std::string& copy);
  void DeleteForeign(const Manifest& next);
  bool Partitioned() const;
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
  // Tags (publish_tags.cc): every object the published tags name; the data
  // objects and .gmeta keys of the chunks the new manifest's tags read, and
  // the data objects of those the generation does not list.
  std::set<std::string> old_tag_named_;
  std::set<std::string> tag_chunk_keys_;
  std::set<std::string> tag_only_chunks_;
  std::atomic<uint64_t> repaired_{0};
  VerifiedEtags verified_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISHER_H_
