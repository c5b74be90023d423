// Partitioned index snapshots: a dataset's index published as small
// immutable read-only LMDB files ("partitions", the index layer's format,
// named by the SHA-256 of their bytes) plus a small root that lists them
// (index/partition_root.h). A node then fetches the root and only the
// partitions a lookup touches; a publish after an append writes only the
// partitions whose content changed. The design and its measurements are in
// docs/remote_datasets.md, "Partitioned snapshots".
//
// What is partitioned, and how:
//   videos      id -> its order key (format 1: its record), by id range.
//               LSM-style: a base level with stable boundaries, plus
//               per-generation delta partitions (changed entries, and
//               tombstones for removed ids) that a lookup probes newest first. When a publish would
//               leave more than `max_deltas` delta generations, the deltas are merged: only the
//               base partitions whose ranges received changes are rewritten (split when they grow
//               past twice the target).
//   meta_index  the query room's entry keys -> id, partitioned as videos.
//   order       position -> id and its record (format 1: the id), by
//               position range: appends only add at the tail, so only the
//               last partition changes, and a block of positions (what a
//               sampler reads together) is a block of records.
//   split_members  split member key -> id, by key range (format 2; the root
//               lists the splits' names, numbers and counts).
//   chunks      chunk number -> chunk record, by number range (new chunks
//               come at the tail), so the chunk list is in partitions and
//               neither the manifest nor the root grows with it.
//   records     format 4: the order table's record delta level, by order
//               key: the records changed in place (a meta edit) since the
//               order partitions holding them were written, each with the
//               base's record, one level that a lookup probes before the
//               order partition. A build rewrites it whole (unchanged
//               pieces keep their hash); when it would exceed a tenth of
//               the order partitions' bytes, the build rebases instead:
//               the order partitions it touches are rewritten and it empties.
//
// Thread safety: BuildPartitions may run in any thread; it reads one
// snapshot of the dataset. A PartitionedIndex may be used from any number of
// threads (its partition table is under a mutex).
#ifndef GULPDB_ENGINE_PARTITION_PARTITIONS_H_
#define GULPDB_ENGINE_PARTITION_PARTITIONS_H_

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/index_source.h"
#include "engine/partition/partition_levels.h"
#include "gulpdb/dataset.h"
#include "index/lmdb_env.h"
#include "index/partition_root.h"
#include "index/records.h"

