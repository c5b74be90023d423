#include "cli/commands.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cli/progress.h"
#include "cli/query_commands.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "gulpdb/interop.h"
#include "gulpdb/json.h"
#include "gulpdb/maintenance.h"

namespace gulpdb::cli {

namespace po = boost::program_options;

bool Parse(const std::vector<std::string>& args, const char* usage, po::options_description options,
           const std::vector<std::string>& positionals, po::variables_map* vm) {
  options.add_options()("help,h", "show this help");
  po::positional_options_description pos;
  for (const std::string& p : positionals) {
    if (p.size() > 3 && p.substr(p.size() - 3) == "...") {
      pos.add(p.substr(0, p.size() - 3).c_str(), -1);
    } else if (p.size() > 1 && p.back() == '?') {
      pos.add(p.substr(0, p.size() - 1).c_str(), 1);
    } else {
      pos.add(p.c_str(), 1);
    }
  }
  po::store(po::command_line_parser(args).options(options).positional(pos).run(), *vm);
  if (vm->count("help") != 0) {
    std::cout << "usage: " << usage << "\n\n" << options;
    return false;
  }
  po::notify(*vm);
  for (const std::string& p : positionals) {
    if (p.back() == '?') continue;  // optional
    const std::string name =
        p.size() > 3 && p.substr(p.size() - 3) == "..." ? p.substr(0, p.size() - 3) : p;
    if (vm->count(name) == 0) throw UsageError("missing argument " + name);
  }
  return true;
}

namespace {

std::unique_ptr<Dataset> OpenRo(const std::string& dir) { return Dataset::Open(dir); }

std::unique_ptr<Dataset> OpenRw(const std::string& dir) {
  OpenOptions o;
  o.read_only = false;
  return Dataset::Open(dir, o);
}

OnDuplicate ParseOnDuplicate(const std::string& s) {
  if (s == "error") return OnDuplicate::kError;
  if (s == "skip") return OnDuplicate::kSkip;
  if (s == "replace") return OnDuplicate::kReplace;
  throw UsageError("--on-duplicate must be error, skip or replace, not '" + s + "'");
}

// Creates directory `path` unless it exists.
void MakeDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return;
  const std::string message = "create " + path + ": " + std::strerror(errno);
  if (errno == ENOENT) throw NotFoundError(message);
  throw IoError(message);
}

// A file name for `id` that cannot leave the output directory.
std::string SafeName(const std::string& id) {
  std::string out;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    out += ok ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

// ---- create ------------------------------------------------------------------

int RunCreate(const std::vector<std::string>& args) {
  po::options_description o("create options");
  CreateOptions c;
  bool no_checksums = false;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "videos-per-chunk", po::value(&c.videos_per_chunk)->default_value(100),
      "start a new chunk after this many videos")(
      "bytes-per-chunk", po::value(&c.bytes_per_chunk)->default_value(0),
      "also start a new chunk past this many bytes (0: no limit)")(
      "no-checksums", po::bool_switch(&no_checksums), "do not store a CRC-32C per frame");
  po::variables_map vm;
  if (!Parse(args, "gulpdb create DIR [options]", o, {"dir"}, &vm)) return 0;
  c.checksums = !no_checksums;
  Dataset::Create(vm["dir"].as<std::string>(), c);
  std::printf("created %s\n", vm["dir"].as<std::string>().c_str());
  return 0;
}

// ---- ingest --------------------------------------------------------------------

int RunIngest(const std::vector<std::string>& args) {
  po::options_description o("ingest options");
  ingest::IngestOptions in;
  std::string on_dup;
  int frame_size = 0;
  auto add = o.add_options();
  add("dir", po::value(&in.dir), "dataset directory (created if missing)");
  add("videos-dir", po::value(&in.videos_dir),
      "videos, each DIR/<id>.<ext> or the one file in DIR/<id>/, decoded by ffmpeg");
  add("frames-dir", po::value(&in.frames_dir), "one sub-folder of JPEG frames per video");
  add("images-dir", po::value(&in.images_dir),
      "one sub-folder of images per class (with --image-list: the root of its paths)");
  add("image-list", po::value(&in.image_list),
      "text file of image paths, one per line, each optionally followed by ;label");
  add("labels", po::value(&in.labels),
      "for --videos-dir or --frames-dir: a 20BN-style JSON list [{\"id\": ..., \"label\": ...}] "
      "or CSV id;label (default: every video found, unlabeled)");
  add("label-name", po::value(&in.label_name)->default_value("label"),
      "key of the label in a JSON list (e.g. template)");
  add("frame-rate", po::value(&in.frame_rate)->default_value(8, "8"),
      "frames per second taken from videos (0: every frame)");
  add("frame-size", po::value(&frame_size)->default_value(0),
      "resize frames so that their short edge has this many pixels (0: keep the size)");
  add("quality", po::value(&in.quality)->default_value(90), "JPEG quality of encoded frames");
  add("keep-jpeg", po::bool_switch(&in.keep_jpeg),
      "store JPEG frames and images byte for byte instead of re-encoding them");
  add("num-workers,j", po::value(&in.num_workers)->default_value(0),
      "threads that decode and encode (0: one per core)");
  add("shuffle", po::bool_switch(&in.shuffle), "ingest the sources in random order");
  add("seed", po::value<uint64_t>(), "seed of --shuffle (default: random, printed)");
  add("videos-per-chunk", po::value(&in.videos_per_chunk)->default_value(100),
      "videos per chunk file, for a new dataset");
  add("batch", po::value(&in.batch)->default_value(100), "videos per committed transaction");
  add("on-duplicate", po::value(&on_dup)->default_value("skip"),
      "an id already in the dataset: error, skip or replace");
  add("strict", po::bool_switch(&in.strict), "stop at the first bad source instead of skipping it");
  add("quiet,q", po::bool_switch(&in.quiet), "no progress output");
  po::variables_map vm;
  if (!Parse(args,
             "gulpdb ingest DIR (--videos-dir D [--labels LIST] | --frames-dir D [--labels LIST] | "
             "--images-dir D | --image-list FILE [--images-dir ROOT]) [options]",
             o, {"dir"}, &vm)) {
    return 0;
  }
  in.on_duplicate = ParseOnDuplicate(on_dup);
  if (frame_size < 0) throw UsageError("--frame-size must not be negative");
  in.frame_size = frame_size;
  if (vm.count("seed") != 0) in.seed = vm["seed"].as<uint64_t>();
  if (const std::string problem = ingest::ValidateIngestOptions(in); !problem.empty()) {
    throw UsageError(problem);
  }
  std::unique_ptr<Progress> progress;
  in.on_progress = [&](const ingest::IngestProgress& p) {
    if (!progress) progress = std::make_unique<Progress>("ingest", p.total, in.quiet);
    progress->Update(p.done);
  };
  const ingest::IngestReport r = ingest::Ingest(in);
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
      r.added, static_cast<unsigned long long>(r.frames), in.dir.c_str(), r.present, r.bad,
      extra.c_str());
  return r.interrupted_by != 0 ? 128 + r.interrupted_by : 0;
}

