// The query language (docs/query.md): queries answered by ordered meta
// indexes against the same queries answered by a scan of every record, in
// the same run on the same dataset, and the scan's rate.
//
//   query_lang_bench [--dir D] [--videos N] [--repeat R] [--smoke]
//
// The dataset (index-only; reused when D holds one of the same size made by
// this program): N videos with hashed ids (40 hex digits), 16 tiny frames
// each, meta {"label": "class<k>" (100 values), "duration": <0 to 100, four
// decimals, spread by a hash>}. The queries:
//   range   duration >= 99                                   (1% of the videos)
//   and     label in ('class7', 'class8') and duration >= 50 (1%: two indexes intersected)
//   check   duration >= 99 and frames = 16                   (1%: the index narrows,
//                                                             each candidate checked)
// Each runs R times with meta indexes on duration and label (median time per
// call), then R times after the indexes are dropped (a scan); both answers
// must be the same ids. The indexes are then built again, timed. The scan's
// rate is videos per second of wall time and per CPU-second (one thread).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "gulpdb/dataset.h"
#include "gulpdb/query.h"

namespace gulpdb::bench {
namespace {

constexpr int kFrames = kLabelledFrames;
constexpr uint64_t kLabels = kLabelClasses;

struct Timing {
  std::vector<double> wall_ms, cpu_ms;
  std::vector<std::string> ids;
};

// Times `calls` calls of Select(query), `repeat` times.
Timing TimeQuery(const Dataset& ds, const Query& query, uint64_t repeat, uint64_t calls) {
  Timing t;
  for (uint64_t r = 0; r < repeat; ++r) {
    const auto start = Clock::now();
    const double cpu = ProcessCpuSeconds();
    for (uint64_t c = 0; c < calls; ++c) t.ids = ds.Select(query);
    t.wall_ms.push_back(SecondsSince(start) * 1e3 / static_cast<double>(calls));
    t.cpu_ms.push_back((ProcessCpuSeconds() - cpu) * 1e3 / static_cast<double>(calls));
  }
  return t;
}

int Run(int argc, char** argv) {
  Options opt(argc, argv, 1, "query_lang_bench [--dir D] [--videos N] [--repeat R] [--smoke]");
  const bool smoke = opt.Flag("smoke");
  const std::string dir = opt.Str("dir", ScratchDir("query_lang_bench"));
  const uint64_t videos = std::max<uint64_t>(200, opt.Uint("videos", smoke ? 3000 : 1000000));
  const uint64_t repeat = std::max<uint64_t>(1, opt.Uint("repeat", smoke ? 1 : 5));
  opt.Finish();

  double build_seconds = 0;
  bool reuse = false;
  if (Dataset::Exists(dir)) {
    auto existing = Dataset::Open(dir);
    reuse = existing->Count() == videos && existing->Contains(HashedVideoId(videos - 1)) &&
            existing->Select("label", "\"class0\"").size() == (videos + kLabels - 1) / kLabels;
  }
  if (!reuse) {
    RemoveTree(dir);
    build_seconds = BuildLabelledDataset(dir, videos, /*checksums=*/false, /*with_idx=*/false);
    Log("built %llu videos in %.1f s", static_cast<unsigned long long>(videos), build_seconds);
  }
  OpenOptions rw;
  rw.read_only = false;
  std::unique_ptr<Dataset> ds = Dataset::Open(dir, rw);
  const auto index_start = Clock::now();
  ds->CreateMetaIndex("duration");
  ds->CreateMetaIndex("label");
  const double index_seconds = SecondsSince(index_start);

  struct Case {
    const char* name;
    const char* text;
  };
  const std::vector<Case> cases = {
      {"range", "duration >= 99"},
      {"and", "label in ('class7', 'class8') and duration >= 50"},
      {"check", "duration >= 99 and frames = 16"},
  };
  // About 50 ms of indexed calls per round (at least 3).
  const uint64_t indexed_calls = std::max<uint64_t>(3, 5000000 / videos);
  std::vector<Timing> indexed, scanned;
  for (const Case& c : cases)
    indexed.push_back(TimeQuery(*ds, Query::Parse(c.text), repeat, indexed_calls));
  ds->DropMetaIndex("duration");
  ds->DropMetaIndex("label");
  for (const Case& c : cases) scanned.push_back(TimeQuery(*ds, Query::Parse(c.text), repeat, 1));
  // Left as it was found, and the build timed.
  const auto rebuild_start = Clock::now();
  ds->CreateMetaIndex("duration");
  const double duration_index_seconds = SecondsSince(rebuild_start);
  ds->CreateMetaIndex("label");

  std::vector<Json> rows;
  for (size_t k = 0; k < cases.size(); ++k) {
    if (indexed[k].ids != scanned[k].ids)
      Die(std::string("index and scan disagree on ") + cases[k].text);
    const double fraction =
        static_cast<double>(indexed[k].ids.size()) / static_cast<double>(videos);
    if (fraction < 0.005 || fraction > 0.02) {
      Die(std::string(cases[k].text) + " selects " + std::to_string(indexed[k].ids.size()) +
          " videos, not about 1%");
    }
    const double scan = Summarize(scanned[k].wall_ms).median;
    const double index = Summarize(indexed[k].wall_ms).median;
    std::vector<double> rate, cpu_rate;
    for (double ms : scanned[k].wall_ms) rate.push_back(static_cast<double>(videos) / (ms / 1e3));
    for (double ms : scanned[k].cpu_ms) {
      cpu_rate.push_back(static_cast<double>(videos) / std::max(ms / 1e3, 1e-9));
    }
    Json row;
    row.String("name", cases[k].name)
        .String("query", cases[k].text)
        .Integer("matches", static_cast<int64_t>(indexed[k].ids.size()))
        .Stats("indexed_ms", indexed[k].wall_ms)
        .Stats("indexed_cpu_ms", indexed[k].cpu_ms)
        .Stats("scan_ms", scanned[k].wall_ms)
        .Stats("scan_cpu_ms", scanned[k].cpu_ms)
        .Stats("scan_videos_per_s", rate)
        .Stats("scan_videos_per_cpu_s", cpu_rate)
        .Number("speedup", scan / index);
    rows.push_back(row);
    Log("%-58s %6zu matches: index %8.3f ms, scan %8.1f ms (%.0fx); scan %.2f M videos/s, "
        "%.2f M per CPU-second",
        cases[k].text, indexed[k].ids.size(), index, scan, scan / index,
        Summarize(rate).median / 1e6, Summarize(cpu_rate).median / 1e6);
  }
  Json json;
  json.String("benchmark", "query_lang")
      .Boolean("smoke", smoke)
      .Integer("videos", static_cast<int64_t>(videos))
      .Integer("frames_per_video", kFrames)
      .Integer("repeat", static_cast<int64_t>(repeat))
      .Number("build_seconds", build_seconds)
      .Number("index_build_seconds", index_seconds)
      .Number("duration_index_seconds", duration_index_seconds)
      .Objects("queries", rows);
  AddMemory(&json);
  json.Print();
  return 0;
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("query_lang_bench");
  try {
    return gulpdb::bench::Run(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
