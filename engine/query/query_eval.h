// The evaluator of the query language: whether one video satisfies an
// expression (expr.h), from its id, frame count, chunk and meta JSON. The
// scan, the check of index candidates and the fuzz target all ask it, so
// the meaning of every operator lives here once (docs/query.md, "What a
// comparison means"):
//
//   - a term on a key the video's meta (its first meta_data entry) lacks is
//     false; `not` negates the whole term;
//   - `=` and `in` match values equal to one of the given ones (strings by
//     text, numbers by exact decimal value: meta_value.h), and a value that
//     is not a string also matches the string of its text as written;
//   - `!=` holds for a value of the given value's type that differs from it
//     (numbers, NaN included, are one type; true and false are another);
//   - `<`, `<=`, `>`, `>=` compare numbers with numbers by value and strings
//     with strings by the bytes of their UTF-8 text; a value of another
//     type, NaN, or a number kept as text is false.
//
// The meta JSON is read once per video (FindFirstEntryValues), and each
// value the expression reads is turned into its ordered bytes
// (value_order.h) once.
//
// Thread safety: a QueryProgram is immutable once built; Matches may be
// called from any number of threads, each with its own Scratch.
#ifndef GULPDB_ENGINE_QUERY_QUERY_EVAL_H_
#define GULPDB_ENGINE_QUERY_QUERY_EVAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/query/expr.h"

namespace gulpdb::engine {

// What the evaluator reads of a video.
struct VideoFacts {
  std::string_view id;
  uint64_t frames = 0;
  uint32_t chunk = 0;
  std::string_view meta_data;  // the meta_data JSON list, as stored
};

class QueryProgram {
 public:
  // Per-call working space: keep one per thread and pass it to every call.
  struct Scratch {
    std::vector<std::string_view> values;
    std::vector<std::optional<std::string>> ordered;
  };

  // `expr` must come from ParseQueryExpr, ConditionsExpr or AndOf. Throws
  // InvalidArgumentError for a value that is not JSON.
  explicit QueryProgram(const QueryExpr& expr);

  // Whether `video` satisfies the expression. Clears *error (non-null);
  // returns false and sets it when meta_data is not a JSON list whose first entry
  // is valid JSON: the caller reports that as corruption of the video.
  bool Matches(const VideoFacts& video, Scratch* scratch, std::string* error) const;

  // The meta keys the expression reads, as canonical JSON strings.
  const std::vector<std::string>& quoted_keys() const { return quoted_keys_; }

 private:
  struct Node {
    QueryExpr::Kind kind = QueryExpr::Kind::kAll;
    std::vector<uint32_t> children;
    // kTerm:
    Builtin builtin = Builtin::kNone;
    uint32_t slot = 0;  // meta keys: index into quoted_keys_
    QueryOp op = QueryOp::kEq;
    std::vector<std::string> set;  // kEq, kIn: ordered bytes, sorted, unique
    std::string bound;             // kNe and ranges: the value's ordered bytes
    uint8_t from = 0, to = 0;      // tags a value must have: its type's, or ranges'
  };
  uint32_t Compile(const QueryExpr& expr);
  bool Eval(uint32_t node, const VideoFacts& video, Scratch* scratch) const;
  const std::string* Value(const Node& n, const VideoFacts& video, Scratch* scratch) const;

  std::vector<Node> nodes_;  // nodes_[0] is the root
  std::vector<std::string> quoted_keys_;
  std::vector<std::string> keys_;
};

// The set of ordered bytes `=` / `in` of term `expr` matches (its values,
// and with text_too the strings of their texts), sorted and unique.
std::vector<std::string> EqualitySet(const QueryExpr& term);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_QUERY_EVAL_H_
