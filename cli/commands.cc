#include "cli/commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "cli/cleanup.h"
#include "cli/files.h"
#include "cli/frame_names.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/query_commands.h"
#include "cli/text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "gulpdb/interop.h"
#include "gulpdb/json.h"
#include "gulpdb/maintenance.h"
#include "gulpdb/remote.h"
#include "util/relative_name.h"
#include "util/url_text.h"

namespace gulpdb::cli {
namespace {

OnDuplicate ParseOnDuplicate(const std::string& s) {
  if (s == "error") return OnDuplicate::kError;
  if (s == "skip") return OnDuplicate::kSkip;
  if (s == "replace") return OnDuplicate::kReplace;
  throw UsageError("--on-duplicate must be error, skip or replace, not '" + EscapeForDisplay(s) +
                   "'");
}

// The DIR of a command that only reads: a URL of a pushed dataset works too.
constexpr const char* kReadableDir =
    "dataset directory, or s3://BUCKET/PREFIX of a dataset published with gulpdb push";

void Warn(const char* command, const std::string& warning) {
  std::fprintf(stderr, "gulpdb %s: warning: %s\n", command, EscapeControls(warning).c_str());
}

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

const std::set<std::string> kCreateOptions = {"videos-per-chunk", "bytes-per-chunk",
                                              "no-checksums"};

CreateOptions CreateOptionsOf(const ingest::IngestOptions& in) {
  CreateOptions c;
  c.videos_per_chunk = in.videos_per_chunk;
  c.bytes_per_chunk = in.bytes_per_chunk;
  c.checksums = in.checksums;
  return c;
}

// ---- create ------------------------------------------------------------------

int RunCreate(const std::vector<std::string>& args) {
  po::options_description o("create options");
  o.add_options()("dir", po::value<std::string>(), "dataset directory");
  AddIngestOptions(&o, kCreateOptions);
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args, "gulpdb create DIR [options]", o, {"dir"}, &vm)) return 0;
  const DatasetPath path = DatasetArg(vm);
  ingest::IngestOptions settings;
  SetGivenIngestOptions(vm, &settings);
  CreateOptions c = CreateOptionsOf(settings);
  c.index_dir = path.index_dir;
  RequireLocal(path.dir);
  RequireDirectories(path, "create dataset");
  CreatedPaths created;
  created.TrackNewDataset(path);
  Dataset::Create(path.dir, c);
  created.Keep();
  std::printf("created %s\n", EscapeControls(path.dir).c_str());
  return 0;
}

// ---- ingest --------------------------------------------------------------------

int RunIngest(const std::vector<std::string>& args) {
  po::options_description o("ingest options");
  o.add_options()("dir", po::value<std::string>(), "dataset directory (created if missing)");
  AddIngestOptions(&o);
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args,
             "gulpdb ingest DIR (--videos-dir D [--labels LIST] | --frames-dir D [--labels LIST] | "
             "--images-dir D | --image-list FILE [--images-dir ROOT]) [options]",
             o, {"dir"}, &vm)) {
    return 0;
  }
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
  const ingest::IngestReport r = ingest::Ingest(in);
  // An interrupted ingest keeps what it committed: running it again resumes.
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

// ---- info / ls / show ----------------------------------------------------------------

