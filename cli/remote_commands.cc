// Publishing: `push` (a dataset to s3://BUCKET/PREFIX, or its changes) and
// `snapshot` (an index snapshot for readers on other hosts).

#include <cstdio>
#include <optional>

#include "cli/command_families.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "util/url_text.h"

namespace gulpdb::cli {
namespace {

void PrintRepaired(const PushReport& r) {
  if (r.objects_repaired > 0) {
    std::printf("repaired %llu objects the store lacked or held damaged\n",
                static_cast<unsigned long long>(r.objects_repaired));
  }
}

void PrintPushReport(const PushReport& r, const std::string& where) {
  if (!r.published) {
    std::printf("%s is up to date (generation %llu)\n", where.c_str(),
                static_cast<unsigned long long>(r.generation));
    PrintRepaired(r);
    return;
  }
  char index[224];
  if (r.partitioned) {
    char pages[64] = "";
    if (r.root_pages != 0) {
      std::snprintf(pages, sizeof pages, " and %llu pages (%llu uploaded)",
                    static_cast<unsigned long long>(r.root_pages),
                    static_cast<unsigned long long>(r.root_pages_uploaded));
    }
    std::snprintf(index, sizeof index,
                  "partitioned index: %llu partitions (%llu uploaded, %.1f MB), root %.1f kB%s%s",
                  static_cast<unsigned long long>(r.partitions),
                  static_cast<unsigned long long>(r.partitions_uploaded),
                  static_cast<double>(r.partition_bytes_uploaded) / 1e6,
                  static_cast<double>(r.root_bytes) / 1e3, pages,
                  r.root_uploaded ? "" : " (unchanged)");
  } else {
    std::snprintf(index, sizeof index, "index snapshot %.1f MB%s",
                  static_cast<double>(r.snapshot_bytes) / 1e6,
                  r.snapshot_uploaded ? "" : " (unchanged)");
  }
  std::printf(
      "published generation %llu to %s: %llu chunks (%llu uploaded, %.1f MB), %llu .gmeta, "
      "%s; %llu objects kept for older readers, %llu deleted; %.1f s\n",
      static_cast<unsigned long long>(r.generation), where.c_str(),
      static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.chunks_uploaded),
      static_cast<double>(r.bytes_uploaded) / 1e6,
      static_cast<unsigned long long>(r.gmeta_uploaded), index,
      static_cast<unsigned long long>(r.objects_obsoleted),
      static_cast<unsigned long long>(r.objects_deleted), r.seconds);
  PrintRepaired(r);
  if (r.foreign_objects_replaced + r.foreign_objects_deleted > 0) {
    std::printf(
        "overwrote what other pushes or tools had left there: %llu objects replaced, %llu "
        "deleted\n",
        static_cast<unsigned long long>(r.foreign_objects_replaced),
        static_cast<unsigned long long>(r.foreign_objects_deleted));
  }
}

std::optional<std::chrono::seconds> ParseGrace(const po::variables_map& vm) {
  if (vm.count("grace") == 0) return std::nullopt;
  try {
    return ParseDuration(vm["grace"].as<std::string>());
  } catch (const InvalidArgumentError& e) {
    throw UsageError(std::string("--grace: ") + e.what());
  }
}

// The --layout option of push and snapshot.
const char* kLayoutHelp =
    "how the index is published: partitioned (partitions named by their SHA-256 and a root: "
    "readers fetch only the partitions they use, a publish writes only partitions that "
    "changed; older gulpdb versions cannot read it), whole (the index as one object, fetched "
    "whole by every reader), or auto (the default): partitioned";

IndexLayout ParseLayout(const po::variables_map& vm) {
  const std::string layout = vm["layout"].as<std::string>();
  if (const std::optional<IndexLayout> parsed = IndexLayoutFromName(layout)) return *parsed;
  throw UsageError("--layout must be auto, partitioned or whole, not '" + EscapeForDisplay(layout) +
                   "'");
}

}  // namespace

