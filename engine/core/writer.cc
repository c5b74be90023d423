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
// When a checkpoint is due is engine/core/journal_session.h's; the records'
// payloads and the recovery of a journal are here, because replaying a
// record is applying a batch (ApplyBatch).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "engine/core/dataset_impl.h"
#include "engine/core/fault_injection.h"
#include "engine/core/journal.h"
#include "engine/core/journal_session.h"
#include "engine/core/meta_edit.h"
#include "engine/core/obsolete_files.h"
#include "engine/core/payload_codec.h"
#include "engine/json/json_text.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "util/crc32c.h"
#include "util/sys_error.h"
#include "util/test_bug.h"
#include "util/utf8.h"
#ifdef GULPDB_HAVE_H264
#include "engine/video/h264_stream.h"
#include "gulpdb/interop.h"
#endif

namespace gulpdb {
namespace {

using engine::PayloadReader;
using engine::PutBytes;
using engine::PutU32;
using engine::PutU64;

constexpr int kMaxChunkNameAttempts = 1000;  // skips over foreign data_<N>.gulp files

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
// The index entry (info database) holding the last journal record applied.
constexpr const char* kJournalLsnKey = "journal_lsn";

std::string EncodeLsn(uint64_t lsn) {
  std::string out;
  PutU64(&out, lsn);
  return out;
}

uint64_t AppliedLsn(const engine::DatasetImpl& ds, const index::Txn& txn) {
  std::string_view bytes;
  if (!txn.Get(ds.info, kJournalLsnKey, &bytes) || bytes.size() != 8) return 0;
  return PayloadReader(bytes, "journal_lsn").Fixed(8);
}

}  // namespace

struct Writer::Impl {
  // A chunk this batch wrote into.
  struct Touched {
    std::shared_ptr<engine::ChunkFile> file;
    uint64_t committed_length = 0;  // where the batch started writing
    uint64_t end = 0;               // where it stopped
  };
  struct Pending {
    std::string id;
    index::VideoRecord record;
    bool dropped = false;  // replaced later in the same batch
  };

  std::shared_ptr<engine::DatasetImpl> ds;  // shared: the Writer may outlive its Dataset
  WriterOptions options;
  std::optional<util::FileLock> lock;  // empty: the caller holds it
  index::DatasetInfo info;             // as last committed (settings are fixed)

  bool have_chunk = false;
  uint32_t chunk = 0;                       // the chunk appends go to
  uint64_t next_chunk = 0;                  // the number a new chunk takes at the lowest
  index::ChunkRecord chunk_record;          // its committed state
  std::shared_ptr<engine::ChunkFile> file;  // its read-write handle
  uint64_t write_pos = 0;                   // next byte to write in it
  uint32_t batch_videos_in_chunk = 0;       // appended to it in this batch
  bool started_new_chunk = false;           // for WriterOptions::start_new_chunk

  std::vector<Pending> pending;
  std::unordered_map<std::string, size_t> pending_by_id;
  std::unordered_set<std::string> removals;
  std::map<uint32_t, Touched> touched;
  std::vector<engine::SplitOp> split_ops;  // SetSplit / RemoveSplit, in call order
  engine::MetaEdits edits;                 // UpdateMeta / SetMeta of committed videos

  // The journal, opened at the first journaled commit, and its checkpoints.
  engine::JournalSession journal;

  Impl(std::shared_ptr<engine::DatasetImpl> dataset, const WriterOptions& opts)
      : ds(std::move(dataset)),
        options(opts),
        lock(std::in_place, ds->index_dir + "/" + kWriterLockName, opts.lock_timeout, ds->dir),
        journal(*ds->env, ds->index_dir + "/" + engine::kJournalName) {}
  // For replaying a journal under a lock the caller already holds.
  Impl(std::shared_ptr<engine::DatasetImpl> dataset, std::optional<util::FileLock> held)
      : ds(std::move(dataset)),
        lock(std::move(held)),
        journal(*ds->env, ds->index_dir + "/" + engine::kJournalName) {}

  const std::string& JournalPath() const { return journal.path(); }

