// Metadata queries and named splits: the value types of Dataset::Select,
// Dataset::Splits and friends (dataset.h), and how `gulpdb ls --where` reads
// its KEY=VALUE terms.
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
// Thread safety: plain value types and a pure function.
#ifndef GULPDB_QUERY_H_
#define GULPDB_QUERY_H_

#include <cstdint>
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

// A named split: a list of ids stored in the index.
struct SplitInfo {
  std::string name;
  uint64_t count = 0;  // ids in the split
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
