#include "ingest/label_list.h"

#include <algorithm>
#include <cstdint>

#include "gulpdb/error.h"
#include "util/file_io.h"

namespace gulpdb::ingest {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
constexpr size_t kExampleIds = 3;  // ids a warning names

// A JSON string token as UTF-8 (a lone surrogate escape has no UTF-8 form).
std::string DecodeString(const std::string& path, std::string_view text, std::string_view token,
                         size_t at) {
  try {
    return engine::DecodeJsonString(token);
  } catch (const InvalidArgumentError& e) {
    ThrowListError(path, text, at, e.what());
  }
}

bool IsJsonNumber(std::string_view v) {
  return !v.empty() && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'));
}

// Where the content starts: past a UTF-8 byte order mark, if any.
size_t ContentStart(std::string_view text) {
  return text.substr(0, kByteOrderMark.size()) == kByteOrderMark ? kByteOrderMark.size() : 0;
}

// "'a', 'b', 'c' and 4 more" (ids as JSON strings, so that any id prints safely).
std::string Examples(const std::vector<std::string>& ids_json, size_t total) {
  std::string out;
  for (size_t i = 0; i < ids_json.size(); ++i) out += (i == 0 ? "" : ", ") + ids_json[i];
  if (total > ids_json.size()) out += " and " + std::to_string(total - ids_json.size()) + " more";
  return out;
}

// Entries without a label, when other entries have one: ingested unlabeled,
// and said once.
void WarnUnlabeled(const std::string& path, size_t unlabeled, size_t total,
                   const std::vector<std::string>& examples, const std::string& missing,
                   const ListWarning& warn) {
  if (unlabeled == 0 || unlabeled == total || !warn) return;
  warn(path + ": " + std::to_string(unlabeled) + " of " + std::to_string(total) + " entries " +
       missing + " and are ingested unlabeled: ids " + Examples(examples, unlabeled));
}

// A 20BN-style JSON list: [{"id": "123" or 123, "<label_name>": "...", ...}, ...].
std::vector<Listed> ParseJsonList(const std::string& path, std::string_view text, size_t pos,
                                  const std::string& label_name, const ListWarning& warn) {
  const engine::JsonScanResult all = engine::ScanJsonValue(text, pos, true);
  if (all.status != engine::JsonScanStatus::kOk) {
    ThrowListError(
        path, text, all.pos,
        all.status == engine::JsonScanStatus::kTruncated ? "the JSON text ends early" : all.error);
  }
  if (SkipSpace(text, all.pos) != text.size()) {
    ThrowListError(path, text, SkipSpace(text, all.pos), "text after the list");
  }
  if (text[pos] != '[') {
    ThrowListError(path, text, pos,
                   "a label list is a JSON list of objects ([{\"id\": ..., \"" + label_name +
                       "\": ...}, ...]), not " + (text[pos] == '{' ? "an object" : "this value"));
  }
  std::vector<Listed> listed;
  size_t unlabeled = 0;
  std::vector<std::string> unlabeled_examples;
  std::vector<std::string> other_keys;  // besides "id" and the label, in order of appearance
  pos = SkipSpace(text, pos + 1);
  while (text[pos] != ']') {
    if (text[pos] != '{') ThrowListError(path, text, pos, "expected an object with an \"id\"");
    const size_t start = pos;
    Listed entry;
    bool has_id = false, has_label = false;
    pos = ForEachMember(text, pos, [&](const std::string& key, std::string_view value, size_t at) {
      if (key == "id") {
        if (value[0] == '"') {
          entry.id = DecodeString(path, text, value, at);
          entry.id_json = engine::PythonJsonString(entry.id);
        } else if (IsJsonNumber(value)) {
          entry.id = std::string(value);
          entry.id_json = entry.id;
        } else {
          ThrowListError(path, text, at, "\"id\" must be a string or a number");
        }
        has_id = true;
      } else if (key == label_name) {
        has_label = true;
        if (value[0] == '"') {
          entry.label = DecodeString(path, text, value, at);
        } else if (value == "null") {  // unlabeled on purpose
          entry.label.reset();
        } else {
          ThrowListError(path, text, at, "\"" + label_name + "\" must be a string");
        }
      } else if (other_keys.size() < 8 &&
                 std::find(other_keys.begin(), other_keys.end(), key) == other_keys.end()) {
        other_keys.push_back(key);
      }
    });
    if (!has_id) ThrowListError(path, text, start, "an entry has no \"id\"");
    if (!has_label) {
      if (unlabeled_examples.size() < kExampleIds) unlabeled_examples.push_back(entry.id_json);
      ++unlabeled;
    }
    listed.push_back(std::move(entry));
    pos = SkipSpace(text, pos);
    if (text[pos] == ',') pos = SkipSpace(text, pos + 1);
  }
  if (listed.empty()) ThrowListError(path, text, pos, "the list is empty: it names no videos");
  if (unlabeled == listed.size() && !other_keys.empty()) {
    std::string keys;
    for (const std::string& k : other_keys) {
      keys += (keys.empty() ? "" : ", ") + engine::PythonJsonString(k);
    }
    throw InvalidArgumentError("read " + path + ": no entry has the label key \"" + label_name +
                               "\" (the entries have " + keys +
                               "); give the label's key with --label-name");
  }
  WarnUnlabeled(path, unlabeled, listed.size(), unlabeled_examples,
                "have no \"" + label_name + "\"", warn);
  return listed;
}

}  // namespace

