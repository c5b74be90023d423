#include "engine/core/lmdb_snapshot.h"

#include <algorithm>

#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "index/query_keys.h"
#include "index/seal.h"

namespace gulpdb::engine {
namespace {

using RecordKind = index::RecordKind;

bool Before(std::string_view key, std::string_view to) { return to.empty() || key < to; }

// Walks `dbi` from the first key >= `from` while keys are before `to`,
// until `fn` returns false.
template <typename Fn>
void Walk(index::Txn& txn, index::Dbi dbi, std::string_view from, std::string_view to, Fn&& fn) {
  if (!to.empty() && to <= from) return;
  index::Cursor cursor(txn, dbi);
  for (bool ok = from.empty() ? cursor.First() : cursor.Seek(from); ok && Before(cursor.key(), to);
       ok = cursor.Next()) {
    if (!fn(cursor)) return;
  }
}

// Positions per block of a local order table (OrderBoundaries): what a
// sampler reads together.
constexpr uint64_t kLocalOrderBlock = 2048;

}  // namespace

LmdbSnapshot::LmdbSnapshot(const DatasetImpl& impl, const QueryDbHandles& dbs)
    : impl_(impl), dbs_(dbs), txn_(impl.env->BeginRead()) {}

std::optional<index::VideoRecord> LmdbSnapshot::FindVideo(std::string_view id) const {
  return impl_.FindRecord(txn_, id);
}

void LmdbSnapshot::ScanVideos(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn) const {
  Walk(txn_, impl_.videos, from, to, [&](index::Cursor& c) {
    const std::string_view id = c.key();
    return fn(id, index::DecodeVideoRecord(impl_.Unseal(id, c.value(), RecordKind::kVideo), id));
  });
}

std::optional<index::VideoMetaView> LmdbSnapshot::FindVideoMeta(std::string_view id,
                                                                index::VideoRecord*) const {
  std::string_view bytes;
  if (!txn_.Get(impl_.videos, id, &bytes)) return std::nullopt;
  return index::DecodeVideoMeta(impl_.Unseal(id, bytes, RecordKind::kVideo), id);
}

void LmdbSnapshot::ScanVideoMeta(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view id, const index::VideoMetaView&)>& fn) const {
  Walk(txn_, impl_.videos, from, to, [&](index::Cursor& c) {
    const std::string_view id = c.key();
    return fn(id, index::DecodeVideoMeta(impl_.Unseal(id, c.value(), RecordKind::kVideo), id));
  });
}

std::vector<std::pair<std::string, index::MetaFieldValue>> LmdbSnapshot::MetaFields() const {
  std::vector<std::pair<std::string, index::MetaFieldValue>> fields;
  if (!dbs_.has_meta_index()) return fields;
  Walk(txn_, dbs_.meta_fields, {}, {}, [&](index::Cursor& c) {
    fields.emplace_back(std::string(c.key()), index::DecodeMetaField(c.value()));
    return true;
  });
  return fields;
}

void LmdbSnapshot::ScanMeta(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view key, std::string_view id)>& fn) const {
  if (!dbs_.has_meta_index()) return;
  Walk(txn_, dbs_.meta_index, from, to, [&](index::Cursor& c) { return fn(c.key(), c.value()); });
}

std::map<std::string, index::SplitHeader> LmdbSnapshot::SplitHeaders() const {
  return ReadSplitHeaders(txn_, dbs_);
}

std::vector<std::string> LmdbSnapshot::SplitIds(uint32_t split) const {
  return ReadSplitIds(txn_, dbs_, split);
}

const index::DatasetInfo& LmdbSnapshot::info() const {
  if (!info_) info_ = impl_.GetInfo(txn_);
  return *info_;
}

std::optional<index::VideoRecord> LmdbSnapshot::FindFrames(
    std::string_view id, const std::function<void(uint32_t chunk)>* chunk_known) const {
  // Frames only: the read path has no use for the meta text.
  std::string_view bytes;
  if (!txn_.Get(impl_.videos, id, &bytes)) return std::nullopt;
  std::optional<index::VideoRecord> record =
      index::DecodeVideoFrames(impl_.Unseal(id, bytes, RecordKind::kVideo), id);
  if (chunk_known != nullptr) (*chunk_known)(record->chunk);
  return record;
}

bool LmdbSnapshot::HasVideo(std::string_view id) const {
  std::string_view bytes;
  return txn_.Get(impl_.videos, id, &bytes);
}

std::optional<uint32_t> LmdbSnapshot::FrameCount(std::string_view id) const {
  std::string_view bytes;
  if (!txn_.Get(impl_.videos, id, &bytes)) return std::nullopt;
  return index::DecodeFrameCount(impl_.Unseal(id, bytes, RecordKind::kVideo), id);
}

uint64_t LmdbSnapshot::VideoCount() const { return txn_.Count(impl_.videos); }

uint64_t LmdbSnapshot::OrderCount() const { return txn_.Count(impl_.order); }

std::optional<std::string> LmdbSnapshot::OrderAt(uint64_t position) const {
  std::vector<std::string> ids = OrderRange(position, 1);
  if (ids.empty()) return std::nullopt;
  return std::move(ids.front());
}

