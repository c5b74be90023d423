// Internals of Dataset: the storage core's hub, shared by the core's
// translation units (dataset.cc, writer.cc, the read path, maintenance) and
// by them only. The rooms above the core (engine/gulpio, engine/remote, and
// check and the front door) see a dataset through dataset_view.h, and the
// build keeps this header out of their include trees; rooms below the core
// (engine/query) see only its base, IndexHandles. Not part of the public API.
#ifndef GULPDB_ENGINE_CORE_DATASET_IMPL_H_
#define GULPDB_ENGINE_CORE_DATASET_IMPL_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/chunk_file.h"
#include "engine/core/chunk_file_cache.h"
#include "engine/core/chunk_source.h"
#include "engine/core/dataset_view.h"
#include "engine/core/index_source.h"
#include "engine/query/index_handles.h"
#include "gulpdb/dataset.h"
#include "index/lmdb_env.h"
#include "index/records.h"
#include "index/seal.h"
#include "util/file_io.h"
#include "util/thread_pool.h"

namespace gulpdb {

// The index handles (dir, env, videos, query, sealed, Seal, Unseal) are in
// the base: what the query room sees of a dataset (engine/query/index_handles.h).
struct Dataset::Impl : engine::IndexHandles {
  std::string index_dir;
  OpenOptions options;
  index::Dbi chunks = 0, order = 0, info = 0;
  ChunkFileCache files;
  // How the frames are stored (DatasetInfo::codec; fixed at create).
  Codec codec = Codec::kJpeg;

  // Set for a dataset opened from a published manifest ("s3://...", or a
  // local dataset on a network file system): where its chunks and label map
  // come from (engine/core/chunk_source.h; the remote room's RemoteSource).
  // For an object store `dir` is the URL and `env` the cached index snapshot.
  std::shared_ptr<const engine::ChunkSource> remote;

  // Set for a dataset opened on an index source (OpenOnIndexSource: a
  // partitioned snapshot), and `env` is then null. Nothing reads it but
  // ReadSnapshot (lmdb_snapshot.h), which every read takes: the one place
  // where the two kinds of index differ.
  std::shared_ptr<const engine::IndexSource> index_source;

  // The pool that decodes frames, started on first use.
  util::ThreadPool& DecodePool() const;

  Impl(std::string dir_in, const OpenOptions& options_in);

  // Takes `env_in` as the index: opens its databases and reads the dataset
  // info, which it returns (every Open ends here). CorruptionError for an
  // index without them.
  index::DatasetInfo AttachEnv(std::shared_ptr<index::Env> env_in);

  // The path of a file the index names (a chunk file, a .gmeta), relative
  // to `dir`. Throws CorruptionError for a name that is not a safe relative
  // name (util/relative_name.h): a damaged or hostile index never names a
  // path outside the dataset.
  std::string ChunkPath(const std::string& file_name) const;
  // A version's dataset (engine/version): where chunk files compaction kept
  // for the tags live (<dir>/gulpdb.versions/chunks); ChunkPath answers a
  // name from there when `dir` no longer has it. Empty for any other dataset.
  std::string retained_chunks;

  using RecordKind = index::RecordKind;
  void PutVideo(index::Txn& txn, std::string_view id, const index::VideoRecord& record) const;
  void PutChunk(index::Txn& txn, uint32_t chunk, const index::ChunkRecord& record) const;
  // Decodes the value at a cursor over the chunks database.
  index::ChunkRecord DecodeChunkAt(std::string_view key, std::string_view value) const;

