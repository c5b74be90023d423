#include "cli/query_commands.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <unordered_set>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/text.h"
#include "gulpdb/error.h"
#include "gulpdb/json.h"
#include "gulpdb/query.h"
#include "gulpdb/remote.h"

namespace gulpdb::cli {
namespace {

namespace po = boost::program_options;

// The dataset of DIR and --index-dir; a write refuses an s3:// URL.
std::unique_ptr<Dataset> Open(const po::variables_map& vm, bool read_only) {
  const DatasetPath path = DatasetArg(vm);
  if (!read_only) RequireLocal(path.dir);
  return OpenDataset(path, read_only);
}

std::vector<std::string> WhereArguments(const po::variables_map& vm) {
  return vm.count("where") != 0 ? vm["where"].as<std::vector<std::string>>()
                                : std::vector<std::string>();
}

// The ids of a file, one per line (a trailing '\r' is dropped, empty lines
// skipped); "-" reads standard input.
std::vector<std::string> ReadIdsFile(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path);
    if (!file) throw NotFoundError("read ids file " + path + ": cannot open it");
    in = &file;
  }
  std::vector<std::string> ids;
  std::string line;
  while (std::getline(*in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) ids.push_back(line);
  }
  if (in->bad()) throw IoError("read ids file " + path + ": read failed");
  return ids;
}

// "no video's meta has the key 'k' (the first video's meta: [...])" for the
// keys of `keys` that no video has, or empty when every key is there (or the
// dataset has no video).
std::string AbsentKeysNote(const Dataset& dataset, const std::vector<std::string>& keys) {
  const std::vector<std::string> absent = dataset.AbsentMetaKeys(keys);
  std::string first;
  bool any = false;
  dataset.ForEach([&](const VideoInfo& v) {
    any = true;
    first = v.meta_data.size() > 200 ? v.meta_data.substr(0, 200) + "..." : v.meta_data;
    return false;
  });
  if (absent.empty() || !any) return "";
  std::string names;
  for (const std::string& k : absent) {
    names += (names.empty() ? "'" : ", '") + EscapeForDisplay(k) + "'";
  }
  return std::string("no video's meta has the key") + (absent.size() > 1 ? "s " : " ") + names +
         " (the first video's meta: " + first + ")";
}

void AddDatasetOptions(po::options_description* o) {
  o->add_options()("dir", po::value<std::string>(),
                   "dataset directory (for listing, also s3://BUCKET/PREFIX of a dataset "
                   "published with gulpdb push)");
  AddIndexDirOption(o);
}

}  // namespace

Query WhereQuery(const po::variables_map& vm) {
  std::vector<Query> parts;
  for (const std::string& argument : WhereArguments(vm)) {
    try {
      parts.push_back(Query::ParseWhere(argument));
    } catch (const QuerySyntaxError& e) {
      const std::string message = e.what();
      const size_t newline = message.find('\n');
      throw UsageError("--where: " + message.substr(0, newline),
                       newline == std::string::npos ? "" : message.substr(newline + 1));
    } catch (const InvalidArgumentError& e) {
      throw UsageError(std::string("--where: ") + e.what());
    }
  }
  return Query::AllOf(parts);
}

// ---- index ---------------------------------------------------------------------

