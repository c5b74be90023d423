// Label lists: the 20BN-style lists that name the videos of an ingest and
// their labels, either a JSON list of objects ([{"id": "123" or 123,
// "<label_name>": "...", ...}, ...]) or an `id;label` CSV, one entry per
// line. Ids keep how the list wrote them (a string, or a number as written)
// so that meta says "id" exactly as the list did. Also the small JSON walking
// helpers that label2idx.json reading shares. Every malformed list throws
// InvalidArgumentError naming the file and the byte or line. Thread-safe
// (no shared state).
#ifndef GULPDB_INGEST_LABEL_LIST_H_
#define GULPDB_INGEST_LABEL_LIST_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json_text.h"

namespace gulpdb::ingest {

// One entry of a label list: an id (its text is the dataset key) and an
// optional label.
struct Listed {
  std::string id;
  std::string id_json;  // how the id is written in meta: a string, or a number as listed
  std::optional<std::string> label;
};

// Reads `path` as a JSON list (when its first non-blank byte is '[') or a CSV.
std::vector<Listed> ReadLabelList(const std::string& path, const std::string& label_name);

// A CSV list: `id;label` per line (or just `id`); empty lines ignored.
std::vector<Listed> ParseCsvList(const std::string& path, std::string_view text);

// ---- JSON walking helpers (for text already validated by ScanJsonValue) ----

size_t SkipSpace(std::string_view text, size_t pos);

[[noreturn]] void ThrowListError(const std::string& path, size_t pos, const std::string& what);

// Calls fn(key, value_text, value_pos) for each member of the JSON object at
// text[pos] (validated beforehand); returns the position after its closing
// brace.
template <typename Fn>
size_t ForEachMember(std::string_view text, size_t pos, const Fn& fn) {
  pos = SkipSpace(text, pos + 1);  // past '{'
  while (text[pos] != '}') {
    std::string key;
    pos = engine::ScanJsonString(text, pos, &key).pos;
    pos = SkipSpace(text, SkipSpace(text, pos) + 1);  // past ':'
    const size_t end = engine::ScanJsonValue(text, pos, /*input_complete=*/true).pos;
    fn(key, text.substr(pos, end - pos), pos);
    pos = SkipSpace(text, end);
    if (text[pos] == ',') pos = SkipSpace(text, pos + 1);
  }
  return pos + 1;
}

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_LABEL_LIST_H_
