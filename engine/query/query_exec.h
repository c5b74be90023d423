// Runs a query (expr.h) on one snapshot of an index: plans it against the
// indexed fields (query_plan.h), reads the candidates the plan names —
// within an `and`, the smallest of its indexed children, found by reading
// each with a growing bound on its size, intersected with those not much
// larger — and checks with the evaluator (query_eval.h) every candidate the
// index cannot vouch for; with no usable index, it reads every record once.
// Results come in (chunk, insertion) order, as Dataset::Ids orders videos.
//
// Thread safety: as the IndexReader it is given (one thread).
#ifndef GULPDB_ENGINE_QUERY_QUERY_EXEC_H_
#define GULPDB_ENGINE_QUERY_QUERY_EXEC_H_

#include <string>
#include <vector>

#include "engine/query/expr.h"
#include "engine/query/index_reader.h"

namespace gulpdb::engine {

struct QueryRun {
  std::vector<std::string> ids;
  std::string plan;      // DescribePlan of what ran
  uint64_t entries = 0;  // meta index entries and id lookups read
  uint64_t records = 0;  // records read and evaluated
};

// The ids of the videos that satisfy `expr` (not kAll: the caller lists
// those). Throws CorruptionError naming the id for a record whose meta is
// not JSON, or a meta index entry that names no video.
QueryRun RunQuery(IndexReader& reader, const QueryExpr& expr);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_QUERY_EXEC_H_
