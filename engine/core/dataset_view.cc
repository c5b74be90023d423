#include "engine/core/dataset_view.h"

#include <utility>

#include "engine/core/dataset_impl.h"
#include "engine/core/obsolete_files.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {

namespace {

const DatasetImpl& ImplOf(const Dataset& dataset) { return DatasetAccess::Of(dataset); }

// The LMDB index of `dataset`; InvalidArgumentError for a dataset read
// through an index source (OpenOnIndexSource), which has none.
index::Env& EnvOf(const Dataset& dataset) {
  const DatasetImpl& impl = ImplOf(dataset);
  if (!impl.env) {
    throw InvalidArgumentError("use the index of " + impl.dir +
                               ": it is read through a partitioned snapshot, not an LMDB index");
  }
  return *impl.env;
}

}  // namespace

IndexTxn::IndexTxn(const Dataset& dataset)
    : dataset_(dataset), own_(EnvOf(dataset).BeginRead()), txn_(*own_) {}

IndexTxn::IndexTxn(const Dataset& dataset, index::Txn& txn) : dataset_(dataset), txn_(txn) {}

IndexTxn::~IndexTxn() = default;

void IndexTxn::Update(const Dataset& dataset, const std::function<void(IndexTxn&)>& fn) {
  // A direct commit: nothing a stopped writer left in the journal may stay
  // past its checkpoint (engine/core/journal.h).
  engine::DatasetAccess::SettleJournal(const_cast<DatasetImpl&>(ImplOf(dataset)));
  EnvOf(dataset).Update([&](index::Txn& txn) {
    IndexTxn edit(dataset, txn);
    fn(edit);
  });
}

uint64_t IndexTxn::id() const { return txn_.id(); }

index::DatasetInfo IndexTxn::Info() const { return ImplOf(dataset_).GetInfo(txn_); }

uint64_t IndexTxn::VideoCount() const { return txn_.Count(ImplOf(dataset_).videos); }
uint64_t IndexTxn::ChunkCount() const { return txn_.Count(ImplOf(dataset_).chunks); }
uint64_t IndexTxn::OrderCount() const { return txn_.Count(ImplOf(dataset_).order); }

bool IndexTxn::HasChunk(uint32_t chunk) const {
  std::string_view bytes;
  return txn_.Get(ImplOf(dataset_).chunks, index::ChunkKey(chunk), &bytes);
}

index::ChunkRecord IndexTxn::Chunk(uint32_t chunk) const {
  return ImplOf(dataset_).GetChunk(txn_, chunk);
}

std::optional<uint32_t> IndexTxn::LastChunk() const {
  index::Cursor cursor(txn_, ImplOf(dataset_).chunks);
  if (!cursor.Last()) return std::nullopt;
  return index::DecodeChunkKey(cursor.key());
}

bool IndexTxn::HasVideo(std::string_view id) const {
  std::string_view bytes;
  return txn_.Get(ImplOf(dataset_).videos, id, &bytes);
}

std::optional<index::VideoRecord> IndexTxn::FindVideo(std::string_view id) const {
  return ImplOf(dataset_).FindRecord(txn_, id);
}

std::optional<std::string_view> IndexTxn::OrderAt(uint32_t chunk, uint64_t seq) const {
  std::string_view id;
  if (!txn_.Get(ImplOf(dataset_).order, index::OrderKey(chunk, seq), &id)) return std::nullopt;
  return id;
}

NamedSplits IndexTxn::AllSplits(const QueryDbHandles& dbs) const {
  return ReadAllSplits(txn_, dbs);
}

