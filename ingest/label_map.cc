#include "ingest/label_map.h"

#include <algorithm>
#include <set>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "ingest/label_list.h"
#include "ingest/sources.h"
#include "util/file_io.h"

namespace gulpdb::ingest {
namespace {

std::string Label2IdxPath(const std::string& dir) { return Join(dir, "label2idx.json"); }

}  // namespace

LabelEntries ExtendLabels(LabelEntries entries, const std::vector<SourceSpec>& sources) {
  std::set<std::string> known;
  int64_t next = 0;
  for (const auto& [label, idx] : entries) {
    known.insert(label);
    next = std::max(next, idx + 1);
  }
  std::set<std::string> fresh;
  for (const SourceSpec& s : sources) {
    // A source no dataset can hold is skipped: its label is not the dataset's.
    if (s.label && known.count(*s.label) == 0 && !UnstorableSource(s)) {
      fresh.insert(*s.label);
    }
  }
  for (const std::string& label : fresh) entries.emplace_back(label, next++);
  return entries;
}

void CheckLabelsMapped(const std::string& dir, const LabelMap& map,
                       const std::vector<SourceSpec>& sources) {
  for (const SourceSpec& s : sources) {
    if (s.label && map.count(*s.label) == 0) {
      throw InvalidArgumentError("ingest " + dir + ": id '" + s.id + "' has the label '" +
                                 *s.label + "', which the given label map lacks");
    }
  }
}

void UpdateLabel2Idx(const std::string& dir, const LabelMap& map) {
  const std::string path = Label2IdxPath(dir);
  LabelEntries entries = engine::ReadLabel2Idx(path);
  std::set<std::string> present;
  for (const auto& [label, idx] : entries) {
    if (!present.insert(label).second) continue;  // a repeated key: the first one counts
    auto it = map.find(label);
    if (it != map.end() && it->second != idx) {
      throw InvalidArgumentError("ingest " + dir + ": label '" + label + "' has index " +
                                 std::to_string(idx) + " in " + path + " but " +
                                 std::to_string(it->second) + " in the given label map");
    }
  }
  LabelEntries added;
  for (const auto& [label, idx] : map) {
    if (present.count(label) == 0) added.emplace_back(label, idx);
  }
  if (added.empty()) return;
  std::stable_sort(added.begin(), added.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  entries.insert(entries.end(), added.begin(), added.end());
  engine::WriteLabel2Idx(path, entries);
}

LabelMap ComputeLabelMap(const std::string& dir, const std::vector<SourceSpec>& sources) {
  const LabelEntries entries = ExtendLabels(engine::ReadLabel2Idx(Label2IdxPath(dir)), sources);
  return LabelMap(entries.begin(), entries.end());
}

}  // namespace gulpdb::ingest