  // Readers of records inside a caller's transaction; they throw
  // CorruptionError for records that fail verification.
  std::optional<index::VideoRecord> FindRecord(const index::Txn& txn, std::string_view id) const;
  index::ChunkRecord GetChunk(const index::Txn& txn, uint32_t chunk) const;
  index::DatasetInfo GetInfo(const index::Txn& txn) const;
  // The open chunk file for reading, from the cache or opened now.
  std::shared_ptr<const engine::ChunkFile> ChunkForRead(const index::Txn& txn,
                                                        uint32_t chunk) const;
  // The same, with the chunk's record from `record` (called on a cache miss).
  std::shared_ptr<const engine::ChunkFile> ChunkForRead(
      uint32_t chunk, const std::function<index::ChunkRecord()>& record) const;
  // The record of `chunk` in `snapshot`; CorruptionError as GetChunk when
  // it has none.
  index::ChunkRecord ChunkOf(const engine::IndexSource& snapshot, uint32_t chunk) const;
  VideoInfo ToVideoInfo(std::string_view id, index::VideoRecord&& record) const;
  void ScanOrder(std::string_view from_key, std::string_view until_key,
                 const std::function<bool(const VideoInfo&)>& fn) const;
  // The ids of positions [0, limit) of the order table in order, from one
  // snapshot (read ahead where the index fetches: engine/core/
  // order_scan.h), until `fn` returns false. The view passed to `fn` is
  // valid only during the call.
  void ScanOrderIds(uint64_t limit, const std::function<bool(std::string_view id)>& fn) const;

  // Where each chunk's videos start in the order table of one snapshot
  // (from the chunk records' live counts, which check verifies): built on
  // the first positional read of a snapshot, O(chunks), and kept until the
  // index changes.
  struct OrderStarts {
    uint64_t txn_id = 0;
    std::vector<uint32_t> chunks;  // ascending
    std::vector<uint64_t> first;   // first position of each chunk's videos
    uint64_t total = 0;
  };
  std::shared_ptr<const OrderStarts> OrderStartsOf(index::Txn& txn) const;

 private:
  mutable std::once_flag pool_once_;
  mutable std::mutex order_starts_mutex_;
  mutable std::shared_ptr<const OrderStarts> order_starts_;
  mutable std::unique_ptr<util::ThreadPool> pool_;
};

namespace engine {

// The one door from the engine's modules to a Dataset's internals (a friend
// of Dataset), so that the public header exposes none of them.
class DatasetAccess {
 public:
  using Impl = Dataset::Impl;
  static Impl& Of(Dataset& dataset) { return *dataset.impl_; }
  static const Impl& Of(const Dataset& dataset) { return *dataset.impl_; }
  static std::unique_ptr<Dataset> Make(std::shared_ptr<Impl> impl) {
    return std::unique_ptr<Dataset>(new Dataset(std::move(impl)));
  }

  // StoredFrames' insides, for the read path (engine/core/chunk_reader.cc).
  static char* AllocateBuffer(StoredFrames& frames, size_t bytes);
  static std::vector<std::pair<size_t, size_t>>& Spans(StoredFrames& frames) {
    return frames.spans_;
  }
  static std::vector<uint32_t>& Indices(StoredFrames& frames) { return frames.indices_; }
  // Dataset::ReadBatch, every frame checked when `always_verify`.
  static std::vector<DecodedFrames> ReadDecoded(const Dataset& dataset,
                                                const std::vector<FrameRequest>& requests,
                                                const DecodeOptions& options, bool always_verify) {
    return dataset.ReadDecoded(requests, options, always_verify);
  }
  // Replays the journal of the dataset `ds` under the writer lock `lock`
  // (engine/core/journal.h, RecoverJournalOnOpen).
  static void ReplayJournal(std::shared_ptr<Impl> ds, util::FileLock lock);
  // For writes that do not go through a Writer (remove, compact, merge,
  // publish), called while holding the writer lock: retires what a stopped
  // writer of this boot left in the journal, so that their commits are not
  // undone by a later recovery (engine/core/journal.h).
  static void SettleJournal(Impl& ds);
  // Appends a video whose frames are `frames` as stored (JPEG bytes or H.264
  // packets, moved exactly) with the meta_data list and, for an H.264 video,
  // the keyframes and parameters of `source`: how compaction moves a video.
  static bool AppendStored(Writer& writer, std::string_view id,
                           const std::vector<std::string_view>& frames,
                           std::string_view meta_data_list, const index::VideoRecord& source);
};

using DatasetImpl = DatasetAccess::Impl;

}  // namespace engine
}  // namespace gulpdb

#endif  // GULPDB_ENGINE_CORE_DATASET_IMPL_H_
