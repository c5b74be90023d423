// Obsolete files: chunk files (and their .gmeta) that the index lists in
// DatasetInfo::obsolete_files once compaction has emptied them. They are
// deleted after the transaction that lists them commits, and the next writer
// finishes a deletion a crash interrupted. The names come from the index, so
// one that could leave the dataset directory is damage, never something to
// delete: every deletion goes through RemoveObsoleteFiles, and every name
// that is about to be listed is checked with IsInsideDataset first.
#ifndef GULPDB_ENGINE_CORE_OBSOLETE_FILES_H_
#define GULPDB_ENGINE_CORE_OBSOLETE_FILES_H_

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/dataset_impl.h"

namespace gulpdb::engine {

// True when `name`, taken relative to the dataset directory, stays inside
// it: util::IsRelativeName (not empty, not absolute, no "." or ".."
// segment, no NUL, backslash or control character).
bool IsInsideDataset(std::string_view name);

// Throws CorruptionError "<operation> <dir>: <whose> '<name>' is not inside
// the dataset" unless IsInsideDataset(name).
void CheckInsideDataset(const DatasetImpl& ds, const std::string& operation,
                        const std::string& whose, std::string_view name);

// Whether a tag (engine/version) may read a chunk file of the dataset in
// `dir`: gulpdb.versions holds a tag, or a deleted one in its grace period.
bool TagsMayReadChunks(const std::string& dir);

// Deletes the files the index lists as obsolete (a chunk's data file that
// TagsMayReadChunks is moved to gulpdb.versions/chunks instead), syncs the directory and
// clears the list (one write transaction). The caller holds the writer lock.
// Checks every name before deleting any: a name outside the dataset throws
// CorruptionError (as CheckInsideDataset) and nothing is deleted. Appends the
// names deleted (or already gone) to `removed` when not null.
void RemoveObsoleteFiles(DatasetImpl& ds, const std::string& operation,
                         std::vector<std::string>* removed = nullptr);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_OBSOLETE_FILES_H_
