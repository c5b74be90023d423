// The check that tells whether another program changed the GulpIO files of an
// imported dataset since gulpdb indexed them (sizes, and the content of each
// .gmeta): an imported dataset compares what it recorded with the files at
// open (CheckSources, docs/format/index_format.md "Source stamps"). The
// names of GulpIO files are the storage core's (engine/core/gulpio_names.h).
//
// Thread safety: free functions, safe from any thread.
#ifndef GULPDB_ENGINE_GULPIO_GULPIO_FILES_H_
#define GULPDB_ENGINE_GULPIO_GULPIO_FILES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/dataset_view.h"
#include "engine/core/gulpio_names.h"
#include "index/records.h"

namespace gulpdb::engine {

// stat(2) of `path`: none when it does not exist; throws IoError otherwise.
std::optional<index::FileStamp> StampOf(const std::string& path);

// One file that differs from what the index recorded.
struct SourceChange {
  std::string file;  // relative to the dataset directory
  std::string what;  // e.g. "its size changed from 10 to 12 bytes"
};

// What CheckSources found.
struct SourceReport {
  std::vector<SourceChange> changes;  // the index no longer describes these
  // Imported .gmeta files that are gone while their data file is intact: not
  // a change (the index describes every byte; `gulpdb export` writes them again).
  std::vector<std::string> missing_meta;
  uint64_t hashed_bytes = 0;  // .gmeta bytes read because the fast path missed
};

// Compares an imported dataset's files with what its index recorded
// (docs/format/index_format.md "Source stamps"): a data file whose size
// differs or that is gone; a .gmeta whose size or content (CRC-32C, against
// ChunkRecord::meta_content) differs; a new data*.gulp / meta*.gmeta pair
// the index does not know. Content is compared only when the file's stat
// identity differs from the one the side record (engine/gulpio/verified_sources.h)
// holds for it; a file found unchanged that way is recorded there, so that
// the next open does not read it again. Returns at once, after one read
// transaction, when the dataset records no stamps (DatasetInfo::source_stamps),
// and at once for a dataset opened from a published manifest (`ds.remote`).
// Otherwise costs one stat per stamped file, one listing of the directory,
// the side record, and a read of each .gmeta whose identity changed (a
// copied or restored directory: all of them, once). Reads its own snapshot;
// no transaction stays open while files are read. Throws IoError when a file
// cannot be read, CorruptionError for a damaged record.
SourceReport CheckSources(const Dataset& ds);

// The command that rebuilds the index of `ds` from its .gmeta files.
std::string ReindexCommand(const Dataset& ds);

// The message of the CorruptionError Dataset::Open throws for `changes` (not
// empty): the first few files and what to run.
std::string SourceChangesMessage(const Dataset& ds, const std::vector<SourceChange>& changes);

// Opens the local dataset `dir` (engine::OpenLocalDataset) and, when
// `check_sources`, refuses with StaleIndexError an imported one whose GulpIO
// files changed since it was indexed (CheckSources): how Dataset::Open opens
// a local dataset, and how the rooms that must not call the front door (a
// push of a local dataset) open one. Only imported datasets record stamps;
// the others pay nothing here.
std::unique_ptr<Dataset> OpenLocalChecked(const std::string& dir, const OpenOptions& options,
                                          bool check_sources = true);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_GULPIO_GULPIO_FILES_H_
