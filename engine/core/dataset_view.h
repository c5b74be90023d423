// A dataset as the rooms above the storage core see it (engine/gulpio,
// engine/remote, and check and the front door at the top of engine/): its
// index read and written by typed records in transactions (IndexTxn), where
// its files live, its chunk bytes, and the few whole-dataset operations they
// need (create, open a local dataset or one on a given index, copy the index,
// bulk loading). Nothing here exposes LMDB handles or the core's insides
// (dataset_impl.h, which the build keeps out of those rooms' include trees):
// what a room may do to a dataset is what this header lists.
//
// Thread safety: the functions are as thread-safe as Dataset. An IndexTxn
// and its cursors belong to one thread.
#ifndef GULPDB_ENGINE_CORE_DATASET_VIEW_H_
#define GULPDB_ENGINE_CORE_DATASET_VIEW_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/query/splits_file.h"
#include "gulpdb/dataset.h"
#include "gulpdb/maintenance.h"
#include "index/lmdb_env.h"
#include "index/records.h"

namespace gulpdb {

// Where the LMDB environment and the writer lock live inside a dataset.
inline constexpr const char* kIndexDirName = "gulpdb.index";
inline constexpr const char* kWriterLockName = "writer.lock";

namespace util {
class ThreadPool;
}

namespace engine {

class ChunkSource;
struct IndexHandles;

// One transaction of a dataset's index, by typed record: a consistent
// snapshot to read (the constructor), or a write transaction (Update). The
// readers throw CorruptionError for a record that fails verification,
// naming the dataset and the id or chunk number. Valid while the dataset is.
class IndexTxn {
 public:
  // A read snapshot of `dataset`'s index.
  explicit IndexTxn(const Dataset& dataset);
  IndexTxn(const IndexTxn&) = delete;
  IndexTxn& operator=(const IndexTxn&) = delete;
  ~IndexTxn();

  // Runs `fn` in one write transaction of `dataset`'s index and commits it
  // as durably as the index commits (index::Env::Update: `fn` runs again
  // from the start when the map has to grow, so it keeps its results in
  // locals until Update returns). The caller holds the writer lock.
  static void Update(const Dataset& dataset, const std::function<void(IndexTxn&)>& fn);

  // The snapshot's transaction id: two snapshots with the same id hold the
  // same index.
  uint64_t id() const;

  index::DatasetInfo Info() const;
  uint64_t VideoCount() const;
  uint64_t ChunkCount() const;
  uint64_t OrderCount() const;

  bool HasChunk(uint32_t chunk) const;
  // CorruptionError when the index has no such chunk (a video points to it).
  index::ChunkRecord Chunk(uint32_t chunk) const;
  // The highest chunk number the index holds.
  std::optional<uint32_t> LastChunk() const;

  bool HasVideo(std::string_view id) const;
  std::optional<index::VideoRecord> FindVideo(std::string_view id) const;
  // The id at (chunk, seq) of the order table.
  std::optional<std::string_view> OrderAt(uint32_t chunk, uint64_t seq) const;
  // Every named split (engine/query/splits_file.h), with the split
  // databases `dbs` loaded before this transaction began.
  NamedSplits AllSplits(const QueryDbHandles& dbs) const;

  // Writes; only inside Update.
  void PutInfo(const index::DatasetInfo& info);
  void PutChunk(uint32_t chunk, const index::ChunkRecord& record);
  void PutVideo(std::string_view id, const index::VideoRecord& record);
  void PutOrder(uint32_t chunk, uint64_t seq, std::string_view id);
  void DeleteOrder(uint32_t chunk, uint64_t seq);

  // The chunk records in number order. number() and record() throw
  // CorruptionError for a damaged key or record; the walk may go on.
  class ChunkCursor {
   public:
    bool Valid() const { return valid_; }
    void Next();
    uint32_t number() const;
    index::ChunkRecord record() const;

   private:
    friend class IndexTxn;
    ChunkCursor(const IndexTxn& txn);
    const IndexTxn& txn_;
    index::Cursor cursor_;
    bool valid_;
  };
  ChunkCursor Chunks() const;

  // The video records in id order, from the first id >= `from`. record()
  // throws CorruptionError for a damaged record; the walk may go on.
  class VideoCursor {
   public:
    bool Valid() const { return valid_; }
    void Next();
    std::string_view id() const { return cursor_.key(); }
    index::VideoRecord record() const;
    // The frame count alone, without decoding the frames' records.
    uint32_t frame_count() const;

   private:
    friend class IndexTxn;
    VideoCursor(const IndexTxn& txn, std::string_view from);
    const IndexTxn& txn_;
    index::Cursor cursor_;
    bool valid_;
  };
  VideoCursor Videos(std::string_view from = {}) const;

  // The order table (position -> id) from the first key >= `from`
  // (index::OrderKey; empty: the start). key() is the table's key, to resume
  // a later walk after it.
  class OrderCursor {
   public:
    bool Valid() const { return valid_; }
    void Next();
    std::string_view key() const { return cursor_.key(); }
    std::string_view id() const { return cursor_.value(); }

   private:
    friend class IndexTxn;
    OrderCursor(const IndexTxn& txn, std::string_view from);
    index::Cursor cursor_;
    bool valid_;
  };
  OrderCursor Order(std::string_view from = {}) const;

