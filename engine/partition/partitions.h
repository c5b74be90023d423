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
//
// Thread safety: BuildPartitions may run in any thread; it reads one
// snapshot of the dataset. A PartitionedIndex may be used from any number of
// threads (its partition table is under a mutex).
#ifndef GULPDB_ENGINE_PARTITION_PARTITIONS_H_
#define GULPDB_ENGINE_PARTITION_PARTITIONS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/index_source.h"
#include "gulpdb/dataset.h"
#include "index/lmdb_env.h"
#include "index/partition_root.h"
#include "index/records.h"

namespace gulpdb::engine {

// Returns the path of a local copy of the partition named `sha256` (the
// node cache downloads it; tests read a directory). Throws what it throws
// (NotFoundError for a partition it cannot find).
using PartitionFetch = std::function<std::string(const std::string& sha256)>;

// A fetch from a directory holding partitions by name.
PartitionFetch DirectoryFetch(const std::string& dir);

struct PartitionOptions {
  // A partition is cut when its estimated file size reaches this.
  uint64_t target_bytes = uint64_t{1} << 20;
  // Delta generations a root may list before the next publish merges them.
  uint32_t max_deltas = 4;
  // The format to write (index/partition_root.h); an older one only to
  // test that readers still read it.
  uint32_t format = index::kPartitionRootFormat;
  // Where the previous root's partitions are read from (a builder diffs
  // against them); null: the output directory.
  PartitionFetch previous;
};

struct BuildResult {
  index::PartitionRoot root;
  std::string root_bytes;                   // EncodePartitionRoot(root)
  std::string root_sha256;                  // the root file's name
  std::vector<std::string> new_partitions;  // hashes of partitions `previous` did not list
  uint64_t new_bytes = 0;                   // their bytes
  uint64_t total_bytes = 0;                 // bytes of every partition the root lists
  bool merged = false;                      // this build merged the deltas into the base
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
  // have come from DecodePartitionRoot (or ValidatePartitionRoot).
  PartitionedIndex(index::PartitionRoot root, PartitionFetch fetch, std::string name);
  ~PartitionedIndex() override;
  PartitionedIndex(const PartitionedIndex&) = delete;
  PartitionedIndex& operator=(const PartitionedIndex&) = delete;

  const index::PartitionRoot& root() const { return root_; }
  const index::DatasetInfo& info() const override { return info_; }

  std::optional<index::VideoRecord> FindVideo(std::string_view id) const override;
  // Entries of the order table.
  uint64_t OrderCount() const override { return order_count_; }
  // The id at `position` (0-based) of the order table; nullopt past its end.
  std::optional<std::string> OrderAt(uint64_t position) const override;
  void ScanOrder(std::string_view from, std::string_view to,
                 const std::function<bool(std::string_view order_key, std::string_view id)>& fn)
      const override;
  std::vector<uint64_t> OrderBoundaries() const override;
  std::optional<index::ChunkRecord> Chunk(uint32_t chunk) const override;
  void ScanChunks(
      const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn) const override;
  // Videos with from <= id < to (`to` empty: no upper bound) in id order;
  // `fn` returns false to stop.
  void ScanVideos(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn) const override;
  std::vector<std::pair<std::string, uint32_t>> MetaFields() const override;
  void ScanMeta(
      std::string_view prefix,
      const std::function<bool(std::string_view key, std::string_view id)>& fn) const override;
  uint64_t IndexBytes() const override;
  bool SplitsOmitted() const override { return root_.splits_omitted; }
  std::map<std::string, index::SplitHeader> SplitHeaders() const override;
  std::vector<std::string> SplitIds(uint32_t split) const override;
  // Ids whose meta has `field` equal to the JSON value `json_value`, in the
  // meta index's order ((chunk, insertion) order). Values longer than the
  // inline limit (index/query_keys.h) are keyed by their checksum: the
  // caller checks each candidate's meta, as Dataset::Select does. Empty when
  // the field has no meta index.
  std::vector<std::string> MetaLookup(std::string_view field,
                                      std::string_view json_value) const override;

  // Partitions fetched (first uses) so far.
  uint64_t fetches() const;

  // Entries of `kind` with from <= key < to (`to` empty: no bound), base
  // and deltas merged (newest wins, removed keys skipped); `fn` returns
  // false to stop. Logical keys and values (order: order key -> the rest of
  // the entry, index/partition_root.h).
  void Scan(index::PartitionKind kind, std::string_view from, std::string_view to,
            const std::function<bool(std::string_view key, std::string_view value)>& fn) const;

 private:
  struct Open;
  std::shared_ptr<Open> OpenPartition(const index::PartitionEntry& entry) const;
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
  PartitionFetch fetch_;
  std::string name_;
  index::DatasetInfo info_;
  uint64_t order_count_ = 0;
  // Pointers into root_.partitions, which never changes: per kind, the
  // delta generations newest first, then the base; the order partitions.
  std::vector<std::vector<const index::PartitionEntry*>> levels_[index::kPartitionKinds];
  std::vector<const index::PartitionEntry*> order_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::shared_ptr<Open>> open_;
  mutable uint64_t fetches_ = 0;
  mutable std::unordered_map<std::string, std::string> hints_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_PARTITION_PARTITIONS_H_