  bool JournalEligible() const {
    if (!options.journal || !split_ops.empty() || !have_chunk) return false;
    uint64_t bytes = 0;
    for (const auto& [n, t] : touched) {
      if (n != chunk) return false;
      bytes += t.end - t.committed_length;
    }
    for (const Pending& p : pending) bytes += p.id.size() + p.record.meta_data.size();
    for (const auto& [id, meta] : edits) bytes += id.size() + meta.size();
    return bytes <= kJournalMaxBatchBytes;
  }

  // The record of this batch: the frames it wrote (read back from the page
  // cache) with their offsets, then what ApplyBatch reads. Version 2 adds
  // the meta edits; a batch without edits keeps version 1's bytes.
  std::string EncodeBatch() const {
    // GULPDB_TEST_BUG=edit-not-journaled: the record leaves the edits out.
    const bool with_edits = !edits.empty() && !util::TestBugEnabled("edit-not-journaled");
    std::string out;
    PutU32(&out, with_edits ? 2 : 1);  // payload version
    PutU32(&out, chunk);
    PutU32(&out, static_cast<uint32_t>(touched.size()));
    for (const auto& [n, t] : touched) {
      PutU32(&out, n);
      PutU64(&out, t.committed_length);
      PutU64(&out, t.end);
      const size_t at = out.size();
      out.resize(at + (t.end - t.committed_length));
      t.file->ReadAt(t.committed_length, out.data() + at, t.end - t.committed_length);
    }
    PutU32(&out, static_cast<uint32_t>(pending.size()));
    for (const Pending& p : pending) {
      PutBytes(&out, p.id);
      PutBytes(&out, index::EncodeVideoRecord(p.record));
      out.push_back(p.dropped ? 1 : 0);
    }
    PutU32(&out, static_cast<uint32_t>(removals.size()));
    for (const std::string& id : removals) PutBytes(&out, id);
    if (with_edits) engine::EncodeMetaEdits(edits, &out);
    return out;
  }

  // The inverse of EncodeBatch for replay: sets this Impl's batch and
  // rewrites the record's frames at their offsets (not synced).
  void DecodeBatch(const engine::Journal::Record& r, const index::Txn& txn) {
    PayloadReader in(r.payload, JournalPath() + " record " + std::to_string(r.lsn));
    const uint64_t version = in.Fixed(4);
    if (version != 1 && version != 2) {
      throw CorruptionError("replay " + JournalPath() + " record " + std::to_string(r.lsn) +
                            ": unknown payload version");
    }
    chunk = static_cast<uint32_t>(in.Fixed(4));
    have_chunk = true;
    const uint64_t n_touched = in.Fixed(4);
    for (uint64_t i = 0; i < n_touched; ++i) {
      const auto n = static_cast<uint32_t>(in.Fixed(4));
      Touched& t = touched[n];
      t.committed_length = in.Fixed(8);
      t.end = in.Fixed(8);
      if (t.end < t.committed_length) {
        throw CorruptionError("replay " + JournalPath() + " record " + std::to_string(r.lsn) +
                              ": frames end before they start");
      }
      std::string_view bytes = in.Bytes(t.end - t.committed_length);
      auto& f = journal.chunks()[n];
      if (!f) {
        f = std::make_shared<engine::ChunkFile>(ChunkPath(ds->GetChunk(txn, n).file_name),
                                                engine::ChunkFile::Mode::kAppend);
      }
      struct iovec iov {
        const_cast<char*>(bytes.data()), bytes.size()
      };
      util::PwritevFull(f->fd(), &iov, 1, t.committed_length, f->path());
      t.file = f;
    }
    const uint64_t n_pending = in.Fixed(4);
    for (uint64_t i = 0; i < n_pending; ++i) {
      Pending p;
      p.id = std::string(in.Sized());
      p.record = index::DecodeVideoRecord(in.Sized(), p.id);
      p.dropped = in.Fixed(1) != 0;
      pending.push_back(std::move(p));
    }
    const uint64_t n_removals = in.Fixed(4);
    for (uint64_t i = 0; i < n_removals; ++i) removals.insert(std::string(in.Sized()));
    if (version >= 2) engine::DecodeMetaEdits(&in, &edits);
  }