int RunIndex(const std::vector<std::string>& args) {
  po::options_description o("index options");
  AddDatasetOptions(&o);
  bool json = false;
  o.add_options()("meta-key", po::value<std::vector<std::string>>(),
                  "build a meta index of this key of the first meta entry (repeatable)")(
      "drop", po::value<std::vector<std::string>>(),
      "drop the meta index of this key (repeatable)")("json", po::bool_switch(&json),
                                                      "list the indexed keys as a JSON list");
  AddWaitOption(&o);
  const po::variables_map vm =
      Parse(args, "gulpdb index DIR [--meta-key KEY]... [--drop KEY]... [--json]", o, {"dir"});
  const auto keys = [&](const char* name) {  // each key once, in the order given
    std::vector<std::string> out;
    if (vm.count(name) == 0) return out;
    for (const std::string& key : vm[name].as<std::vector<std::string>>()) {
      if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
    }
    return out;
  };
  const std::vector<std::string> create = keys("meta-key"), drop = keys("drop");
  if (create.empty() && drop.empty()) {
    const std::vector<MetaIndexInfo> indexed = Open(vm, true)->MetaIndexDetails();
    if (json) {
      std::string list;
      for (const MetaIndexInfo& k : indexed) {
        list += (list.empty() ? "" : ", ") + PythonJsonString(k.key);
      }
      std::printf("[%s]\n", list.c_str());
    } else {
      for (const MetaIndexInfo& k : indexed) {
        std::printf("%s%s\n", EscapeForDisplay(k.key).c_str(),
                    k.ordered ? ""
                              : "\t(equality only, made by an older gulpdb: --meta-key KEY "
                                "rebuilds it for ranges)");
      }
    }
    return 0;
  }
  // Every key is checked before anything changes: a request that would fail
  // part way (a drop of a key without an index after a build) changes nothing.
  const std::string dir = vm["dir"].as<std::string>();
  for (const std::string& key : create) {
    if (key.empty()) throw UsageError("--meta-key is an empty string");
    CheckMetaIndexKey(key, "index " + dir + ": --meta-key");
    if (std::find(drop.begin(), drop.end(), key) != drop.end()) {
      throw UsageError("'" + EscapeForDisplay(key) + "' is given to both --meta-key and --drop");
    }
  }
  for (const std::string& key : drop) {
    if (key.empty()) throw UsageError("--drop is an empty string");
  }
  auto ds = Open(vm, false);
  const std::vector<std::string> indexed = ds->MetaIndexes();
  std::vector<std::string> missing;
  for (const std::string& key : drop) {
    if (std::find(indexed.begin(), indexed.end(), key) == indexed.end()) missing.push_back(key);
  }
  if (!missing.empty()) {
    throw NotFoundError(
        "index " + dir + ": " + ListForDisplay(missing) + (missing.size() == 1 ? " has" : " have") +
        " no meta index (" +
        (indexed.empty() ? "no key has one" : "indexed: " + ListForDisplay(indexed)) +
        "); nothing was changed");
  }
  int status = 0;
  for (const std::string& key : drop) {
    if (ds->DropMetaIndex(key, WaitOption(vm))) {
      std::printf("dropped the meta index of '%s'\n", EscapeForDisplay(key).c_str());
    } else {  // dropped by another process since the check
      std::fprintf(stderr, "gulpdb index: '%s' has no meta index\n", EscapeForDisplay(key).c_str());
      status = 1;
    }
  }
  const std::vector<MetaIndexInfo> before = ds->MetaIndexDetails();
  for (const std::string& key : create) {
    const bool older_form = std::any_of(before.begin(), before.end(), [&](const MetaIndexInfo& i) {
      return i.key == key && !i.ordered;
    });
    if (ds->CreateMetaIndex(key, WaitOption(vm))) {
      std::printf(older_form ? "rebuilt the meta index of '%s' in the ordered form\n"
                             : "built a meta index of '%s'\n",
                  EscapeForDisplay(key).c_str());
    } else {
      std::printf("'%s' has a meta index already\n", EscapeForDisplay(key).c_str());
    }
    if (const std::string note = AbsentKeysNote(*ds, {key}); !note.empty()) {
      std::fprintf(stderr,
                   "gulpdb index: warning: %s: the index stays empty until videos with the key "
                   "are added\n",
                   EscapeControls(note).c_str());
    }
  }
  return status;
}

// ---- split ----------------------------------------------------------------------