// ---- info / ls / show ----------------------------------------------------------------

int RunInfo(const std::vector<std::string>& args) {
  po::options_description o("info options");
  bool json = false;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "json", po::bool_switch(&json), "machine-readable output");
  po::variables_map vm;
  if (!Parse(args, "gulpdb info DIR [--json]", o, {"dir"}, &vm)) return 0;
  const std::string dir = vm["dir"].as<std::string>();
  const std::unique_ptr<Dataset> ds = OpenRo(dir);
  const DatasetStats s = ds->Stats();
  if (json) {
    std::printf(
        "{\"path\": %s, \"format_version\": %u, \"creator\": %s, \"videos\": %llu, \"frames\": "
        "%llu, \"chunks\": %llu, \"committed_bytes\": %llu, \"live_bytes\": %llu, "
        "\"garbage_bytes\": %llu, \"index_bytes\": %llu, \"videos_per_chunk\": %u, "
        "\"bytes_per_chunk\": %llu, \"checksums\": %s%s}\n",
        PythonJsonString(dir).c_str(), s.format_version, PythonJsonString(s.creator).c_str(),
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
  std::printf("dataset:        %s\n", dir.c_str());
  std::printf("format version: %u (%s)\n", s.format_version, s.creator.c_str());
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
  uint64_t limit = 0;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "json", po::bool_switch(&json), "one JSON object per line")(
      "meta", po::bool_switch(&meta), "also print each video's meta_data")(
      "limit", po::value(&limit)->default_value(0), "print at most N videos (0: all)");
  AddListFilterOptions(&o);
  po::variables_map vm;
  if (!Parse(args,
             "gulpdb ls DIR [--json] [--meta] [--limit N] [--where KEY=VALUE]... [--split NAME]", o,
             {"dir"}, &vm)) {
    return 0;
  }
  uint64_t shown = 0;
  ForEachListed(*OpenRo(vm["dir"].as<std::string>()), vm, [&](const VideoInfo& v) {
    if (json) {
      std::printf("{\"id\": %s, \"frames\": %zu, \"chunk\": %u%s%s}\n",
                  PythonJsonString(v.id).c_str(), v.frames.size(), v.chunk,
                  meta ? ", \"meta_data\": " : "", meta ? v.meta_data.c_str() : "");
    } else {
      std::printf("%s\t%zu%s%s\n", v.id.c_str(), v.frames.size(), meta ? "\t" : "",
                  meta ? v.meta_data.c_str() : "");
    }
    return ++shown != limit;
  });
  return 0;
}

