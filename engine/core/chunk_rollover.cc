// The open chunk and chunk rollover (chunk_rollover.h).
#include "engine/core/chunk_rollover.h"

#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/fault_injection.h"
#include "gulpdb/error.h"
#include "util/file_io.h"

namespace gulpdb::engine {

void OpenChunk::SetDirty(DatasetImpl& ds, const std::vector<uint32_t>& dirty,
                         index::DatasetInfo* info) {
  ds.env->Update([&](index::Txn& txn) {
    index::DatasetInfo current = ds.GetInfo(txn);
    current.dirty_chunks = dirty;
    current.next_chunk = std::max(current.next_chunk, next_chunk);
    txn.Put(ds.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(current));
  });
  info->dirty_chunks = dirty;
  info->next_chunk = std::max(info->next_chunk, next_chunk);
}

bool OpenChunk::IsFull(bool rollover, const index::DatasetInfo& info, uint64_t video_bytes) const {
  if (chunk_record.state == index::ChunkState::kFull) return true;
  if (!rollover) return false;
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
void OpenChunk::StartNew(DatasetImpl& ds, const WriteBatch& batch, JournalSession& journal,
                         index::DatasetInfo* info) {
  uint64_t number = next_chunk;
  // A data_<N>.gulp the index does not know (left by another program) is
  // never touched, unless it is empty (RemoveAbandonedFiles): the new
  // chunk takes the next free number.
  for (int attempt = 0;; ++attempt, ++number) {
    if (number >= index::kNoChunkNumberLeft) {
      throw ResourceExhaustedError("create chunk in " + ds.dir +
                                   ": every chunk number up to 2^32 - 1 has been used");
    }
    if (!util::PathExists(ds.ChunkPath(ChunkFileName(static_cast<uint32_t>(number))))) break;
    if (attempt >= kMaxChunkNameAttempts) {
      throw InvalidArgumentError("create chunk in " + ds.dir +
                                 ": too many foreign data_*.gulp files");
    }
  }
  const auto n = static_cast<uint32_t>(number);
  auto created =
      std::make_shared<ChunkFile>(ds.ChunkPath(ChunkFileName(n)), ChunkFile::Mode::kCreate);
  util::SyncDirectory(ds.dir);
  fault::Reached(fault::Point::kChunkCreated);
  index::ChunkRecord record;
  record.file_name = ChunkFileName(n);
  std::vector<uint32_t> dirty;
  for (const auto& entry : batch.touched) dirty.push_back(entry.first);
  dirty.push_back(n);
  journal.Settle();
  ds.env->Update([&](index::Txn& txn) {
    index::DatasetInfo current = ds.GetInfo(txn);
    current.dirty_chunks = dirty;
    current.next_chunk = std::max(current.next_chunk, number + 1);
    ds.PutChunk(txn, n, record);
    txn.Put(ds.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(current));
  });
  info->dirty_chunks = dirty;
  info->next_chunk = std::max(info->next_chunk, number + 1);
  next_chunk = number + 1;
  fault::Reached(fault::Point::kChunkRegistered);
  have_chunk = true;
  chunk = n;
  chunk_record = record;
  file = std::move(created);
  write_pos = 0;
  batch_videos_in_chunk = 0;
}

// A writer killed between creating a chunk file and registering it
// (StartNew) leaves an empty data_<N>.gulp that the index does not
// know, at the first free name from next_chunk on. GulpIO readers pair
// every data*.gulp with a meta*.gmeta, so such a file would break an
// exported directory: remove it. Files holding bytes are not ours and stay.
void OpenChunk::RemoveAbandonedFiles(const DatasetImpl& ds, uint64_t first) {
  bool removed = false;
  for (uint64_t n = first; n < index::kNoChunkNumberLeft && n - first < kMaxChunkNameAttempts;
       ++n) {
    const std::string path = ds.ChunkPath(ChunkFileName(static_cast<uint32_t>(n)));
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) break;  // where StartNew stops looking
    if (!S_ISREG(st.st_mode) || st.st_size != 0) continue;
    util::RemoveFile(path);
    removed = true;
  }
  if (removed) util::SyncDirectory(ds.dir);
}

}  // namespace gulpdb::engine
