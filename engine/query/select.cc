// The read side of engine/query/ (select.h): queries, the meta index and
// split listings, and dropping a meta index, on a snapshot the storage core
// hands in.
#include "engine/query/select.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/json/json_text.h"
#include "engine/query/expr.h"
#include "engine/query/index_handles.h"
#include "engine/query/meta_value.h"
#include "engine/query/query_exec.h"
#include "engine/query/query_plan.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "gulpdb/query.h"
#include "index/query_keys.h"
#include "index/seal.h"

namespace gulpdb {

void CheckMetaIndexKey(std::string_view key, const std::string& operation) {
  engine::ValidateQueryName(key, index::kMaxFieldNameBytes, "meta key", operation);
}

namespace engine {

std::vector<std::string> SelectIds(const QuerySource& snapshot, const std::string& dir,
                                   const QueryExpr& expr) {
  return RunQuery(snapshot, dir, expr).ids;
}

bool DropMetaIndexOf(const IndexHandles& ix, std::string_view key) {
  const QueryDbHandles dbs = ix.query.Load();  // refreshed by the caller's writer
  if (!dbs.has_meta_index()) return false;
  bool dropped = false;
  ix.env->Update([&](index::Txn& txn) { dropped = DropMetaField(txn, dbs, key); });
  return dropped;
}

std::optional<std::vector<MetaValueCount>> CountMetaValues(const QuerySource& snapshot,
                                                           const std::string& dir,
                                                           std::string_view key) {
  std::optional<MetaField> field;
  for (MetaField& f : SnapshotFields(snapshot, dir)) {
    if (f.name == key) field = std::move(f);
  }
  if (!field) return std::nullopt;
  const std::vector<std::string> quoted = {PythonJsonString(key)};
  index::VideoRecord scratch;
  // The value of video `id` as its record has it, for a group's text, or
  // for telling apart values stored by length and checksum.
  const auto value_of = [&](const std::string& id) {
    const std::optional<index::VideoMetaView> meta = snapshot.FindVideoMeta(id, &scratch);
    if (!meta) {
      throw CorruptionError("count values of meta key '" + std::string(key) + "' in " + dir +
                            ": the meta index lists id '" + id + "' that has no record");
    }
    std::vector<std::string_view> values;
    std::string error;
    if (!FindFirstEntryValues(meta->meta_data, quoted, &values, &error)) {
      throw CorruptionError("count values of meta key '" + std::string(key) + "' in " + dir +
                            ": meta of id '" + id + "': " + error);
    }
    if (values[0].empty()) {
      throw CorruptionError("count values of meta key '" + std::string(key) + "' in " + dir +
                            ": the meta index lists id '" + id + "', whose meta lacks the key");
    }
    return std::string(values[0]);
  };
  // A value's entries are adjacent (entry keys sort by value, then place):
  // one group per value. Values stored by checksum keep their ids, to be
  // told apart by their records.
  struct Group {
    std::string prefix;
    uint64_t count = 0;
    std::vector<std::string> ids;  // the first one; every one of a hashed value
    bool hashed = false;
  };
  std::vector<Group> groups;
  const std::string field_prefix = index::MetaFieldPrefix(field->number);
  snapshot.ScanMeta(
      field_prefix, PrefixEnd(field_prefix), [&](std::string_view entry, std::string_view id) {
        const std::string_view prefix = index::MetaEntryValuePrefix(entry);
        if (groups.empty() || groups.back().prefix != prefix) {
          groups.push_back(
              Group{std::string(prefix), 0, {}, index::MetaEntryHashed(entry, field->form)});
        }
        Group& g = groups.back();
        ++g.count;
        if (g.ids.empty() || g.hashed) g.ids.emplace_back(id);
        return true;
      });
  std::vector<MetaValueCount> out;
  std::map<std::string, size_t> hashed;  // canonical form -> index in `out`
  for (Group& g : groups) {
    if (!g.hashed) {
      const std::string value = value_of(g.ids.front());
      out.push_back(MetaValueCount{value, MetaValueText(value), g.count});
      continue;
    }
    for (const std::string& id : g.ids) {
      const std::string value = value_of(id);
      const auto [it, added] = hashed.emplace(CanonicalMetaValue(value), out.size());
      if (added) out.push_back(MetaValueCount{value, MetaValueText(value), 0});
      ++out[it->second].count;
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const MetaValueCount& a, const MetaValueCount& b) {
    return a.count > b.count;
  });
  return out;
}

std::vector<std::string> AbsentMetaKeys(const QuerySource& snapshot, const std::string& dir,
                                        const std::vector<std::string>& keys) {
  if (keys.empty()) return {};
  std::vector<bool> seen(keys.size(), false);
  std::vector<size_t> scanned;  // keys without a meta index
  std::map<std::string, uint32_t> fields;
  for (const MetaField& f : SnapshotFields(snapshot, dir)) fields[f.name] = f.number;
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto field = fields.find(keys[i]);
    if (field == fields.end()) {
      scanned.push_back(i);
      continue;
    }
    const std::string prefix = index::MetaFieldPrefix(field->second);
    snapshot.ScanMeta(prefix, PrefixEnd(prefix), [&](std::string_view, std::string_view) {
      seen[i] = true;
      return false;
    });
  }
  if (!scanned.empty()) {
    std::vector<std::string> quoted;
    for (size_t i : scanned) {
      try {
        quoted.push_back(PythonJsonString(keys[i]));
      } catch (const InvalidArgumentError&) {
        throw InvalidArgumentError("look up meta key '" + PrintableBytes(keys[i], 40) + "' in " +
                                   dir + ": it is not valid UTF-8");
      }
    }
    size_t missing = scanned.size();
    std::vector<std::string_view> values;
    std::string error;
    snapshot.ScanVideoMeta({}, {}, [&](std::string_view id, const index::VideoMetaView& video) {
      if (!FindFirstEntryValues(video.meta_data, quoted, &values, &error)) {
        throw CorruptionError("look up meta keys in " + dir + ": meta of id '" + std::string(id) +
                              "': " + error);
      }
      for (size_t j = 0; j < scanned.size(); ++j) {
        if (!seen[scanned[j]] && !values[j].empty()) {
          seen[scanned[j]] = true;
          --missing;
        }
      }
      return missing != 0;
    });
  }
  std::vector<std::string> absent;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!seen[i]) absent.push_back(keys[i]);
  }
  return absent;
}

std::vector<std::string> SplitIdsNamed(const QuerySource& snapshot, const std::string& dir,
                                       std::string_view name) {
  const std::map<std::string, index::SplitHeader> headers =
      SnapshotSplitHeaders(snapshot, dir, "read split '" + std::string(name) + "'");
  const auto it = headers.find(std::string(name));
  if (it == headers.end()) {
    std::string known;
    for (const auto& entry : headers) known += (known.empty() ? "" : ", ") + entry.first;
    throw NameNotFoundError(
        "read split '" + std::string(name) + "' of " + dir + ": no such split (" +
        (known.empty() ? std::string("the dataset has none") : "known splits: " + known) + ")");
  }
  return snapshot.SplitIds(it->second.number);
}

}  // namespace engine
}  // namespace gulpdb
