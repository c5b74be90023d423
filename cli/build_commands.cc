// The commands that build datasets: `create` (an empty dataset), `ingest`
// (videos, frame folders, images; option parsing over gulpdb_ingest) and
// `merge` (shard datasets into one). The ingest option table is
// gulpdb/ingest.h's: one definition of every option for every command.

#include <cstdio>
#include <set>

#include "cli/cleanup.h"
#include "cli/command_families.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "gulpdb/maintenance.h"
#include "gulpdb/remote.h"

namespace gulpdb::cli {
namespace {

// Adds the options of the ingest option table (gulpdb/ingest.h) named in
// `names`, or all of them when `names` is empty: one definition of each
// option's name, kind, default and help for every command that takes it.
void AddIngestOptions(po::options_description* o, const std::set<std::string>& names = {}) {
  for (const ingest::IngestOptionInfo& info : ingest::IngestCommandOptions()) {
    if (!names.empty() && names.count(info.name) == 0) continue;
    const std::string spec =
        info.short_name != 0 ? info.name + "," + std::string(1, info.short_name) : info.name;
    if (info.kind == ingest::OptionKind::kSwitch) {
      o->add_options()(spec.c_str(), po::bool_switch(), info.help.c_str());
      continue;
    }
    po::typed_value<std::string>* value = po::value<std::string>();
    if (!info.default_text.empty()) value->default_value(info.default_text);
    o->add_options()(spec.c_str(), value, info.help.c_str());
  }
}

// The ingest options given on the command line, set in `options` by the
// table's rules (a bad value is a UsageError); returns their names.
std::vector<std::string> SetGivenIngestOptions(const po::variables_map& vm,
                                               ingest::IngestOptions* options) {
  std::vector<std::string> given;
  for (const ingest::IngestOptionInfo& info : ingest::IngestCommandOptions()) {
    if (vm.count(info.name) == 0) continue;
    const bool is_switch = info.kind == ingest::OptionKind::kSwitch;
    if (is_switch ? !vm[info.name].as<bool>() : vm[info.name].defaulted()) continue;
    try {
      ingest::SetIngestOption(options, info.name,
                              is_switch ? "true" : vm[info.name].as<std::string>());
    } catch (const InvalidArgumentError& e) {
      throw UsageError(e.what());
    }
    given.push_back(info.name);
  }
  return given;
}

// The settings of a new dataset: what `create` takes of the ingest options.
const std::set<std::string> kCreateOptions = {"videos-per-chunk", "bytes-per-chunk", "no-checksums",
                                              "codec"};

}  // namespace

int RunCreate(const std::vector<std::string>& args) {
  po::options_description o("create options");
  o.add_options()("dir", po::value<std::string>(), "dataset directory");
  AddIngestOptions(&o, kCreateOptions);
  AddIndexDirOption(&o);
  const po::variables_map vm = Parse(args, "gulpdb create DIR [options]", o, {"dir"});
  const DatasetPath path = DatasetArg(vm);
  ingest::IngestOptions settings;
  SetGivenIngestOptions(vm, &settings);
  settings.index_dir = path.index_dir;
  const CreateOptions c = ingest::NewDatasetOptions(settings);
  RequireLocal(path.dir);
  RequireDirectories(path, "create dataset");
  CreatedPaths created;
  created.TrackNewDataset(path);
  Dataset::Create(path.dir, c);
  created.Keep();
  std::printf("created %s\n", EscapeControls(path.dir).c_str());
  return 0;
}

int RunIngest(const std::vector<std::string>& args) {
  po::options_description o("ingest options");
  o.add_options()("dir", po::value<std::string>(), "dataset directory (created if missing)");
  AddIngestOptions(&o);
  AddIndexDirOption(&o);
  const po::variables_map vm =
      Parse(args,
            "gulpdb ingest DIR (--videos-dir D [--labels LIST] | --frames-dir D [--labels LIST] | "
            "--images-dir D | --image-list FILE [--images-dir ROOT]) [options]",
            o, {"dir"});
  const DatasetPath path = DatasetArg(vm);
  ingest::IngestOptions in;
  in.dir = path.dir;
  in.index_dir = path.index_dir;
  const std::vector<std::string> given = SetGivenIngestOptions(vm, &in);
  RequireLocal(in.dir);
  if (const std::string problem = ingest::ValidateIngestOptions(in); !problem.empty()) {
    throw UsageError(problem);
  }
  RequireDirectories(path, "ingest into");
  // Options that this command line gives but nothing will use.
  for (const std::string& warning : ingest::IgnoredIngestOptions(in, given)) {
    Warn("ingest", warning);
  }

  CreatedPaths created;
  created.TrackNewDataset(path);
  std::unique_ptr<Progress> progress;
  in.on_progress = [&](const ingest::IngestProgress& p) {
    if (!progress) progress = std::make_unique<Progress>("ingest", p.total, in.quiet);
    progress->Update(p.done);
  };
  // A failed ingest keeps what it committed, as an interrupted one does:
  // running it again resumes.
  const ingest::IngestReport r =
      KeepingCommitted(&created, ResumeHint(in.on_duplicate), [&] { return ingest::Ingest(in); });
  created.Keep();
  if (progress) progress->Finish();
  std::string extra;
  if (r.duplicates != 0) extra += ", " + std::to_string(r.duplicates) + " listed twice";
  if (r.interrupted_by != 0) {
    std::fprintf(stderr,
                 "gulpdb ingest: interrupted by signal %d; every committed video stays, and "
                 "running the same command again resumes\n",
                 r.interrupted_by);
  }
  std::printf(
      "ingested %zu videos (%llu frames) into %s; %zu already present, %zu bad sources "
      "skipped%s\n",
      r.added, static_cast<unsigned long long>(r.frames), EscapeControls(in.dir).c_str(), r.present,
      r.bad, extra.c_str());
  return r.interrupted_by != 0 ? 128 + r.interrupted_by : 0;
}

int RunMerge(const std::vector<std::string>& args) {
  po::options_description o("merge options");
  std::string on_dup;
  bool quiet = false;
  o.add_options()("out", po::value<std::string>(), "output dataset (created if missing)")(
      "shards", po::value<std::vector<std::string>>(), "shard datasets")(
      "on-duplicate", po::value(&on_dup)->default_value("error"),
      "an id already in the output: error, skip or replace")("quiet,q", po::bool_switch(&quiet),
                                                             "no progress output");
  AddIndexDirOption(&o, "OUT");
  const po::variables_map vm =
      Parse(args, "gulpdb merge OUT SHARD... [options]", o, {"out", "shards..."});
  const DatasetPath path = DatasetArg(vm, "out");
  MergeOptions options;
  options.on_duplicate = ParseOnDuplicate(on_dup);
  options.index_dir = path.index_dir;
  const auto shards = vm["shards"].as<std::vector<std::string>>();
  for (const std::string& shard : shards) {
    if (shard.empty()) throw UsageError("a SHARD is an empty string");
    if (IsRemoteUrl(shard)) {
      throw UsageError("SHARD " + EscapeForDisplay(shard) +
                       " is a URL: merge attaches or copies the chunk files of local shard "
                       "datasets; download it first (the bucket holds a GulpIO directory: e.g. "
                       "`aws s3 sync " +
                       EscapeForDisplay(shard) + " DIR`, then `gulpdb import DIR`)");
    }
    RequireDirectories(DatasetPath{shard, "", ""});
  }
  RequireLocal(path.dir);
  RequireDirectories(path, "merge into");
  CreatedPaths created;
  created.TrackNewDataset(path);
  std::unique_ptr<Progress> progress;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress = std::make_unique<Progress>("merge", total, quiet);
    progress->Update(done);
  };
  const MergeReport r = KeepingCommitted(&created, ResumeHint(options.on_duplicate),
                                         [&] { return Merge(path.dir, shards, options); });
  created.Keep();
  if (progress) progress->Finish();
  std::printf(
      "merged %llu shards into %s: %llu videos (%llu chunks attached in place, %llu "
      "videos copied, %llu duplicates skipped)\n",
      static_cast<unsigned long long>(r.shards), EscapeControls(path.dir).c_str(),
      static_cast<unsigned long long>(r.videos), static_cast<unsigned long long>(r.chunks_attached),
      static_cast<unsigned long long>(r.videos_copied), static_cast<unsigned long long>(r.skipped));
  return 0;
}

}  // namespace gulpdb::cli
