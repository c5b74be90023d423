// The GulpIO files of a directory: data*.gulp / meta*.gmeta pairs, numbered
// by the first run of digits in the file name (as GulpIO and GulpIO2 name
// them), and the check that tells whether another program changed them since
// gulpdb indexed them (sizes, and the content of each .gmeta). The importer
// reads chunks through FindGulpioFiles; Dataset::Create refuses a directory
// holding a pair; an imported dataset compares what it recorded with the
// files at open (CheckSources, docs/format/index_format.md "Source stamps").
//
// Thread safety: free functions, safe from any thread.
#ifndef GULPDB_ENGINE_GULPIO_FILES_H_
#define GULPDB_ENGINE_GULPIO_FILES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/dataset_impl.h"
#include "index/records.h"

namespace gulpdb::engine {

// The chunk number of a GulpIO file name: its first run of digits; none when
// it has no digits or the number does not fit 32 bits.
std::optional<uint32_t> GulpioChunkNumber(const std::string& name);
bool IsGulpioDataName(const std::string& name);  // data*.gulp
bool IsGulpioMetaName(const std::string& name);  // meta*.gmeta

// One chunk number's files (names relative to the directory; either may be
// empty when the directory lacks it).
struct GulpioChunkFiles {
  uint32_t number = 0;
  std::string data;
  std::string meta;
};

// Every data*.gulp and meta*.gmeta of `dir` by chunk number. Throws
// InvalidArgumentError "<operation> <dir>: ..." for a name without a chunk
// number or two files claiming one number.
std::map<uint32_t, GulpioChunkFiles> FindGulpioFiles(const std::string& dir,
                                                     const std::string& operation);

// The first chunk of `dir` that has both its data and its meta file, if any.
// Names that FindGulpioFiles would refuse are ignored here.
std::optional<GulpioChunkFiles> FirstGulpioPair(const std::string& dir);

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
// identity differs from the one the side record (engine/verified_sources.h)
// holds for it; a file found unchanged that way is recorded there, so that
// the next open does not read it again. Returns at once, after one read
// transaction, when the dataset records no stamps (DatasetInfo::source_stamps),
// and at once for a dataset opened from a published manifest (`ds.remote`).
// Otherwise costs one stat per stamped file, one listing of the directory,
// the side record, and a read of each .gmeta whose identity changed (a
// copied or restored directory: all of them, once). Reads its own snapshot;
// no transaction stays open while files are read. Throws IoError when a file
// cannot be read, CorruptionError for a damaged record.
SourceReport CheckSources(const DatasetImpl& ds);

// The command that rebuilds the index of `ds` from its .gmeta files.
std::string ReindexCommand(const DatasetImpl& ds);

// The message of the CorruptionError Dataset::Open throws for `changes` (not
// empty): the first few files and what to run.
std::string SourceChangesMessage(const DatasetImpl& ds, const std::vector<SourceChange>& changes);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_GULPIO_FILES_H_