int RunPush(const std::vector<std::string>& args) {
  po::options_description o("push options");
  PushOptions options;
  bool quiet = false;
  o.add_options()("dir", po::value<std::string>(), "local dataset directory")(
      "url", po::value<std::string>(), "destination, s3://BUCKET/PREFIX")(
      "jobs,j", NumberValue("4"), "objects uploaded at once (1-1024)")(
      "grace", po::value<std::string>(),
      "keep objects this push makes obsolete this long for readers of older manifests, e.g. "
      "24h, 30m, 7d (default: $GULPDB_PUSH_GRACE or 24h); a later push deletes them")(
      "overwrite", po::bool_switch(&options.overwrite),
      "replace what the prefix holds that pushes of this dataset did not write (a GulpIO "
      "directory uploaded by other tools, another dataset); without it such a prefix is "
      "refused and nothing is uploaded. Also repairs a damaged prefix: builds the whole index "
      "and uploads what the store lacks or holds damaged")(
      "allow-unconditional-writes", po::bool_switch(&options.allow_unconditional_writes),
      "push to a store that ignores conditional writes (If-None-Match/If-Match), which is "
      "refused otherwise; safe only if no two pushes to the prefix ever run at once")(
      "layout", po::value<std::string>()->default_value("auto"), kLayoutHelp)(
      "quiet,q", po::bool_switch(&quiet), "no progress output");
  AddIndexDirOption(&o);
  const po::variables_map vm =
      Parse(args,
            "gulpdb push DIR s3://BUCKET/PREFIX [--jobs N] [--grace DURATION] [--overwrite] "
            "[--allow-unconditional-writes] [--layout auto|partitioned|whole]",
            o, {"dir", "url"});
  const DatasetPath path = DatasetArg(vm);
  RequireLocal(path.dir);
  options.index_dir = path.index_dir;
  options.jobs = static_cast<uint32_t>(*UnsignedOption(vm, "jobs", 1, 1024));
  options.grace = ParseGrace(vm);
  options.layout = ParseLayout(vm);
  const std::string url = vm["url"].as<std::string>();
  if (!IsRemoteUrl(url)) {
    const std::string shown = util::RedactUrl(url);
    const std::string typo = util::S3UrlTypo(shown);
    throw UsageError("the destination must be s3://BUCKET/PREFIX, not " + EscapeForDisplay(shown) +
                     (typo.empty() ? std::string() : " (" + EscapeForDisplay(typo) + ")"));
  }
  std::unique_ptr<Progress> progress;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress = std::make_unique<Progress>("push", total, quiet);
    progress->Update(done);
  };
  const PushReport r = Push(path.dir, url, options);
  if (progress) progress->Finish();
  PrintPushReport(r, url);
  return 0;
}

int RunSnapshot(const std::vector<std::string>& args) {
  po::options_description o("snapshot options");
  PushOptions options;
  o.add_options()("dir", po::value<std::string>(), "local dataset directory")(
      "grace", po::value<std::string>(),
      "keep superseded snapshots this long for readers still using them (default: "
      "$GULPDB_PUSH_GRACE or 24h)")("layout", po::value<std::string>()->default_value("auto"),
                                    kLayoutHelp);
  AddIndexDirOption(&o);
  const po::variables_map vm =
      Parse(args,
            "gulpdb snapshot DIR [--grace DURATION] [--layout auto|partitioned|whole] "
            "[--index-dir PATH]",
            o, {"dir"});
  const DatasetPath path = DatasetArg(vm);
  RequireLocal(path.dir);
  options.index_dir = path.index_dir;
  options.grace = ParseGrace(vm);
  options.layout = ParseLayout(vm);
  const PushReport r = PublishSnapshot(path.dir, options);
  PrintPushReport(r, path.dir + "/gulpdb.snapshot");
  return 0;
}

}  // namespace gulpdb::cli
