// Dataset maintenance: compaction (reclaiming the bytes of removed and
// replaced videos) and merging shard datasets into one index.
//
// Both take the dataset's writer lock for their whole run and are crash-safe:
// at any point of a crash the dataset is healthy and holds every committed
// video. Errors are gulpdb::Error subclasses (error.h).
#ifndef GULPDB_MAINTENANCE_H_
#define GULPDB_MAINTENANCE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/export.h"

namespace gulpdb {

struct CompactOptions {
  // Rewrite a chunk when at least this fraction of its committed bytes is
  // garbage (0: any garbage at all).
  double min_garbage_fraction = 0.0;
  std::chrono::milliseconds lock_timeout{0};
  std::function<void(uint64_t, uint64_t)> progress;  // (chunks done, chunks to do)
};

struct CompactReport {
  uint64_t chunks_rewritten = 0;
  uint64_t videos_moved = 0;
  uint64_t bytes_reclaimed = 0;
  std::vector<std::string> files_removed;
};

// Moves the live videos of every chunk with enough garbage into new chunks
// (each batch committed as a normal write transaction), then drops the
// emptied chunks from the index and deletes their files (and their .gmeta,
// which no longer describes them). Videos keep their ids, frames, meta and
// checksums; their chunk and insertion sequence change. Readers that hold a
// snapshot from before the compaction may fail to open a deleted file;
// readers that start afterwards see the compacted dataset.
//
// Attached chunks (ChunkInfo::owner, from an in-place Merge) are another
// dataset's files: their live videos are copied into this dataset's own
// chunks and the chunk records dropped, but the files are never deleted (nor
// truncated), so the shard stays whole. Throws InvalidArgumentError, before
// anything changes, when `dataset` is itself attached to another dataset.
GULPDB_EXPORT CompactReport Compact(Dataset& dataset, const CompactOptions& options = {});

struct MergeOptions {
  OnDuplicate on_duplicate = OnDuplicate::kError;
  // Where out's index lives (and is created, for a new out); empty:
  // <out>/gulpdb.index.
  std::string index_dir;
  std::chrono::milliseconds lock_timeout{0};
  std::function<void(uint64_t, uint64_t)> progress;  // (shards done, shards)
};

struct MergeReport {
  uint64_t shards = 0;
  uint64_t chunks_attached = 0;  // referenced in place
  uint64_t videos_copied = 0;    // frames copied into the output's own chunks
  uint64_t videos = 0;
  uint64_t skipped = 0;  // duplicates skipped
};

// Adds the videos of each shard dataset to `out` (a dataset, created when
// missing). A shard inside `out`'s directory is attached: its chunk files are
// referenced where they are and no frame is copied; such chunks are closed
// to further appends. The shard records that it is attached to `out` (its
// index must be writable) and from then on refuses writers of its own
// (NewWriter, Remove, Compact, Merge into it throw InvalidArgumentError
// naming `out`); it can still be read. Attaching the same shard again does
// nothing. Other shards are copied through a Writer. Each shard is one
// transaction of `out`. Duplicate ids follow `on_duplicate` (an error names
// the id and shard).
//
// Labels: the result has one label map, <out>/label2idx.json: `out`'s own
// indices kept (from its label2idx.json, or from its videos' meta when it
// has none), the shards' other labels sorted and numbered after them (as
// ingest numbers new labels). Each merged video whose label's index differs
// gets the "idx" member of its meta entries rewritten; every other byte of
// its meta stays. Shards that already use the output's indices (a
// distributed ingest with one label map) cost no rewrite. Datasets without
// labels get no map.
//
// Before `out` is created or anything is written, every shard is checked:
// it exists and is a dataset (NotFoundError), is not `out` itself, is not
// listed twice, is not attached to another dataset, and its labels are
// consistent (each video's idx agrees with its own label2idx.json, or,
// without one, with the other videos; InvalidArgumentError listing the
// conflicts). `out` must not be attached to another dataset.
GULPDB_EXPORT MergeReport Merge(const std::string& out, const std::vector<std::string>& shards,
                                const MergeOptions& options = {});

}  // namespace gulpdb

#endif  // GULPDB_MAINTENANCE_H_
