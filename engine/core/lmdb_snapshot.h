// The LMDB index's implementation of IndexSource (index_source.h): one read
// transaction of a dataset's index, and ReadSnapshot, how every read of the
// storage core takes the snapshot of one operation, whatever the index.
//
// An LmdbSnapshot holds its read transaction from construction to
// destruction, so it lives for one operation: taken by a call, dropped
// before the call returns (an open read transaction pins the pages it sees
// and keeps the map from growing). Record views it returns (FindVideoMeta,
// the views passed to scans) lie in the transaction's map: valid until it
// is dropped (a misaligned record is copied per thread: until the next
// decode on the thread, index/records.h).
//
// Thread safety: an LmdbSnapshot and a ReadSnapshot belong to the thread
// that took them (an LMDB read transaction does).
#ifndef GULPDB_ENGINE_CORE_LMDB_SNAPSHOT_H_
#define GULPDB_ENGINE_CORE_LMDB_SNAPSHOT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/index_source.h"
#include "engine/query/query_dbs.h"
#include "index/lmdb_env.h"

namespace gulpdb::engine {

class LmdbSnapshot final : public IndexSource {
 public:
  // A read transaction of `impl`'s index. `dbs`: the query databases'
  // handles, loaded before it begins (query_dbs.h).
  LmdbSnapshot(const DatasetImpl& impl, const QueryDbHandles& dbs);

  // QuerySource
  std::optional<index::VideoRecord> FindVideo(std::string_view id) const override;
  void ScanVideos(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn) const override;
  std::optional<index::VideoMetaView> FindVideoMeta(std::string_view id,
                                                    index::VideoRecord* scratch) const override;
  void ScanVideoMeta(std::string_view from, std::string_view to,
                     const std::function<bool(std::string_view id, const index::VideoMetaView&)>&
                         fn) const override;
  std::vector<std::pair<std::string, index::MetaFieldValue>> MetaFields() const override;
  void ScanMeta(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view key, std::string_view id)>& fn) const override;
  bool SplitsOmitted() const override { return false; }
  std::map<std::string, index::SplitHeader> SplitHeaders() const override;
  std::vector<std::string> SplitIds(uint32_t split) const override;

  // IndexSource
  uint64_t SnapshotId() const override { return txn_.id(); }
  const index::DatasetInfo& info() const override;
  std::optional<index::VideoRecord> FindFrames(
      std::string_view id, const std::function<void(uint32_t chunk)>* chunk_known) const override;
  bool HasVideo(std::string_view id) const override;
  std::optional<uint32_t> FrameCount(std::string_view id) const override;
  uint64_t VideoCount() const override;
  uint64_t OrderCount() const override;
  std::optional<std::string> OrderAt(uint64_t position) const override;
  std::vector<std::string> OrderRange(uint64_t start, uint64_t count) const override;
  std::optional<std::string> OrderIdAt(std::string_view order_key) const override;
  void ScanOrder(std::string_view from, std::string_view to,
                 const std::function<bool(std::string_view order_key, std::string_view id)>& fn)
      const override;
  std::vector<uint64_t> OrderBoundaries() const override;
  std::optional<index::ChunkRecord> Chunk(uint32_t chunk) const override;
  void ScanChunks(
      const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn) const override;
  uint64_t IndexBytes() const override;
  void ScanChunksChecked(const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn,
                         const Damaged& damaged) const override;
  void ScanVideosChecked(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn,
      const Damaged& damaged) const override;
  void CheckQueryData(const Damaged& problem) const override;

 private:
  const DatasetImpl& impl_;
  QueryDbHandles dbs_;
  mutable index::Txn txn_;
  mutable std::optional<index::DatasetInfo> info_;
};

// The snapshot of one operation on a dataset: a new LMDB read transaction,
// or the dataset's partitioned snapshot (which never changes). Valid while
// the dataset is; drop it before the operation returns.
class ReadSnapshot {
 public:
  enum class Query { kNo, kYes };
  // kYes: the operation reads the query databases (meta index, splits),
  // whose handles are refreshed first (another process may have made them).
  explicit ReadSnapshot(const DatasetImpl& impl, Query query = Query::kNo);
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

  const IndexSource& operator*() const { return *source_; }
  const IndexSource* operator->() const { return source_; }
  // The snapshot as an owner other threads may keep and use (a partitioned
  // one); null for an LMDB snapshot, whose transaction belongs to this
  // thread and ends with this object.
  std::shared_ptr<const IndexSource> shared() const { return shared_; }

 private:
  std::optional<LmdbSnapshot> lmdb_;
  std::shared_ptr<const IndexSource> shared_;
  const IndexSource* source_ = nullptr;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_LMDB_SNAPSHOT_H_
