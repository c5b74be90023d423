// The recovery a writer runs when it takes the lock, as RocksDB's
// db_impl_open.cc: a journal left by a writer of this boot is settled, one
// from before a restart replayed (engine/core/journal.h; the record's bytes,
// journal_record.cc), and whatever an interrupted writer left past the
// committed lengths is truncated (docs/reliability.md).
#include <sys/stat.h>

#include <map>
#include <optional>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/journal.h"
#include "engine/core/journal_session.h"
#include "engine/core/obsolete_files.h"
#include "engine/core/payload_codec.h"
#include "engine/core/writer_impl.h"
#include "gulpdb/error.h"
#include "util/file_io.h"

namespace gulpdb {

using engine::AppliedLsn;
using engine::ChunkFileName;
using engine::EncodeLsn;
using engine::kJournalLsnKey;
using engine::kMaxChunkNameAttempts;
using engine::PayloadReader;

// Under the writer lock, with the index open: a journal left with records
// past its checkpoint by a writer of this boot that stopped (crashed, or
// closed without its last checkpoint). The index holds every commit that
// was acknowledged (the page cache survived); records past the index's
// journal_lsn were never acknowledged and their frames lie past committed
// lengths. A checkpoint makes the rest durable and retires them.
void Writer::Impl::SettleLeftJournal() {
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
void Writer::Impl::ReplayJournal() {
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

// Truncates whatever an interrupted writer left past committed lengths, and
// makes the last chunk the current one.
void Writer::Impl::Recover() {
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
void Writer::Impl::RemoveAbandonedChunkFiles(uint64_t first) {
  bool removed = false;
  for (uint64_t n = first; n < index::kNoChunkNumberLeft && n - first < kMaxChunkNameAttempts;
       ++n) {
    const std::string path = ChunkPath(ChunkFileName(static_cast<uint32_t>(n)));
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) break;  // where StartNewChunk stops looking
    if (!S_ISREG(st.st_mode) || st.st_size != 0) continue;
    util::RemoveFile(path);
    removed = true;
  }
  if (removed) util::SyncDirectory(ds->dir);
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
