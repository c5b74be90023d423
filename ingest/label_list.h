// Label lists: the 20BN-style lists that name the videos of an ingest and
// their labels, either a JSON list of objects ([{"id": "123" or 123,
// "<label_name>": "...", ...}, ...]) or an `id;label` CSV, one entry per
// line. Which one a file is depends on its content, never on its name: a
// file whose first character that is not blank (after an optional UTF-8
// byte order mark) is '[' or '{' is JSON, anything else is CSV. Ids keep how
// the list wrote them (a string, or a number as written) so that meta says
// "id" exactly as the list did. Also the small JSON walking helpers that
// label2idx.json reading shares.
//
// Errors: a malformed list, a JSON value that is not a list of objects, an
// empty list, or a JSON list none of whose entries has the label key while
// they have other keys (e.g. "template" read with the default label name)
// throws InvalidArgumentError naming the file and the line and column. A list
// of ids alone ({"id": ...} entries, or CSV lines without ";label") is a
// list of unlabeled videos. Entries without a label when others have one are
// unlabeled, with one warning giving their count and a few ids.
// Thread-safe (no shared state).
#ifndef GULPDB_INGEST_LABEL_LIST_H_
#define GULPDB_INGEST_LABEL_LIST_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json/json_text.h"

namespace gulpdb::ingest {

// One entry of a label list: an id (its text is the dataset key) and an
// optional label.
struct Listed {
  std::string id;
  std::string id_json;  // how the id is written in meta: a string, or a number as listed
  std::optional<std::string> label;
};

// Receives warnings about a list as a whole (one line each).
using ListWarning = std::function<void(const std::string&)>;

// Reads `path` as a JSON list or a CSV, as the header says.
std::vector<Listed> ReadLabelList(const std::string& path, const std::string& label_name,
                                  const ListWarning& warn);

// A CSV list: `id;label` per line (or just `id`); empty lines ignored, a
// leading byte order mark skipped. `what` names the entries in messages
// ("videos", "images").
std::vector<Listed> ParseCsvList(const std::string& path, std::string_view text,
                                 const std::string& what, const ListWarning& warn);

// ---- JSON walking helpers (for text already validated by ScanJsonValue) ----

size_t SkipSpace(std::string_view text, size_t pos);

// Throws InvalidArgumentError "read <path>: line L, column C: <what>" for
// byte `pos` of `text` (columns count UTF-8 characters, from 1).
[[noreturn]] void ThrowListError(const std::string& path, std::string_view text, size_t pos,
                                 const std::string& what);

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
