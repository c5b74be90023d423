// Metadata queries: Dataset::Select answered by the secondary meta index
// against the same query answered by a scan of every record, in the same run
// on the same dataset, and the cost of an indexed Select against its number
// of matches.
//
//   query_bench [--dir D] [--videos N] [--repeat R] [--smoke]
//
// The dataset (index-only, one tiny frame per video; reused when D holds one
// of the same size made by this program) gives every video the meta
//   {"id": ..., "label": "class_<i % 100>", "grp": G, "grp_scan": G}
// where G is "g<k>" for 10^k videos (k = 0, 1, ...; the members of each group
// spread over the whole dataset) and "rest" for the others. "grp" has a meta
// index, "grp_scan" has none: Select(grp=G) and Select(grp_scan=G) return the
// same ids, one from the index and one from a scan. Each figure is the median
// of R interleaved rounds (an indexed query of few matches runs many times
// per round, and its time per call is reported).
#include <algorithm>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "gulpdb/dataset.h"

namespace gulpdb::bench {
namespace {

constexpr uint64_t kStride = 999983;  // a prime: i -> i * kStride % N spreads the groups

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// Group sizes 1, 10, 100, ... while all of them fit in half the dataset.
std::vector<uint64_t> GroupSizes(uint64_t videos) {
  std::vector<uint64_t> sizes;
  uint64_t total = 0;
  for (uint64_t size = 1; total + size <= videos / 2; size *= 10) {
    sizes.push_back(size);
    total += size;
  }
  return sizes;
}

std::string GroupOf(uint64_t i, uint64_t videos, const std::vector<uint64_t>& sizes) {
  uint64_t rank = (i % videos) * (kStride % videos) % videos;
  if (videos % kStride == 0) rank = i;  // not coprime: no spreading (never at these sizes)
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (rank < sizes[k]) return "g" + std::to_string(k);
    rank -= sizes[k];
  }
  return "rest";
}

double Build(const std::string& dir, uint64_t videos, const std::vector<uint64_t>& sizes) {
  const auto start = Clock::now();
  CreateOptions create;
  create.videos_per_chunk = 1000;
  create.checksums = false;
  auto ds = Dataset::Create(dir, create);
  const std::string frame = TinyFrame();
  const std::vector<std::string_view> frames = {frame};
  auto writer = ds->NewWriter();
  for (uint64_t i = 0; i < videos; ++i) {
    const std::string id = VideoId(i);
    const std::string group = Quoted(GroupOf(i, videos, sizes));
    writer->Append(id, frames,
                   "{\"id\": " + Quoted(id) + ", \"label\": \"class_" + std::to_string(i % 100) +
                       "\", \"grp\": " + group + ", \"grp_scan\": " + group + "}");
    if ((i + 1) % 50000 == 0) writer->Commit();
  }
  writer->Commit();
  return SecondsSince(start);
}

// Seconds per call of Select(key=value), timing `calls` calls.
double TimeSelect(const Dataset& ds, const std::string& key, const std::string& value,
                  uint64_t calls, size_t* matches) {
  const auto start = Clock::now();
  for (uint64_t c = 0; c < calls; ++c) *matches = ds.Select(key, value).size();
  return SecondsSince(start) / static_cast<double>(calls);
}

int Run(int argc, char** argv) {
  Options opt(argc, argv, 1, "query_bench [--dir D] [--videos N] [--repeat R] [--smoke]");
  const bool smoke = opt.Flag("smoke");
  const std::string dir = opt.Str("dir", ScratchDir("query_bench"));
  const uint64_t videos = std::max<uint64_t>(10, opt.Uint("videos", smoke ? 2000 : 1000000));
  const uint64_t repeat = std::max<uint64_t>(1, opt.Uint("repeat", smoke ? 1 : 5));
  opt.Finish();
  const std::vector<uint64_t> sizes = GroupSizes(videos);

  double build_seconds = 0;
  bool reuse = false;
  if (Dataset::Exists(dir)) {
    auto existing = Dataset::Open(dir);
    reuse = existing->Count() == videos && existing->Contains(VideoId(videos - 1)) &&
            existing->Select("grp_scan", "\"g0\"").size() == 1;
  }
  if (!reuse) {
    RemoveTree(dir);
    build_seconds = Build(dir, videos, sizes);
    Log("built %llu videos in %.1f s", static_cast<unsigned long long>(videos), build_seconds);
  }
  OpenOptions rw;
  rw.read_only = false;
  std::unique_ptr<Dataset> ds = Dataset::Open(dir, rw);
  // The index is built here, timed, whatever an earlier run left.
  ds->DropMetaIndex("grp");
  ds->DropMetaIndex("grp_scan");
  const auto index_start = Clock::now();
  ds->CreateMetaIndex("grp");
  const double index_seconds = SecondsSince(index_start);
  Log("meta index of 'grp' over %llu videos: %.2f s", static_cast<unsigned long long>(videos),
      index_seconds);

  // The same query both ways must agree (and be the expected size).
  for (size_t k = 0; k < sizes.size(); ++k) {
    const std::string g = Quoted("g" + std::to_string(k));
    const std::vector<std::string> indexed = ds->Select("grp", g);
    if (indexed != ds->Select("grp_scan", g) || indexed.size() != sizes[k]) {
      Die("index and scan disagree on group g" + std::to_string(k));
    }
  }

  // Scan vs index for the largest group and for a label (1% of the videos),
  // then the indexed cost of each group size.
  const std::string big = Quoted("g" + std::to_string(sizes.size() - 1));
  const std::string label = "\"class_7\"";
  std::vector<double> scan_group, index_group, scan_label, index_label;
  std::vector<std::vector<double>> per_size(sizes.size());
  size_t matches = 0, group_matches = 0, label_matches = 0;
  for (uint64_t round = 0; round < repeat; ++round) {
    scan_group.push_back(TimeSelect(*ds, "grp_scan", big, 1, &group_matches));
    index_group.push_back(TimeSelect(*ds, "grp", big, 3, &matches));
    scan_label.push_back(TimeSelect(*ds, "label", label, 1, &label_matches));
    for (size_t k = 0; k < sizes.size(); ++k) {
      // About 20 ms of calls per size, at least 3.
      const uint64_t calls = std::max<uint64_t>(3, 200000 / (sizes[k] + 10));
      per_size[k].push_back(
          TimeSelect(*ds, "grp", Quoted("g" + std::to_string(k)), calls, &matches));
    }
  }
  // A label index too, for the label figure (built after its scans).
  ds->CreateMetaIndex("label");
  for (uint64_t round = 0; round < repeat; ++round) {
    index_label.push_back(TimeSelect(*ds, "label", label, 3, &matches));
  }
  ds->DropMetaIndex("label");

  const auto ms = [](std::vector<double> v) {
    for (double& x : v) x *= 1e3;
    return v;
  };
  std::vector<Json> rows;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Json row;
    std::vector<double> per_match = per_size[k];
    for (double& x : per_match) x = x * 1e9 / static_cast<double>(sizes[k]);
    row.Integer("matches", static_cast<int64_t>(sizes[k]))
        .Stats("indexed_ms", ms(per_size[k]))
        .Stats("ns_per_match", per_match);
    rows.push_back(row);
    Log("indexed select, %8llu matches: %9.3f ms (%7.1f ns per match)",
        static_cast<unsigned long long>(sizes[k]), Summarize(ms(per_size[k])).median,
        Summarize(per_match).median);
  }
  Json json;
  json.String("benchmark", "query")
      .Boolean("smoke", smoke)
      .Integer("videos", static_cast<int64_t>(videos))
      .Integer("repeat", static_cast<int64_t>(repeat))
      .Number("build_seconds", build_seconds)
      .Number("index_build_seconds", index_seconds)
      .Integer("group_matches", static_cast<int64_t>(group_matches))
      .Stats("scan_group_ms", ms(scan_group))
      .Stats("indexed_group_ms", ms(index_group))
      .Integer("label_matches", static_cast<int64_t>(label_matches))
      .Stats("scan_label_ms", ms(scan_label))
      .Stats("indexed_label_ms", ms(index_label))
      .Objects("by_matches", rows);
  AddMemory(&json);
  const double scan = Summarize(ms(scan_group)).median, indexed = Summarize(ms(index_group)).median;
  Log("%llu matches of %llu videos: scan %.1f ms, index %.3f ms (%.0fx)",
      static_cast<unsigned long long>(group_matches), static_cast<unsigned long long>(videos), scan,
      indexed, scan / indexed);
  Log("label (%llu matches): scan %.1f ms, index %.3f ms",
      static_cast<unsigned long long>(label_matches), Summarize(ms(scan_label)).median,
      Summarize(ms(index_label)).median);
  json.Print();
  return 0;
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("query_bench");
  try {
    return gulpdb::bench::Run(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
