// tag and diff: a dataset's versions (docs/versions.md): make, list and
// delete tags, and what changed between two versions.
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "cli/command_families.h"
#include "cli/options.h"
#include "cli/text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/json.h"

namespace gulpdb::cli {
namespace {

std::string TimeText(double seconds) {
  const auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string IdList(const std::vector<std::string>& ids) {
  std::string out = "[";
  for (const std::string& id : ids) out += (out.size() > 1 ? ", " : "") + PythonJsonString(id);
  return out + "]";
}

void PrintTags(const Dataset& ds, bool json) {
  const std::vector<VersionInfo> tags = ds.Versions();
  if (json) {
    std::string out = "[";
    for (const VersionInfo& t : tags) {
      char created[32];
      std::snprintf(created, sizeof created, "%.3f", t.created);
      out += std::string(out.size() > 1 ? ", " : "") + "{\"name\": " + PythonJsonString(t.name) +
             ", \"created\": " + created + ", \"videos\": " + std::to_string(t.videos) +
             ", \"frames\": " + std::to_string(t.frames) +
             ", \"message\": " + PythonJsonString(t.message) + "}";
    }
    std::printf("%s]\n", out.c_str());
    return;
  }
  for (const VersionInfo& t : tags) {
    std::printf("%s\t%s\t%llu videos\t%llu frames\t%s\n", t.name.c_str(),
                TimeText(t.created).c_str(), static_cast<unsigned long long>(t.videos),
                static_cast<unsigned long long>(t.frames), EscapeForDisplay(t.message).c_str());
  }
}

}  // namespace

int RunTag(const std::vector<std::string>& args) {
  po::options_description o("tag options");
  std::string message;
  bool remove = false, reclaim = false, json = false;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "name", po::value<std::string>(), "tag name: 1 to 255 bytes of A-Z a-z 0-9 . _ -")(
      "message,m", po::value(&message), "a note kept with the tag")(
      "delete", po::bool_switch(&remove), "delete tag NAME")(
      "grace", NumberValue("600"),
      "with --delete: seconds readers that opened the tag keep reading it before its space "
      "may be freed")("reclaim", po::bool_switch(&reclaim),
                      "free what deleted tags past their grace period held")(
      "json", po::bool_switch(&json), "list the tags as JSON");
  const po::variables_map vm =
      Parse(args,
            "gulpdb tag DIR [NAME [--message TEXT]] [--json]\n"
            "gulpdb tag DIR NAME --delete [--grace S]\n"
            "gulpdb tag DIR --reclaim\n\n"
            "With NAME, records the dataset as it is now under NAME: a read-only version\n"
            "that `--version NAME` (info, ls, show, extract, check, export) and\n"
            "gulpdb.Dataset(DIR, version=NAME) open, whatever is appended, edited, removed\n"
            "or compacted later. Without NAME, lists the tags (name, time, videos, frames,\n"
            "message); DIR may then be an s3:// URL: the tags its last push published.\n"
            "See docs/versions.md.",
            o, {"dir", "name?"});
  const DatasetPath path = DatasetArg(vm);
  const bool named = vm.count("name") != 0;
  const std::string name = named ? vm["name"].as<std::string>() : "";
  // A URL lists the tags a push published; tags are made and deleted on
  // the local dataset (the next push publishes the change).
  if (named || reclaim) RequireLocal(path.dir);
  if (remove && !named) throw UsageError("--delete needs the NAME of the tag to delete");
  if (reclaim && (named || remove)) throw UsageError("--reclaim takes no NAME");
  if (Given(vm, "message") && (!named || remove)) {
    throw UsageError("--message goes with the NAME of a new tag");
  }
  if (Given(vm, "grace") && !remove) throw UsageError("--grace goes with --delete");
  if (!named && !reclaim) {
    PrintTags(*OpenDataset(path, /*read_only=*/true), json);
    return 0;
  }
  std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/false);
  if (reclaim) {
    const uint64_t freed = ds->ReclaimVersions();
    std::printf("freed %llu bytes\n", static_cast<unsigned long long>(freed));
  } else if (remove) {
    const uint64_t grace = *UnsignedOption(vm, "grace", 0, uint64_t{1} << 32);
    ds->DeleteTag(name, std::chrono::seconds(grace));
    std::printf(
        "deleted tag %s; what only it held is freed after %llu s (gulpdb tag DIR "
        "--reclaim, or the next tag --delete)\n",
        name.c_str(), static_cast<unsigned long long>(grace));
  } else {
    const VersionInfo t = ds->Tag(name, message);
    std::printf("tagged %s: %llu videos, %llu frames\n", t.name.c_str(),
                static_cast<unsigned long long>(t.videos),
                static_cast<unsigned long long>(t.frames));
  }
  return 0;
}

int RunDiff(const std::vector<std::string>& args) {
  po::options_description o("diff options");
  bool json = false;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "a", po::value<std::string>(), "a tag, or HEAD (the live dataset)")(
      "b", po::value<std::string>(), "a tag, or HEAD")("json", po::bool_switch(&json),
                                                       "one JSON object with the four lists");
  const po::variables_map vm =
      Parse(args,
            "gulpdb diff DIR A B [--json]\n\n"
            "Lists the ids added, removed, whose meta changed and whose frames changed\n"
            "(by content: each frame's length and CRC-32C, not where it is stored) from\n"
            "version A to version B. A and B are tags or HEAD, the live dataset.",
            o, {"dir", "a", "b"});
  const DatasetPath path = DatasetArg(vm);
  RequireLocal(path.dir);
  const VersionDiff d = OpenDataset(path, /*read_only=*/true)
                            ->Diff(vm["a"].as<std::string>(), vm["b"].as<std::string>());
  if (json) {
    std::printf("{\"added\": %s, \"removed\": %s, \"meta_changed\": %s, \"frames_changed\": %s}\n",
                IdList(d.added).c_str(), IdList(d.removed).c_str(), IdList(d.meta_changed).c_str(),
                IdList(d.frames_changed).c_str());
    return 0;
  }
  const std::pair<const char*, const std::vector<std::string>*> kinds[] = {
      {"added", &d.added},
      {"removed", &d.removed},
      {"meta_changed", &d.meta_changed},
      {"frames_changed", &d.frames_changed}};
  for (const auto& [kind, ids] : kinds) {
    std::printf("%s: %zu\n", kind, ids->size());
    for (const std::string& id : *ids) std::printf("  %s\n", EscapeForDisplay(id).c_str());
  }
  return 0;
}

}  // namespace gulpdb::cli
