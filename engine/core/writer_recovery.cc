// The recovery a writer runs when it takes the lock (writer_recovery.h).
#include "engine/core/writer_recovery.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/journal.h"
#include "engine/core/journal_session.h"
#include "engine/core/obsolete_files.h"
#include "engine/core/write_batch.h"
#include "gulpdb/error.h"
#include "util/file_io.h"

namespace gulpdb::engine {

// Under the writer lock, with the index open: a journal left with records
// past its checkpoint by a writer of this boot that stopped (crashed, or
// closed without its last checkpoint). The index holds every commit that
// was acknowledged (the page cache survived); records past the index's
// journal_lsn were never acknowledged and their frames lie past committed
// lengths. A checkpoint makes the rest durable and retires them.
void WriterRecovery::SettleLeftJournal() {
  std::unique_ptr<Journal> left = Journal::Open(journal_.path(), /*create=*/false);
  if (!left || left->record_lsns().empty()) return;
  if (left->header().boot_id != CurrentBootId()) {
    throw CorruptionError("open writer " + ds_.dir + ": the journal " + journal_.path() +
                          " holds commits from before a restart that were not recovered; "
                          "reopen the dataset to recover them");
  }
  journal_.Open();  // read-write
  index::Txn txn = ds_.env->BeginRead();
  for (const Journal::Record& r : journal_.journal()->ReadRecords()) {
    for (uint32_t n : WriteBatch::RecordChunks(r, journal_.path())) {
      std::string_view bytes;
      if (journal_.chunks().count(n) == 0 && txn.Get(ds_.chunks, index::ChunkKey(n), &bytes)) {
        journal_.AddChunk(n,
                          std::make_shared<ChunkFile>(ds_.ChunkPath(ds_.GetChunk(txn, n).file_name),
                                                      ChunkFile::Mode::kAppend));
      }
    }
  }
  txn.Abort();
  journal_.Checkpoint();
  journal_.Settle();
}

// Replays the records past the index's journal_lsn (after a power cut the
// caller restored the checkpoint's meta pages first): their frames are
// written again at their offsets and synced, then one durable index
// transaction applies every delta in order; a checkpoint ends it.
void WriterRecovery::ReplayJournal() {
  journal_.Open();
  if (!journal_.has_records()) return;
  ds_.query.Refresh(*ds_.env);
  std::vector<Journal::Record> records = journal_.journal()->ReadRecords();
  uint64_t applied = 0;
  {
    index::Txn txn = ds_.env->BeginRead();
    applied = AppliedLsn(ds_, txn);
  }
  std::vector<std::pair<uint32_t, WriteBatch>> batches;  // each with the chunk it appended to
  {
    index::Txn txn = ds_.env->BeginRead();
    for (const Journal::Record& r : records) {
      if (r.lsn <= applied) continue;
      WriteBatch batch;
      const uint32_t chunk = batch.DecodeRecord(ds_, r, journal_.path(), txn, &journal_.chunks());
      batches.emplace_back(chunk, std::move(batch));
    }
  }
  for (auto& [n, f] : journal_.chunks()) f->Sync();
  if (!batches.empty()) {
    const uint64_t last = records.back().lsn;
    ds_.env->Update([&](index::Txn& txn) {
      for (const auto& [chunk, batch] : batches) {
        index::DatasetInfo next;
        std::map<uint32_t, index::ChunkRecord> chunks;
        batch.Apply(ds_, txn, chunk, &next, &chunks);
      }
      txn.Put(ds_.info, kJournalLsnKey, EncodeLsn(last));
    });
  }
  journal_.Checkpoint();
  journal_.Settle();
}

// Truncates whatever an interrupted writer left past committed lengths, and
// makes the last chunk the current one.
void WriterRecovery::Recover(index::DatasetInfo* info_out, OpenChunk* open) {
  index::DatasetInfo& info = *info_out;
  // Query databases another process created since this dataset was opened;
  // none can appear while this writer holds the lock.
  ds_.query.Refresh(*ds_.env);
  std::vector<std::pair<uint32_t, index::ChunkRecord>> dirty;
  std::optional<std::pair<uint32_t, index::ChunkRecord>> last;
  {
    index::Txn txn = ds_.env->BeginRead();
    info = ds_.GetInfo(txn);
    if (!info.attached_to.empty()) {
      throw InvalidArgumentError("open writer " + ds_.dir + ": the dataset is attached to " +
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
      if (!txn.Get(ds_.chunks, index::ChunkKey(n), &bytes)) continue;
      index::ChunkRecord record = ds_.GetChunk(txn, n);
      // Another dataset's file: never truncated from here.
      if (!record.attached()) dirty.emplace_back(n, std::move(record));
    }
    index::Cursor cursor(txn, ds_.chunks);
    if (cursor.Last()) {
      const uint32_t n = index::DecodeChunkKey(cursor.key());
      last.emplace(n, ds_.DecodeChunkAt(cursor.key(), cursor.value()));
    }
    open->next_chunk =
        index::NextChunkNumber(info, last ? std::optional<uint32_t>(last->first) : std::nullopt);
  }
  for (const auto& [n, record] : dirty) {
    const std::string path = ds_.ChunkPath(record.file_name);
    ChunkFile f(path, ChunkFile::Mode::kAppend);
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
    RemoveObsoleteFiles(ds_, "recover");
    info.obsolete_files.clear();
  }
  OpenChunk::RemoveAbandonedFiles(ds_, open->next_chunk);
  if (last) {
    open->have_chunk = true;
    open->chunk = last->first;
    open->chunk_record = last->second;
    open->file = std::make_shared<ChunkFile>(ds_.ChunkPath(open->chunk_record.file_name),
                                             ChunkFile::Mode::kAppend);
    open->write_pos = open->chunk_record.committed_length;
  }
  std::vector<uint32_t> want;
  if (open->have_chunk) want.push_back(open->chunk);
  // Also records next_chunk in datasets written before it existed.
  if (want != info.dirty_chunks || info.next_chunk != open->next_chunk) {
    open->SetDirty(ds_, want, &info);
  }
}

// `lock`, the writer lock, is held until the replay ends.
void DatasetAccess::ReplayJournal(std::shared_ptr<Impl> ds, util::FileLock lock) {
  const util::FileLock held = std::move(lock);
  JournalSession journal(*ds->env, JournalPathOf(*ds));
  WriterRecovery(*ds, journal).ReplayJournal();
}

void DatasetAccess::SettleJournal(Impl& ds) {
  JournalSession journal(*ds.env, JournalPathOf(ds));
  WriterRecovery(ds, journal).SettleLeftJournal();
}

}  // namespace gulpdb::engine
