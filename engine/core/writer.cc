// The write path: the commit protocol of docs/format/index_format.md.
//
//   1. Frames are written past the committed length of the current chunk
//      (a new chunk is first created and registered empty).
//   2. Commit fdatasyncs every chunk the batch wrote, then one LMDB write
//      transaction records the videos and the chunks' new committed lengths.
//   3. A crash before (2) leaves bytes past the committed lengths: the
//      DatasetInfo lists the chunks a writer may have written ("dirty"), and
//      the next writer truncates them before it writes anything.
//
// A small batch (JournalEligible) takes the journal instead of (2): its
// frames and index delta go into one journal record, synced once, then the
// index commits without a sync (engine/core/journal.h, docs/reliability.md).
// When a checkpoint is due is engine/core/journal_session.h's. The batch,
// what it does to the index and its journal record are write_batch.h's;
// the open chunk and its rollover, chunk_rollover.h's; the recovery of a
// journal (replaying a record is applying its batch), writer_recovery.h's.
// The Writer's state is writer_impl.h.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/core/dataset_impl.h"
#include "engine/core/fault_injection.h"
#include "engine/core/journal.h"
#include "engine/core/journal_session.h"
#include "engine/core/meta_edit.h"
#include "engine/core/writer_impl.h"
#include "engine/json/json_text.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "util/crc32c.h"
#include "util/test_bug.h"
#include "util/utf8.h"
#ifdef GULPDB_HAVE_H264
#include "engine/video/h264_stream.h"
#endif

namespace gulpdb {
namespace {

using engine::EncodeLsn;
using engine::kJournalLsnKey;

bool LooksLikeJpeg(std::string_view bytes) {
  return bytes.size() >= 4 && static_cast<uint8_t>(bytes[0]) == 0xff &&
         static_cast<uint8_t>(bytes[1]) == 0xd8 &&
         static_cast<uint8_t>(bytes[bytes.size() - 2]) == 0xff &&
         static_cast<uint8_t>(bytes[bytes.size() - 1]) == 0xd9;
}

// The largest batch (frame bytes) that goes through the journal; larger ones
// write their chunks directly. A journaled batch's bytes are written twice
// (journal, then chunk at the checkpoint), but its commit costs one durable
// write instead of three; the second write is batched by the checkpoint, so
// the journal must be large enough that checkpoints are rare: it starts at
// 4 MiB and doubles each time it fills, up to 32 MiB (GrowJournal).
// What this costs against a bare write-and-sync loop, and why: bench/README.md,
// "Appending: what bounds batch 1".
constexpr uint64_t kJournalMaxBatchBytes = 512 << 10;

}  // namespace

bool Writer::Impl::JournalEligible() const {
  if (!options.journal || !batch.split_ops.empty() || !open.have_chunk) return false;
  uint64_t bytes = 0;
  for (const auto& [n, t] : batch.touched) {
    if (n != open.chunk) return false;
    bytes += t.end - t.committed_length;
  }
  for (const engine::WriteBatch::Pending& p : batch.pending)
    bytes += p.id.size() + p.record.meta_data.size();
  for (const auto& [id, meta] : batch.edits) bytes += id.size() + meta.size();
  return bytes <= kJournalMaxBatchBytes;
}

void Writer::Impl::CommitJournaled() {
  std::string payload = batch.EncodeRecord(open.chunk);
  try {
    journal.Open();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kIoError && e.code() != ErrorCode::kResourceExhausted) throw;
    // No room for the journal (a full disk): this writer commits
    // directly, as it did before journals, and says so by working.
    options.journal = false;
    journal.Settle();
    CommitDirect();
    return;
  }
  journal.PrepareAppend(payload.size());
  if (!journal.journal()->Fits(payload.size())) {  // too big for an empty journal too
    journal.Settle();
    CommitDirect();
    return;
  }
  engine::fault::Reached(engine::fault::Point::kBeforeDataSync);
  journal.journal()->Append(payload, /*sync=*/!util::TestBugEnabled("skip-journal-sync"));
  for (const auto& [n, t] : batch.touched) journal.AddChunk(n, t.file);
  engine::fault::Reached(engine::fault::Point::kAfterDataSync);
  const uint64_t lsn = journal.journal()->record_lsns().back();
  index::DatasetInfo next;
  std::map<uint32_t, index::ChunkRecord> chunks;
  try {
    ds->env->UpdateNoSync([&](index::Txn& txn) {
      batch.Apply(*ds, txn, open.current(), &next, &chunks);
      txn.Put(ds->info, kJournalLsnKey, EncodeLsn(lsn));
    });
  } catch (...) {
    // The record is durable but its batch is not committed: a checkpoint
    // (new generation) retires it before the batch's bytes are reused.
    journal.Invalidate();
    journal.Checkpoint();
    throw;
  }
  engine::fault::Reached(engine::fault::Point::kAfterIndexCommit);
  info = std::move(next);
  auto it = chunks.find(open.chunk);
  if (it != chunks.end()) open.chunk_record = it->second;
}