int RunInfo(const std::vector<std::string>& args) {
  po::options_description o("info options");
  bool json = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)("json", po::bool_switch(&json),
                                                                 "machine-readable output");
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args, "gulpdb info DIR [--json] [--index-dir PATH]", o, {"dir"}, &vm)) return 0;
  const DatasetPath path = DatasetArg(vm);
  const std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/true);
  const DatasetStats s = ds->Stats();
  if (json) {
    std::printf(
        "{\"path\": %s, \"format_version\": %u, \"creator\": %s, \"videos\": %llu, \"frames\": "
        "%llu, \"chunks\": %llu, \"committed_bytes\": %llu, \"live_bytes\": %llu, "
        "\"garbage_bytes\": %llu, \"index_bytes\": %llu, \"videos_per_chunk\": %u, "
        "\"bytes_per_chunk\": %llu, \"checksums\": %s%s}\n",
        JsonPathString(path.dir).c_str(), s.format_version, PythonJsonString(s.creator).c_str(),
        static_cast<unsigned long long>(s.videos), static_cast<unsigned long long>(s.frames),
        static_cast<unsigned long long>(s.chunks),
        static_cast<unsigned long long>(s.committed_bytes),
        static_cast<unsigned long long>(s.live_bytes),
        static_cast<unsigned long long>(s.garbage_bytes),
        static_cast<unsigned long long>(s.index_bytes), s.videos_per_chunk,
        static_cast<unsigned long long>(s.bytes_per_chunk), s.checksums ? "true" : "false",
        QueryInfoJson(*ds).c_str());
    return 0;
  }
  std::printf("dataset:        %s\n", EscapeControls(path.dir).c_str());
  std::printf("format version: %u (%s)\n", s.format_version, EscapeControls(s.creator).c_str());
  std::printf("videos:         %llu\n", static_cast<unsigned long long>(s.videos));
  std::printf("frames:         %llu\n", static_cast<unsigned long long>(s.frames));
  std::printf("chunks:         %llu (%u videos per chunk)\n",
              static_cast<unsigned long long>(s.chunks), s.videos_per_chunk);
  std::printf("frame bytes:    %llu (+%llu garbage)\n",
              static_cast<unsigned long long>(s.live_bytes),
              static_cast<unsigned long long>(s.garbage_bytes));
  std::printf("index bytes:    %llu\n", static_cast<unsigned long long>(s.index_bytes));
  std::printf("checksums:      %s\n", s.checksums ? "crc32c per frame" : "none");
  std::printf("%s", QueryInfoText(*ds).c_str());
  return 0;
}

int RunLs(const std::vector<std::string>& args) {
  po::options_description o("ls options");
  bool json = false, meta = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "json", po::bool_switch(&json),
      "JSON Lines: one JSON object per line, {\"id\": ..., \"frames\": ..., \"chunk\": ...}")(
      "meta", po::bool_switch(&meta), "also print each video's meta_data")(
      "limit", NumberValue("0"), "print at most N videos (0: all)");
  AddListFilterOptions(&o);
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args,
             "gulpdb ls DIR [--json] [--meta] [--limit N] [--where KEY=VALUE]... [--split NAME]\n"
             "          [--index-dir PATH]\n\n"
             "Prints one video per line, in (chunk, insertion) order (in split order with\n"
             "--split): the id, a tab, the frame count (and a tab and the meta_data with --meta).\n"
             "Ids are printed as the body of a JSON string: \\ \" and control characters\n"
             "(newline, tab, NUL ...) are escaped as JSON escapes them (\\n, \\t, \\u0000), so\n"
             "every line is one video and ls agrees with ls --json.",
             o, {"dir"}, &vm)) {
    return 0;
  }
  const DatasetPath path = DatasetArg(vm);
  const uint64_t limit = *UnsignedOption(vm, "limit");
  uint64_t shown = 0;
  ForEachListed(*OpenDataset(path, /*read_only=*/true), vm, [&](const VideoInfo& v) {
    if (json) {
      std::printf("{\"id\": %s, \"frames\": %zu, \"chunk\": %u%s%s}\n",
                  PythonJsonString(v.id).c_str(), v.frames.size(), v.chunk,
                  meta ? ", \"meta_data\": " : "", meta ? v.meta_data.c_str() : "");
    } else {
      std::printf("%s\t%zu%s%s\n", EscapeForDisplay(v.id).c_str(), v.frames.size(),
                  meta ? "\t" : "", meta ? v.meta_data.c_str() : "");
    }
    return ++shown != limit;
  });
  return 0;
}