std::vector<std::string> LmdbSnapshot::OrderRange(uint64_t start, uint64_t count) const {
  std::vector<std::string> ids;
  const uint64_t total = txn_.Count(impl_.order);
  if (start >= total || count == 0) return ids;
  count = std::min(count, total - start);
  ids.reserve(count);
  index::Cursor cursor(txn_, impl_.order);
  // Straight to the chunk holding `start`, then a walk inside it. The live
  // counts of the chunk records add up to the order table's size unless the
  // index is damaged (check reports it); then a walk from the first entry.
  bool ok = false;
  const std::shared_ptr<const DatasetImpl::OrderStarts> starts = impl_.OrderStartsOf(txn_);
  if (starts->total == total) {
    const size_t i =
        static_cast<size_t>(std::upper_bound(starts->first.begin(), starts->first.end(), start) -
                            starts->first.begin() - 1);
    const uint32_t chunk = starts->chunks[i];
    ok = cursor.Seek(index::OrderKey(chunk, 0));
    for (uint64_t skip = start - starts->first[i]; ok && skip > 0; --skip) ok = cursor.Next();
    if (ok && chunk != UINT32_MAX && cursor.key() >= index::OrderKey(chunk + 1, 0)) ok = false;
  }
  if (!ok) {
    ok = cursor.First();
    for (uint64_t skip = start; ok && skip > 0; --skip) ok = cursor.Next();
  }
  for (; ok && ids.size() < count; ok = cursor.Next()) ids.emplace_back(cursor.value());
  return ids;
}

std::optional<std::string> LmdbSnapshot::OrderIdAt(std::string_view order_key) const {
  std::string_view id;
  if (!txn_.Get(impl_.order, order_key, &id)) return std::nullopt;
  return std::string(id);
}

void LmdbSnapshot::ScanOrder(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view order_key, std::string_view id)>& fn) const {
  Walk(txn_, impl_.order, from, to, [&](index::Cursor& c) { return fn(c.key(), c.value()); });
}

std::vector<uint64_t> LmdbSnapshot::OrderBoundaries() const {
  std::vector<uint64_t> blocks{0};
  const uint64_t count = VideoCount();
  for (uint64_t p = kLocalOrderBlock; p < count; p += kLocalOrderBlock) blocks.push_back(p);
  return blocks;
}

std::optional<index::ChunkRecord> LmdbSnapshot::Chunk(uint32_t chunk) const {
  std::string_view bytes;
  const std::string key = index::ChunkKey(chunk);
  if (!txn_.Get(impl_.chunks, key, &bytes)) return std::nullopt;
  return impl_.DecodeChunkAt(key, bytes);
}

void LmdbSnapshot::ScanChunks(
    const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn) const {
  Walk(txn_, impl_.chunks, {}, {}, [&](index::Cursor& c) {
    return fn(index::DecodeChunkKey(c.key()), impl_.DecodeChunkAt(c.key(), c.value()));
  });
}

uint64_t LmdbSnapshot::IndexBytes() const { return impl_.env->used_bytes(); }

void LmdbSnapshot::ScanChunksChecked(
    const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn,
    const Damaged& damaged) const {
  Walk(txn_, impl_.chunks, {}, {}, [&](index::Cursor& c) {
    uint32_t n = 0;
    index::ChunkRecord record;
    try {
      n = index::DecodeChunkKey(c.key());
      record = impl_.DecodeChunkAt(c.key(), c.value());
    } catch (const CorruptionError& e) {
      damaged("chunk record " + std::to_string(n), e.what());
      return true;
    }
    return fn(n, record);
  });
}

void LmdbSnapshot::ScanVideosChecked(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn,
    const Damaged& damaged) const {
  Walk(txn_, impl_.videos, from, to, [&](index::Cursor& c) {
    const std::string_view id = c.key();
    index::VideoRecord record;
    try {
      record = index::DecodeVideoRecord(impl_.Unseal(id, c.value(), RecordKind::kVideo), id);
    } catch (const CorruptionError& e) {
      damaged("id '" + std::string(id) + "'", e.what());
      return true;
    }
    return fn(id, record);
  });
}

void LmdbSnapshot::CheckQueryData(const Damaged& problem) const {
  CheckQueryDatabases(impl_, problem);
}

ReadSnapshot::ReadSnapshot(const DatasetImpl& impl, Query query) {
  if (impl.index_source) {
    shared_ = impl.index_source;
    source_ = shared_.get();
    return;
  }
  if (query == Query::kYes) impl.query.Refresh(*impl.env);
  lmdb_.emplace(impl, impl.query.Load());
  source_ = &*lmdb_;
}

std::shared_ptr<const IndexSource> SnapshotOf(const Dataset& dataset) {
  const DatasetImpl& impl = DatasetAccess::Of(dataset);
  if (impl.index_source) return impl.index_source;
  impl.query.Refresh(*impl.env);
  return std::make_shared<const LmdbSnapshot>(impl, impl.query.Load());
}

}  // namespace gulpdb::engine
