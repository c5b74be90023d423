// Lookup cost on a large dataset: id -> frame_info (Dataset::Find) and
// id -> JPEG bytes (ReadJpegs), against the floor of an LMDB read transaction
// alone, measured in the same run.
//
//   lookup_bench [--videos N] [--lookups M] [--dir PATH] [--smoke]
//
// Videos hold 16 tiny frames (the index does not care how large frames are).
// Prints p50/p99 latency and throughput; never asserts timings.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/dataset_impl.h"
#include "gulpdb/dataset.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string Id(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "video_%09llu", static_cast<unsigned long long>(i));
  return buf;
}

struct Latency {
  double p50_us, p99_us, mean_us;
};

template <typename Fn>
Latency Measure(const std::vector<std::string>& ids, Fn&& fn) {
  std::vector<double> ns;
  ns.reserve(ids.size());
  for (const std::string& id : ids) {
    const auto t0 = Clock::now();
    fn(id);
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  double total = 0;
  for (double v : ns) total += v;
  std::sort(ns.begin(), ns.end());
  return Latency{ns[ns.size() / 2] / 1000, ns[ns.size() * 99 / 100] / 1000,
                 total / static_cast<double>(ns.size()) / 1000};
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t videos = 1000000, lookups = 200000;
  std::string dir = "/tmp/gulpdb_lookup_bench";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--videos" && i + 1 < argc) videos = std::stoull(argv[++i]);
    else if (a == "--lookups" && i + 1 < argc) lookups = std::stoull(argv[++i]);
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--smoke") videos = 2000, lookups = 2000;
    else {
      std::fprintf(stderr, "usage: lookup_bench [--videos N] [--lookups M] [--dir PATH] [--smoke]\n");
      return 2;
    }
  }
  try {
    std::unique_ptr<gulpdb::Dataset> ds;
    bool reuse = false;
    if (gulpdb::Dataset::Exists(dir)) {
      ds = gulpdb::Dataset::Open(dir);
      reuse = ds->Count() == videos;
    }
    if (!reuse) {
      (void)std::system(("rm -rf '" + dir + "'").c_str());
      gulpdb::CreateOptions c;
      c.videos_per_chunk = 10000;
      c.checksums = false;
      ds = gulpdb::Dataset::Create(dir, c);
      const std::string frame = std::string("\xff\xd8", 2) + std::string(28, 'x') + "\xff\xd9";
      const std::vector<std::string_view> frames(16, frame);
      const auto t0 = Clock::now();
      auto w = ds->NewWriter();
      for (uint64_t i = 0; i < videos; ++i) {
        w->Append(Id(i), frames, "{\"label\": \"some_label\", \"idx\": 7}");
        if ((i + 1) % 50000 == 0) w->Commit();
      }
      w->Commit();
      w.reset();
      std::printf("built %llu videos in %.1f s\n", static_cast<unsigned long long>(videos),
                  std::chrono::duration<double>(Clock::now() - t0).count());
      ds = gulpdb::Dataset::Open(dir);
    }
    std::mt19937_64 rng(42);
    std::vector<std::string> ids;
    for (uint64_t i = 0; i < lookups; ++i) ids.push_back(Id(rng() % videos));

    gulpdb::Dataset::Impl& impl = ds->impl();
    size_t sink = 0;
    // Warm the page cache and the B-tree's pages.
    for (const std::string& id : ids) sink += ds->Contains(id) ? 1u : 0u;
    const Latency txn = Measure(ids, [&](const std::string& id) {
      gulpdb::index::Txn t = impl.env->BeginRead();
      std::string_view v;
      sink += t.Get(impl.videos, id, &v) ? v.size() : 0;
    });
    const Latency find = Measure(ids, [&](const std::string& id) {
      sink += ds->Find(id)->frames.size();
    });
    const Latency read = Measure(ids, [&](const std::string& id) {
      sink += ds->ReadJpegs(id, gulpdb::Selection::Slice(0, 16)).size();
    });
    const gulpdb::DatasetStats stats = ds->Stats();
    std::printf("dataset: %llu videos, %llu frames, index %.1f MB (%.2f bytes/frame)\n",
                static_cast<unsigned long long>(stats.videos),
                static_cast<unsigned long long>(stats.frames), static_cast<double>(stats.index_bytes) / 1e6,
                static_cast<double>(stats.index_bytes) / static_cast<double>(stats.frames));
    std::printf("%-34s %9s %9s %9s %8s\n", "operation", "p50 us", "p99 us", "mean us", "vs txn");
    const auto row = [&](const char* name, const Latency& l) {
      std::printf("%-34s %9.2f %9.2f %9.2f %7.2fx\n", name, l.p50_us, l.p99_us, l.mean_us,
                  l.mean_us / txn.mean_us);
    };
    row("baseline: LMDB txn + get", txn);
    row("Find(id) -> frame_info + meta", find);
    row("ReadJpegs(id, 0:16) (warm cache)", read);
    std::printf("target: Find p50 <= 2 us (measured %.2f us)\n", find.p50_us);
    return sink == 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lookup_bench: %s\n", e.what());
    return 1;
  }
}
