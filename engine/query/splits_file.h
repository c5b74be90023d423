// gulpdb_splits.json: the named splits of a dataset beside its .gmeta files,
// written by export and read by import (GulpIO's readers only look at
// data*.gulp and meta*.gmeta, so they ignore it). The format:
//
//   {"format": "gulpdb splits", "version": 1, "splits": {"train": ["id", ...], ...}}
//
// JSON as Python's json.dumps writes it (non-ASCII escaped), one split per
// line; ids in split order. Readers refuse a version above 1.
//
// Thread safety: free functions; the file is replaced atomically.
#ifndef GULPDB_ENGINE_QUERY_SPLITS_FILE_H_
#define GULPDB_ENGINE_QUERY_SPLITS_FILE_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/query/index_handles.h"
#include "engine/query/query_dbs.h"

namespace gulpdb::engine {

inline constexpr const char* kSplitsFileName = "gulpdb_splits.json";

// (name, ids in split order), by name.
using NamedSplits = std::vector<std::pair<std::string, std::vector<std::string>>>;

// Every split as `txn` sees it.
NamedSplits ReadAllSplits(index::Txn& txn, const QueryDbHandles& dbs);

// Writes `dir`/gulpdb_splits.json atomically, or, when there is no split,
// removes a file of that name left by an earlier export (it would otherwise
// bring back splits since removed). Throws IoError / ResourceExhaustedError.
void WriteSplitsFile(const std::string& dir, const NamedSplits& splits);

// The splits of `dir`/gulpdb_splits.json; nullopt when there is no such file.
// Throws InvalidArgumentError naming the file and what is wrong for a file
// that is not in the format above (bad JSON, a split listed twice, a name or
// id that is not a non-empty string).
std::optional<NamedSplits> ReadSplitsFile(const std::string& dir);

// Stores `splits` in the index of `ds` in one write transaction (the
// databases are created first). Every id must be a video of `ds` and appear
// once per split: otherwise InvalidArgumentError naming `source`, the split
// and the offending ids, and nothing is stored.
void StoreSplits(const IndexHandles& ds, const NamedSplits& splits, const std::string& source);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_SPLITS_FILE_H_
