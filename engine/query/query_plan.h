// The planner of the query language: which parts of an expression (expr.h)
// the indexes can answer, as key ranges, and which are left to the
// evaluator (query_eval.h). Pure: it sees only the expression and the
// indexed fields; query_exec.h reads what it plans.
//
//   - a term on a meta key with an index of the ordered form: `=`, `in`,
//     `!=`, the four ranges and `has` are ranges of meta index keys (two
//     ranges on one key under one `and` are merged into one);
//   - a term on a key whose index has the first (canonical) key form: `=`,
//     `in` and `has` only (ranges need the ordered form: `gulpdb index DIR
//     --meta-key KEY` rebuilds it);
//   - `id =`, `id in` and id ranges: lookups and ranges of the videos table;
//   - `and`: its children the index answers narrow the candidates (the
//     executor picks the smallest), the others are checked per candidate;
//   - `or`: the union, when the index answers every child;
//   - `not`, `frames`, `chunk` and unindexed keys: no index (a scan).
//
// Thread safety: pure functions.
#ifndef GULPDB_ENGINE_QUERY_QUERY_PLAN_H_
#define GULPDB_ENGINE_QUERY_QUERY_PLAN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/query/expr.h"
#include "index/query_keys.h"

namespace gulpdb::engine {

// Meta index keys with from <= key < to.
struct IndexRange {
  std::string from, to;
  // The entries are candidates to check (values stored by checksum).
  bool verify = false;
};

struct QueryPlan {
  enum class Kind : uint8_t { kScan, kMeta, kIds, kIdRange, kAnd, kOr };
  Kind kind = Kind::kScan;
  std::vector<IndexRange> ranges;   // kMeta
  std::vector<std::string> ids;     // kIds: sorted, unique
  std::string id_from, id_to;       // kIdRange: from <= id < to (to empty: no bound)
  std::vector<QueryPlan> children;  // kAnd: the children the index answers; kOr: all
  // What the index yields is exactly the videos that satisfy the planned
  // expression (but for entries of `verify` ranges): kAnd, when every child
  // of the expression is planned and exact.
  bool exact = false;
  // kMeta of one range term (<, <=, >, >=) on the ordered field of this
  // number: one inline range then the field's checksum entries. An `and`
  // merges such terms of one field.
  std::optional<uint32_t> range_field;
};

// `fields`: the indexed meta keys with their field number and key form.
QueryPlan PlanQuery(const QueryExpr& expr,
                    const std::map<std::string, index::MetaFieldValue>& fields);

// The plan as text ("and(meta[2 ranges], scan)"), for tests and messages.
std::string DescribePlan(const QueryPlan& plan);

// The first key after every key that starts with `prefix` (empty when there
// is none: no upper bound).
std::string PrefixEnd(std::string prefix);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_QUERY_PLAN_H_
