// The diff of two versions of a dataset (Dataset::Diff): two tags that share
// their order table compared by their record delta levels (O(change)); any
// other pair read through
// the core's index source, their order tables walked together in key order
// in batches, so that memory holds a batch and the videos that changed
// place (appended, removed, moved), not the dataset. A video's frames are compared by content —
// each frame's length and CRC-32C from the records, or its bytes when a
// record has no CRC — never by chunk or offset, so that a compaction, which
// moves frames, changes nothing.
#ifndef GULPDB_ENGINE_VERSION_VERSION_DIFF_H_
#define GULPDB_ENGINE_VERSION_VERSION_DIFF_H_

#include <string>

#include "gulpdb/dataset.h"

namespace gulpdb::engine {

// What a diff read of the tags' objects (HEAD's reads of the LMDB index
// are not counted).
struct DiffCost {
  bool by_record_deltas = false;  // the two tags shared their order table
  uint64_t partitions = 0;        // partitions opened
  uint64_t bytes = 0;             // their bytes
};

// What changed from `a` to `b` (tag names or HEAD) of the local dataset
// `self` (the live dataset or one of its versions). NameNotFoundError for an
// unknown tag. Two tags that share their videos and order partitions
// (a tag after meta edits against the one before, both built in format 4)
// are compared by their record delta levels alone; other pairs by a walk of
// both order tables.
VersionDiff DiffVersions(const Dataset& self, const std::string& a, const std::string& b,
                         DiffCost* cost = nullptr);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_VERSION_VERSION_DIFF_H_