int RunSplit(const std::vector<std::string>& args) {
  po::options_description o("split options");
  AddDatasetOptions(&o);
  bool json = false, remove = false;
  std::string ids_file;
  o.add_options()("name", po::value<std::string>(), "split name")(
      "ids-file", po::value(&ids_file),
      "set the split to the ids of this file, one per line, in that order ('-': stdin)")(
      "where", po::value<std::vector<std::string>>(),
      "set the split to the videos that satisfy this query (docs/query.md; repeatable: all "
      "of them), in dataset order")("remove", po::bool_switch(&remove), "remove the split")(
      "json", po::bool_switch(&json), "machine-readable output");
  AddWaitOption(&o);
  const po::variables_map vm =
      Parse(args,
            "gulpdb split DIR                          list the splits\n"
            "       gulpdb split DIR NAME                     print a split's ids\n"
            "       gulpdb split DIR NAME --ids-file F        set a split (or --where EXPR)\n"
            "       gulpdb split DIR NAME --remove            remove a split",
            o, {"dir", "name?"});
  const bool has_name = vm.count("name") != 0;
  const bool set = !ids_file.empty() || vm.count("where") != 0;
  if (!has_name) {
    if (set || remove) throw UsageError("missing argument NAME");
    const std::vector<SplitInfo> splits = Open(vm, true)->Splits();
    if (json) {
      std::string members;
      for (const SplitInfo& s : splits) {
        members += (members.empty() ? "" : ", ") + PythonJsonString(s.name) + ": " +
                   std::to_string(s.count);
      }
      std::printf("{%s}\n", members.c_str());
    } else {
      for (const SplitInfo& s : splits) {
        std::printf("%s\t%llu\n", EscapeForDisplay(s.name).c_str(),
                    static_cast<unsigned long long>(s.count));
      }
    }
    return 0;
  }
  const std::string name = vm["name"].as<std::string>();
  if (!ids_file.empty() && vm.count("where") != 0) {
    throw UsageError("give --ids-file or --where, not both");
  }
  if (remove && set) throw UsageError("--remove takes no --ids-file or --where");
  const Query where = WhereQuery(vm);  // a bad query is refused before anything opens
  if (!set && !remove) {
    const std::vector<std::string> ids = Open(vm, true)->Split(name);
    if (json) {
      std::string list;
      for (const std::string& id : ids) list += (list.empty() ? "" : ", ") + PythonJsonString(id);
      std::printf("[%s]\n", list.c_str());
    } else {
      for (const std::string& id : ids) std::printf("%s\n", EscapeForDisplay(id).c_str());
    }
    return 0;
  }
  auto ds = Open(vm, false);
  WriterOptions wo;
  wo.lock_timeout = WaitOption(vm);
  if (remove) {
    auto writer = ds->NewWriter(wo);
    if (!writer->RemoveSplit(name)) {
      throw NameNotFoundError("remove split '" + name + "' of " + ds->dir() + ": no such split");
    }
    writer->Commit();
    std::printf("removed split '%s'\n", EscapeForDisplay(name).c_str());
    return 0;
  }
  const std::vector<std::string> ids = ids_file.empty() ? ds->Select(where) : ReadIdsFile(ids_file);
  if (ids.empty() && ids_file.empty()) {
    // A split of nothing is almost always a misspelt key or value: refuse it.
    std::string terms;
    for (const std::string& t : WhereArguments(vm)) terms += (terms.empty() ? "" : " and ") + t;
    const std::string note = AbsentKeysNote(*ds, where.MetaKeys());
    throw InvalidArgumentError("set split '" + name + "' of " + ds->dir() + ": no video matches " +
                               terms + (note.empty() ? "" : ": " + note) + "; nothing was changed");
  }
  auto writer = ds->NewWriter(wo);
  writer->SetSplit(name, ids);
  writer->Commit();
  std::printf("split '%s': %zu ids\n", EscapeForDisplay(name).c_str(), ids.size());
  return 0;
}

// ---- ls and info ------------------------------------------------------------------

void AddListFilterOptions(po::options_description* options) {
  options->add_options()(
      "where", po::value<std::vector<std::string>>(),
      "only videos that satisfy this query, e.g. \"frames >= 16 and label in ('a', 'b')\" "
      "(docs/query.md; repeatable: all of them); KEY=VALUE that is not a query keeps its old "
      "meaning: VALUE is JSON, else a string, and a JSON number or literal also matches the "
      "string of its text")("split", po::value<std::string>(),
                            "only the videos of this split, in its order");
}

