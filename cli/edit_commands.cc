// meta and relabel: the edits of a video's meta (Writer::UpdateMeta /
// SetMeta) and of many videos' labels (ingest::Relabel), frames untouched
// (docs/edits.md).
#include <cstdio>
#include <string>
#include <vector>

#include "cli/command_families.h"
#include "cli/options.h"
#include "cli/text.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "gulpdb/json.h"

namespace gulpdb::cli {
namespace {

std::vector<std::string> Values(const po::variables_map& vm, const char* name) {
  return vm.count(name) != 0 ? vm[name].as<std::vector<std::string>>() : std::vector<std::string>();
}

// The patch of --set KEY=VALUE and --unset KEY: a JSON object, keys in the
// order given, an unset key null.
std::string Patch(const std::vector<std::string>& sets, const std::vector<std::string>& unsets) {
  std::string patch = "{";
  const auto add = [&](const std::string& key, const std::string& value) {
    if (key.empty()) throw UsageError("--set and --unset need a key: an empty one was given");
    if (patch.size() > 1) patch += ", ";
    try {
      patch += PythonJsonString(key);
    } catch (const InvalidArgumentError&) {
      throw UsageError("the key '" + EscapeForDisplay(key) + "' is not valid UTF-8");
    }
    patch += ": " + value;
  };
  for (const std::string& set : sets) {
    const size_t eq = set.find('=');
    if (eq == std::string::npos) {
      throw UsageError("--set takes KEY=VALUE, not '" + EscapeForDisplay(set) + "'");
    }
    std::string value;
    try {
      value = JsonValueFromArgument(std::string_view(set).substr(eq + 1));
    } catch (const InvalidArgumentError&) {
      throw UsageError("--set " + EscapeForDisplay(set) + ": the value is not valid UTF-8");
    }
    add(set.substr(0, eq), value);
  }
  for (const std::string& key : unsets) add(key, "null");
  return patch + "}";
}

}  // namespace

int RunMeta(const std::vector<std::string>& args) {
  po::options_description o("meta options");
  o.add_options()("dir", po::value<std::string>(), kReadableDir)("id", po::value<std::string>(),
                                                                 "video id")(
      "set", po::value<std::vector<std::string>>(),
      "set KEY to VALUE (JSON when it parses as JSON, else a string, as --where reads it; "
      "repeatable)")("unset", po::value<std::vector<std::string>>(),
                     "delete KEY from the meta (repeatable)");
  AddWaitOption(&o);
  AddIndexDirOption(&o);
  const po::variables_map vm =
      Parse(args,
            "gulpdb meta DIR ID [--set KEY=VALUE]... [--unset KEY]... [--wait S]\n\n"
            "Prints the meta of video ID (the first entry of its meta_data, what GulpIO2\n"
            "returns) as JSON. With --set or --unset, edits it first, in one transaction:\n"
            "the frames are not rewritten, meta indexes follow; then prints the new meta.",
            o, {"dir", "id"});
  const DatasetPath path = DatasetArg(vm);
  const std::string id = vm["id"].as<std::string>();
  const std::vector<std::string> sets = Values(vm, "set"), unsets = Values(vm, "unset");
  const bool edit = !sets.empty() || !unsets.empty();
  const std::string patch = edit ? Patch(sets, unsets) : "";
  const std::chrono::milliseconds wait = WaitOption(vm);
  if (edit) RequireLocal(path.dir);
  std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/!edit);
  RequirePossibleId(path, id);
  if (edit) {
    WriterOptions wo;
    wo.lock_timeout = wait;
    std::unique_ptr<Writer> w = ds->NewWriter(wo);
    w->UpdateMeta(id, patch);
    w->CommitLast();
  }
  std::printf("%s\n", FirstMetaEntry(ds->Get(id).meta_data).c_str());
  return 0;
}

int RunRelabel(const std::vector<std::string>& args) {
  po::options_description o("relabel options");
  ingest::RelabelOptions options;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "labels", po::value(&options.labels)->required(),
      "label list: a 20BN JSON list or an id;label CSV, read as ingest --labels reads it")(
      "label-name", po::value(&options.label_name)->default_value("label"),
      "key of the label in a JSON list");
  AddWaitOption(&o);
  AddIndexDirOption(&o);
  const po::variables_map vm =
      Parse(args,
            "gulpdb relabel DIR --labels FILE [--label-name KEY] [--wait S]\n\n"
            "Gives each listed video its label: meta \"label\" and \"idx\" (its index in\n"
            "label2idx.json, which keeps every index and numbers new labels after the\n"
            "largest), in one transaction; frames are not rewritten. Ids the dataset lacks\n"
            "are an error listing them, and nothing changes.",
            o, {"dir"});
  RequireNonEmpty(vm, {"labels", "label-name"});
  const DatasetPath path = DatasetArg(vm);
  RequireLocal(path.dir);
  RequireDirectories(path, "relabel");
  options.dir = path.dir;
  options.index_dir = path.index_dir;
  options.lock_timeout = WaitOption(vm);
  options.on_warning = [](const std::string& warning) { Warn("relabel", warning); };
  const ingest::RelabelReport report = ingest::Relabel(options);
  std::printf("relabeled %zu of %zu listed videos (%zu new labels)\n", report.changed,
              report.listed, report.new_labels);
  return 0;
}

}  // namespace gulpdb::cli
