#include "engine/query/splits_file.h"

#include <simdjson.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <unordered_set>

#include "engine/json/json_text.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "index/query_keys.h"
#include "util/file_io.h"
#include "util/sys_error.h"

namespace gulpdb::engine {
namespace {

constexpr uint64_t kSplitsFileVersion = 1;
constexpr size_t kListed = 20;  // offending ids named in an error

std::string ListIds(const std::vector<std::string>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < kListed; ++i) {
    out += (i == 0 ? "'" : ", '") + ids[i] + "'";
  }
  if (ids.size() > kListed) out += ", ...";
  return out;
}

}  // namespace

NamedSplits ReadAllSplits(index::Txn& txn, const QueryDbHandles& dbs) {
  NamedSplits out;
  for (const auto& [name, header] : ReadSplitHeaders(txn, dbs)) {
    out.emplace_back(name, ReadSplitIds(txn, dbs, header.number));
  }
  return out;
}

void WriteSplitsFile(const std::string& dir, const NamedSplits& splits) {
  const std::string path = dir + "/" + kSplitsFileName;
  if (splits.empty()) {
    if (util::RemoveFile(path)) util::SyncDirectory(dir);
    return;
  }
  util::AtomicFile file(path);
  file.Append("{\"format\": \"gulpdb splits\", \"version\": " + std::to_string(kSplitsFileVersion) +
              ", \"splits\": {");
  std::string line;
  for (size_t s = 0; s < splits.size(); ++s) {
    line = s == 0 ? "\n" : ",\n";
    AppendPythonJsonString(splits[s].first, &line);
    line += ": [";
    for (size_t i = 0; i < splits[s].second.size(); ++i) {
      if (i != 0) line += ", ";
      AppendPythonJsonString(splits[s].second[i], &line);
      if (line.size() >= (1 << 16)) {
        file.Append(line);
        line.clear();
      }
    }
    line += "]";
    file.Append(line);
  }
  file.Append("}}\n");
  file.Commit();
}

std::optional<NamedSplits> ReadSplitsFile(const std::string& dir) {
  const std::string path = dir + "/" + kSplitsFileName;
  if (!util::PathExists(path)) return std::nullopt;
  const std::string text = util::ReadFile(path);
  const auto bad = [&](const std::string& what) {
    return InvalidArgumentError("read " + path + ": " + what);
  };
  simdjson::dom::parser parser;
  const simdjson::padded_string json(text);
  simdjson::dom::element doc;
  if (const auto error = parser.parse(json).get(doc); error) {
    throw bad(std::string("not valid JSON: ") + simdjson::error_message(error));
  }
  simdjson::dom::object top;
  if (doc.get_object().get(top)) throw bad("the top level is not a JSON object");
  uint64_t version = 0;
  if (top["version"].get_uint64().get(version) || version == 0) {
    throw bad("no \"version\" (a positive integer)");
  }
  if (version > kSplitsFileVersion) {
    throw bad("version " + std::to_string(version) + " is newer than this gulpdb reads (" +
              std::to_string(kSplitsFileVersion) + ")");
  }
  simdjson::dom::object splits;
  if (top["splits"].get_object().get(splits)) throw bad("no \"splits\" object");
  NamedSplits out;
  std::set<std::string> names;
  for (const auto field : splits) {
    std::string name(field.key);
    if (!names.insert(name).second) throw bad("split '" + name + "' is listed twice");
    simdjson::dom::array ids;
    if (field.value.get_array().get(ids)) throw bad("split '" + name + "' is not a list of ids");
    std::vector<std::string> list;
    for (const auto id : ids) {
      std::string_view text_id;
      if (id.get_string().get(text_id) || text_id.empty()) {
        throw bad("split '" + name + "' holds something other than an id (a non-empty string)");
      }
      list.emplace_back(text_id);
    }
    out.emplace_back(std::move(name), std::move(list));
  }
  return out;
}

void StoreSplits(const IndexHandles& ds, const NamedSplits& splits, const std::string& source) {
  std::vector<SplitOp> ops;
  {
    index::Txn txn = ds.env->BeginRead();
    for (const auto& [name, ids] : splits) {
      const std::string operation = source + ": split '" + name + "'";
      ValidateQueryName(name, index::kMaxSplitNameBytes, "split name", operation);
      std::unordered_set<std::string_view> seen;
      std::vector<std::string> twice, missing;
      for (const std::string& id : ids) {
        if (!seen.insert(id).second) twice.push_back(id);
        std::string_view bytes;
        if (!txn.Get(ds.videos, id, &bytes)) missing.push_back(id);
      }
      if (!twice.empty()) {
        throw InvalidArgumentError(operation + " lists " + std::to_string(twice.size()) +
                                   " ids more than once: " + ListIds(twice));
      }
      if (!missing.empty()) {
        throw InvalidArgumentError(operation + " lists " + std::to_string(missing.size()) +
                                   " ids that are not in the dataset: " + ListIds(missing));
      }
      ops.push_back(SplitOp{name, false, ids});
    }
  }
  if (ops.empty()) return;
  ds.query.Create(*ds.env);
  const QueryDbHandles dbs = ds.query.Load();
  ds.env->Update([&](index::Txn& txn) {
    QueryTxn query(ds, txn, dbs);
    for (const SplitOp& op : ops) query.Apply(op);
  });
}

}  // namespace gulpdb::engine