int RunShow(const std::vector<std::string>& args) {
  po::options_description o("show options");
  bool json = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "id", po::value<std::string>(), "video id")("json", po::bool_switch(&json),
                                                  "machine-readable output");
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args, "gulpdb show DIR ID [--json] [--index-dir PATH]", o, {"dir", "id"}, &vm)) {
    return 0;
  }
  const DatasetPath path = DatasetArg(vm);
  const std::string id = vm["id"].as<std::string>();
  std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/true);
  RequirePossibleId(path, id);
  const VideoInfo v = ds->Get(id);
  std::string frame_info = "[";
  for (size_t i = 0; i < v.frames.size(); ++i) {
    if (i != 0) frame_info += ", ";
    frame_info += "[" + std::to_string(v.frames[i].offset) + ", " +
                  std::to_string(v.frames[i].pad) + ", " + std::to_string(v.frames[i].length) + "]";
  }
  frame_info += "]";
  if (json) {
    std::printf("{\"id\": %s, \"chunk\": %u, \"frame_info\": %s, \"meta_data\": %s}\n",
                PythonJsonString(v.id).c_str(), v.chunk, frame_info.c_str(), v.meta_data.c_str());
  } else {
    std::printf("id:         %s\nchunk:      %u\nframes:     %zu\nframe_info: %s\nmeta_data:  %s\n",
                EscapeForDisplay(v.id).c_str(), v.chunk, v.frames.size(), frame_info.c_str(),
                v.meta_data.c_str());
  }
  return 0;
}

// ---- extract / remove ----------------------------------------------------------------

int RunExtract(const std::vector<std::string>& args) {
  po::options_description o("extract options");
  std::string out, frames;
  bool force = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "id", po::value<std::string>(), "video id")("output,o", po::value(&out)->required(),
                                                  "output directory (created if missing)")(
      "frames", po::value(&frames)->default_value("all"),
      "frames to write: all, start:stop[:step] or i,j,k")(
      "force", po::bool_switch(&force), "overwrite files that already exist in OUT");
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args,
             "gulpdb extract DIR ID -o OUT [--frames SEL] [--force] [--index-dir PATH]\n\n"
             "Writes the selected frames as OUT/<stem>_<frame>.jpg (<frame>: 5 digits or more).\n"
             "<stem> is the id itself when it has only ASCII letters, digits, '.', '_' and '-',\n"
             "does not start with '.', has at most 200 bytes and does not end in '-' and 8 hex\n"
             "digits. Any other id gets <safe>-<hash>: <safe> is the id with every other\n"
             "character replaced by '_' (cut to 200 bytes), <hash> the first 8 hex digits of\n"
             "the 64-bit FNV-1a hash of the id, so distinct ids never share a name and no id\n"
             "writes outside OUT: 'a/b' gives a_b-<hash>_00000.jpg. Existing files are not\n"
             "overwritten unless --force is given.",
             o, {"dir", "id"}, &vm)) {
    return 0;
  }
  const DatasetPath path = DatasetArg(vm);
  const std::string id = vm["id"].as<std::string>();
  RequireNonEmpty(vm, {"output", "frames"});
  const Selection selection = Selection::Parse(frames);
  std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/true);
  RequirePossibleId(path, id);
  const JpegFrames jpegs = ds->ReadJpegs(id, selection);

  // Each frame once, however often the selection names it.
  const std::string stem = FrameFileStem(id);
  std::vector<std::pair<std::string, size_t>> files;  // (name, position in jpegs)
  std::set<std::string> names;
  for (size_t i = 0; i < jpegs.size(); ++i) {
    std::string name = FrameFileName(stem, jpegs.indices()[i]);
    // Safe by construction (frame_names.h); checked as every name from a
    // dataset is before it becomes a path.
    util::CheckRelativeName(name, "extract " + EscapeControls(id), "the frame file name");
    if (names.insert(name).second) files.emplace_back(std::move(name), i);
  }
  CreatedPaths created;
  created.Track(out, [&names](const std::string& name) { return names.count(name) != 0; });
  MakeDirectory(out);
  if (!force) {
    std::vector<std::string> existing;
    for (const auto& [name, i] : files) {
      struct stat st;
      if (::lstat((out + "/" + name).c_str(), &st) == 0) existing.push_back(name);
    }
    if (!existing.empty()) {
      throw InvalidArgumentError("extract " + EscapeControls(id) + " to " + out + ": " +
                                 ListForDisplay(existing, 3) +
                                 (existing.size() == 1 ? " exists" : " exist") +
                                 "; nothing was written (--force overwrites)");
    }
  }
  for (const auto& [name, i] : files) {
    WriteNewFile(out + "/" + name, jpegs[i], force ? Overwrite::kReplace : Overwrite::kNever);
  }
  created.Keep();
  std::printf("wrote %zu frames of %s to %s as %s_<frame>.jpg\n", files.size(),
              EscapeForDisplay(id).c_str(), EscapeControls(out).c_str(), stem.c_str());
  return 0;
}