 private:
  IndexTxn(const Dataset& dataset, index::Txn& txn);
  const Dataset& dataset_;
  std::optional<index::Txn> own_;  // a read snapshot's transaction
  index::Txn& txn_;
};

// Where `dataset`'s index lives (its gulpdb.index, or the index directory it
// was opened with), and the writer lock in it.
const std::string& IndexDirOf(const Dataset& dataset);
std::string WriterLockPathOf(const Dataset& dataset);
// Whether the index was opened read-only.
bool IndexReadOnly(const Dataset& dataset);
// The path of a file the index names, relative to the dataset directory;
// CorruptionError for a name that is not a safe relative name.
std::string ChunkPathOf(const Dataset& dataset, const std::string& file_name);
// Where the chunks of a dataset opened from a published manifest come from;
// null for a local dataset.
const ChunkSource* ChunkSourceOf(const Dataset& dataset);
// The dataset's decode pool, started on first use.
util::ThreadPool& DecodePoolOf(const Dataset& dataset);
// Dataset::ReadFrames of every frame of `id` with each frame's (or packet's)
// CRC-32C checked whatever the dataset was opened with: for work that writes
// what it decodes in a new form (an h264 dataset's export to JPEG), which
// must never turn a damaged frame into a clean-looking one.
DecodedFrames ReadFramesVerified(const Dataset& dataset, std::string_view id);
// The index handles the query room's functions take (engine/query).
const IndexHandles& IndexOf(const Dataset& dataset);

// A copy of the index in one file (index::Env::CopyTo).
void CopyIndexTo(const Dataset& dataset, const std::string& path, bool compact);

// Bulk loading of an index that nothing reads until it is moved into place
// (an import's temporary index): commits that skip the sync, one Sync at the
// end, and the mapped pages written released from the resident set.
void SetIndexDurable(const Dataset& dataset, bool durable);
void SyncIndex(const Dataset& dataset);
void ReleaseIndexPages(const Dataset& dataset);
// The longest key the index can hold (an id longer than it cannot be stored).
size_t MaxIndexKeySize(const Dataset& dataset);

// Deletes the files the index lists as obsolete (engine/core/obsolete_files.h);
// the caller holds the writer lock.
void RemoveObsoleteFiles(Dataset& dataset, const std::string& operation);

// Dataset::Create, which refuses a directory holding GulpIO chunks (an empty
// index would hide them); `allow_gulpio_files` lifts that refusal for the
// importer, which builds the index of exactly those chunks.
std::unique_ptr<Dataset> CreateDataset(const std::string& dir, const CreateOptions& options,
                                       bool allow_gulpio_files);

// Opens the local dataset `dir` (its index mapped in place): no published
// snapshot, no check of an imported dataset's GulpIO files. Dataset::Open
// (engine/open.cc) decides when this is the right open; the importer and
// Create call it directly. Sets `*info` to the dataset info when not null.
std::unique_ptr<Dataset> OpenLocalDataset(const std::string& dir, const OpenOptions& options,
                                          index::DatasetInfo* info = nullptr);

// A dataset named `dir` (a path or URL, for messages) whose index is `env`
// (a published snapshot) and whose chunks and label map come from `source`
// (null: the files under `dir`). CorruptionError for an index without the
// dataset's databases or info. Sets `*info` when not null.
std::unique_ptr<Dataset> OpenOnIndex(const std::string& dir, const OpenOptions& options,
                                     std::shared_ptr<index::Env> env,
                                     std::shared_ptr<const ChunkSource> source,
                                     index::DatasetInfo* info = nullptr);

// A read-only dataset named `name` (a URL or path, for messages) whose
// index is `index` (a partitioned snapshot, engine/partition) and whose
// chunks and label map come from `source` (null: the files under `name`,
// read as a local dataset's). Every read goes through `index`; nothing opens
// an LMDB environment of `name`. The dataset is read-only whatever
// `options.read_only` says: writers, Remove and maintenance throw
// InvalidArgumentError as for any read-only dataset. Splits and Split throw
// InvalidArgumentError (partitions carry no splits). IndexTxn, CopyIndexTo
// and the other functions of this header that need the LMDB index throw
// InvalidArgumentError for it. InvalidArgumentError for a null `index`.
class IndexSource;
std::unique_ptr<Dataset> OpenOnIndexSource(const std::string& name, const OpenOptions& options,
                                           std::shared_ptr<const IndexSource> index,
                                           std::shared_ptr<const ChunkSource> source);
// The index source `dataset` reads through; null for a dataset with an
// LMDB index.
const IndexSource* IndexSourceOf(const Dataset& dataset);

// How the core opens the datasets a merge names (its output and shards): as
// Dataset::Exists and Dataset::Open do, which live above the core (the front
// door, engine/open.cc, dispatches to every room) and pass themselves in.
struct DatasetOpener {
  std::function<bool(const std::string& dir, const std::string& index_dir)> exists;
  std::function<std::unique_ptr<Dataset>(const std::string& dir, const OpenOptions& options)> open;
};

// gulpdb::Merge (gulpdb/maintenance.h), opening every dataset with `opener`.
MergeReport MergeDatasets(const std::string& out, const std::vector<std::string>& shards,
                          const MergeOptions& options, const DatasetOpener& opener);

// Throws InvalidArgumentError "<operation>: ..." when `codec` is one this
// build cannot read or write (h264 without GULPDB_WITH_H264).
void RequireCodecSupport(Codec codec, const std::string& operation);

// Whether `dir` holds a gulpdb index (at `index_dir` when not empty).
bool LocalDatasetExists(const std::string& dir, const std::string& index_dir);
// Where the index of `dir` lives: `index_dir`, or <dir>/gulpdb.index.
std::string IndexDirOf(const std::string& dir, const std::string& index_dir);

}  // namespace engine
}  // namespace gulpdb

#endif  // GULPDB_ENGINE_CORE_DATASET_VIEW_H_
