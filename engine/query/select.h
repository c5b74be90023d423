// The query room's answers to the Dataset calls about meta and splits
// (Dataset::Select, CountMetaValues, AbsentMetaKeys, Split, DropMetaIndex),
// each on one snapshot of a dataset's index that the storage core takes and
// hands in (engine/core/index_source.h), so that one implementation serves
// the LMDB index and a partitioned snapshot alike. The core defines the
// Dataset methods and forwards here; this room never calls the core.
//
// Thread safety: as the snapshot each function is given. `dir` names the
// dataset in messages.
#ifndef GULPDB_ENGINE_QUERY_SELECT_H_
#define GULPDB_ENGINE_QUERY_SELECT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/query/expr.h"
#include "engine/query/index_handles.h"
#include "gulpdb/query.h"

namespace gulpdb::engine {

// The ids that satisfy `expr` (not kAll: the caller lists every id), in
// (chunk, insertion) order. Throws as RunQuery (query_exec.h).
std::vector<std::string> SelectIds(const QuerySource& snapshot, const std::string& dir,
                                   const QueryExpr& expr);

// Dataset::CountMetaValues from the meta index of `key`; nullopt when it
// has none.
std::optional<std::vector<MetaValueCount>> CountMetaValues(const QuerySource& snapshot,
                                                           const std::string& dir,
                                                           std::string_view key);

// Dataset::AbsentMetaKeys: the keys no video's meta has.
std::vector<std::string> AbsentMetaKeys(const QuerySource& snapshot, const std::string& dir,
                                        const std::vector<std::string>& keys);

// Dataset::Split: the ids of split `name`. NameNotFoundError naming the
// known splits when there is no such split.
std::vector<std::string> SplitIdsNamed(const QuerySource& snapshot, const std::string& dir,
                                       std::string_view name);

// Drops the meta index of `key` in one write transaction; false when there
// is none. The caller holds the writer lock (and has refreshed ix.query).
bool DropMetaIndexOf(const IndexHandles& ix, std::string_view key);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_SELECT_H_