int RunRemove(const std::vector<std::string>& args) {
  po::options_description o("remove options");
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "ids", po::value<std::vector<std::string>>(), "ids to remove");
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args, "gulpdb remove DIR ID... [--index-dir PATH]", o, {"dir", "ids..."}, &vm)) {
    return 0;
  }
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
    writer->Commit();
  }
  std::printf("removed %zu of %zu ids\n", ids.size() - missing.size(), ids.size());
  if (missing.empty()) return 0;
  std::fprintf(stderr, "gulpdb remove: not in %s: %s\n", EscapeControls(path.dir).c_str(),
               ListForDisplay(missing).c_str());
  return 1;
}

// ---- import / export / check ----------------------------------------------------------

int RunImport(const std::vector<std::string>& args) {
  po::options_description o("import options");
  std::string on_dup;
  bool skip_missing = false, quiet = false, no_checksums = false;
  ImportOptions options;
  o.add_options()("dir", po::value<std::string>(), "GulpIO or GulpIO2 directory")(
      "on-duplicate", po::value(&on_dup)->default_value("error"),
      "an id in several chunks: error, keep-first or keep-last")(
      "skip-missing-meta", po::bool_switch(&skip_missing),
      "skip a data file without its .gmeta (with a warning) instead of failing")(
      "no-checksums", po::bool_switch(&no_checksums),
      "do not read the data files to store a CRC-32C per frame (only the .gmeta files are read)")(
      "reindex", po::bool_switch(&options.reindex),
      "index an indexed directory again from its .gmeta files (after GulpIO tools changed it)")(
      "discard-unexported", po::bool_switch(&options.discard_unexported),
      "with --reindex: drop videos gulpdb wrote that no .gmeta describes instead of refusing")(
      "meta-key", po::value(&options.meta_index_keys),
      "also build a meta index of this key (repeatable; see gulpdb index)")(
      "quiet,q", po::bool_switch(&quiet), "no progress output");
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args, "gulpdb import DIR [options]", o, {"dir"}, &vm)) return 0;
  const DatasetPath path = DatasetArg(vm);
  options.index_dir = path.index_dir;
  if (on_dup == "error") {
    options.on_duplicate = DuplicatePolicy::kError;
  } else if (on_dup == "keep-first") {
    options.on_duplicate = DuplicatePolicy::kKeepFirst;
  } else if (on_dup == "keep-last") {
    options.on_duplicate = DuplicatePolicy::kKeepLast;
  } else {
    throw UsageError("--on-duplicate must be error, keep-first or keep-last, not '" +
                     EscapeForDisplay(on_dup) + "'");
  }
  options.skip_missing_meta = skip_missing;
  options.checksums = !no_checksums;
  RequireLocal(path.dir);
  RequireDirectories(path, "import");
  CreatedPaths created;
  created.Track(path.index_dir.empty() ? path.dir + "/gulpdb.index" : path.index_dir,
                IsIndexFileName);
  std::unique_ptr<Progress> progress;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress = std::make_unique<Progress>("import", total, quiet);
    progress->Update(done);
  };
  ImportReport r;
  try {
    r = ImportGulpio(path.dir, options);
  } catch (const IoError& e) {
    if (path.index_dir.empty() && ::access(path.dir.c_str(), W_OK) != 0) {
      e.ThrowWithMessage(std::string(e.what()) + " (" + path.dir +
                         " is not writable: put the index elsewhere with --index-dir)");
    }
    throw;
  }
  created.Keep();
  if (progress) progress->Finish();
  for (const std::string& w : r.warnings) Warn("import", w);
  std::printf("imported %s: %llu chunks, %llu videos, %llu frames (%.1f MB of .gmeta)%s\n",
              EscapeControls(path.dir).c_str(), static_cast<unsigned long long>(r.chunks),
              static_cast<unsigned long long>(r.videos), static_cast<unsigned long long>(r.frames),
              static_cast<double>(r.gmeta_bytes) / 1e6,
              r.splits != 0 ? (", " + std::to_string(r.splits) + " splits").c_str() : "");
  return 0;
}

