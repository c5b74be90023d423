// Metadata queries and named splits: the query language (Query; its
// grammar and meaning are in docs/query.md), the value types of
// Dataset::Select, Dataset::Splits and friends (dataset.h), and how
// `gulpdb ls --where` reads its arguments, and counts of meta values (for
// charts).
//
// The equality below is the query language's `=` too (which also lets a
// number or literal match the string of its text, as --where does).
//
// A video's meta is the first entry of its meta_data list, as GulpIO2's
// readers return it. A condition holds when that entry has the key and its
// value equals one of the condition's values, where equality is:
//   - strings: the same decoded text ("\u00e9" and "é" are equal);
//   - numbers: the same exact decimal value as written (1 == 1.0 == 1e0;
//     0.1 != 0.10000000000000001: there is no rounding to binary floating
//     point; a number with an exponent of more than 17 digits only equals the
//     same text);
//   - true, false, null, NaN, Infinity, -Infinity: only themselves (true is
//     not 1, NaN equals NaN);
//   - a string never equals a number or a literal ("1" != 1);
//   - lists element by element, objects member by member in any order.
// The secondary meta index and the scan apply exactly this rule.
//
// Thread safety: plain value types and pure functions; a Query is immutable
// and may be shared between threads; a MetaValueTally belongs to one thread
// at a time.
#ifndef GULPDB_QUERY_H_
#define GULPDB_QUERY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gulpdb/export.h"

namespace gulpdb {

// "the first meta entry's `key` equals one of `values`".
struct MetaCondition {
  std::string key;                  // a key of the first meta_data entry (UTF-8)
  std::vector<std::string> values;  // JSON texts; an empty list never holds

  // key == one JSON value.
  static MetaCondition Equals(std::string key, std::string json_value) {
    return MetaCondition{std::move(key), {std::move(json_value)}};
  }
};

// An expression of the query language, parsed: comparisons (= != < <= > >=)
// of the built-in fields id, frames and chunk or of meta keys with values,
// `KEY in (V, ...)`, `has KEY`, `and`, `or`, `not` and parentheses, as
// docs/query.md defines them. Select(Query) answers it (dataset.h).
class GULPDB_EXPORT Query {
 public:
  // Every video.
  Query();

  // Parses `expression`, e.g. "frames >= 16 and label in ('a', 'b')".
  // Throws QuerySyntaxError (an InvalidArgumentError) whose message names
  // the byte offset and what was wrong, then shows the text with a caret
  // under it. An empty expression is an error (use Query() for every video).
  static Query Parse(std::string_view expression);

  // An argument of `gulpdb ls --where` (and split --where): an expression;
  // or, when it starts with a key (no space, quote, parenthesis or
  // operator character) immediately followed by '=' and does not parse as
  // an expression, the KEY=VALUE condition of ParseMetaCondition (so
  // `label=pattern testsrc` keeps meaning what it always did). Throws
  // QuerySyntaxError for other text.
  static Query ParseWhere(std::string_view argument);

  // Every condition holds (MetaCondition's equality, exactly its values).
  static Query FromConditions(const std::vector<MetaCondition>& conditions);

  // Every query of `queries` holds (an empty list: every video).
  static Query AllOf(const std::vector<Query>& queries);

  // True for Query() and AllOf({}): no condition at all.
  bool MatchesEverything() const;
  // Text of the query in the language (for messages and logs): a parsed
  // query prints as an expression that parses back to the same meaning.
  std::string ToString() const;
  // The meta keys the query names (not id, frames or chunk), each once.
  std::vector<std::string> MetaKeys() const;

  // The parsed form, for the engine (engine/query/expr.h).
  struct Rep;
  const Rep& rep() const { return *rep_; }

 private:
  explicit Query(std::shared_ptr<const Rep> rep);
  std::shared_ptr<const Rep> rep_;
};

// A meta index (Dataset::MetaIndexDetails).
struct MetaIndexInfo {
  std::string key;
  // False for an index of the first key form (made by a gulpdb before
  // indexes were ordered): it answers =, in and has, while ranges and !=
  // on its key are a scan until Dataset::CreateMetaIndex(key) (`gulpdb
  // index DIR --meta-key KEY`) rebuilds it.
  bool ordered = true;
};

// A named split: a list of ids stored in the index.
struct SplitInfo {
  std::string name;
  uint64_t count = 0;  // ids in the split
};

// How many videos have one value of a meta key (Dataset::CountMetaValues,
// MetaValueTally).
struct MetaValueCount {
  std::string value;  // the value's JSON text, as the first video counted with it stores it
  std::string text;   // for showing it: a string's decoded text, else `value`
  uint64_t count = 0;
};

// Counts videos by the value of one meta key from their meta_data lists, as
// Dataset::CountMetaValues counts from a meta index, with the same equality
// (1 and 1.0 are one value): for a key without a meta index, or a sample of
// the videos. At most `max_values` distinct values are kept (the first ones
// seen): videos with a value past that bound are counted in others().
// Memory grows with the distinct values kept, never with the videos. Not
// thread-safe; a plain value type otherwise.
class GULPDB_EXPORT MetaValueTally {
 public:
  // Throws InvalidArgumentError when `key` is not valid UTF-8.
  MetaValueTally(std::string_view key, size_t max_values);
  // Counts one video from its meta_data (VideoInfo::meta_data). Throws
  // CorruptionError naming `id` when the text is not a JSON list.
  void Add(std::string_view id, std::string_view meta_data);
  // The values counted, most frequent first (ties in the order first seen).
  std::vector<MetaValueCount> Values() const;
  uint64_t others() const { return others_; }    // videos whose value was not kept
  uint64_t missing() const { return missing_; }  // videos whose meta lacks the key
  uint64_t videos() const { return videos_; }    // videos counted

 private:
  std::vector<std::string> quoted_key_;  // the key as a JSON string, in a list of one
  size_t max_values_;
  std::vector<MetaValueCount> values_;       // in the order first seen
  std::map<std::string, size_t> canonical_;  // a value's canonical form -> its index in values_
  uint64_t others_ = 0;
  uint64_t missing_ = 0;
  uint64_t videos_ = 0;
};

// The condition of a command-line term KEY=VALUE (`gulpdb ls --where`): the
// key is the text before the first '='. VALUE is parsed as JSON when it is
// valid JSON, else taken as a string; and a VALUE that is valid JSON other
// than a string also matches the string with VALUE's text. So label=3 finds
// label 3 and label "3"; label='"3"' only "3"; label=cat finds "cat";
// flag=true finds true and "true". Throws InvalidArgumentError when there is
// no '=' or VALUE is not valid UTF-8.
GULPDB_EXPORT MetaCondition ParseMetaCondition(std::string_view key_equals_value);

// Throws InvalidArgumentError ("<operation>: the meta key ...") for a key
// that Dataset::CreateMetaIndex would refuse (empty, longer than 255 bytes,
// not UTF-8): the one rule, for a caller that checks every key of a request
// before it changes anything.
GULPDB_EXPORT void CheckMetaIndexKey(std::string_view key, const std::string& operation);

}  // namespace gulpdb

#endif  // GULPDB_QUERY_H_