int RunShow(const std::vector<std::string>& args) {
  po::options_description o("show options");
  bool json = false;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "id", po::value<std::string>(), "video id")("json", po::bool_switch(&json),
                                                  "machine-readable output");
  po::variables_map vm;
  if (!Parse(args, "gulpdb show DIR ID [--json]", o, {"dir", "id"}, &vm)) return 0;
  const VideoInfo v = OpenRo(vm["dir"].as<std::string>())->Get(vm["id"].as<std::string>());
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
                v.id.c_str(), v.chunk, v.frames.size(), frame_info.c_str(), v.meta_data.c_str());
  }
  return 0;
}

// ---- extract / remove ----------------------------------------------------------------

int RunExtract(const std::vector<std::string>& args) {
  po::options_description o("extract options");
  std::string out, frames;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "id", po::value<std::string>(), "video id")("output,o", po::value(&out)->required(),
                                                  "output directory (created if missing)")(
      "frames", po::value(&frames)->default_value("all"),
      "frames to write: all, start:stop[:step] or i,j,k");
  po::variables_map vm;
  if (!Parse(args, "gulpdb extract DIR ID -o OUTDIR [--frames SEL]", o, {"dir", "id"}, &vm)) {
    return 0;
  }
  const std::string id = vm["id"].as<std::string>();
  const JpegFrames jpegs =
      OpenRo(vm["dir"].as<std::string>())->ReadJpegs(id, Selection::Parse(frames));
  MakeDirectory(out);
  const std::string stem = SafeName(id);
  for (size_t i = 0; i < jpegs.size(); ++i) {
    char index[16];
    std::snprintf(index, sizeof(index), "%05u", jpegs.indices()[i]);
    const std::string path = out + "/" + stem + "_" + index + ".jpg";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(jpegs[i].data(), static_cast<std::streamsize>(jpegs[i].size()));
    if (!f) throw IoError("write " + path + ": failed");
  }
  std::printf("wrote %zu frames of %s to %s\n", jpegs.size(), id.c_str(), out.c_str());
  return 0;
}

