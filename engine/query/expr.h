// The query language's expressions (docs/query.md): the syntax tree, the
// parser and a printer. Pure functions over text: nothing here reads a
// dataset, so the evaluator (query_eval.h) and the planner (query_plan.h)
// serve every index that can hand them a video's id, frame count, chunk and
// meta JSON.
//
//   query   := or
//   or      := and ("or" and)*
//   and     := not ("and" not)*
//   not     := "not" not | "(" or ")" | "has" field | field op value
//            | field "in" "(" [value ("," value)*] ")"
//   op      := "=" | "!=" | "<" | "<=" | ">" | ">="
//   field   := id | frames | chunk | NAME | meta.NAME | meta["key"] | `key`
//   value   := 'string' | "string" | number | true | false | null
//            | NaN | Infinity | -Infinity | a JSON list or object
//
// Keywords (and or not in has true false null) are matched whatever their
// case; NAME is [A-Za-z_][A-Za-z0-9_]* and not a keyword.
//
// Thread safety: pure functions; a QueryExpr is a plain value.
#ifndef GULPDB_ENGINE_QUERY_EXPR_H_
#define GULPDB_ENGINE_QUERY_EXPR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/query.h"

namespace gulpdb::engine {

// Nesting (parentheses and `not`) deeper than this is refused, so that a
// hostile expression cannot exhaust the stack of the parser or evaluator.
inline constexpr int kMaxQueryDepth = 100;

enum class Builtin : uint8_t { kNone, kId, kFrames, kChunk };

struct QueryField {
  Builtin builtin = Builtin::kNone;
  std::string key;  // kNone: the meta key (UTF-8)
};

enum class QueryOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kHas };

struct QueryExpr {
  enum class Kind : uint8_t { kAll, kAnd, kOr, kNot, kTerm };
  Kind kind = Kind::kAll;           // kAll: every video (an empty list of conditions)
  std::vector<QueryExpr> children;  // kAnd, kOr: two or more; kNot: one
  // kTerm:
  QueryField field;
  QueryOp op = QueryOp::kEq;
  // The values as JSON texts (strings in canonical form): one for the
  // comparisons, any number for kIn, none for kHas.
  std::vector<std::string> values;
  // kEq, kIn: a value that is not a JSON string also matches the string of
  // its text as written (`x = 3` finds 3 and "3"), the rule of --where;
  // `texts[i]` is that text of values[i]. False for conditions given as
  // value sets (MetaCondition), which match exactly their values.
  bool text_too = false;
  std::vector<std::string> texts;
};

// Parses `text`. Throws QuerySyntaxError (an InvalidArgumentError) whose
// message names the byte offset and what was expected, then shows the text
// with a caret under that byte.
QueryExpr ParseQueryExpr(std::string_view text);

// `conditions` as an expression: the and of one kIn term per condition,
// matching exactly the condition's JSON values (kAll for none). Throws
// InvalidArgumentError "<operation>: ..." naming the key for a value that
// is not JSON or a key that is not UTF-8.
QueryExpr ConditionsExpr(const std::vector<MetaCondition>& conditions,
                         const std::string& operation);

// The and of `parts` (kAll parts dropped; kAll when none is left).
QueryExpr AndOf(std::vector<QueryExpr> parts);

// Text that parses back to an expression matching the same videos (for
// parsed expressions; a value set made from MetaConditions prints as an
// `in` list, which also matches the values' texts).
std::string PrintQueryExpr(const QueryExpr& expr);

// The meta keys (not the built-in fields) `expr` names, each once, in the
// order they first appear.
std::vector<std::string> QueryMetaKeys(const QueryExpr& expr);

// "  <text>\n  <spaces>^": `text` with control characters escaped and a
// caret under byte `pos` (a window around it when the text is long).
std::string CaretLines(std::string_view text, size_t pos);

}  // namespace gulpdb::engine

namespace gulpdb {

// What a Query holds (include/gulpdb/query.h).
struct Query::Rep {
  engine::QueryExpr expr;
};

}  // namespace gulpdb

#endif  // GULPDB_ENGINE_QUERY_EXPR_H_