namespace gulpdb::engine {

// Fetches from a directory holding partitions and root pages by name.
PartitionFetch DirectoryFetch(const std::string& dir);
PageFetch DirectoryPageFetch(const std::string& dir);

// Bytes of root pages `page` whose size and SHA-256 are not those `page`
// says: a CorruptionError naming `name` (where they came from), or nothing.
void VerifyPageBytes(std::string_view bytes, const index::RootPage& page, const std::string& name);

// `root` with the partitions of its paged groups listed too, read from
// their pages (format 3; another root is returned as it is). What a
// publisher diffs against, and what names every object of a snapshot.
index::PartitionRoot ExpandPartitionRoot(index::PartitionRoot root, const PageFetch& fetch,
                                         const std::string& name);

struct PartitionOptions {
  // A partition is cut when its estimated file size reaches this.
  uint64_t target_bytes = uint64_t{1} << 20;
  // Delta generations a root may list before the next publish merges them.
  uint32_t max_deltas = 4;
  // The format to write (index/partition_root.h); an older one only to
  // test that readers still read it. Format 3 pages only the groups that
  // need it: a root without pages is written as format 2.
  uint32_t format = index::kPartitionRootFormat;
  // Root pages: a group (kind, generation) whose entries in the root would
  // take more than 4 pages' bytes is listed by pages of about this size.
  // 64 KiB: see docs/remote_datasets.md, "Two-level roots".
  uint64_t page_bytes = uint64_t{64} << 10;
  // Where the previous root's partitions are read from (a builder diffs
  // against them); null: the output directory.
  PartitionFetch previous;
  // The previous root's name (SHA-256 hex). When the dataset's change record
  // (index/change_record.h) covers every change since that root, a format 4
  // build reads the changes instead of the whole index and the previous
  // partitions; empty, or a record that does not cover it: the full build.
  std::string previous_sha256;
};

struct BuildResult {
  index::PartitionRoot root;
  // Every partition, and (format 3) the pages of the paged groups, each
  // written to the output directory as <sha256>.
  std::string root_bytes;                   // EncodePartitionRoot(root): its top
  std::string root_sha256;                  // the root file's name
  std::vector<std::string> new_partitions;  // hashes of partitions `previous` did not list
  uint64_t new_bytes = 0;                   // their bytes
  uint64_t total_bytes = 0;                 // bytes of every partition the root lists
  bool merged = false;                      // this build merged the deltas into the base
  bool from_changes = false;                // read the change record, not the whole index
  uint64_t previous_bytes_read = 0;         // bytes of the previous partitions it opened
};

// Writes the partitions of one snapshot of `dataset` that `previous` (null:
// none) does not already list into `out_dir` (created if needed), each as
// <sha256> (a file that already exists there under its name is kept), and
// the root as <root sha256>. Same content, same bytes: building twice gives
// the same names. Throws CorruptionError for a damaged record of the
// dataset or a previous partition that fails verification, IoError for
// the file system.
BuildResult BuildPartitions(const Dataset& dataset, const index::PartitionRoot* previous,
                            const PartitionOptions& options, const std::string& out_dir);

// Starts the dataset's change record at the root `root_sha256` (a tag just
// made of it), emptying it, in one durable commit of the index: from then
// on every write of this gulpdb records what it changes, and the next
// build against that root reads only that. The caller holds the writer
// lock. Throws what the index throws.
void StartChangeRecord(const Dataset& dataset, const std::string& root_sha256);

// Checks a local partition file against its root entry: its size, its
// SHA-256 and a bounds-checked walk of its pages (index/lmdb_verify.h).
// Throws CorruptionError "open partition <sha256> (<path>): <detail>".
void VerifyPartitionFile(const std::string& path, const index::PartitionEntry& entry);

// A reader of a partitioned snapshot. Fetches a partition on first use,
// verifies it (VerifyPartitionFile) and keeps it open; a partition that
// fails is a CorruptionError naming its hash, never a wrong answer. It is
// the index source a Dataset reads through (OpenOnIndexSource,
// engine/core/dataset_view.h).
class PartitionedIndex : public IndexSource {
 public:
  // `name` names the snapshot in messages (a path or URL). The root must
  // have come from DecodePartitionRoot (or ValidatePartitionRoot). A paged
  // group (format 3) whose partitions the root does not list is read
  // through `pages`, one page on the first lookup that needs it.
  PartitionedIndex(index::PartitionRoot root, PartitionFetch fetch, std::string name,
                   PageFetch pages = nullptr);
  ~PartitionedIndex() override;
  PartitionedIndex(const PartitionedIndex&) = delete;
  PartitionedIndex& operator=(const PartitionedIndex&) = delete;

  const index::PartitionRoot& root() const { return root_; }
  const index::DatasetInfo& info() const override { return info_; }