void Writer::Impl::CommitDirect() {
  engine::fault::Reached(engine::fault::Point::kBeforeDataSync);
  for (auto& [n, t] : batch.touched) {
    if (!util::TestBugEnabled("skip-chunk-sync")) t.file->Sync();
  }
  engine::fault::Reached(engine::fault::Point::kAfterDataSync);
  index::DatasetInfo next;
  std::map<uint32_t, index::ChunkRecord> chunks;
  ds->env->Update([&](index::Txn& txn) { batch.Apply(*ds, txn, open.current(), &next, &chunks); });
  engine::fault::Reached(engine::fault::Point::kAfterIndexCommit);
  info = std::move(next);
  auto it = chunks.find(open.chunk);
  if (it != chunks.end()) open.chunk_record = it->second;
}

void Writer::Impl::ValidateAppend(std::string_view id, const std::vector<std::string_view>& jpegs,
                                  bool jpeg) const {
  const std::string where = "append '" + std::string(id) + "' to " + ds->dir;
  if (id.empty()) throw InvalidArgumentError("append to " + ds->dir + ": the id is empty");
  if (id.size() > ds->env->max_key_size()) {
    throw InvalidArgumentError("append to " + ds->dir + ": id of " + std::to_string(id.size()) +
                               " bytes is longer than the " +
                               std::to_string(ds->env->max_key_size()) + "-byte limit");
  }
  if (const size_t bad = util::FindInvalidUtf8(id); bad != std::string_view::npos) {
    throw InvalidArgumentError("append to " + ds->dir + ": id '" + engine::PrintableBytes(id, 40) +
                               "' is not valid UTF-8 at byte " + std::to_string(bad) +
                               " (ids must be text, as .gmeta and Python need them)");
  }
  for (size_t i = 0; i < jpegs.size(); ++i) {
    if (jpegs[i].empty()) {
      throw InvalidArgumentError(where + ": frame " + std::to_string(i) + " is empty");
    }
    if (jpegs[i].size() > UINT32_MAX - 3) {
      throw InvalidArgumentError(where + ": frame " + std::to_string(i) + " is over 4 GiB");
    }
    if (jpeg && options.check_jpeg_markers && !LooksLikeJpeg(jpegs[i])) {
      throw InvalidArgumentError(where + ": frame " + std::to_string(i) +
                                 " is not a JPEG (no SOI/EOI markers)");
    }
  }
}

// Normalizes `json` (one meta object, or a list of them when `is_list`) to
// the form Python's json.dumps writes, so that exported .gmeta files read
// back exactly as GulpIO2 wrote them.
std::string Writer::Impl::NormalizeMeta(std::string_view id, std::string_view json,
                                        bool is_list) const {
  std::string meta;
  try {
    meta = engine::NormalizeJson(json);
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError("append '" + std::string(id) + "' to " + ds->dir +
                               ": meta is not valid JSON: " + e.what());
  }
  if (meta.empty() || meta.front() != (is_list ? '[' : '{')) {
    throw InvalidArgumentError("append '" + std::string(id) + "' to " + ds->dir +
                               ": meta must be " + (is_list ? "a JSON list" : "a JSON object") +
                               ", not " + meta.substr(0, 40));
  }
  return meta;
}

