// GulpIO interop: `import` (index a GulpIO/GulpIO2 directory in place) and
// `export` (write .gmeta files that GulpIO2 reads; for an h264 dataset, a
// whole GulpIO directory of JPEG frames).
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "cli/cleanup.h"
#include "cli/command_families.h"
#include "cli/commands.h"
#include "cli/files.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/remote.h"

namespace gulpdb::cli {

int RunImport(const std::vector<std::string>& args) {
  po::options_description o("import options");
  std::string on_dup;
  bool skip_missing = false, quiet = false, no_checksums = false;
  ImportOptions options;
  o.add_options()("dir", po::value<std::string>(), "GulpIO or GulpIO2 directory")(
      "on-duplicate", po::value(&on_dup)->default_value("error"),
      "an id in several chunks: error, skip (the first chunk keeps it) or replace (the last "
      "does)")("skip-missing-meta", po::bool_switch(&skip_missing),
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
  const po::variables_map vm = Parse(args, "gulpdb import DIR [options]", o, {"dir"});
  const DatasetPath path = DatasetArg(vm);
  options.index_dir = path.index_dir;
  // keep-first and keep-last, import's own words before the one vocabulary,
  // still work for a while.
  if (on_dup == "keep-first" || on_dup == "keep-last") {
    const char* now = on_dup == "keep-first" ? "skip" : "replace";
    Warn("import", "--on-duplicate " + on_dup + " is now spelled " + now);
    on_dup = now;
  }
  options.on_duplicate = ParseOnDuplicate(on_dup);
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
  bool quiet = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "output,o", po::value(&out),
      "a JPEG dataset: write its .gmeta files here (default: DIR; its data files already are "
      "GulpIO's). An h264 dataset: write a whole GulpIO directory here (required: an existing "
      "directory without GulpIO files): data_N.gulp of its frames as JPEG (quality 90, "
      "4:4:4), meta_N.gmeta, label2idx.json")("quiet,q", po::bool_switch(&quiet),
                                              "no progress output");
  AddIndexDirOption(&o);
  AddVersionOption(&o);
  const po::variables_map vm = Parse(
      args, "gulpdb export DIR [-o OUT] [--index-dir PATH] [--version NAME -o OUT]", o, {"dir"});
  const DatasetPath path = DatasetArg(vm);
  RequireNonEmpty(vm, {"output"});
  if (IsRemoteUrl(out)) {
    throw UsageError("-o " + EscapeForDisplay(out) +
                     " is a URL: export writes .gmeta files into a local directory; to publish "
                     "a dataset to object storage, use `gulpdb push DIR s3://BUCKET/PREFIX` "
                     "(it uploads the .gmeta files too)");
  }
  if (!path.version.empty() && out.empty()) {
    throw UsageError("export --version " + EscapeForDisplay(path.version) +
                     " needs -o OUT: a version's GulpIO directory is written there, never over "
                     "the dataset's own .gmeta files");
  }
  if (out.empty() && IsRemoteUrl(path.dir)) {
    throw UsageError("exporting " + path.dir + " needs -o LOCAL_DIR (the dataset is read-only)");
  }
  std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/true);
  if (ds->codec() == Codec::kH264) {
    if (out.empty()) {
      throw UsageError("exporting " + EscapeForDisplay(path.dir) +
                       " (an h264 dataset) needs -o OUT: it writes a whole GulpIO directory of "
                       "JPEG frames there");
    }
    CreatedPaths created;
    created.Track(out, [](const std::string& name) {
      return IsGulpioDataFileName(name) || IsGulpioMetaFileName(name) ||
             name.rfind("label2idx.json", 0) == 0 || name.rfind("gulpdb_splits.json", 0) == 0;
    });
    MakeDirectory(out);
    std::unique_ptr<Progress> progress;
    ExportOptions options;
    options.progress = [&](uint64_t done, uint64_t total) {
      if (!progress) progress = std::make_unique<Progress>("export", total, quiet);
      progress->Update(done);
    };
    const ExportReport r = ExportGulpioDirectory(*ds, out, options);
    created.Keep();
    if (progress) progress->Finish();
    std::printf(
        "exported %llu videos (%llu frames) as JPEG: %llu chunks, %llu bytes of data and "
        "%llu bytes of .gmeta in %s\n",
        static_cast<unsigned long long>(r.videos), static_cast<unsigned long long>(r.frames),
        static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.data_bytes),
        static_cast<unsigned long long>(r.bytes_written), EscapeControls(out).c_str());
    return 0;
  }
  if (!path.version.empty()) {
    CreatedPaths created;
    created.Track(out, [](const std::string& name) {
      return IsGulpioDataFileName(name) || IsGulpioMetaFileName(name) ||
             name.rfind("label2idx.json", 0) == 0 || name.rfind("gulpdb_splits.json", 0) == 0;
    });
    MakeDirectory(out);
    const ExportReport r = ExportVersion(*ds, out);
    created.Keep();
    std::printf("exported version %s: %llu chunks (%llu videos) to %s\n",
                EscapeForDisplay(path.version).c_str(), static_cast<unsigned long long>(r.chunks),
                static_cast<unsigned long long>(r.videos), EscapeControls(out).c_str());
    return 0;
  }
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

}  // namespace gulpdb::cli
