// What "a video's meta has key K with value V" means, in one place for the
// secondary meta index and the scan, so that both give the same answers.
//
// A video's meta is the first entry of its meta_data list (what GulpIO2's
// readers return); a list that is empty or whose first entry is not an object
// has no keys. Keys compare by their decoded text; when an object repeats a
// key, its last value counts (as Python's json.loads keeps it). Values compare
// by their canonical form (CanonicalMetaValue):
//   - strings by their decoded text (escapes and raw UTF-8 alike);
//   - numbers by their exact decimal value as written: 1, 1.0, 1e0 and 10E-1
//     are equal, 0 and -0.0 are equal, 0.1 and 0.10000000000000001 are not
//     (no rounding to binary floating point); a number whose exponent needs
//     more than 17 digits compares by its text;
//   - true, false, null, NaN, Infinity and -Infinity only equal themselves
//     (true is not 1; NaN equals NaN);
//   - a string never equals a number ("1" is not 1);
//   - lists element by element, objects member by member in any order.
//
// Thread safety: pure functions.
#ifndef GULPDB_ENGINE_QUERY_META_VALUE_H_
#define GULPDB_ENGINE_QUERY_META_VALUE_H_

#include <string>
#include <string_view>
#include <vector>

namespace gulpdb::engine {

// The canonical form of the JSON value `json` (whitespace around it allowed):
// two values are equal exactly when their canonical forms are the same bytes.
// The form is compact JSON-like text (strings escaped as Python's json.dumps
// escapes them, numbers as <digits>e<exponent>, object members sorted), not
// meant to be parsed back. Throws InvalidArgumentError "parse json: byte N:
// ..." when `json` is not exactly one JSON value.
std::string CanonicalMetaValue(std::string_view json);

// The values of some keys in the first entry of a meta_data list.
// `quoted_keys[i]` is key i as a JSON string in canonical form
// (PythonJsonString(key)). On success (*values)[i] views the value text of
// key i inside `meta_data`, or is empty when the entry lacks it. Returns
// false, with a description in *error, when `meta_data` is not a JSON list
// whose first entry (if any) is valid JSON: the caller reports that as
// corruption of the video's record.
bool FindFirstEntryValues(std::string_view meta_data, const std::vector<std::string>& quoted_keys,
                          std::vector<std::string_view>* values, std::string* error);

// A meta value's JSON text for showing it: a string's decoded text (the
// JSON text itself if it does not decode), any other value's JSON text.
std::string MetaValueText(std::string_view json);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_META_VALUE_H_
