// The batch a Writer is building and what it does to the index
// (write_batch.h; the commit protocol, docs/format/index_format.md). Its
// journal record is journal_record.cc's.
#include "engine/core/write_batch.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "engine/core/dataset_impl.h"
#include "engine/core/fault_injection.h"
#include "engine/core/meta_edit.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {

void WriteBatch::Clear() {
  pending.clear();
  pending_by_id.clear();
  removals.clear();
  touched.clear();
  split_ops.clear();
  edits.clear();
}

void WriteBatch::TruncateWritten() noexcept {
  for (auto& [n, t] : touched) {
    try {
      t.file->TruncateTo(t.committed_length);
    } catch (const Error&) {
    }
  }
}

bool WriteBatch::ResolveDuplicate(const DatasetImpl& ds, OnDuplicate policy,
                                  const std::string& id) {
  bool exists = false;
  auto it = pending_by_id.find(id);
  if (it != pending_by_id.end()) {
    exists = true;
  } else if (removals.count(id) == 0) {
    index::Txn txn = ds.env->BeginRead();
    std::string_view bytes;
    exists = txn.Get(ds.videos, id, &bytes);
  }
  if (!exists) return true;
  switch (policy) {
    case OnDuplicate::kError:
      throw InvalidArgumentError("append '" + id + "' to " + ds.dir +
                                 (it != pending_by_id.end() ? ": appended twice in this batch"
                                                            : ": the id already exists"));
    case OnDuplicate::kSkip:
      return false;
    case OnDuplicate::kReplace:
      if (it != pending_by_id.end()) {
        pending[it->second].dropped = true;
        pending_by_id.erase(it);
      }
      return true;
  }
  return true;
}

bool WriteBatch::Remove(const DatasetImpl& ds, std::string_view id_view) {
  std::string id(id_view);
  edits.erase(id);
  auto it = pending_by_id.find(id);
  if (it != pending_by_id.end()) {
    pending[it->second].dropped = true;
    pending_by_id.erase(it);
    removals.insert(id);  // a committed video of that id may exist too
    return true;
  }
  if (removals.count(id) != 0) return false;
  index::Txn txn = ds.env->BeginRead();
  std::string_view bytes;
  if (!txn.Get(ds.videos, id, &bytes)) return false;
  removals.insert(std::move(id));
  return true;
}

void WriteBatch::Apply(DatasetImpl& ds, index::Txn& txn, std::optional<uint32_t> chunk,
                       index::DatasetInfo* out_info,
                       std::map<uint32_t, index::ChunkRecord>* out_chunks) const {
  index::DatasetInfo next = ds.GetInfo(txn);
  // The meta index and the splits. Their handles are all known before this
  // transaction began: found when the writer took the lock (nobody else can
  // create them while it holds it) or created by Commit.
  QueryTxn query(ds, txn, ds.query.Load());
  std::map<uint32_t, index::ChunkRecord> chunks;
  auto chunk_ref = [&](uint32_t n) -> index::ChunkRecord& {
    auto it = chunks.find(n);
    if (it == chunks.end()) it = chunks.emplace(n, ds.GetChunk(txn, n)).first;
    return it->second;
  };
  // Forgets the committed video `id` (its bytes become garbage).
  auto forget = [&](const std::string& id, const index::VideoRecord& old) {
    index::ChunkRecord& c = chunk_ref(old.chunk);
    c.live_videos -= std::min<uint32_t>(c.live_videos, 1);
    c.live_bytes -= std::min(c.live_bytes, old.frame_bytes());
    txn.Del(ds.order, index::OrderKey(old.chunk, old.seq));
    next.total_videos -= std::min<uint64_t>(next.total_videos, 1);
    next.total_frames -= std::min<uint64_t>(next.total_frames, old.frames.size());
    query.Unindex(id, old);
  };
  for (const std::string& id : removals) {
    if (auto old = ds.FindRecord(txn, id)) {
      forget(id, *old);
      txn.Del(ds.videos, id);
      query.DropFromSplits(id);
    }
  }
  for (const Pending& p : pending) {
    if (p.dropped) continue;
    if (auto old = ds.FindRecord(txn, p.id)) forget(p.id, *old);
    index::VideoRecord record = p.record;
    record.seq = next.next_seq++;
    ds.PutVideo(txn, p.id, record);
    txn.Put(ds.order, index::OrderKey(record.chunk, record.seq), p.id);
    query.Index(p.id, record);
    index::ChunkRecord& c = chunk_ref(record.chunk);
    ++c.live_videos;
    c.live_bytes += record.frame_bytes();
    ++next.total_videos;
    next.total_frames += record.frames.size();
  }
  for (const auto& [n, t] : touched) {
    index::ChunkRecord& c = chunk_ref(n);
    c.committed_length = t.end;
    if (n != chunk) c.state = index::ChunkState::kFull;
  }
  for (const Pending& p : pending) ++chunk_ref(p.record.chunk).appended_videos;
  ApplyMetaEdits(ds, txn, query, edits, chunk_ref);
  for (const SplitOp& op : split_ops) query.Apply(op);
  // A batch of split changes alone may commit before any chunk exists.
  if (chunk) {
    next.dirty_chunks.assign(1, *chunk);
  } else {
    next.dirty_chunks.clear();
  }
  for (const auto& [n, c] : chunks) {
    ds.PutChunk(txn, n, c);
  }
  txn.Put(ds.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(next));
  *out_info = std::move(next);
  *out_chunks = std::move(chunks);
  fault::Reached(fault::Point::kBeforeIndexCommit);
}

}  // namespace gulpdb::engine