  void CommitJournaled() {
    std::string payload = EncodeBatch();
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
    for (const auto& [n, t] : touched) journal.AddChunk(n, t.file);
    engine::fault::Reached(engine::fault::Point::kAfterDataSync);
    const uint64_t lsn = journal.journal()->record_lsns().back();
    index::DatasetInfo next;
    std::map<uint32_t, index::ChunkRecord> chunks;
    try {
      ds->env->UpdateNoSync([&](index::Txn& txn) {
        ApplyBatch(txn, &next, &chunks);
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
    auto it = chunks.find(chunk);
    if (it != chunks.end()) chunk_record = it->second;
  }

  void CommitDirect() {
    engine::fault::Reached(engine::fault::Point::kBeforeDataSync);
    for (auto& [n, t] : touched) {
      if (!util::TestBugEnabled("skip-chunk-sync")) t.file->Sync();
    }
    engine::fault::Reached(engine::fault::Point::kAfterDataSync);
    index::DatasetInfo next;
    std::map<uint32_t, index::ChunkRecord> chunks;
    ds->env->Update([&](index::Txn& txn) { ApplyBatch(txn, &next, &chunks); });
    engine::fault::Reached(engine::fault::Point::kAfterIndexCommit);
    info = std::move(next);
    auto it = chunks.find(chunk);
    if (it != chunks.end()) chunk_record = it->second;
  }

  // Under the writer lock, with the index open: a journal left with records
  // past its checkpoint by a writer of this boot that stopped (crashed, or
  // closed without its last checkpoint). The index holds every commit that
  // was acknowledged (the page cache survived); records past the index's
  // journal_lsn were never acknowledged and their frames lie past committed
  // lengths. A checkpoint makes the rest durable and retires them.
  void SettleLeftJournal() {
    std::unique_ptr<engine::Journal> left = engine::Journal::Open(JournalPath(), /*create=*/false);
    if (!left || left->record_lsns().empty()) return;
    if (left->header().boot_id != engine::CurrentBootId()) {
      throw CorruptionError("open writer " + ds->dir + ": the journal " + JournalPath() +
                            " holds commits from before a restart that were not recovered; "
                            "reopen the dataset to recover them");
    }
    journal.Open();  // read-write
    index::Txn txn = ds->env->BeginRead();
    for (const engine::Journal::Record& r : journal.journal()->ReadRecords()) {
      PayloadReader in(r.payload, JournalPath() + " record " + std::to_string(r.lsn));
      in.Fixed(4);
      in.Fixed(4);
      const uint64_t n_touched = in.Fixed(4);
      for (uint64_t i = 0; i < n_touched; ++i) {
        const auto n = static_cast<uint32_t>(in.Fixed(4));
        const uint64_t start = in.Fixed(8);
        in.Bytes(in.Fixed(8) - start);
        std::string_view bytes;
        if (journal.chunks().count(n) == 0 && txn.Get(ds->chunks, index::ChunkKey(n), &bytes)) {
          journal.AddChunk(
              n, std::make_shared<engine::ChunkFile>(ChunkPath(ds->GetChunk(txn, n).file_name),
                                                     engine::ChunkFile::Mode::kAppend));
        }
      }
    }
    txn.Abort();
    journal.Checkpoint();
    journal.Settle();
  }

  // Replays the records past the index's journal_lsn (after a power cut the
  // caller restored the checkpoint's meta pages first): their frames are
  // written again at their offsets and synced, then one durable index
  // transaction applies every delta in order; a checkpoint ends it.
  void ReplayJournal() {
    journal.Open();
    if (!journal.has_records()) return;
    ds->query.Refresh(*ds->env);
    std::vector<engine::Journal::Record> records = journal.journal()->ReadRecords();
    uint64_t applied = 0;
    {
      index::Txn txn = ds->env->BeginRead();
      applied = AppliedLsn(*ds, txn);
    }
    std::vector<std::tuple<uint32_t, std::map<uint32_t, Touched>, std::vector<Pending>,
                           std::unordered_set<std::string>, engine::MetaEdits>>
        batches;
    {
      index::Txn txn = ds->env->BeginRead();
      for (const engine::Journal::Record& r : records) {
        if (r.lsn <= applied) continue;
        DecodeBatch(r, txn);
        batches.emplace_back(chunk, std::move(touched), std::move(pending), std::move(removals),
                             std::move(edits));
        touched.clear();
        pending.clear();
        removals.clear();
        edits.clear();
      }
    }
    for (auto& [n, f] : journal.chunks()) f->Sync();
    if (!batches.empty()) {
      const uint64_t last = records.back().lsn;
      ds->env->Update([&](index::Txn& txn) {
        for (auto& [c, t, p, rm, e] : batches) {
          chunk = c;
          touched = t;
          pending = p;
          removals = rm;
          edits = e;
          index::DatasetInfo next;
          std::map<uint32_t, index::ChunkRecord> chunks;
          ApplyBatch(txn, &next, &chunks);
        }
        txn.Put(ds->info, kJournalLsnKey, EncodeLsn(last));
      });
    }
    touched.clear();
    pending.clear();
    removals.clear();
    edits.clear();
    journal.Checkpoint();
    journal.Settle();
  }

  std::string ChunkPath(const std::string& name) const { return ds->ChunkPath(name); }

  // Truncates whatever an interrupted writer left past committed lengths, and
  // makes the last chunk the current one.
  void Recover() {
    // Query databases another process created since this dataset was opened;
    // none can appear while this writer holds the lock.
    ds->query.Refresh(*ds->env);
    std::vector<std::pair<uint32_t, index::ChunkRecord>> dirty;
    std::optional<std::pair<uint32_t, index::ChunkRecord>> last;
    {
      index::Txn txn = ds->env->BeginRead();
      info = ds->GetInfo(txn);
      if (!info.attached_to.empty()) {
        throw InvalidArgumentError("open writer " + ds->dir + ": the dataset is attached to " +
                                   info.attached_to +
                                   " (merged in place): that index refers to its chunk files, "
                                   "so it takes no more writes; write to " +
                                   info.attached_to + " instead");
      }
      for (uint32_t n : info.dirty_chunks) {
        // A chunk listed dirty without a record: compaction by an older
        // version deleted it (the newest chunk, all of its videos removed)
        // and left it listed. It has no file to truncate; it still counts
        // for NextChunkNumber below, and the list is rewritten without it.
        std::string_view bytes;
        if (!txn.Get(ds->chunks, index::ChunkKey(n), &bytes)) continue;
        index::ChunkRecord record = ds->GetChunk(txn, n);
        // Another dataset's file: never truncated from here.
        if (!record.attached()) dirty.emplace_back(n, std::move(record));
      }
      index::Cursor cursor(txn, ds->chunks);
      if (cursor.Last()) {
        const uint32_t n = index::DecodeChunkKey(cursor.key());
        last.emplace(n, ds->DecodeChunkAt(cursor.key(), cursor.value()));
      }
      next_chunk =
          index::NextChunkNumber(info, last ? std::optional<uint32_t>(last->first) : std::nullopt);
    }
    for (const auto& [n, record] : dirty) {
      const std::string path = ChunkPath(record.file_name);
      engine::ChunkFile f(path, engine::ChunkFile::Mode::kAppend);
      const uint64_t size = f.Size();
      if (size < record.committed_length) {
        throw CorruptionError("recover " + path + ": the file has " + std::to_string(size) +
                              " bytes but the index committed " +
                              std::to_string(record.committed_length));
      }
      if (size > record.committed_length) {
        f.TruncateTo(record.committed_length);
        f.Sync();
      }
    }
    if (!info.obsolete_files.empty()) {
      engine::RemoveObsoleteFiles(*ds, "recover");
      info.obsolete_files.clear();
    }
    RemoveAbandonedChunkFiles(next_chunk);
    if (last) {
      have_chunk = true;
      chunk = last->first;
      chunk_record = last->second;
      file = std::make_shared<engine::ChunkFile>(ChunkPath(chunk_record.file_name),
                                                 engine::ChunkFile::Mode::kAppend);
      write_pos = chunk_record.committed_length;
    }
    std::vector<uint32_t> want;
    if (have_chunk) want.push_back(chunk);
    // Also records next_chunk in datasets written before it existed.
    if (want != info.dirty_chunks || info.next_chunk != next_chunk) SetDirty(want);
  }

  // A writer killed between creating a chunk file and registering it
  // (StartNewChunk) leaves an empty data_<N>.gulp that the index does not
  // know, at the first free name from next_chunk on. GulpIO readers pair
  // every data*.gulp with a meta*.gmeta, so such a file would break an
  // exported directory: remove it. Files holding bytes are not ours and stay.
  void RemoveAbandonedChunkFiles(uint64_t first) {
    bool removed = false;
    for (uint64_t n = first; n < index::kNoChunkNumberLeft && n - first < kMaxChunkNameAttempts;
         ++n) {
      const std::string path = ChunkPath(GulpioDataFileName(static_cast<uint32_t>(n)));
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) break;  // where StartNewChunk stops looking
      if (!S_ISREG(st.st_mode) || st.st_size != 0) continue;
      util::RemoveFile(path);
      removed = true;
    }
    if (removed) util::SyncDirectory(ds->dir);
  }

  // Records `dirty` as the dirty list, and next_chunk.
  void SetDirty(const std::vector<uint32_t>& dirty) {
    ds->env->Update([&](index::Txn& txn) {
      index::DatasetInfo current = ds->GetInfo(txn);
      current.dirty_chunks = dirty;
      current.next_chunk = std::max(current.next_chunk, next_chunk);
      txn.Put(ds->info, index::kDatasetInfoKey, index::EncodeDatasetInfo(current));
    });
    info.dirty_chunks = dirty;
    info.next_chunk = std::max(info.next_chunk, next_chunk);
  }

  bool ChunkIsFull(uint64_t video_bytes) const {
    if (chunk_record.state == index::ChunkState::kFull) return true;
    if (!options.rollover) return false;
    if (chunk_record.appended_videos + batch_videos_in_chunk >= info.videos_per_chunk) return true;
    return info.bytes_per_chunk != 0 && write_pos > 0 &&
           write_pos + video_bytes > info.bytes_per_chunk;
  }

  // Creates data_<N>.gulp for the next chunk, registers it empty (so that a
  // crash leaves it known to the index) and makes it current.
  //
  // Numbers are never reused: the new chunk takes next_chunk (recorded in
  // the index with the chunk), not one past the newest chunk that still
  // exists, so a number compaction freed stays unused, and a published
  // data_<N>.gulp never has to hold other bytes.
  void StartNewChunk() {
    uint64_t number = next_chunk;
    // A data_<N>.gulp the index does not know (left by another program) is
    // never touched, unless it is empty (RemoveAbandonedChunkFiles): the new
    // chunk takes the next free number.
    for (int attempt = 0;; ++attempt, ++number) {
      if (number >= index::kNoChunkNumberLeft) {
        throw ResourceExhaustedError("create chunk in " + ds->dir +
                                     ": every chunk number up to 2^32 - 1 has been used");
      }
      if (!util::PathExists(ChunkPath(GulpioDataFileName(static_cast<uint32_t>(number))))) break;
      if (attempt >= kMaxChunkNameAttempts) {
        throw InvalidArgumentError("create chunk in " + ds->dir +
                                   ": too many foreign data_*.gulp files");
      }
    }
    const auto n = static_cast<uint32_t>(number);
    auto created = std::make_shared<engine::ChunkFile>(ChunkPath(GulpioDataFileName(n)),
                                                       engine::ChunkFile::Mode::kCreate);
    util::SyncDirectory(ds->dir);
    engine::fault::Reached(engine::fault::Point::kChunkCreated);
    index::ChunkRecord record;
    record.file_name = GulpioDataFileName(n);
    std::vector<uint32_t> dirty;
    for (const auto& entry : touched) dirty.push_back(entry.first);
    dirty.push_back(n);
    journal.Settle();
    ds->env->Update([&](index::Txn& txn) {
      index::DatasetInfo current = ds->GetInfo(txn);
      current.dirty_chunks = dirty;
      current.next_chunk = std::max(current.next_chunk, number + 1);
      ds->PutChunk(txn, n, record);
      txn.Put(ds->info, index::kDatasetInfoKey, index::EncodeDatasetInfo(current));
    });
    info.dirty_chunks = dirty;
    info.next_chunk = std::max(info.next_chunk, number + 1);
    next_chunk = number + 1;
    engine::fault::Reached(engine::fault::Point::kChunkRegistered);
    have_chunk = true;
    chunk = n;
    chunk_record = record;
    file = std::move(created);
    write_pos = 0;
    batch_videos_in_chunk = 0;
  }

  void ValidateAppend(std::string_view id, const std::vector<std::string_view>& jpegs,
                      bool jpeg) const {
    const std::string where = "append '" + std::string(id) + "' to " + ds->dir;
    if (id.empty()) throw InvalidArgumentError("append to " + ds->dir + ": the id is empty");
    if (id.size() > ds->env->max_key_size()) {
      throw InvalidArgumentError("append to " + ds->dir + ": id of " + std::to_string(id.size()) +
                                 " bytes is longer than the " +
                                 std::to_string(ds->env->max_key_size()) + "-byte limit");
    }
    if (const size_t bad = util::FindInvalidUtf8(id); bad != std::string_view::npos) {
      throw InvalidArgumentError("append to " + ds->dir + ": id '" +
                                 engine::PrintableBytes(id, 40) + "' is not valid UTF-8 at byte " +
                                 std::to_string(bad) +
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

  // Decides what an append of an existing id does; false means skip it.
  bool ResolveDuplicate(const std::string& id) {
    bool exists = false;
    auto it = pending_by_id.find(id);
    if (it != pending_by_id.end()) {
      exists = true;
    } else if (removals.count(id) == 0) {
      index::Txn txn = ds->env->BeginRead();
      std::string_view bytes;
      exists = txn.Get(ds->videos, id, &bytes);
    }
    if (!exists) return true;
    switch (options.on_duplicate) {
      case OnDuplicate::kError:
        throw InvalidArgumentError("append '" + id + "' to " + ds->dir +
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

  // Normalizes `json` (one meta object, or a list of them when `is_list`) to
  // the form Python's json.dumps writes, so that exported .gmeta files read
  // back exactly as GulpIO2 wrote them.
  std::string NormalizeMeta(std::string_view id, std::string_view json, bool is_list) const {
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

  // What an H.264 append adds to the record (AppendH264).
  struct H264Extra {
    std::vector<uint32_t> keyframes;
    index::H264Params params;
  };

  bool Append(std::string_view id_view, const std::vector<std::string_view>& jpegs,
              std::string_view meta_json, bool meta_is_list, const H264Extra* h264 = nullptr) {
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
    if (!ResolveDuplicate(id)) return false;
    edits.erase(id);  // replaced: the new append's meta is the video's

    uint64_t bytes = 0;
    for (std::string_view j : jpegs) bytes += j.size() + PadFor(j.size());
    if (!have_chunk || ChunkIsFull(bytes) || (options.start_new_chunk && !started_new_chunk)) {
      StartNewChunk();
      started_new_chunk = true;
    }

    Touched& t = touched[chunk];
    if (!t.file) {
      t.file = file;
      t.committed_length = chunk_record.committed_length;
      t.end = write_pos;
    }
    index::VideoRecord record;
    record.chunk = chunk;
    record.frames = file->AppendFrames(write_pos, jpegs);
    write_pos += bytes;
    t.end = write_pos;
    engine::fault::Reached(engine::fault::Point::kFramesWritten);
    ++batch_videos_in_chunk;
    if (info.checksums) {
      record.crc32c.reserve(jpegs.size());
      for (std::string_view j : jpegs) record.crc32c.push_back(util::Crc32c(j.data(), j.size()));
    }
    record.meta_data = std::move(meta);
    if (h264 != nullptr) {
      record.keyframes = h264->keyframes;
      record.h264 = h264->params;
    }
    pending_by_id[id] = pending.size();
    pending.push_back(Pending{std::move(id), std::move(record), false});
    return true;
  }

  bool Remove(std::string_view id_view) {
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
    index::Txn txn = ds->env->BeginRead();
    std::string_view bytes;
    if (!txn.Get(ds->videos, id, &bytes)) return false;
    removals.insert(std::move(id));
    return true;
  }

  // UpdateMeta (`merge`) or SetMeta: a video appended in this batch has its
  // pending record changed; a committed one gets an edit (engine/core/meta_edit.h).
  bool EditMeta(std::string_view id_view, std::string_view json, bool merge) {
    std::string id(id_view);
    const std::string operation = std::string(merge ? "update" : "set") + " meta of '" +
                                  engine::PrintableBytes(id, 80) + "' in " + ds->dir;
    const std::string meta = engine::CanonicalMetaObject(json, operation);
    const auto edited = [&](std::string_view list) {
      return merge ? engine::MergeFirstMeta(list, meta, operation)
                   : engine::ReplaceFirstMeta(list, meta, operation);
    };
    if (auto it = pending_by_id.find(id); it != pending_by_id.end()) {
      std::string& list = pending[it->second].record.meta_data;
      list = edited(list);
      return true;
    }
    std::optional<std::string> current;
    if (auto it = edits.find(id); it != edits.end()) {
      current = it->second;
    } else if (removals.count(id) == 0 && !id.empty()) {
      index::Txn txn = ds->env->BeginRead();
      if (auto record = ds->FindRecord(txn, id)) current = std::move(record->meta_data);
    }
    if (!current) {
      Discard();
      throw IdNotFoundError(operation +
                            ": no such video; the writer's batch was rolled back (nothing of it "
                            "lands)");
    }
    std::string next = edited(*current);
    if (next == *current) return false;
    edits[id] = std::move(next);
    return true;
  }

  // Applies the batch to the index inside `txn`. Runs again from scratch if
  // the map had to grow, so it only reads `this`.
  void ApplyBatch(index::Txn& txn, index::DatasetInfo* out_info,
                  std::map<uint32_t, index::ChunkRecord>* out_chunks) const {
    index::DatasetInfo next = ds->GetInfo(txn);
    // The meta index and the splits. Their handles are all known before this
    // transaction began: found when the writer took the lock (nobody else can
    // create them while it holds it) or created by Commit.
    engine::QueryTxn query(*ds, txn, ds->query.Load());
    std::map<uint32_t, index::ChunkRecord> chunks;
    auto chunk_ref = [&](uint32_t n) -> index::ChunkRecord& {
      auto it = chunks.find(n);
      if (it == chunks.end()) it = chunks.emplace(n, ds->GetChunk(txn, n)).first;
      return it->second;
    };
    // Forgets the committed video `id` (its bytes become garbage).
    auto forget = [&](const std::string& id, const index::VideoRecord& old) {
      index::ChunkRecord& c = chunk_ref(old.chunk);
      c.live_videos -= std::min<uint32_t>(c.live_videos, 1);
      c.live_bytes -= std::min(c.live_bytes, old.frame_bytes());
      txn.Del(ds->order, index::OrderKey(old.chunk, old.seq));
      next.total_videos -= std::min<uint64_t>(next.total_videos, 1);
      next.total_frames -= std::min<uint64_t>(next.total_frames, old.frames.size());
      query.Unindex(id, old);
    };
    for (const std::string& id : removals) {
      if (auto old = ds->FindRecord(txn, id)) {
        forget(id, *old);
        txn.Del(ds->videos, id);
        query.DropFromSplits(id);
      }
    }
    for (const Pending& p : pending) {
      if (p.dropped) continue;
      if (auto old = ds->FindRecord(txn, p.id)) forget(p.id, *old);
      index::VideoRecord record = p.record;
      record.seq = next.next_seq++;
      ds->PutVideo(txn, p.id, record);
      txn.Put(ds->order, index::OrderKey(record.chunk, record.seq), p.id);
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
    engine::ApplyMetaEdits(*ds, txn, query, edits, chunk_ref);
    for (const engine::SplitOp& op : split_ops) query.Apply(op);
    // A batch of split changes alone may commit before any chunk exists.
    if (have_chunk) {
      next.dirty_chunks.assign(1, chunk);
    } else {
      next.dirty_chunks.clear();
    }
    for (const auto& [n, c] : chunks) {
      ds->PutChunk(txn, n, c);
    }
    txn.Put(ds->info, index::kDatasetInfoKey, index::EncodeDatasetInfo(next));
    *out_info = std::move(next);
    *out_chunks = std::move(chunks);
    engine::fault::Reached(engine::fault::Point::kBeforeIndexCommit);
  }

  // `last`: no commit follows (Writer::CommitLast). A journaled commit then
  // costs its record and the checkpoint that closing needs (four syncs),
  // the direct path three durable writes, unless the journal holds records
  // already: their checkpoint is due anyway and covers this one too.
  void Commit(bool last = false) {
    if (pending.empty() && removals.empty() && split_ops.empty() && edits.empty()) return;
    const bool journal_settled = !journal.has_records();
    try {
      if (JournalEligible() && !(last && journal_settled)) {
        CommitJournaled();
      } else {
        journal.Settle();
        if (!split_ops.empty()) ds->query.Create(*ds->env);
        CommitDirect();
      }
    } catch (...) {
      Discard();
      throw;
    }
    ClearBatch();
  }

  void ClearBatch() {
    pending.clear();
    pending_by_id.clear();
    removals.clear();
    touched.clear();
    split_ops.clear();
    edits.clear();
    batch_videos_in_chunk = 0;
    if (have_chunk) write_pos = chunk_record.committed_length;
  }

  // Truncates what the batch wrote and forgets it. Truncation failures are
  // harmless for correctness (the bytes are past the committed length and
  // the next writer truncates them), so they are swallowed here.
  void Discard() noexcept {
    for (auto& [n, t] : touched) {
      try {
        t.file->TruncateTo(t.committed_length);
      } catch (const Error&) {
      }
    }
    ClearBatch();
  }
};

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

bool Writer::Remove(std::string_view id) { return impl_->Remove(id); }
bool Writer::UpdateMeta(std::string_view id, std::string_view patch_json) {
  return impl_->EditMeta(id, patch_json, /*merge=*/true);
}
bool Writer::SetMeta(std::string_view id, std::string_view meta_json) {
  return impl_->EditMeta(id, meta_json, /*merge=*/false);
}
uint32_t Writer::StartChunk() {
  impl_->StartNewChunk();
  impl_->started_new_chunk = true;  // WriterOptions::start_new_chunk is satisfied
  return impl_->chunk;
}
void Writer::Commit() { impl_->Commit(); }
void Writer::CommitLast() { impl_->Commit(/*last=*/true); }
void Writer::Rollback() { impl_->Discard(); }
size_t Writer::pending_videos() const { return impl_->pending_by_id.size(); }

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
      if (impl_->pending_by_id.count(id) != 0) continue;
      std::string_view bytes;
      if (impl_->removals.count(id) != 0 || !txn.Get(impl_->ds->videos, id, &bytes)) {
        missing.push_back(id);
      }
    }
  }
  if (!missing.empty()) {
    throw IdNotFoundError(operation + ": " + std::to_string(missing.size()) +
                          (missing.size() == 1 ? " id is" : " ids are") +
                          " not in the dataset: " + list(missing) + " (the split was not set)");
  }
  impl_->split_ops.push_back(engine::SplitOp{std::string(name), false, ids});
}

bool Writer::RemoveSplit(std::string_view name) {
  bool exists = false;
  bool decided = false;
  for (auto it = impl_->split_ops.rbegin(); it != impl_->split_ops.rend() && !decided; ++it) {
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
  if (exists) impl_->split_ops.push_back(engine::SplitOp{std::string(name), true, {}});
  return exists;
}

std::unique_ptr<Writer> Dataset::NewWriter(const WriterOptions& options) {
  if (read_only()) {
    throw InvalidArgumentError("open writer " + impl_->dir + ": the dataset is open read-only");
  }
  auto impl = std::make_unique<Writer::Impl>(impl_, options);
  impl->SettleLeftJournal();
  impl->Recover();
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

}  // namespace gulpdb

namespace gulpdb::engine {

void DatasetAccess::ReplayJournal(std::shared_ptr<Impl> ds, util::FileLock lock) {
  Writer::Impl impl(std::move(ds), std::move(lock));
  impl.ReplayJournal();
}

void DatasetAccess::SettleJournal(Impl& ds) {
  Writer::Impl impl(std::shared_ptr<Impl>(&ds, [](Impl*) {}), std::nullopt);
  impl.SettleLeftJournal();
}

}  // namespace gulpdb::engine
