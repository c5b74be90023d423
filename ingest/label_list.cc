#include "ingest/label_list.h"

#include "engine/file_util.h"
#include "gulpdb/error.h"

namespace gulpdb::ingest {
namespace {

// A JSON string token as UTF-8 (a lone surrogate escape has no UTF-8 form).
std::string DecodeString(const std::string& path, std::string_view token, size_t at) {
  try {
    return engine::DecodeJsonString(token);
  } catch (const InvalidArgumentError& e) {
    ThrowListError(path, at, e.what());
  }
}

bool IsJsonNumber(std::string_view v) {
  return !v.empty() && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'));
}

// A 20BN-style JSON list: [{"id": "123" or 123, "<label_name>": "...", ...}, ...].
std::vector<Listed> ParseJsonList(const std::string& path, std::string_view text,
                                  const std::string& label_name) {
  size_t pos = SkipSpace(text, 0);
  const engine::JsonScanResult all = engine::ScanJsonValue(text, pos, true);
  if (all.status != engine::JsonScanStatus::kOk) {
    ThrowListError(
        path, all.pos,
        all.status == engine::JsonScanStatus::kTruncated ? "the JSON text ends early" : all.error);
  }
  if (SkipSpace(text, all.pos) != text.size()) ThrowListError(path, all.pos, "text after the list");
  if (text[pos] != '[') ThrowListError(path, pos, "expected a JSON list of objects");
  std::vector<Listed> listed;
  pos = SkipSpace(text, pos + 1);
  while (text[pos] != ']') {
    if (text[pos] != '{') ThrowListError(path, pos, "expected an object with an \"id\"");
    const size_t start = pos;
    Listed entry;
    bool has_id = false;
    pos = ForEachMember(text, pos, [&](const std::string& key, std::string_view value, size_t at) {
      if (key == "id") {
        if (value[0] == '"') {
          entry.id = DecodeString(path, value, at);
          entry.id_json = engine::PythonJsonString(entry.id);
        } else if (IsJsonNumber(value)) {
          entry.id = std::string(value);
          entry.id_json = entry.id;
        } else {
          ThrowListError(path, at, "\"id\" must be a string or a number");
        }
        has_id = true;
      } else if (key == label_name) {
        if (value[0] == '"') {
          entry.label = DecodeString(path, value, at);
        } else if (value == "null") {
          entry.label.reset();
        } else {
          ThrowListError(path, at, "\"" + label_name + "\" must be a string");
        }
      }
    });
    if (!has_id) ThrowListError(path, start, "an entry has no \"id\"");
    listed.push_back(std::move(entry));
    pos = SkipSpace(text, pos);
    if (text[pos] == ',') pos = SkipSpace(text, pos + 1);
  }
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

void ThrowListError(const std::string& path, size_t pos, const std::string& what) {
  throw InvalidArgumentError("read " + path + ": byte " + std::to_string(pos) + ": " + what);
}

std::vector<Listed> ParseCsvList(const std::string& path, std::string_view text) {
  std::vector<Listed> listed;
  size_t line_number = 0;
  size_t pos = 0;
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
    listed.push_back(std::move(entry));
  }
  return listed;
}

std::vector<Listed> ReadLabelList(const std::string& path, const std::string& label_name) {
  const std::string text = engine::ReadFile(path);
  const size_t first = SkipSpace(text, 0);
  if (first < text.size() && text[first] == '[') return ParseJsonList(path, text, label_name);
  return ParseCsvList(path, text);
}

}  // namespace gulpdb::ingest
