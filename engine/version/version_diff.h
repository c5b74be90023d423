// The diff of two versions of a dataset (Dataset::Diff): both read through
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

// What changed from `a` to `b` (tag names or HEAD) of the local dataset
// `self` (the live dataset or one of its versions). NameNotFoundError for an
// unknown tag.
VersionDiff DiffVersions(const Dataset& self, const std::string& a, const std::string& b);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_VERSION_VERSION_DIFF_H_
