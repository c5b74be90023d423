// GulpIO interoperability in this (fresh) process: gulpdb::ImportGulpio of a
// GulpIO directory, or gulpdb::ExportGmeta of a dataset. Prints the time, the
// .gmeta bytes read or written (MB/s) and the process's peak resident memory
// (VmHWM), which bench/run.py compares with the size of the .gmeta files and
// with Python's json.load of the same files (bench/baselines.py).
//
//   interop_bench import --dir D [--index-dir I] [--checksums]   (removes the index first)
//   interop_bench export --dir D --out O   (O is emptied of .gmeta files first)
//   interop_bench --smoke
//
// The .gmeta files are read once before timing so that the page cache is
// warm: these are parser and index-building figures, not disk figures.
// Without --checksums the import reads only the .gmeta files (the index-only
// figure the parser is measured by); with it, every data file is read too to
// store a CRC-32C per frame, as `gulpdb import` does by default.
// --index-dir puts the index elsewhere (ImportOptions::index_dir), e.g. on a
// tmpfs where fsync costs nothing, to tell parsing and indexing from syncing.
// Besides VmHWM, a sampling thread records the peaks of private memory
// (RssAnon) and of mapped file pages (RssFile: mostly the LMDB map, which the
// page cache can reclaim).
#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "bench/bench_util.h"
#include "gulpdb/dataset.h"
#include "gulpdb/interop.h"

namespace gulpdb::bench {
namespace {

int RunImport(const std::string& dir, const std::string& index_dir, bool checksums, bool smoke) {
  RemoveTree(index_dir.empty() ? dir + "/gulpdb.index" : index_dir);
  uint64_t warm = 0;
  for (const std::string& name : ListFiles(dir, "meta", ".gmeta"))
    warm += WarmPageCache(dir + "/" + name);
  const uint64_t rss_at_start_kb = ProcStatusKb("VmRSS");
  MemorySampler sampler;
  ImportOptions options;
  options.index_dir = index_dir;
  options.checksums = checksums;
  const auto start = Clock::now();
  const ImportReport report = ImportGulpio(dir, options);
  const double seconds = SecondsSince(start);
  const double mb = static_cast<double>(report.gmeta_bytes) / 1e6;
  Json json;
  json.String("benchmark", "import")
      .Boolean("smoke", smoke)
      .Integer("chunks", static_cast<int64_t>(report.chunks))
      .Integer("videos", static_cast<int64_t>(report.videos))
      .Integer("frames", static_cast<int64_t>(report.frames))
      .Integer("gmeta_bytes", static_cast<int64_t>(report.gmeta_bytes))
      .Integer("warmed_bytes", static_cast<int64_t>(warm))
      .Number("seconds", seconds)
      .Number("mb_per_s", mb / seconds)
      .Number("rss_at_start_mb", static_cast<double>(rss_at_start_kb) / 1024.0)
      .Number("peak_rss_delta_mb",
              static_cast<double>(ProcStatusKb("VmHWM") - rss_at_start_kb) / 1024.0)
      .String("index_dir", index_dir)
      .Boolean("checksums", checksums);
  sampler.Report(&json);
  AddMemory(&json);
  {
    OpenOptions open;
    open.index_dir = index_dir;
    std::unique_ptr<Dataset> ds = Dataset::Open(dir, open);
    json.Integer("index_bytes", static_cast<int64_t>(ds->Stats().index_bytes));
  }
  json.Print();
  Log("import: %.1f MB of .gmeta in %.2f s = %.0f MB/s, peak RSS %.1f MB", mb, seconds,
      mb / seconds, static_cast<double>(ProcStatusKb("VmHWM")) / 1024.0);
  return 0;
}

int RunExport(const std::string& dir, const std::string& out, bool smoke) {
  if (::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST) Die("mkdir " + out);
  for (const std::string& name : ListFiles(out, "meta", ".gmeta")) RemoveTree(out + "/" + name);
  const uint64_t rss_at_start_kb = ProcStatusKb("VmRSS");
  MemorySampler sampler;
  const auto start = Clock::now();
  std::unique_ptr<Dataset> ds = Dataset::Open(dir);
  const ExportReport report = ExportGmeta(*ds, out);
  const double seconds = SecondsSince(start);
  const double mb = static_cast<double>(report.bytes_written) / 1e6;
  Json json;
  json.String("benchmark", "export")
      .Boolean("smoke", smoke)
      .Integer("chunks", static_cast<int64_t>(report.chunks))
      .Integer("videos", static_cast<int64_t>(report.videos))
      .Integer("gmeta_bytes", static_cast<int64_t>(report.bytes_written))
      .Number("seconds", seconds)
      .Number("mb_per_s", mb / seconds)
      .Number("rss_at_start_mb", static_cast<double>(rss_at_start_kb) / 1024.0)
      .Number("peak_rss_delta_mb",
              static_cast<double>(ProcStatusKb("VmHWM") - rss_at_start_kb) / 1024.0);
  sampler.Report(&json);
  AddMemory(&json);
  json.Print();
  Log("export: %.1f MB of .gmeta in %.2f s = %.0f MB/s", mb, seconds, mb / seconds);
  return 0;
}

// A small GulpIO directory written by an exported dataset, imported back.
int RunSmoke() {
  const std::string root = ScratchDir("interop_bench_smoke");
  RemoveTree(root);
  if (::mkdir(root.c_str(), 0755) != 0) Die("mkdir " + root);
  IndexSpec spec;
  spec.videos = 300;
  spec.videos_per_chunk = 100;
  BuildIndexDataset(root + "/ds", spec);
  const std::string gulpio = root + "/gulpio";
  int rc = RunExport(root + "/ds", gulpio, true);
  // The exported directory needs data files next to its .gmeta files.
  for (const std::string& name : ListFiles(root + "/ds", "data", ".gulp")) {
    WriteWholeFile(gulpio + "/" + name, ReadWholeFile(root + "/ds/" + name));
  }
  rc |= RunImport(gulpio, "", false, true);
  RemoveTree(gulpio + "/gulpdb.index");
  rc |= RunImport(gulpio, "", true, true);
  RemoveTree(root);
  return rc;
}

int Main(int argc, char** argv) {
  const std::string usage =
      "interop_bench import --dir D [--index-dir I] [--checksums] | export --dir D --out O | "
      "--smoke";
  if (argc >= 2 && std::string(argv[1]) == "--smoke") return RunSmoke();
  if (argc < 2) Options(argc, argv, 1, usage).Usage("missing mode");
  const std::string mode = argv[1];
  Options opt(argc, argv, 2, usage);
  const std::string dir = opt.Required("dir");
  if (mode == "import") {
    const std::string index_dir = opt.Str("index-dir", "");
    const bool checksums = opt.Flag("checksums");
    opt.Finish();
    return RunImport(dir, index_dir, checksums, false);
  }
  if (mode == "export") {
    const std::string out = opt.Required("out");
    opt.Finish();
    return RunExport(dir, out, false);
  }
  opt.Usage("unknown mode " + mode);
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("interop_bench");
  try {
    return gulpdb::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