bool Writer::Impl::Append(std::string_view id_view, const std::vector<std::string_view>& jpegs,
                          std::string_view meta_json, bool meta_is_list, const H264Extra* h264) {
  if (h264 == nullptr && ds->codec != Codec::kJpeg) {
    throw InvalidArgumentError("append '" + std::string(id_view) + "' to " + ds->dir +
                               ": the dataset's codec is " + CodecName(ds->codec) +
                               ", and these frames are JPEG bytes; append its videos with "
                               "Writer::AppendH264");
  }
  ValidateAppend(id_view, jpegs, /*jpeg=*/h264 == nullptr);
  std::string meta = NormalizeMeta(id_view, meta_json, meta_is_list);
  if (!meta_is_list) meta = "[" + meta + "]";
  std::string id(id_view);
  if (!batch.ResolveDuplicate(*ds, options.on_duplicate, id)) return false;
  batch.edits.erase(id);  // replaced: the new append's meta is the video's

  uint64_t bytes = 0;
  for (std::string_view j : jpegs) bytes += j.size() + PadFor(j.size());
  if (!open.have_chunk || open.IsFull(options.rollover, info, bytes) ||
      (options.start_new_chunk && !open.started_new_chunk)) {
    StartNewChunk();
    open.started_new_chunk = true;
  }

  engine::WriteBatch::Touched& t = batch.touched[open.chunk];
  if (!t.file) {
    t.file = open.file;
    t.committed_length = open.chunk_record.committed_length;
    t.end = open.write_pos;
  }
  index::VideoRecord record;
  record.chunk = open.chunk;
  record.frames = open.file->AppendFrames(open.write_pos, jpegs);
  open.write_pos += bytes;
  t.end = open.write_pos;
  engine::fault::Reached(engine::fault::Point::kFramesWritten);
  ++open.batch_videos_in_chunk;
  if (info.checksums) {
    record.crc32c.reserve(jpegs.size());
    for (std::string_view j : jpegs) record.crc32c.push_back(util::Crc32c(j.data(), j.size()));
  }
  record.meta_data = std::move(meta);
  if (h264 != nullptr) {
    record.keyframes = h264->keyframes;
    record.h264 = h264->params;
  }
  batch.pending_by_id[id] = batch.pending.size();
  batch.pending.push_back(engine::WriteBatch::Pending{std::move(id), std::move(record), false});
  return true;
}

// UpdateMeta (`merge`) or SetMeta: a video appended in this batch has its
// pending record changed; a committed one gets an edit (engine/core/meta_edit.h).
bool Writer::Impl::EditMeta(std::string_view id_view, std::string_view json, bool merge) {
  std::string id(id_view);
  const std::string operation = std::string(merge ? "update" : "set") + " meta of '" +
                                engine::PrintableBytes(id, 80) + "' in " + ds->dir;
  const std::string meta = engine::CanonicalMetaObject(json, operation);
  const auto edited = [&](std::string_view list) {
    return merge ? engine::MergeFirstMeta(list, meta, operation)
                 : engine::ReplaceFirstMeta(list, meta, operation);
  };
  if (auto it = batch.pending_by_id.find(id); it != batch.pending_by_id.end()) {
    std::string& list = batch.pending[it->second].record.meta_data;
    list = edited(list);
    return true;
  }
  std::optional<std::string> current;
  if (auto it = batch.edits.find(id); it != batch.edits.end()) {
    current = it->second;
  } else if (batch.removals.count(id) == 0 && !id.empty()) {
    index::Txn txn = ds->env->BeginRead();
    current = engine::CommittedMeta(*ds, txn, id);
  }
  if (!current) {
    Discard();
    throw IdNotFoundError(operation +
                          ": no such video; the writer's batch was rolled back (nothing of it "
                          "lands)");
  }
  std::string next = edited(*current);
  if (next == *current) return false;
  batch.edits[id] = std::move(next);
  return true;
}

// `last`: no commit follows (Writer::CommitLast). A journaled commit then
// costs its record and the checkpoint that closing needs (four syncs),
// the direct path three durable writes, unless the journal holds records
// already: their checkpoint is due anyway and covers this one too.
void Writer::Impl::Commit(bool last) {
  if (batch.empty()) return;
  const bool journal_settled = !journal.has_records();
  try {
    if (JournalEligible() && !(last && journal_settled)) {
      CommitJournaled();
    } else {
      journal.Settle();
      if (!batch.split_ops.empty()) ds->query.Create(*ds->env);
      CommitDirect();
    }
  } catch (...) {
    Discard();
    throw;
  }
  ClearBatch();
}