int RunExport(const std::vector<std::string>& args) {
  po::options_description o("export options");
  std::string out;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "output,o", po::value(&out), "write the .gmeta files here (default: DIR)");
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args, "gulpdb export DIR [-o OUT] [--index-dir PATH]", o, {"dir"}, &vm)) return 0;
  const DatasetPath path = DatasetArg(vm);
  RequireNonEmpty(vm, {"output"});
  if (IsRemoteUrl(out)) {
    throw UsageError("-o " + EscapeForDisplay(out) +
                     " is a URL: export writes .gmeta files into a local directory; to publish "
                     "a dataset to object storage, use `gulpdb push DIR s3://BUCKET/PREFIX` "
                     "(it uploads the .gmeta files too)");
  }
  if (out.empty() && IsRemoteUrl(path.dir)) {
    throw UsageError("exporting " + path.dir + " needs -o LOCAL_DIR (the dataset is read-only)");
  }
  std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/true);
  CreatedPaths created;
  created.Track(out.empty() ? path.dir : out, [](const std::string& name) {
    return name.find(".gmeta") != std::string::npos || name.rfind("label2idx.json", 0) == 0;
  });
  if (!out.empty()) MakeDirectory(out);
  const ExportReport r = ExportGmeta(*ds, out);
  created.Keep();
  std::printf("exported %llu chunks (%llu videos, %llu bytes of .gmeta) to %s\n",
              static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.videos),
              static_cast<unsigned long long>(r.bytes_written),
              EscapeControls(out.empty() ? path.dir : out).c_str());
  return 0;
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
  po::variables_map vm;
  if (!Parse(args, "gulpdb check DIR [--deep] [--json] [--index-dir PATH]", o, {"dir"}, &vm)) {
    return 0;
  }
  const DatasetPath path = DatasetArg(vm);
  options.index_dir = path.index_dir;
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
        "\"frames\": %llu, \"problems\": [%s], \"notes\": [%s]}\n",
        r.healthy() ? "true" : "false", options.deep ? "true" : "false",
        static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.videos),
        static_cast<unsigned long long>(r.frames), problems.c_str(), notes.c_str());
  } else {
    for (const std::string& n : r.notes) std::printf("note: %s\n", EscapeControls(n).c_str());
    for (const CheckProblem& p : r.problems) {
      std::printf("%s: %s\n", EscapeControls(p.where).c_str(), EscapeControls(p.what).c_str());
    }
    std::printf(
        "%s: %llu chunks, %llu videos, %llu frames checked%s: %s\n",
        EscapeControls(path.dir).c_str(), static_cast<unsigned long long>(r.chunks),
        static_cast<unsigned long long>(r.videos), static_cast<unsigned long long>(r.frames),
        options.deep ? " (deep)" : "",
        r.healthy() ? "healthy" : (std::to_string(r.problems.size()) + " problems").c_str());
  }
  return r.healthy() ? 0 : 1;
}

// ---- compact / merge -------------------------------------------------------------------

int RunCompact(const std::vector<std::string>& args) {
  po::options_description o("compact options");
  CompactOptions options;
  bool quiet = false;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "min-garbage", NumberValue("0"),
      "only rewrite chunks with at least this fraction of garbage bytes (0..1)")(
      "wait", NumberValue("0"), "seconds to wait for another writer")(
      "quiet,q", po::bool_switch(&quiet), "no progress output");
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args, "gulpdb compact DIR [--min-garbage F] [--wait S] [--index-dir PATH]", o, {"dir"},
             &vm)) {
    return 0;
  }
  const DatasetPath path = DatasetArg(vm);
  options.min_garbage_fraction = *RealOption(vm, "min-garbage", 0, 1);
  const double wait_s = *RealOption(vm, "wait", 0, 1e9);
  options.lock_timeout = std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
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
  po::variables_map vm;
  if (!Parse(args, "gulpdb merge OUT SHARD... [options]", o, {"out", "shards..."}, &vm)) return 0;
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
    RequireDirectories(DatasetPath{shard, ""});
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
  const MergeReport r = Merge(path.dir, shards, options);
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

