// Lookup cost on a large dataset: id -> frame_info (Dataset::Find) and
// id -> JPEG bytes (ReadJpegs), against the floor of an LMDB read transaction
// and get alone, measured in the same run. Between the two, the steps Find
// takes are timed on their own to show where its time goes:
//   txn_get       BeginRead + mdb_get                      (the baseline)
//   txn_verify    + FlatBuffers verification of the record (DecodeFrameCount)
//   txn_decode    + decoding the whole record (frame_info, checksums, meta text)
//   find          Dataset::Find (the above + a VideoInfo)
//   read_jpegs    Dataset::ReadJpegs(id, 0:16), page cache warm
//
//   lookup_bench [--dir D] [--videos N] [--lookups M] [--repeat R] [--smoke]
//
// A dataset already at D with N videos is reused; otherwise one is built
// (index-only: 16 tiny frames and GulpIO2-style meta per video, the same as
// `bench_data index`). Each of R rounds looks up the same M random ids with
// every method in turn and takes p50/p99 of the per-call latencies; the JSON
// gives the median, min and max of those over the rounds.
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "engine/core/dataset_impl.h"
#include "gulpdb/dataset.h"
#include "index/records.h"

namespace gulpdb::bench {
namespace {

struct Latencies {
  std::vector<double> p50_us, p99_us, mean_us;
};

template <typename Fn>
void Measure(const std::vector<std::string>& ids, Latencies* out, Fn&& fn) {
  std::vector<double> ns;
  ns.reserve(ids.size());
  double total = 0;
  for (const std::string& id : ids) {
    const auto t0 = Clock::now();
    fn(id);
    const double elapsed = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    ns.push_back(elapsed);
    total += elapsed;
  }
  out->mean_us.push_back(total / static_cast<double>(ns.size()) / 1e3);
  out->p50_us.push_back(Percentile(&ns, 50) / 1e3);
  out->p99_us.push_back(Percentile(&ns, 99) / 1e3);
}

int Run(int argc, char** argv) {
  Options opt(argc, argv, 1,
              "lookup_bench [--dir D] [--videos N] [--lookups M] [--repeat R] [--smoke]");
  const bool smoke = opt.Flag("smoke");
  const std::string dir = opt.Str("dir", "/tmp/gulpdb_lookup_bench");
  const uint64_t videos = opt.Uint("videos", smoke ? 2000 : 1000000);
  const uint64_t lookups = opt.Uint("lookups", smoke ? 2000 : 200000);
  const uint64_t repeat = std::max<uint64_t>(1, opt.Uint("repeat", smoke ? 1 : 5));
  opt.Finish();

  double build_seconds = 0;
  bool reuse = false;
  if (Dataset::Exists(dir)) {
    // Same size and the same id scheme (a dataset left by another program
    // of that size would not do).
    auto existing = Dataset::Open(dir);
    reuse = existing->Count() == videos && existing->Contains(VideoId(0)) &&
            existing->Contains(VideoId(videos - 1));
  }
  if (!reuse) {
    RemoveTree(dir);
    IndexSpec spec;
    spec.videos = videos;
    build_seconds = BuildIndexDataset(dir, spec);
    Log("built %llu videos in %.1f s", static_cast<unsigned long long>(videos), build_seconds);
  }
  std::unique_ptr<Dataset> ds = Dataset::Open(dir);
  std::mt19937_64 rng(42);
  std::vector<std::string> ids;
  ids.reserve(lookups);
  for (uint64_t i = 0; i < lookups; ++i) ids.push_back(VideoId(rng() % videos));

  const engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
  size_t sink = 0;
  for (const std::string& id : ids) sink += ds->Contains(id) ? 1u : 0u;  // warm the B-tree pages
  Latencies txn_get, txn_verify, txn_decode, find, read;
  for (uint64_t round = 0; round < repeat; ++round) {
    Measure(ids, &txn_get, [&](const std::string& id) {
      index::Txn t = impl.env->BeginRead();
      std::string_view v;
      sink += t.Get(impl.videos, id, &v) ? v.size() : 0;
    });
    Measure(ids, &txn_verify, [&](const std::string& id) {
      index::Txn t = impl.env->BeginRead();
      std::string_view v;
      if (t.Get(impl.videos, id, &v)) {
        sink += index::DecodeFrameCount(impl.Unseal(id, v, index::RecordKind::kVideo), id);
      }
    });
    Measure(ids, &txn_decode, [&](const std::string& id) {
      index::Txn t = impl.env->BeginRead();
      std::string_view v;
      if (t.Get(impl.videos, id, &v)) {
        sink += index::DecodeVideoRecord(impl.Unseal(id, v, index::RecordKind::kVideo), id)
                    .frames.size();
      }
    });
    Measure(ids, &find, [&](const std::string& id) { sink += ds->Find(id)->frames.size(); });
    Measure(ids, &read, [&](const std::string& id) {
      sink += ds->ReadJpegs(id, Selection::Slice(0, 16)).size();
    });
  }
  const DatasetStats stats = ds->Stats();

  const auto add = [](Json* json, const char* name, const Latencies& l) {
    Json m;
    m.Stats("p50_us", l.p50_us).Stats("p99_us", l.p99_us).Stats("mean_us", l.mean_us);
    json->Object(name, m);
  };
  Json methods;
  add(&methods, "txn_get", txn_get);
  add(&methods, "txn_verify", txn_verify);
  add(&methods, "txn_decode", txn_decode);
  add(&methods, "find", find);
  add(&methods, "read_jpegs", read);
  Json json;
  json.String("benchmark", "lookup")
      .Boolean("smoke", smoke)
      .Integer("videos", static_cast<int64_t>(stats.videos))
      .Integer("frames", static_cast<int64_t>(stats.frames))
      .Integer("index_bytes", static_cast<int64_t>(stats.index_bytes))
      .Integer("lookups", static_cast<int64_t>(lookups))
      .Integer("repeat", static_cast<int64_t>(repeat))
      .Number("build_seconds", build_seconds)
      .Object("methods", methods)
      .Integer("sink", static_cast<int64_t>(sink % 1000));

  const auto row = [](const char* name, const Latencies& l) {
    Log("%-12s p50 %7.2f us  p99 %7.2f us  mean %7.2f us", name, Summarize(l.p50_us).median,
        Summarize(l.p99_us).median, Summarize(l.mean_us).median);
  };
  row("txn_get", txn_get);
  row("txn_verify", txn_verify);
  row("txn_decode", txn_decode);
  row("find", find);
  row("read_jpegs", read);
  json.Print();
  return sink == 0 ? 1 : 0;
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("lookup_bench");
  try {
    return gulpdb::bench::Run(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
