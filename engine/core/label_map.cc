#include "engine/core/label_map.h"

#include <algorithm>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "util/file_io.h"

namespace gulpdb::engine {
namespace {

// An index as label2idx.json and meta write it: a small non-negative integer.
std::optional<int64_t> ParseIndex(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (text.size() > 1 && text[0] == '0') return std::nullopt;
  return value;
}

using Member = JsonMember;

// The members of the object at text[pos] (validated beforehand).
std::vector<Member> Members(std::string_view text, size_t pos) {
  return JsonObjectMembers(text, pos);
}

// Calls fn(members) for each object element of the JSON list `text`.
template <typename Fn>
void ForEachObject(std::string_view text, const Fn& fn) {
  size_t pos = SkipJsonSpace(text, 0);
  const JsonScanResult all = ScanJsonValue(text, pos, true);
  if (all.status != JsonScanStatus::kOk || text[pos] != '[' ||
      SkipJsonSpace(text, all.pos) != text.size()) {
    throw InvalidArgumentError("read meta_data: not a JSON list");
  }
  pos = SkipJsonSpace(text, pos + 1);
  while (text[pos] != ']') {
    const size_t end = ScanJsonValue(text, pos, true).pos;
    if (text[pos] == '{') fn(Members(text, pos));
    pos = SkipJsonSpace(text, end);
    if (text[pos] == ',') pos = SkipJsonSpace(text, pos + 1);
  }
}

// The label of one entry (the last "label" member, as Python reads it), or
// none when it is absent or not a string.
std::optional<std::string> LabelOf(std::string_view text, const std::vector<Member>& members) {
  std::optional<std::string> label;
  for (const Member& m : members) {
    if (m.key != "label") continue;
    label.reset();
    const std::string_view value = text.substr(m.value_pos, m.value_end - m.value_pos);
    if (value.empty() || value[0] != '"') continue;
    try {
      label = DecodeJsonString(value);
    } catch (const InvalidArgumentError&) {
    }
  }
  return label;
}

}  // namespace

LabelEntries ReadLabel2Idx(const std::string& path) {
  LabelEntries entries;
  if (!util::PathExists(path)) return entries;
  const std::string text = util::ReadFile(path);
  size_t pos = SkipJsonSpace(text, 0);
  const JsonScanResult all = ScanJsonValue(text, pos, true);
  if (all.status != JsonScanStatus::kOk || pos >= text.size() || text[pos] != '{' ||
      SkipJsonSpace(text, all.pos) != text.size()) {
    throw CorruptionError("read " + path + ": not a JSON object of label indices");
  }
  for (const Member& m : Members(text, pos)) {
    const std::optional<int64_t> idx =
        ParseIndex(std::string_view(text).substr(m.value_pos, m.value_end - m.value_pos));
    if (!idx || m.key.empty()) {
      throw CorruptionError("read " + path + ": byte " + std::to_string(m.value_pos) +
                            ": the index of \"" + PrintableBytes(m.key) +
                            "\" is not a small non-negative integer");
    }
    entries.emplace_back(m.key, *idx);
  }
  return entries;
}

void WriteLabel2Idx(const std::string& path, const LabelEntries& entries) {
  std::string json = "{";
  for (const auto& [label, idx] : entries) {
    if (json.size() > 1) json += ", ";
    AppendPythonJsonString(label, &json);
    json += ": " + std::to_string(idx);
  }
  json += "}";
  util::WriteFileAtomically(path, json);
}

std::vector<MetaLabel> MetaLabels(std::string_view meta_list) {
  std::vector<MetaLabel> out;
  ForEachObject(meta_list, [&](const std::vector<Member>& members) {
    std::optional<std::string> label = LabelOf(meta_list, members);
    if (!label) return;
    MetaLabel entry;
    entry.label = std::move(*label);
    for (const Member& m : members) {
      if (m.key != "idx") continue;
      entry.idx = ParseIndex(meta_list.substr(m.value_pos, m.value_end - m.value_pos));
      entry.idx_ok = entry.idx.has_value();
      if (!entry.idx) entry.idx = -1;
    }
    out.push_back(std::move(entry));
  });
  return out;
}

std::optional<std::string> RewriteMetaIdx(std::string_view meta_list,
                                          const std::map<std::string, int64_t>& new_idx) {
  struct Edit {
    size_t pos, end;
    std::string text;
  };
  std::vector<Edit> edits;
  ForEachObject(meta_list, [&](const std::vector<Member>& members) {
    const std::optional<std::string> label = LabelOf(meta_list, members);
    if (!label) return;
    auto it = new_idx.find(*label);
    if (it == new_idx.end()) return;
    const std::string text = std::to_string(it->second);
    for (const Member& m : members) {
      if (m.key != "idx") continue;
      if (meta_list.substr(m.value_pos, m.value_end - m.value_pos) == text) continue;
      edits.push_back(Edit{m.value_pos, m.value_end, text});
    }
  });
  if (edits.empty()) return std::nullopt;
  std::string out;
  out.reserve(meta_list.size() + edits.size() * 4);
  size_t at = 0;
  for (const Edit& e : edits) {  // in text order
    out.append(meta_list.substr(at, e.pos - at));
    out += e.text;
    at = e.end;
  }
  out.append(meta_list.substr(at));
  return out;
}

}  // namespace gulpdb::engine