size_t SkipSpace(std::string_view text, size_t pos) {
  while (pos < text.size() &&
         (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) {
    ++pos;
  }
  return pos;
}

void ThrowListError(const std::string& path, std::string_view text, size_t pos,
                    const std::string& what) {
  pos = std::min(pos, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<uint8_t>(text[i]) & 0xC0) != 0x80) {  // not inside a UTF-8 character
      ++column;
    }
  }
  throw InvalidArgumentError("read " + path + ": line " + std::to_string(line) + ", column " +
                             std::to_string(column) + ": " + what);
}

std::vector<Listed> ParseCsvList(const std::string& path, std::string_view text,
                                 const std::string& what, const ListWarning& warn) {
  std::vector<Listed> listed;
  size_t unlabeled = 0, with_comma = 0;
  std::vector<std::string> unlabeled_examples;
  size_t line_number = 0;
  size_t pos = ContentStart(text);
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t sep = line.find(';');
    Listed entry;
    entry.id = std::string(line.substr(0, sep));
    if (entry.id.empty()) {
      throw InvalidArgumentError("read " + path + ": line " + std::to_string(line_number) +
                                 " has an empty id");
    }
    try {
      entry.id_json = engine::PythonJsonString(entry.id);
      if (sep != std::string_view::npos) {
        entry.label = std::string(line.substr(sep + 1));
        engine::PythonJsonString(*entry.label);  // UTF-8 check
      }
    } catch (const InvalidArgumentError&) {
      throw InvalidArgumentError("read " + path + ": line " + std::to_string(line_number) +
                                 " is not valid UTF-8");
    }
    if (!entry.label) {
      if (unlabeled_examples.size() < kExampleIds) unlabeled_examples.push_back(entry.id_json);
      ++unlabeled;
      if (line.find(',') != std::string_view::npos) ++with_comma;
    }
    listed.push_back(std::move(entry));
  }
  if (listed.empty()) {
    throw InvalidArgumentError("read " + path + ": the list is empty: it names no " + what);
  }
  if (warn && with_comma == listed.size()) {
    warn(path +
         ": no line has a ';' but every line has a ','; this list separates id and label "
         "with ';', so each whole line is read as an id");
  }
  WarnUnlabeled(path, unlabeled, listed.size(), unlabeled_examples, "have no \";label\"", warn);
  return listed;
}

std::vector<Listed> ReadLabelList(const std::string& path, const std::string& label_name,
                                  const ListWarning& warn) {
  const std::string text = util::ReadFile(path);
  const size_t first = SkipSpace(text, ContentStart(text));
  if (first < text.size() && (text[first] == '[' || text[first] == '{')) {
    return ParseJsonList(path, text, first, label_name, warn);
  }
  return ParseCsvList(path, text, "videos", warn);
}

}  // namespace gulpdb::ingest
