// Class labels of a dataset: <dir>/label2idx.json (label -> class index, as
// GulpIO's adapters and `gulpdb ingest` write it) and the "label" and "idx"
// members of GulpIO meta ({"id": ..., "label": ..., "idx": ...}), read and
// rewritten as text so that everything else in the meta stays byte for byte
// (engine/json/json_text.h). Merge uses it to give the merged dataset one label
// map. Thread safety: free functions, safe from any thread.
#ifndef GULPDB_ENGINE_CORE_LABEL_MAP_H_
#define GULPDB_ENGINE_CORE_LABEL_MAP_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gulpdb::engine {

// label2idx.json's entries in file order; empty when the file does not
// exist. Throws CorruptionError naming the file when it is not a JSON object
// whose values are integers from 0 to 999,999,999.
using LabelEntries = std::vector<std::pair<std::string, int64_t>>;
LabelEntries ReadLabel2Idx(const std::string& path);

// Replaces `path` atomically with `entries` in Python json.dump form
// ({"a": 0, "b": 1}), in the given order.
void WriteLabel2Idx(const std::string& path, const LabelEntries& entries);

// The label of one meta entry: its "label" member when that is a JSON
// string, and its "idx" member (none when absent; `idx_ok` false when
// present but not an integer from 0 to 999,999,999).
struct MetaLabel {
  std::string label;
  std::optional<int64_t> idx;
  bool idx_ok = true;
};

// The labels of the objects in a meta_data list (JSON text of a list, as the
// index stores it). Entries without a string "label" are left out. Throws
// InvalidArgumentError when the text is not a JSON list.
std::vector<MetaLabel> MetaLabels(std::string_view meta_list);

// `meta_list` with the "idx" member of every entry whose label is in
// `new_idx` set to that index; every other byte unchanged. Entries without
// an "idx" member keep none. Returns nullopt when nothing changes.
std::optional<std::string> RewriteMetaIdx(std::string_view meta_list,
                                          const std::map<std::string, int64_t>& new_idx);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_LABEL_MAP_H_