void ForEachListed(const Dataset& dataset, const po::variables_map& vm, const Query& where,
                   const std::function<bool(const VideoInfo&)>& fn) {
  const bool by_split = vm.count("split") != 0;
  if (where.MatchesEverything() && !by_split) {
    dataset.ForEach(fn);
    return;
  }
  std::vector<std::string> ids;
  if (by_split) {
    ids = dataset.Split(vm["split"].as<std::string>());
    if (!where.MatchesEverything()) {
      const std::vector<std::string> selected = dataset.Select(where);
      const std::unordered_set<std::string> keep(selected.begin(), selected.end());
      std::vector<std::string> both;
      for (std::string& id : ids) {
        if (keep.count(id) != 0) both.push_back(std::move(id));
      }
      ids = std::move(both);
    }
  } else {
    ids = dataset.Select(where);
  }
  if (!where.MatchesEverything()) {
    // A key no video has is almost always misspelt: say so, whatever matched.
    if (const std::string note = AbsentKeysNote(dataset, where.MetaKeys()); !note.empty()) {
      std::fprintf(stderr, "gulpdb ls: warning: %s%s\n", EscapeControls(note).c_str(),
                   ids.empty() ? "; nothing matches" : "");
    }
  }
  for (const std::string& id : ids) {
    const std::optional<VideoInfo> video = dataset.Find(id);
    if (!video) continue;  // removed since the query
    if (!fn(*video)) return;
  }
}

namespace {

// A partitioned snapshot of an older format pushed with --layout partitioned
// may have left the dataset's named splits out (docs/remote_datasets.md):
// info says so instead of failing.
bool CarriesSplits(const Dataset& dataset) {
  const std::optional<RemoteInfo> remote = GetRemoteInfo(dataset);
  return !remote || !remote->splits_omitted;
}

// "label, duration (equality only)": the indexed keys, and which are of the
// first key form.
std::string IndexedKeysText(const Dataset& dataset) {
  std::string keys;
  for (const MetaIndexInfo& k : dataset.MetaIndexDetails()) {
    keys += (keys.empty() ? "" : ", ") + k.key + (k.ordered ? "" : " (equality only)");
  }
  return keys;
}

}  // namespace

std::string QueryInfoText(const Dataset& dataset) {
  if (!CarriesSplits(dataset)) {
    const std::string keys = IndexedKeysText(dataset);
    return "splits:         not in this partitioned snapshot (an older push with --layout "
           "partitioned left them out)\nmeta indexes:   " +
           (keys.empty() ? std::string("none") : keys) + "\n";
  }
  std::string splits, keys;
  for (const SplitInfo& s : dataset.Splits()) {
    splits += (splits.empty() ? "" : ", ") + s.name + " (" + std::to_string(s.count) + ")";
  }
  keys = IndexedKeysText(dataset);
  return "splits:         " + (splits.empty() ? std::string("none") : splits) +
         "\nmeta indexes:   " + (keys.empty() ? std::string("none") : keys) + "\n";
}

std::string QueryInfoJson(const Dataset& dataset) {
  std::string splits, keys;
  const bool carries_splits = CarriesSplits(dataset);
  for (const SplitInfo& s : carries_splits ? dataset.Splits() : std::vector<SplitInfo>()) {
    splits +=
        (splits.empty() ? "" : ", ") + PythonJsonString(s.name) + ": " + std::to_string(s.count);
  }
  for (const std::string& k : dataset.MetaIndexes()) {
    keys += (keys.empty() ? "" : ", ") + PythonJsonString(k);
  }
  return ", \"splits\": " + (carries_splits ? "{" + splits + "}" : std::string("null")) +
         ", \"meta_indexes\": [" + keys + "]";
}

}  // namespace gulpdb::cli