int RunRemove(const std::vector<std::string>& args) {
  po::options_description o("remove options");
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "ids", po::value<std::vector<std::string>>(), "ids to remove");
  po::variables_map vm;
  if (!Parse(args, "gulpdb remove DIR ID...", o, {"dir", "ids..."}, &vm)) return 0;
  const auto ids = vm["ids"].as<std::vector<std::string>>();
  const size_t removed = OpenRw(vm["dir"].as<std::string>())->Remove(ids);
  std::printf("removed %zu of %zu ids\n", removed, ids.size());
  return removed == ids.size() ? 0 : 1;
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
      "index-dir", po::value(&options.index_dir),
      "put the index here instead of DIR/gulpdb.index (for read-only directories)")(
      "meta-key", po::value(&options.meta_index_keys),
      "also build a meta index of this key (repeatable; see gulpdb index)")(
      "quiet,q", po::bool_switch(&quiet), "no progress output");
  po::variables_map vm;
  if (!Parse(args, "gulpdb import DIR [options]", o, {"dir"}, &vm)) return 0;
  if (on_dup == "error") {
    options.on_duplicate = DuplicatePolicy::kError;
  } else if (on_dup == "keep-first") {
    options.on_duplicate = DuplicatePolicy::kKeepFirst;
  } else if (on_dup == "keep-last") {
    options.on_duplicate = DuplicatePolicy::kKeepLast;
  } else {
    throw UsageError("--on-duplicate must be error, keep-first or keep-last, not '" + on_dup + "'");
  }
  options.skip_missing_meta = skip_missing;
  options.checksums = !no_checksums;
  std::unique_ptr<Progress> progress;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress = std::make_unique<Progress>("import", total, quiet);
    progress->Update(done);
  };
  const std::string dir = vm["dir"].as<std::string>();
  const ImportReport r = ImportGulpio(dir, options);
  if (progress) progress->Finish();
  for (const std::string& w : r.warnings)
    std::fprintf(stderr, "gulpdb import: warning: %s\n", w.c_str());
  std::printf("imported %s: %llu chunks, %llu videos, %llu frames (%.1f MB of .gmeta)%s\n",
              dir.c_str(), static_cast<unsigned long long>(r.chunks),
              static_cast<unsigned long long>(r.videos), static_cast<unsigned long long>(r.frames),
              static_cast<double>(r.gmeta_bytes) / 1e6,
              r.splits != 0 ? (", " + std::to_string(r.splits) + " splits").c_str() : "");
  return 0;
}

int RunExport(const std::vector<std::string>& args) {
  po::options_description o("export options");
  std::string out;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "output,o", po::value(&out), "write the .gmeta files here (default: DIR)");
  po::variables_map vm;
  if (!Parse(args, "gulpdb export DIR [-o OUTDIR]", o, {"dir"}, &vm)) return 0;
  const std::string dir = vm["dir"].as<std::string>();
  if (!out.empty()) MakeDirectory(out);
  const ExportReport r = ExportGmeta(*OpenRo(dir), out);
  std::printf("exported %llu chunks (%llu videos, %llu bytes of .gmeta) to %s\n",
              static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.videos),
              static_cast<unsigned long long>(r.bytes_written),
              out.empty() ? dir.c_str() : out.c_str());
  return 0;
}

