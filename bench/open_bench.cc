// Cost of starting to use a dataset: Dataset::Open and reading one video's
// JPEG bytes, in this fresh process. bench/run.py runs it several times per
// dataset size; the baseline (bench/baselines.py gmeta-open) does the same
// the way GulpIO does, by loading every .gmeta file.
//
//   open_bench --dir D --id ID
//   open_bench --smoke [--dir D]
//
// Time is measured from the start of main (process start-up and dynamic
// loading are excluded); memory is the process's peak resident set (VmHWM)
// and how much it rose above what the process held at the start of main.
#include <string>

#include "bench/bench_util.h"
#include "gulpdb/dataset.h"

namespace gulpdb::bench {
namespace {

int Run(int argc, char** argv) {
  const auto start = Clock::now();
  const uint64_t rss_at_start_kb = ProcStatusKb("VmRSS");
  Options opt(argc, argv, 1, "open_bench --dir D --id ID | --smoke [--dir D]");
  const bool smoke = opt.Flag("smoke");
  std::string dir = opt.Str("dir", smoke ? ScratchDir("open_bench_smoke") : "");
  std::string id = opt.Str("id", smoke ? VideoId(7) : "");
  opt.Finish();
  if (dir.empty() || id.empty()) opt.Usage("--dir and --id are required");
  double build_seconds = 0;
  if (smoke) {
    RemoveTree(dir);
    IndexSpec spec;
    spec.videos = 200;
    build_seconds = BuildIndexDataset(dir, spec);
  }

  const auto open_start = Clock::now();
  std::unique_ptr<Dataset> ds = Dataset::Open(dir);
  const double open_seconds = SecondsSince(open_start);
  const auto read_start = Clock::now();
  const StoredFrames frames = ds->ReadJpegs(id);
  const double read_seconds = SecondsSince(read_start);
  const double total_seconds = SecondsSince(open_start);
  uint64_t bytes = 0;
  for (size_t i = 0; i < frames.size(); ++i) bytes += frames[i].size();

  Json json;
  json.String("benchmark", "open")
      .Boolean("smoke", smoke)
      .Number("open_ms", open_seconds * 1e3)
      .Number("read_ms", read_seconds * 1e3)
      .Number("total_ms", total_seconds * 1e3)
      .Number("since_main_ms", SecondsSince(start) * 1e3)
      .Integer("frames", static_cast<int64_t>(frames.size()))
      .Integer("bytes", static_cast<int64_t>(bytes))
      .Number("rss_at_start_mb", static_cast<double>(rss_at_start_kb) / 1024.0)
      .Number("peak_rss_delta_mb",
              static_cast<double>(ProcStatusKb("VmHWM") - rss_at_start_kb) / 1024.0);
  AddMemory(&json);
  if (smoke) {
    json.Number("build_seconds", build_seconds);
    ds.reset();
    RemoveTree(dir);
  }
  json.Print();
  return 0;
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("open_bench");
  try {
    return gulpdb::bench::Run(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