void IndexTxn::PutInfo(const index::DatasetInfo& info) {
  txn_.Put(ImplOf(dataset_).info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
}

void IndexTxn::PutChunk(uint32_t chunk, const index::ChunkRecord& record) {
  ImplOf(dataset_).PutChunk(txn_, chunk, record);
}

void IndexTxn::PutVideo(std::string_view id, const index::VideoRecord& record) {
  ImplOf(dataset_).PutVideo(txn_, id, record);
}

void IndexTxn::PutOrder(uint32_t chunk, uint64_t seq, std::string_view id) {
  txn_.Put(ImplOf(dataset_).order, index::OrderKey(chunk, seq), id);
}

void IndexTxn::DeleteOrder(uint32_t chunk, uint64_t seq) {
  txn_.Del(ImplOf(dataset_).order, index::OrderKey(chunk, seq));
}

IndexTxn::ChunkCursor::ChunkCursor(const IndexTxn& txn)
    : txn_(txn), cursor_(txn.txn_, ImplOf(txn.dataset_).chunks), valid_(cursor_.First()) {}

void IndexTxn::ChunkCursor::Next() { valid_ = cursor_.Next(); }

uint32_t IndexTxn::ChunkCursor::number() const { return index::DecodeChunkKey(cursor_.key()); }

index::ChunkRecord IndexTxn::ChunkCursor::record() const {
  return ImplOf(txn_.dataset_).DecodeChunkAt(cursor_.key(), cursor_.value());
}

IndexTxn::ChunkCursor IndexTxn::Chunks() const { return ChunkCursor(*this); }

IndexTxn::VideoCursor::VideoCursor(const IndexTxn& txn, std::string_view from)
    : txn_(txn),
      cursor_(txn.txn_, ImplOf(txn.dataset_).videos),
      valid_(from.empty() ? cursor_.First() : cursor_.Seek(from)) {}

void IndexTxn::VideoCursor::Next() { valid_ = cursor_.Next(); }

index::VideoRecord IndexTxn::VideoCursor::record() const {
  const std::string_view id = cursor_.key();
  return index::DecodeVideoRecord(
      ImplOf(txn_.dataset_).Unseal(id, cursor_.value(), index::RecordKind::kVideo), id);
}

uint32_t IndexTxn::VideoCursor::frame_count() const {
  const std::string_view id = cursor_.key();
  return index::DecodeFrameCount(
      ImplOf(txn_.dataset_).Unseal(id, cursor_.value(), index::RecordKind::kVideo), id);
}

IndexTxn::VideoCursor IndexTxn::Videos(std::string_view from) const {
  return VideoCursor(*this, from);
}

IndexTxn::OrderCursor::OrderCursor(const IndexTxn& txn, std::string_view from)
    : cursor_(txn.txn_, ImplOf(txn.dataset_).order),
      valid_(from.empty() ? cursor_.First() : cursor_.Seek(from)) {}

void IndexTxn::OrderCursor::Next() { valid_ = cursor_.Next(); }

IndexTxn::OrderCursor IndexTxn::Order(std::string_view from) const {
  return OrderCursor(*this, from);
}

const std::string& IndexDirOf(const Dataset& dataset) { return ImplOf(dataset).index_dir; }

std::string WriterLockPathOf(const Dataset& dataset) {
  return ImplOf(dataset).index_dir + "/" + kWriterLockName;
}

bool IndexReadOnly(const Dataset& dataset) {
  return !ImplOf(dataset).env || ImplOf(dataset).env->read_only();
}

std::string ChunkPathOf(const Dataset& dataset, const std::string& file_name) {
  return ImplOf(dataset).ChunkPath(file_name);
}

const ChunkSource* ChunkSourceOf(const Dataset& dataset) { return ImplOf(dataset).remote.get(); }

util::ThreadPool& DecodePoolOf(const Dataset& dataset) { return ImplOf(dataset).DecodePool(); }

DecodedFrames ReadFramesVerified(const Dataset& dataset, std::string_view id) {
  std::vector<FrameRequest> one(1);
  one[0].id = std::string(id);
  return std::move(
      DatasetAccess::ReadDecoded(dataset, one, DecodeOptions(), /*always_verify=*/true).front());
}

void CopyIndexTo(const Dataset& dataset, const std::string& path, bool compact) {
  EnvOf(dataset).CopyTo(path, compact);
}

void SetIndexDurable(const Dataset& dataset, bool durable) { EnvOf(dataset).SetDurable(durable); }

void SyncIndex(const Dataset& dataset) { EnvOf(dataset).Sync(); }

void ReleaseIndexPages(const Dataset& dataset) { EnvOf(dataset).ReleaseMappedPages(); }

size_t MaxIndexKeySize(const Dataset& dataset) { return EnvOf(dataset).max_key_size(); }

void RemoveObsoleteFiles(Dataset& dataset, const std::string& operation) {
  RemoveObsoleteFiles(DatasetAccess::Of(dataset), operation);
}

std::unique_ptr<Dataset> OpenOnIndex(const std::string& dir, const OpenOptions& options,
                                     std::shared_ptr<index::Env> env,
                                     std::shared_ptr<const ChunkSource> source,
                                     index::DatasetInfo* info) {
  auto impl = std::make_shared<DatasetImpl>(dir, options);
  const index::DatasetInfo attached = impl->AttachEnv(std::move(env));
  if (info != nullptr) *info = attached;
  impl->remote = std::move(source);
  return DatasetAccess::Make(std::move(impl));
}

}  // namespace gulpdb::engine
