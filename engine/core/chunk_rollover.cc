// Chunk rollover: when the chunk appends go to is full, and the creation of
// the next data_<N>.gulp (registered empty before anything is written into
// it, so that a crash leaves it known to the index). Numbers are never
// reused (docs/format/index_format.md).
#include <algorithm>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/fault_injection.h"
#include "engine/core/writer_impl.h"
#include "gulpdb/error.h"
#include "util/file_io.h"

namespace gulpdb {

using engine::ChunkFileName;
using engine::kMaxChunkNameAttempts;

// Records `dirty` as the dirty list, and next_chunk.
void Writer::Impl::SetDirty(const std::vector<uint32_t>& dirty) {
  ds->env->Update([&](index::Txn& txn) {
    index::DatasetInfo current = ds->GetInfo(txn);
    current.dirty_chunks = dirty;
    current.next_chunk = std::max(current.next_chunk, next_chunk);
    txn.Put(ds->info, index::kDatasetInfoKey, index::EncodeDatasetInfo(current));
  });
  info.dirty_chunks = dirty;
  info.next_chunk = std::max(info.next_chunk, next_chunk);
}

bool Writer::Impl::ChunkIsFull(uint64_t video_bytes) const {
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
void Writer::Impl::StartNewChunk() {
  uint64_t number = next_chunk;
  // A data_<N>.gulp the index does not know (left by another program) is
  // never touched, unless it is empty (RemoveAbandonedChunkFiles): the new
  // chunk takes the next free number.
  for (int attempt = 0;; ++attempt, ++number) {
    if (number >= index::kNoChunkNumberLeft) {
      throw ResourceExhaustedError("create chunk in " + ds->dir +
                                   ": every chunk number up to 2^32 - 1 has been used");
    }
    if (!util::PathExists(ChunkPath(ChunkFileName(static_cast<uint32_t>(number))))) break;
    if (attempt >= kMaxChunkNameAttempts) {
      throw InvalidArgumentError("create chunk in " + ds->dir +
                                 ": too many foreign data_*.gulp files");
    }
  }
  const auto n = static_cast<uint32_t>(number);
  auto created = std::make_shared<engine::ChunkFile>(ChunkPath(ChunkFileName(n)),
                                                     engine::ChunkFile::Mode::kCreate);
  util::SyncDirectory(ds->dir);
  engine::fault::Reached(engine::fault::Point::kChunkCreated);
  index::ChunkRecord record;
  record.file_name = ChunkFileName(n);
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

}  // namespace gulpdb
