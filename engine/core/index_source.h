// One snapshot of a dataset's index, read by typed record: what every read
// of a dataset goes through (the read API in dataset.cc, the chunk reader,
// check, and through QuerySource, engine/query/index_handles.h, queries and
// splits), so that each read is written once for every kind of index. Two
// implementations: a read transaction of the dataset's LMDB index
// (LmdbSnapshot, engine/core/lmdb_snapshot.h), and a partitioned snapshot
// (engine/partition's PartitionedIndex, the index of a dataset opened with
// OpenOnIndexSource, dataset_view.h). Writers do not use it: they keep LMDB
// write transactions.
//
// A snapshot lives for one operation: the core takes one per call
// (lmdb_snapshot.h, Snapshot), uses it and drops it, so that no LMDB read
// transaction stays open across calls (one pins pages and blocks the map's
// growth). A partitioned snapshot never changes, so the core reuses the
// dataset's one. Views a snapshot returns or passes are valid while it
// lives, and no longer.
//
// Records are returned verified (seal, size): a damaged one is a
// CorruptionError naming where it came from, never a wrong answer.
//
// Thread safety: as each implementation says: a PartitionedIndex may be
// used from any number of threads; an LmdbSnapshot belongs to the thread
// that took it.
#ifndef GULPDB_ENGINE_CORE_INDEX_SOURCE_H_
#define GULPDB_ENGINE_CORE_INDEX_SOURCE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/query/index_handles.h"
#include "gulpdb/dataset.h"
#include "index/records.h"

namespace gulpdb::engine {

// FindVideo, ScanVideos, FindVideoMeta, ScanVideoMeta, MetaFields, ScanMeta
// and the splits come from QuerySource.
class IndexSource : public QuerySource {
 public:
  ~IndexSource() override = default;

  // Two snapshots with the same non-zero id hold the same index (an LMDB
  // transaction id); 0 for a snapshot that never changes.
  virtual uint64_t SnapshotId() const { return 0; }

  // The frames of video `id` (place, frames, checksums, keyframes and
  // decoder parameters; `meta_data` left empty): the read path's lookup,
  // which copies no meta. nullopt when there is none. `chunk_known`, when
  // not null, is called with the video's chunk as soon as the index knows
  // it, so that the caller can start fetching what the read needs of the
  // chunk while the record is still on its way (a partitioned index knows
  // the chunk from the order key, before it fetches the order partition).
  virtual std::optional<index::VideoRecord> FindFrames(
      std::string_view id, const std::function<void(uint32_t chunk)>* chunk_known) const;
  // Whether video `id` exists, and its frame count: by default from FindFrames.
  virtual bool HasVideo(std::string_view id) const;
  virtual std::optional<uint32_t> FrameCount(std::string_view id) const;
  // The number of video records (equal to OrderCount in a sound index); by
  // default OrderCount.
  virtual uint64_t VideoCount() const { return OrderCount(); }

  // The dataset info record of the snapshot.
  virtual const index::DatasetInfo& info() const = 0;

  // Entries of the order table (position -> id): the dataset's video count.
  virtual uint64_t OrderCount() const = 0;
  // The id at `position` (0-based) of the order table; nullopt past its end.
  virtual std::optional<std::string> OrderAt(uint64_t position) const = 0;
  // The order table's entries with from <= order key < to (index::OrderKey;
  // `to` empty: no bound) in order; `fn` returns false to stop.
  virtual void ScanOrder(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view order_key, std::string_view id)>& fn) const = 0;
  // The ids at positions [start, start + count) of the order table (fewer
  // past its end). By default by OrderAt; an LMDB snapshot seeks straight
  // to the chunk holding `start`.
  virtual std::vector<std::string> OrderRange(uint64_t start, uint64_t count) const;
  // The id whose order entry has key `order_key` (index::OrderKey); nullopt
  // when there is none. By default by ScanOrder.
  virtual std::optional<std::string> OrderIdAt(std::string_view order_key) const;
  // Whether a walk of the order table gains from fetching its blocks ahead
  // on other threads (order_scan.h): true for an index that fetches parts
  // of itself on first use and may be used from any number of threads (a
  // partitioned snapshot); false by default.
  virtual bool ReadsAhead() const { return false; }
  // The first position of each block of the order table stored together
  // (each order partition; fixed blocks of an LMDB index), ascending,
  // starting with 0.
  virtual std::vector<uint64_t> OrderBoundaries() const = 0;

  // The record of chunk `chunk`; nullopt when the index has none.
  virtual std::optional<index::ChunkRecord> Chunk(uint32_t chunk) const = 0;
  // Every chunk record in number order; `fn` returns false to stop.
  virtual void ScanChunks(
      const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn) const = 0;

  // Ids whose meta has `field` equal to the JSON value `json_value`, in the
  // meta index's order ((chunk, insertion) order); empty when the field has
  // no meta index. Long values are keyed by their checksum
  // (index/query_keys.h): the caller checks each candidate's meta.
  // The same for every index: by MetaFields and ScanMeta.
  std::vector<std::string> MetaLookup(std::string_view field, std::string_view json_value) const;

  // The bytes of the whole index (every partition), for Stats.
  virtual uint64_t IndexBytes() const = 0;

  // Walks for check, which reports a damaged record and goes on where the
  // index can: `damaged(where, what)` is called for a record that fails
  // verification, and an LMDB snapshot goes on at the next key. By default
  // as ScanChunks / ScanVideos (a partition that fails verification throws,
  // which ends the walk of its kind).
  using Damaged = std::function<void(std::string where, std::string what)>;
  virtual void ScanChunksChecked(
      const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn,
      const Damaged& damaged) const;
  virtual void ScanVideosChecked(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn,
      const Damaged& damaged) const;
  // Checks the query data (meta index, splits) against the records, for
  // check: calls `problem(where, what)` for each problem. By default every
  // meta index entry and split member is looked up; an LMDB snapshot also
  // checks the splits' back references and counts (engine/query/
  // query_txn.h, CheckQueryDatabases).
  virtual void CheckQueryData(const Damaged& problem) const;
};

// What Dataset::Stats answers, read from `snapshot`.
DatasetStats SnapshotStats(const IndexSource& snapshot);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_INDEX_SOURCE_H_