void Writer::Impl::ClearBatch() {
  batch.Clear();
  open.Rewind();
}

// Truncates what the batch wrote and forgets it. Truncation failures are
// harmless for correctness (the bytes are past the committed length and
// the next writer truncates them), so they are swallowed here.
void Writer::Impl::Discard() noexcept {
  batch.TruncateWritten();
  ClearBatch();
}

std::optional<OnDuplicate> OnDuplicateFromName(std::string_view name) {
  for (OnDuplicate policy : {OnDuplicate::kError, OnDuplicate::kSkip, OnDuplicate::kReplace}) {
    if (name == OnDuplicateName(policy)) return policy;
  }
  return std::nullopt;
}

const char* OnDuplicateName(OnDuplicate policy) {
  switch (policy) {
    case OnDuplicate::kError:
      return "error";
    case OnDuplicate::kSkip:
      return "skip";
    case OnDuplicate::kReplace:
      return "replace";
  }
  return "error";
}

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Writer::~Writer() {
  if (!impl_) return;
  impl_->Discard();
  try {
    impl_->journal.Settle();
  } catch (const Error&) {
    // The journal keeps its records; the next open recovers them.
  }
}

bool Writer::Append(std::string_view id, const std::vector<std::string_view>& jpegs,
                    std::string_view meta_json) {
  return impl_->Append(id, jpegs, meta_json, /*meta_is_list=*/false);
}

bool Writer::AppendEntry(std::string_view id, const std::vector<std::string_view>& jpegs,
                         std::string_view meta_data_list) {
  return impl_->Append(id, jpegs, meta_data_list, /*meta_is_list=*/true);
}

bool Writer::AppendH264(std::string_view id, std::string_view annexb_stream,
                        std::string_view meta_json) {
  const engine::DatasetImpl& ds = *impl_->ds;
  const std::string where = "append h264 video '" + std::string(id) + "' to " + ds.dir;
  if (ds.codec != Codec::kH264) {
    throw InvalidArgumentError(where + ": the dataset's codec is " + CodecName(ds.codec) +
                               "; H.264 videos go into a dataset created with codec h264");
  }
#ifdef GULPDB_HAVE_H264
  // Parsed before anything is written: a stream that does not parse leaves
  // the batch as it was.
  video::EncodedVideo parsed;
  try {
    parsed = video::ParseH264Stream(annexb_stream, "video '" + std::string(id) + "'");
  } catch (const CorruptionError& e) {
    throw InvalidArgumentError(where + ": " + e.what());
  }
  Impl::H264Extra extra;
  extra.params.extradata = parsed.params.extradata;
  extra.params.width = static_cast<uint32_t>(parsed.params.width);
  extra.params.height = static_cast<uint32_t>(parsed.params.height);
  extra.params.chroma = static_cast<uint8_t>(parsed.params.chroma);
  std::vector<std::string_view> packets;
  packets.reserve(parsed.frame_count());
  for (size_t i = 0; i < parsed.frame_count(); ++i) {
    packets.push_back(parsed.packet(i));
    if (parsed.packets[i].keyframe) extra.keyframes.push_back(static_cast<uint32_t>(i));
  }
  if (packets.empty() || extra.keyframes.empty() || extra.keyframes.front() != 0) {
    throw InvalidArgumentError(where + ": the stream does not start with a keyframe");
  }
  return impl_->Append(id, packets, meta_json, /*meta_is_list=*/false, &extra);
#else
  (void)annexb_stream;
  (void)meta_json;
  throw InvalidArgumentError(where + ": this build of gulpdb has no H.264 support");
#endif
}

bool engine::DatasetAccess::AppendStored(Writer& writer, std::string_view id,
                                         const std::vector<std::string_view>& frames,
                                         std::string_view meta_data_list,
                                         const index::VideoRecord& source) {
  if (!source.h264) return writer.impl_->Append(id, frames, meta_data_list, /*meta_is_list=*/true);
  Writer::Impl::H264Extra extra;
  extra.keyframes = source.keyframes;
  extra.params = *source.h264;
  return writer.impl_->Append(id, frames, meta_data_list, /*meta_is_list=*/true, &extra);
}

