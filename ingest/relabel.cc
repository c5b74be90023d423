// Relabel (gulpdb/ingest.h): a label list read by ingest's parser
// (label_list.h), the label map extended by ingest's rule (label_map.h),
// and one writer batch of meta edits.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "engine/core/label_map.h"
#include "engine/json/json_text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "ingest/label_list.h"
#include "ingest/label_map.h"
#include "ingest/sources.h"
#include "util/file_io.h"
#include "util/utf8.h"

namespace gulpdb::ingest {
namespace {

constexpr size_t kListed = 20;  // ids an error lists

std::string ListIds(const std::vector<std::string>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < kListed; ++i) {
    out += (i == 0 ? "'" : ", '") + engine::PrintableBytes(ids[i], 80) + "'";
  }
  if (ids.size() > kListed) out += ", ...";
  return out;
}

// The label map of a dataset without label2idx.json: the labels and
// indices its videos' meta holds, by index (a label seen with two indices
// keeps the first).
LabelEntries LabelsOfVideos(const Dataset& ds) {
  std::map<std::string, int64_t> seen;
  ds.ForEach([&](const VideoInfo& v) {
    try {
      for (const engine::MetaLabel& l : engine::MetaLabels(v.meta_data)) {
        if (l.idx && l.idx_ok) seen.emplace(l.label, *l.idx);
      }
    } catch (const InvalidArgumentError&) {
      // meta that is not a list of objects holds no label
    }
    return true;
  });
  LabelEntries entries(seen.begin(), seen.end());
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  return entries;
}

}  // namespace

RelabelReport Relabel(const RelabelOptions& o) {
  const std::string operation = "relabel " + o.dir;
  if (o.labels.empty()) throw InvalidArgumentError(operation + ": no label list given");
  const ListWarning warn = [&o](const std::string& warning) {
    if (o.on_warning) {
      o.on_warning(warning);
    } else {
      std::fprintf(stderr, "gulpdb relabel: warning: %s\n", warning.c_str());
    }
  };
  OpenOptions open;
  open.read_only = false;
  open.index_dir = o.index_dir;
  std::unique_ptr<Dataset> ds = Dataset::Open(o.dir, open);
  WriterOptions wo;
  wo.lock_timeout = o.lock_timeout;
  std::unique_ptr<Writer> writer = ds->NewWriter(wo);
  const std::vector<Listed> listed = ReadLabelList(o.labels, o.label_name, warn);
  std::map<std::string, std::string> label_of;
  std::vector<std::string> unlabeled, twice;
  for (const Listed& l : listed) {
    if (!l.label) {
      unlabeled.push_back(l.id);
      continue;
    }
    if (const size_t bad = util::FindInvalidUtf8(*l.label); bad != std::string::npos) {
      throw InvalidArgumentError(operation + ": the label of '" + engine::PrintableBytes(l.id) +
                                 "' in " + o.labels + " is not valid UTF-8 at byte " +
                                 std::to_string(bad) + "; nothing was changed");
    }
    auto [it, added] = label_of.emplace(l.id, *l.label);
    if (!added && it->second != *l.label) twice.push_back(l.id);
  }
  if (!unlabeled.empty()) {
    throw InvalidArgumentError(operation + ": " + std::to_string(unlabeled.size()) +
                               " entries of " + o.labels + " have no label (under \"" +
                               o.label_name + "\"): " + ListIds(unlabeled) +
                               "; nothing was changed");
  }
  if (!twice.empty()) {
    throw InvalidArgumentError(operation + ": " + std::to_string(twice.size()) +
                               (twice.size() == 1 ? " id of " : " ids of ") + o.labels +
                               (twice.size() == 1 ? " is" : " are") + " listed with two labels: " +
                               ListIds(twice) + "; nothing was changed");
  }

  // The writer looks each id up once, to edit it: an id the dataset lacks
  // rolls the whole batch back. The ids are checked only when something
  // failed, so that missing ids are the error whatever else went wrong, as
  // when they were checked first.
  const std::string map_path = Join(o.dir, "label2idx.json");
  bool had_file = false;
  LabelEntries entries;
  RelabelReport report;
  try {
    LabelEntries existing = engine::ReadLabel2Idx(map_path);
    had_file = !existing.empty() || util::PathExists(map_path);
    if (!had_file) existing = LabelsOfVideos(*ds);
    std::vector<SourceSpec> sources;
    sources.reserve(label_of.size());
    for (const auto& [id, label] : label_of) {
      SourceSpec s;
      s.id = id;
      s.label = label;
      sources.push_back(std::move(s));
    }
    const size_t known = existing.size();
    entries = ExtendLabels(std::move(existing), sources);
    const LabelMap map(entries.begin(), entries.end());
    report.listed = label_of.size();
    report.new_labels = entries.size() - known;
    std::string patch;
    for (const auto& [id, label] : label_of) {
      patch = "{\"label\": " + engine::PythonJsonString(label) +
              ", \"idx\": " + std::to_string(map.at(label)) + "}";
      if (writer->UpdateMeta(id, patch)) ++report.changed;
    }
  } catch (const Error&) {
    std::vector<std::string> missing;
    for (const auto& [id, label] : label_of) {
      if (!ds->Contains(id)) missing.push_back(id);
    }
    if (missing.empty()) throw;
    throw IdNotFoundError(operation + ": " + std::to_string(missing.size()) +
                          (missing.size() == 1 ? " id" : " ids") + " of " + o.labels +
                          (missing.size() == 1 ? " is" : " are") +
                          " not in the dataset: " + ListIds(missing) + "; nothing was changed");
  }
  // The map first: a crash or a failed commit leaves labels no meta uses,
  // never meta with a label the map lacks.
  if (report.new_labels != 0 || (!had_file && report.changed != 0)) {
    engine::WriteLabel2Idx(map_path, entries);
  }
  writer->CommitLast();
  return report;
}

}  // namespace gulpdb::ingest