// ---- push / snapshot (gulpdb/remote.h) -------------------------------------------------

void PrintPushReport(const PushReport& r, const std::string& where) {
  if (!r.published) {
    std::printf("%s is up to date (generation %llu)\n", where.c_str(),
                static_cast<unsigned long long>(r.generation));
    return;
  }
  std::printf(
      "published generation %llu to %s: %llu chunks (%llu uploaded, %.1f MB), %llu .gmeta, "
      "index snapshot %.1f MB%s; %llu objects kept for older readers, %llu deleted; %.1f s\n",
      static_cast<unsigned long long>(r.generation), where.c_str(),
      static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.chunks_uploaded),
      static_cast<double>(r.bytes_uploaded) / 1e6,
      static_cast<unsigned long long>(r.gmeta_uploaded),
      static_cast<double>(r.snapshot_bytes) / 1e6, r.snapshot_uploaded ? "" : " (unchanged)",
      static_cast<unsigned long long>(r.objects_obsoleted),
      static_cast<unsigned long long>(r.objects_deleted), r.seconds);
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
      "refused and nothing is uploaded")(
      "allow-unconditional-writes", po::bool_switch(&options.allow_unconditional_writes),
      "push to a store that ignores conditional writes (If-None-Match/If-Match), which is "
      "refused otherwise; safe only if no two pushes to the prefix ever run at once")(
      "quiet,q", po::bool_switch(&quiet), "no progress output");
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args,
             "gulpdb push DIR s3://BUCKET/PREFIX [--jobs N] [--grace DURATION] [--overwrite] "
             "[--allow-unconditional-writes]",
             o, {"dir", "url"}, &vm)) {
    return 0;
  }
  const DatasetPath path = DatasetArg(vm);
  RequireLocal(path.dir);
  options.index_dir = path.index_dir;
  options.jobs = static_cast<uint32_t>(*UnsignedOption(vm, "jobs", 1, 1024));
  options.grace = ParseGrace(vm);
  const std::string url = vm["url"].as<std::string>();
  if (!IsRemoteUrl(url)) {
    const std::string typo = util::S3UrlTypo(url);
    throw UsageError("the destination must be s3://BUCKET/PREFIX, not " + EscapeForDisplay(url) +
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
      "$GULPDB_PUSH_GRACE or 24h)");
  AddIndexDirOption(&o);
  po::variables_map vm;
  if (!Parse(args, "gulpdb snapshot DIR [--grace DURATION] [--index-dir PATH]", o, {"dir"}, &vm)) {
    return 0;
  }
  const DatasetPath path = DatasetArg(vm);
  RequireLocal(path.dir);
  options.index_dir = path.index_dir;
  options.grace = ParseGrace(vm);
  const PushReport r = PublishSnapshot(path.dir, options);
  PrintPushReport(r, path.dir + "/gulpdb.snapshot");
  return 0;
}

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"create", "create an empty dataset", RunCreate},
      {"ingest", "add videos, frame folders or images", RunIngest},
      {"info", "summary of a dataset", RunInfo},
      {"ls", "list ids with their frame counts", RunLs},
      {"show", "meta and frame_info of one video", RunShow},
      {"extract", "write a video's frames as .jpg files", RunExtract},
      {"remove", "remove videos from the index", RunRemove},
      {"import", "index a GulpIO/GulpIO2 directory in place", RunImport},
      {"export", "write .gmeta files that GulpIO2 reads", RunExport},
      {"check", "verify a dataset's files and index", RunCheck},
      {"compact", "rewrite chunks to drop removed and replaced bytes", RunCompact},
      {"merge", "attach or copy shard datasets into one", RunMerge},
      {"push", "publish a dataset to s3://BUCKET/PREFIX (or its changes)", RunPush},
      {"snapshot", "publish an index snapshot for readers on other hosts", RunSnapshot},
      {"index", "create, list or drop meta indexes (fast ls --where)", RunIndex},
      {"split", "set, list, show or remove named splits", RunSplit},
  };
  return commands;
}

}  // namespace gulpdb::cli