int RunCheck(const std::vector<std::string>& args) {
  po::options_description o("check options");
  CheckOptions options;
  bool json = false, quiet = false;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "deep", po::bool_switch(&options.deep), "also decode every frame and verify checksums")(
      "index-dir", po::value(&options.index_dir), "the index, when not in DIR/gulpdb.index")(
      "json", po::bool_switch(&json), "machine-readable output")("quiet,q", po::bool_switch(&quiet),
                                                                 "no progress output");
  po::variables_map vm;
  if (!Parse(args, "gulpdb check DIR [--deep] [--json]", o, {"dir"}, &vm)) return 0;
  const std::string dir = vm["dir"].as<std::string>();
  std::unique_ptr<Progress> progress;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress = std::make_unique<Progress>("check", total, quiet || json);
    progress->Update(done);
  };
  const CheckReport r = Check(dir, options);
  if (progress) progress->Finish();
  if (json) {
    std::string problems;
    for (const CheckProblem& p : r.problems) {
      problems += (problems.empty() ? "" : ", ") + std::string("{\"where\": ") +
                  PythonJsonString(p.where) + ", \"what\": " + PythonJsonString(p.what) + "}";
    }
    std::string notes;
    for (const std::string& n : r.notes) notes += (notes.empty() ? "" : ", ") + PythonJsonString(n);
    std::printf(
        "{\"healthy\": %s, \"deep\": %s, \"chunks\": %llu, \"videos\": %llu, "
        "\"frames\": %llu, \"problems\": [%s], \"notes\": [%s]}\n",
        r.healthy() ? "true" : "false", options.deep ? "true" : "false",
        static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.videos),
        static_cast<unsigned long long>(r.frames), problems.c_str(), notes.c_str());
  } else {
    for (const std::string& n : r.notes) std::printf("note: %s\n", n.c_str());
    for (const CheckProblem& p : r.problems)
      std::printf("%s: %s\n", p.where.c_str(), p.what.c_str());
    std::printf(
        "%s: %llu chunks, %llu videos, %llu frames checked%s: %s\n", dir.c_str(),
        static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.videos),
        static_cast<unsigned long long>(r.frames), options.deep ? " (deep)" : "",
        r.healthy() ? "healthy" : (std::to_string(r.problems.size()) + " problems").c_str());
  }
  return r.healthy() ? 0 : 1;
}

// ---- compact / merge -------------------------------------------------------------------

int RunCompact(const std::vector<std::string>& args) {
  po::options_description o("compact options");
  CompactOptions options;
  bool quiet = false;
  double wait_s = 0;
  o.add_options()("dir", po::value<std::string>(), "dataset directory")(
      "min-garbage", po::value(&options.min_garbage_fraction)->default_value(0.0),
      "only rewrite chunks with at least this fraction of garbage bytes (0..1)")(
      "wait", po::value(&wait_s)->default_value(0), "seconds to wait for another writer")(
      "quiet,q", po::bool_switch(&quiet), "no progress output");
  po::variables_map vm;
  if (!Parse(args, "gulpdb compact DIR [--min-garbage F]", o, {"dir"}, &vm)) return 0;
  options.lock_timeout = std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
  std::unique_ptr<Progress> progress;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress = std::make_unique<Progress>("compact", total, quiet);
    progress->Update(done);
  };
  const CompactReport r = Compact(*OpenRw(vm["dir"].as<std::string>()), options);
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
  po::variables_map vm;
  if (!Parse(args, "gulpdb merge OUT SHARD...", o, {"out", "shards..."}, &vm)) return 0;
  MergeOptions options;
  options.on_duplicate = ParseOnDuplicate(on_dup);
  std::unique_ptr<Progress> progress;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (!progress) progress = std::make_unique<Progress>("merge", total, quiet);
    progress->Update(done);
  };
  const std::string out = vm["out"].as<std::string>();
  const MergeReport r = Merge(out, vm["shards"].as<std::vector<std::string>>(), options);
  if (progress) progress->Finish();
  std::printf(
      "merged %llu shards into %s: %llu videos (%llu chunks attached in place, %llu "
      "videos copied, %llu duplicates skipped)\n",
      static_cast<unsigned long long>(r.shards), out.c_str(),
      static_cast<unsigned long long>(r.videos), static_cast<unsigned long long>(r.chunks_attached),
      static_cast<unsigned long long>(r.videos_copied), static_cast<unsigned long long>(r.skipped));
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
      {"index", "create, list or drop meta indexes (fast ls --where)", RunIndex},
      {"split", "set, list, show or remove named splits", RunSplit},
  };
  return commands;
}

}  // namespace gulpdb::cli