  std::optional<index::VideoRecord> FindVideo(std::string_view id) const override;
  // Calls `chunk_known` once the videos partitions gave the order key
  // (which holds the chunk), before the order partition is fetched.
  std::optional<index::VideoRecord> FindFrames(
      std::string_view id, const std::function<void(uint32_t chunk)>* chunk_known) const override;
  // Entries of the order table.
  uint64_t OrderCount() const override { return order_count_; }
  // The id at `position` (0-based) of the order table; nullopt past its end.
  std::optional<std::string> OrderAt(uint64_t position) const override;
  void ScanOrder(std::string_view from, std::string_view to,
                 const std::function<bool(std::string_view order_key, std::string_view id)>& fn)
      const override;
  std::vector<uint64_t> OrderBoundaries() const override;
  bool ReadsAhead() const override { return true; }
  std::optional<index::ChunkRecord> Chunk(uint32_t chunk) const override;
  void ScanChunks(
      const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn) const override;
  // Videos with from <= id < to (`to` empty: no upper bound) in id order;
  // `fn` returns false to stop.
  void ScanVideos(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn) const override;
  std::vector<std::pair<std::string, index::MetaFieldValue>> MetaFields() const override;
  void ScanMeta(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view key, std::string_view id)>& fn) const override;
  uint64_t IndexBytes() const override;
  bool SplitsOmitted() const override { return root_.splits_omitted; }
  std::map<std::string, index::SplitHeader> SplitHeaders() const override;
  std::vector<std::string> SplitIds(uint32_t split) const override;

  // Format 4: the record delta level in order-key order, each video whose
  // record changed in place since its order partition was written, with its
  // record now and the one the order partition holds (`fn` returns false to
  // stop). CorruptionError naming the partition for a damaged entry.
  void ScanRecordDeltas(const std::function<bool(std::string_view order_key, std::string_view id,
                                                 const index::VideoRecord& now,
                                                 const index::VideoRecord& base)>& fn) const;
  // Whether `other` lists the same videos and order partitions (or root
  // pages of them): the two snapshots then hold the same videos at the same
  // places, and their records differ only where their record delta levels
  // do.
  bool SameVideosAs(const PartitionedIndex& other) const;

  // Partitions fetched (first uses) so far, their bytes, and root pages.
  uint64_t fetches() const;
  uint64_t fetched_bytes() const;
  uint64_t page_fetches() const;
  // Partitions open now (at most kMaxOpenPartitions once idle).
  size_t open_partitions() const;

  // Entries of `kind` with from <= key < to (`to` empty: no bound), base
  // and deltas merged (newest wins, removed keys skipped); `fn` returns
  // false to stop. Logical keys and values (order: order key -> the rest of
  // the entry, index/partition_root.h).
  void Scan(index::PartitionKind kind, std::string_view from, std::string_view to,
            const std::function<bool(std::string_view key, std::string_view value)>& fn) const;

 private:
  using Group = PartitionLevels::Group;
  using Slot = PartitionLevels::Slot;
  using Open = PartitionLevels::Open;
  // The record of `id`; its frames alone (meta_data empty) when `frames_only`.
  std::optional<index::VideoRecord> Find(std::string_view id,
                                         const std::function<void(uint32_t)>* chunk_known,
                                         bool frames_only) const;
  // The record delta entry of `order_key` (format 4), or nullopt.
  struct RecordDeltaHit {
    index::PartitionEntry entry;
    std::string path;
    std::string value;
  };
  std::optional<RecordDeltaHit> FindRecordDelta(std::string_view order_key) const;
  // The newest value of `key` (empty: removed), or nullopt when no partition holds it.
  std::optional<std::string> Lookup(index::PartitionKind kind, std::string_view key) const;
  // Format 2 keeps records with their order entries (by position).
  bool clustered() const { return root_.format_version >= 2; }
  // Order keys of ids just returned by OrderAt, ScanOrder or ScanVideos, so
  // that reading the video next goes straight to its order partition
  // instead of through the videos partitions (a sampler reading a block of
  // positions fetches only that block's partitions). Exact: the snapshot
  // never changes. Bounded: cleared when full.
  std::optional<std::string> Hinted(std::string_view id) const;
  void Hint(std::string_view id, std::string_view order_key) const;
  static constexpr size_t kMaxHints = 1 << 16;

  index::PartitionRoot root_;
  std::string name_;
  index::DatasetInfo info_;
  PartitionLevels levels_;  // views root_
  uint64_t order_count_ = 0;
  mutable std::mutex hints_mutex_;
  mutable std::unordered_map<std::string, std::string> hints_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_PARTITION_PARTITIONS_H_