bool Writer::Remove(std::string_view id) { return impl_->batch.Remove(*impl_->ds, id); }
bool Writer::UpdateMeta(std::string_view id, std::string_view patch_json) {
  return impl_->EditMeta(id, patch_json, /*merge=*/true);
}
bool Writer::SetMeta(std::string_view id, std::string_view meta_json) {
  return impl_->EditMeta(id, meta_json, /*merge=*/false);
}
uint32_t Writer::StartChunk() {
  impl_->StartNewChunk();
  impl_->open.started_new_chunk = true;  // WriterOptions::start_new_chunk is satisfied
  return impl_->open.chunk;
}
void Writer::Commit() { impl_->Commit(); }
void Writer::CommitLast() { impl_->Commit(/*last=*/true); }
void Writer::Rollback() { impl_->Discard(); }
size_t Writer::pending_videos() const { return impl_->batch.pending_by_id.size(); }

void Writer::SetSplit(std::string_view name, const std::vector<std::string>& ids) {
  const std::string operation = "set split '" + std::string(name) + "' in " + impl_->ds->dir;
  engine::ValidateQueryName(name, index::kMaxSplitNameBytes, "split name", operation);
  std::unordered_set<std::string_view> seen;
  std::vector<std::string_view> twice;
  for (const std::string& id : ids) {
    if (!seen.insert(id).second) twice.push_back(id);
  }
  const auto list = [](const auto& items) {
    constexpr size_t kListed = 20;
    std::string out;
    for (size_t i = 0; i < items.size() && i < kListed; ++i) {
      out += (i == 0 ? "'" : ", '") + std::string(items[i]) + "'";
    }
    if (items.size() > kListed) out += ", ...";
    return out;
  };
  if (!twice.empty()) {
    throw InvalidArgumentError(operation + ": " + std::to_string(twice.size()) +
                               " ids are listed more than once: " + list(twice));
  }
  std::vector<std::string_view> missing;
  {
    // Committed ids in one read transaction; this batch's own changes on top.
    index::Txn txn = impl_->ds->env->BeginRead();
    for (const std::string& id : ids) {
      if (impl_->batch.pending_by_id.count(id) != 0) continue;
      std::string_view bytes;
      if (impl_->batch.removals.count(id) != 0 || !txn.Get(impl_->ds->videos, id, &bytes)) {
        missing.push_back(id);
      }
    }
  }
  if (!missing.empty()) {
    throw IdNotFoundError(operation + ": " + std::to_string(missing.size()) +
                          (missing.size() == 1 ? " id is" : " ids are") +
                          " not in the dataset: " + list(missing) + " (the split was not set)");
  }
  impl_->batch.split_ops.push_back(engine::SplitOp{std::string(name), false, ids});
}

bool Writer::RemoveSplit(std::string_view name) {
  bool exists = false;
  bool decided = false;
  for (auto it = impl_->batch.split_ops.rbegin(); it != impl_->batch.split_ops.rend() && !decided;
       ++it) {
    if (it->name == name) {
      exists = !it->remove;
      decided = true;
    }
  }
  if (!decided) {
    const engine::QueryDbHandles dbs = impl_->ds->query.Load();  // refreshed when the writer began
    index::Txn txn = impl_->ds->env->BeginRead();
    std::string_view bytes;
    exists = dbs.has_splits() && txn.Get(dbs.splits, name, &bytes);
  }
  if (exists) impl_->batch.split_ops.push_back(engine::SplitOp{std::string(name), true, {}});
  return exists;
}

std::unique_ptr<Writer> Dataset::NewWriter(const WriterOptions& options) {
  if (read_only()) {
    throw InvalidArgumentError("open writer " + impl_->dir + ": the dataset is open read-only");
  }
  auto impl = std::make_unique<Writer::Impl>(impl_, options);
  engine::WriterRecovery recovery = impl->Recovery();
  recovery.SettleLeftJournal();
  recovery.Recover(&impl->info, &impl->open);
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

size_t Dataset::Remove(const std::vector<std::string>& ids) {
  std::unique_ptr<Writer> writer = NewWriter();
  size_t removed = 0;
  for (const std::string& id : ids)
    if (writer->Remove(id)) ++removed;
  writer->CommitLast();
  return removed;
}

}  // namespace gulpdb
