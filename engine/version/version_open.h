// Opening a version: a tag's root read from gulpdb.versions and a
// PartitionedIndex on its objects, handed to the core as the index source of
// a read-only dataset (OpenOnIndexSource), so that every read of a version
// is the read of any dataset: no branch per kind of index. O(1): the root
// is read; partitions are read on first use, as a published dataset's are.
// Chunk files come from the dataset directory, or from
// gulpdb.versions/chunks when compaction moved them there.
#ifndef GULPDB_ENGINE_VERSION_VERSION_OPEN_H_
#define GULPDB_ENGINE_VERSION_VERSION_OPEN_H_

#include <memory>
#include <string>

#include "gulpdb/dataset.h"

namespace gulpdb::engine {

class PartitionedIndex;

// The index of tag `name` of the local dataset `dir`. NameNotFoundError for
// an unknown tag, CorruptionError naming the file for a damaged tag file or
// root.
std::shared_ptr<const PartitionedIndex> OpenVersionIndex(const std::string& dir,
                                                         const std::string& name,
                                                         const std::string& operation);

// Dataset::Open of `dir` with OpenOptions::version set (not HEAD): the
// version as a read-only dataset. InvalidArgumentError for read_only =
// false, an index_dir, or a URL.
std::unique_ptr<Dataset> OpenVersion(const std::string& dir, const OpenOptions& options);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_VERSION_VERSION_OPEN_H_
