// The commands that look after a dataset: `remove` (videos from the
// index), `check` (files and index, --deep for every frame) and `compact`
// (rewrite chunks to drop removed and replaced bytes).

#include <cstdio>
#include <set>

#include "cli/command_families.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/maintenance.h"

namespace gulpdb::cli {

int RunRemove(const std::vector<std::string>& args) {
  po::options_description o("remove options");
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "ids", po::value<std::vector<std::string>>(), "ids to remove");
  AddIndexDirOption(&o);
  const po::variables_map vm =
      Parse(args, "gulpdb remove DIR ID... [--index-dir PATH]", o, {"dir", "ids..."});
  const DatasetPath path = DatasetArg(vm);
  RequireLocal(path.dir);
  std::vector<std::string> ids;
  {
    std::set<std::string> seen;
    for (const std::string& id : vm["ids"].as<std::vector<std::string>>()) {
      if (seen.insert(id).second) ids.push_back(id);
    }
  }
  std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/false);
  std::vector<std::string> missing;
  {
    std::unique_ptr<Writer> writer = ds->NewWriter();
    for (const std::string& id : ids) {
      if (!IsPossibleId(id) || !writer->Remove(id)) missing.push_back(id);
    }
    writer->CommitLast();
  }
  std::printf("removed %zu of %zu ids\n", ids.size() - missing.size(), ids.size());
  if (missing.empty()) return 0;
  std::fprintf(stderr, "gulpdb remove: not in %s: %s\n", EscapeControls(path.dir).c_str(),
               ListForDisplay(missing).c_str());
  return 1;
}

int RunCheck(const std::vector<std::string>& args) {
  po::options_description o("check options");
  CheckOptions options;
  bool json = false, quiet = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "deep", po::bool_switch(&options.deep), "also decode every frame and verify checksums")(
      "json", po::bool_switch(&json), "machine-readable output")("quiet,q", po::bool_switch(&quiet),
                                                                 "no progress output");
  AddIndexDirOption(&o);
  AddVersionOption(&o);
  const po::variables_map vm = Parse(
      args, "gulpdb check DIR [--deep] [--json] [--index-dir PATH] [--version NAME]", o, {"dir"});
  const DatasetPath path = DatasetArg(vm);
  options.index_dir = path.index_dir;
  options.version = path.version;
  RequireDirectories(path);
  std::unique_ptr<Progress> progress;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress = std::make_unique<Progress>("check", total, quiet || json);
    progress->Update(done);
  };
  const CheckReport r = Check(path.dir, options);
  if (progress) progress->Finish();
  if (json) {
    std::string problems;
    for (const CheckProblem& p : r.problems) {
      problems += (problems.empty() ? "" : ", ") + std::string("{\"where\": ") +
                  JsonPathString(p.where) + ", \"what\": " + JsonPathString(p.what) + "}";
    }
    std::string notes;
    for (const std::string& n : r.notes) notes += (notes.empty() ? "" : ", ") + JsonPathString(n);
    std::printf(
        "{\"healthy\": %s, \"deep\": %s, \"chunks\": %llu, \"videos\": %llu, "
        "\"frames\": %llu, \"unverified_videos\": %llu, \"unverified_chunks\": %llu, "
        "\"problems\": [%s], \"notes\": [%s]}\n",
        r.healthy() ? "true" : "false", options.deep ? "true" : "false",
        static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.videos),
        static_cast<unsigned long long>(r.frames),
        static_cast<unsigned long long>(r.unverified_videos),
        static_cast<unsigned long long>(r.unverified_chunks), problems.c_str(), notes.c_str());
  } else {
    for (const std::string& n : r.notes) std::printf("note: %s\n", EscapeControls(n).c_str());
    for (const CheckProblem& p : r.problems) {
      std::printf("%s: %s\n", EscapeControls(p.where).c_str(), EscapeControls(p.what).c_str());
    }
    std::printf("%s: %llu chunks, %llu videos, %llu frames checked%s: %s%s\n",
                EscapeControls(path.dir).c_str(), static_cast<unsigned long long>(r.chunks),
                static_cast<unsigned long long>(r.videos),
                static_cast<unsigned long long>(r.frames), options.deep ? " (deep)" : "",
                r.healthy() ? "healthy" : (std::to_string(r.problems.size()) + " problems").c_str(),
                r.unverified_videos == 0 ? ""
                                         : (" (" + std::to_string(r.unverified_videos) +
                                            " videos unverified: no checksums)")
                                               .c_str());
  }
  return r.healthy() ? 0 : 1;
}

int RunCompact(const std::vector<std::string>& args) {
  po::options_description o("compact options");
  CompactOptions options;
  bool quiet = false;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "min-garbage", NumberValue("0"),
      "only rewrite chunks with at least this fraction of garbage bytes (0..1)")(
      "quiet,q", po::bool_switch(&quiet), "no progress output");
  AddWaitOption(&o);
  AddIndexDirOption(&o);
  const po::variables_map vm =
      Parse(args, "gulpdb compact DIR [--min-garbage F] [--wait S] [--index-dir PATH]", o, {"dir"});
  const DatasetPath path = DatasetArg(vm);
  options.min_garbage_fraction = *RealOption(vm, "min-garbage", 0, 1);
  options.lock_timeout = WaitOption(vm);
  RequireLocal(path.dir);
  std::unique_ptr<Progress> progress;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress = std::make_unique<Progress>("compact", total, quiet);
    progress->Update(done);
  };
  const CompactReport r = Compact(*OpenDataset(path, /*read_only=*/false), options);
  if (progress) progress->Finish();
  std::printf("compacted %llu chunks: moved %llu videos, reclaimed %llu bytes, removed %zu files\n",
              static_cast<unsigned long long>(r.chunks_rewritten),
              static_cast<unsigned long long>(r.videos_moved),
              static_cast<unsigned long long>(r.bytes_reclaimed), r.files_removed.size());
  return 0;
}

}  // namespace gulpdb::cli
