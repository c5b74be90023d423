// The read side of engine/query/ (see query_txn.h): Dataset::Select, the
// meta index and split listings, and the Dataset calls that create and drop
// meta indexes.
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
#include "engine/query/index_reader.h"
#include "engine/query/meta_value.h"
#include "engine/query/query_exec.h"
#include "engine/query/query_plan.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "gulpdb/query.h"
#include "index/query_keys.h"
#include "index/seal.h"

namespace gulpdb {

namespace {

std::vector<std::string> Run(const engine::IndexHandles& ix, const engine::QueryExpr& expr) {
  engine::IndexReader reader(ix);
  return engine::RunQuery(reader, expr).ids;
}

}  // namespace

std::vector<std::string> Dataset::Select(const Query& query) const {
  if (query.MatchesEverything()) return Ids();
  return Run(engine::IndexOf(*this), query.rep().expr);
}

std::vector<std::string> Dataset::Select(std::string_view expression) const {
  return Select(Query::Parse(expression));
}

std::vector<std::string> Dataset::Select(const std::vector<MetaCondition>& conditions) const {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  const engine::QueryExpr expr = engine::ConditionsExpr(conditions, "select in " + ix.dir);
  if (expr.kind == engine::QueryExpr::Kind::kAll) return Ids();
  return Run(ix, expr);
}

std::vector<std::string> Dataset::Select(std::string_view key, std::string_view json_value) const {
  return Select({MetaCondition::Equals(std::string(key), std::string(json_value))});
}

void CheckMetaIndexKey(std::string_view key, const std::string& operation) {
  engine::ValidateQueryName(key, index::kMaxFieldNameBytes, "meta key", operation);
}

bool Dataset::CreateMetaIndex(std::string_view key, std::chrono::milliseconds lock_timeout) {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  CheckMetaIndexKey(key, "create meta index in " + ix.dir);
  WriterOptions options;
  options.lock_timeout = lock_timeout;
  std::unique_ptr<Writer> writer = NewWriter(options);  // the lock, and crash recovery
  return engine::BuildMetaIndex(ix, key) != engine::MetaIndexBuild::kExisted;
}

bool Dataset::DropMetaIndex(std::string_view key, std::chrono::milliseconds lock_timeout) {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  WriterOptions options;
  options.lock_timeout = lock_timeout;
  std::unique_ptr<Writer> writer = NewWriter(options);
  const engine::QueryDbHandles dbs = ix.query.Load();  // refreshed by NewWriter
  if (!dbs.has_meta_index()) return false;
  bool dropped = false;
  ix.env->Update([&](index::Txn& txn) { dropped = engine::DropMetaField(txn, dbs, key); });
  return dropped;
}

std::vector<std::string> Dataset::MetaIndexes() const {
  engine::IndexReader reader(engine::IndexOf(*this));
  std::vector<std::string> names;
  for (engine::MetaField& field : reader.Fields()) names.push_back(std::move(field.name));
  return names;
}

std::vector<MetaIndexInfo> Dataset::MetaIndexDetails() const {
  engine::IndexReader reader(engine::IndexOf(*this));
  std::vector<MetaIndexInfo> out;
  for (engine::MetaField& field : reader.Fields()) {
    out.push_back(MetaIndexInfo{std::move(field.name), field.form == index::MetaKeyForm::kOrdered});
  }
  return out;
}

std::optional<std::vector<MetaValueCount>> Dataset::CountMetaValues(std::string_view key) const {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  engine::IndexReader reader(ix);
  std::optional<engine::MetaField> field;
  for (engine::MetaField& f : reader.Fields()) {
    if (f.name == key) field = std::move(f);
  }
  if (!field) return std::nullopt;
  const std::vector<std::string> quoted = {engine::PythonJsonString(key)};
  // The value of video `id` as its record has it, for a group's text, or
  // for telling apart values stored by length and checksum.
  const auto value_of = [&](const std::string& id) {
    const std::optional<index::VideoMetaView> meta = reader.Video(id);
    if (!meta) {
      throw CorruptionError("count values of meta key '" + std::string(key) + "' in " + ix.dir +
                            ": the meta index lists id '" + id + "' that has no record");
    }
    std::vector<std::string_view> values;
    std::string error;
    if (!engine::FindFirstEntryValues(meta->meta_data, quoted, &values, &error)) {
      throw CorruptionError("count values of meta key '" + std::string(key) + "' in " + ix.dir +
                            ": meta of id '" + id + "': " + error);
    }
    if (values[0].empty()) {
      throw CorruptionError("count values of meta key '" + std::string(key) + "' in " + ix.dir +
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
  reader.Entries(field_prefix, engine::PrefixEnd(field_prefix),
                 [&](std::string_view entry, std::string_view id) {
                   const std::string_view prefix = index::MetaEntryValuePrefix(entry);
                   if (groups.empty() || groups.back().prefix != prefix) {
                     groups.push_back(Group{
                         std::string(prefix), 0, {}, index::MetaEntryHashed(entry, field->form)});
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
      out.push_back(MetaValueCount{value, engine::MetaValueText(value), g.count});
      continue;
    }
    for (const std::string& id : g.ids) {
      const std::string value = value_of(id);
      const auto [it, added] = hashed.emplace(engine::CanonicalMetaValue(value), out.size());
      if (added) out.push_back(MetaValueCount{value, engine::MetaValueText(value), 0});
      ++out[it->second].count;
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const MetaValueCount& a, const MetaValueCount& b) {
    return a.count > b.count;
  });
  return out;
}

std::vector<std::string> Dataset::AbsentMetaKeys(const std::vector<std::string>& keys) const {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  if (keys.empty()) return {};
  engine::IndexReader reader(ix);
  std::vector<bool> seen(keys.size(), false);
  std::vector<size_t> scanned;  // keys without a meta index
  std::map<std::string, uint32_t> fields;
  for (const engine::MetaField& f : reader.Fields()) fields[f.name] = f.number;
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto field = fields.find(keys[i]);
    if (field == fields.end()) {
      scanned.push_back(i);
      continue;
    }
    const std::string prefix = index::MetaFieldPrefix(field->second);
    reader.Entries(prefix, engine::PrefixEnd(prefix), [&](std::string_view, std::string_view) {
      seen[i] = true;
      return false;
    });
  }
  if (!scanned.empty()) {
    std::vector<std::string> quoted;
    for (size_t i : scanned) {
      try {
        quoted.push_back(engine::PythonJsonString(keys[i]));
      } catch (const InvalidArgumentError&) {
        throw InvalidArgumentError("look up meta key '" + engine::PrintableBytes(keys[i], 40) +
                                   "' in " + ix.dir + ": it is not valid UTF-8");
      }
    }
    size_t missing = scanned.size();
    std::vector<std::string_view> values;
    std::string error;
    reader.Videos({}, {}, [&](std::string_view id, const index::VideoMetaView& video) {
      if (!engine::FindFirstEntryValues(video.meta_data, quoted, &values, &error)) {
        throw CorruptionError("look up meta keys in " + ix.dir + ": meta of id '" +
                              std::string(id) + "': " + error);
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

std::vector<SplitInfo> Dataset::Splits() const {
  engine::IndexReader reader(engine::IndexOf(*this));
  std::vector<SplitInfo> out;
  for (const auto& [name, header] : reader.SplitHeaders("list splits")) {
    out.push_back(SplitInfo{name, header.count});
  }
  return out;
}

std::vector<std::string> Dataset::Split(std::string_view name) const {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  engine::IndexReader reader(ix);
  const std::map<std::string, index::SplitHeader> headers =
      reader.SplitHeaders("read split '" + std::string(name) + "'");
  const auto it = headers.find(std::string(name));
  if (it == headers.end()) {
    std::string known;
    for (const auto& entry : headers) known += (known.empty() ? "" : ", ") + entry.first;
    throw NameNotFoundError(
        "read split '" + std::string(name) + "' of " + ix.dir + ": no such split (" +
        (known.empty() ? std::string("the dataset has none") : "known splits: " + known) + ")");
  }
  return reader.SplitIds(it->second.number);
}

}  // namespace gulpdb
