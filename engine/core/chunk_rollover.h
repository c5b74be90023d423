// The open chunk of a Writer (OpenChunk): the chunk appends go to, its
// committed record, its read-write file and the position the next frames
// are written at, and chunk rollover: when it is full, and the creation of
// the next data_<N>.gulp, registered empty before anything is written into
// it so that a crash leaves it known to the index (chunk_rollover.cc).
// Numbers are never reused (docs/format/index_format.md). What the batch
// wrote is write_batch.h's; the recovery that finds the open chunk when a
// writer starts, writer_recovery.h's.
// Internal to engine/core.
// Thread safety: none; one Writer belongs to one thread at a time.
#ifndef GULPDB_ENGINE_CORE_CHUNK_ROLLOVER_H_
#define GULPDB_ENGINE_CORE_CHUNK_ROLLOVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/chunk_file.h"
#include "engine/core/dataset_impl.h"
#include "engine/core/journal_session.h"
#include "engine/core/write_batch.h"
#include "gulpdb/interop.h"
#include "index/records.h"

namespace gulpdb::engine {

inline constexpr int kMaxChunkNameAttempts = 1000;  // skips over foreign data_<N>.gulp files

// The GulpIO name of chunk `chunk`'s data file (gulpdb/interop.h, the one rule).
inline std::string ChunkFileName(uint32_t chunk) { return GulpioDataFileName(chunk); }

struct OpenChunk {
  bool have_chunk = false;
  uint32_t chunk = 0;                  // the chunk appends go to
  uint64_t next_chunk = 0;             // the number a new chunk takes at the lowest
  index::ChunkRecord chunk_record;     // its committed state
  std::shared_ptr<ChunkFile> file;     // its read-write handle
  uint64_t write_pos = 0;              // next byte to write in it
  uint32_t batch_videos_in_chunk = 0;  // appended to it in this batch
  bool started_new_chunk = false;      // for WriterOptions::start_new_chunk

  // The chunk appends go to; none before the first.
  std::optional<uint32_t> current() const {
    return have_chunk ? std::optional<uint32_t>(chunk) : std::nullopt;
  }
  // The batch ended (committed or discarded): the next one writes at the
  // committed length.
  void Rewind() {
    batch_videos_in_chunk = 0;
    if (have_chunk) write_pos = chunk_record.committed_length;
  }

  // True when a video of `video_bytes` does not go into the open chunk
  // (`rollover`: WriterOptions::rollover; `info`: the dataset's settings).
  bool IsFull(bool rollover, const index::DatasetInfo& info, uint64_t video_bytes) const;
  // Creates, registers and opens the next chunk, `batch` having written into
  // the chunks it touched; `journal` is settled first. Updates `*info`.
  void StartNew(DatasetImpl& ds, const WriteBatch& batch, JournalSession& journal,
                index::DatasetInfo* info);
  // Records `dirty` as the dirty list, and next_chunk, in the index and `*info`.
  void SetDirty(DatasetImpl& ds, const std::vector<uint32_t>& dirty, index::DatasetInfo* info);
  // Removes the empty data_<N>.gulp files a writer killed between creating a
  // chunk file and registering it left, from number `first` on.
  static void RemoveAbandonedFiles(const DatasetImpl& ds, uint64_t first);
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_CHUNK_ROLLOVER_H_
