// Versions (docs/versions.md): what a tag costs after a 1% relabel, opening
// a tag, and the diff of two tags, in one run. Tag "b" is built from the
// change record the relabel kept; what a build from it reads of the
// previous tag is measured by one more build of the same state into a
// scratch directory (engine::BuildPartitions, which counts the previous
// partitions it opens), and the diff reads are counted by
// engine::DiffVersions (the tags' partitions it opens).
//
//   version_bench [--dir D] [--videos N] [--repeat R] [--smoke]
//
// The dataset: N videos with hashed ids, 16 tiny frames each, meta
// {"label": "class<k>" (100 values), "idx": k, "duration": <0 to 100>}.
// Steps: tag "a" (every object new: the baseline, a full snapshot of the
// index in the partition format); relabel the 1% of videos a hash picks
// (Writer::UpdateMeta, one commit); tag "b" against "a". Reported: each
// tag's time, the bytes of objects it wrote (the growth of
// gulpdb.versions/objects) against the bytes of the whole tag and of the
// LMDB index; opening tag "b" (Dataset::Open with OpenOptions::version,
// median of R x 20 opens); the diff of "a" and "b" (time, and the ids it
// reports, checked against the relabel), and the bytes of partitions each
// build and the diff read.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "engine/partition/partitions.h"
#include "engine/version/version_diff.h"
#include "engine/version/version_store.h"
#include "gulpdb/dataset.h"
#include "util/file_io.h"

namespace gulpdb::bench {
namespace {

constexpr int kFrames = kLabelledFrames;
constexpr uint64_t kLabels = kLabelClasses;

bool Picked(uint64_t i) { return Mix64(i * 131 + 17) % 100 == 0; }

uint64_t DirBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const std::string& name : ListFiles(dir, "", "")) total += FileSize(dir + "/" + name);
  return total;
}

int Run(int argc, char** argv) {
  Options opt(argc, argv, 1, "version_bench [--dir D] [--videos N] [--repeat R] [--smoke]");
  const bool smoke = opt.Flag("smoke");
  const std::string base = opt.Str("dir", ScratchDir("version_bench"));
  const uint64_t videos = std::max<uint64_t>(1000, opt.Uint("videos", smoke ? 3000 : 1000000));
  const int repeat = static_cast<int>(std::max<uint64_t>(1, opt.Uint("repeat", smoke ? 1 : 5)));
  opt.Finish();
  const std::string dir = base + "/dataset";
  const std::string objects = dir + "/gulpdb.versions/objects";
  RemoveTree(dir);
  util::MakeDirectories(base);

  const double build_seconds =
      BuildLabelledDataset(dir, videos, /*checksums=*/true, /*with_idx=*/true);
  Log("built %llu videos in %.1f s", static_cast<unsigned long long>(videos), build_seconds);

  OpenOptions rw;
  rw.read_only = false;
  auto ds = Dataset::Open(dir, rw);
  const uint64_t index_bytes = ds->Stats().index_bytes;

  auto start = Clock::now();
  ds->Tag("a");
  const double tag_a_ms = SecondsSince(start) * 1e3;
  const uint64_t tag_a_bytes = DirBytes(objects);

  std::vector<uint64_t> picked;
  for (uint64_t i = 0; i < videos; ++i) {
    if (Picked(i)) picked.push_back(i);
  }
  start = Clock::now();
  {
    auto w = ds->NewWriter();
    for (uint64_t i : picked) {
      const uint64_t label = (i % kLabels + 1) % kLabels;
      w->UpdateMeta(HashedVideoId(i), "{\"label\": \"class" + std::to_string(label) +
                                          "\", \"idx\": " + std::to_string(label) + "}");
    }
    w->CommitLast();
  }
  const double relabel_ms = SecondsSince(start) * 1e3;

  // What a build from the change record reads (the state tag "b" is made
  // of, built into a scratch directory first).
  engine::BuildResult probe;
  {
    const std::string scratch = base + "/probe";
    RemoveTree(scratch);
    const index::PartitionRoot root_a =
        engine::ReadRoot(dir, engine::ListTags(dir).back().root, /*expand=*/true);
    engine::PartitionOptions options;
    options.previous = engine::DirectoryFetch(objects);
    options.previous_sha256 = engine::ListTags(dir).back().root;
    const auto t = Clock::now();
    probe = engine::BuildPartitions(*ds, &root_a, options, scratch);
    Log("build from the change record: %.0f ms, %s, previous partitions read %llu bytes",
        SecondsSince(t) * 1e3, probe.from_changes ? "from the record" : "the full comparison",
        static_cast<unsigned long long>(probe.previous_bytes_read));
    RemoveTree(scratch);
  }

  start = Clock::now();
  ds->Tag("b");
  const double tag_b_ms = SecondsSince(start) * 1e3;
  const uint64_t tag_b_new_bytes = DirBytes(objects) - tag_a_bytes;

  std::vector<double> open_ms;
  for (int r = 0; r < repeat * 20; ++r) {
    OpenOptions o;
    o.version = "b";
    const auto t = Clock::now();
    auto v = Dataset::Open(dir, o);
    open_ms.push_back(SecondsSince(t) * 1e3);
    if (v->Count() != videos) Die("tag b has " + std::to_string(v->Count()) + " videos");
  }

  std::vector<double> diff_ms;
  VersionDiff diff;
  engine::DiffCost diff_cost;
  for (int r = 0; r < repeat; ++r) {
    const auto t = Clock::now();
    diff = engine::DiffVersions(*ds, "a", "b", &diff_cost);
    diff_ms.push_back(SecondsSince(t) * 1e3);
  }
  if (diff.meta_changed.size() != picked.size() || !diff.added.empty() || !diff.removed.empty() ||
      !diff.frames_changed.empty()) {
    Die("the diff of a and b reports " + std::to_string(diff.meta_changed.size()) +
        " meta changes, not the " + std::to_string(picked.size()) + " relabeled");
  }

  Json json;
  json.String("benchmark", "version")
      .Boolean("smoke", smoke)
      .Integer("videos", static_cast<int64_t>(videos))
      .Integer("frames_per_video", kFrames)
      .Integer("relabeled", static_cast<int64_t>(picked.size()))
      .Integer("index_bytes", static_cast<int64_t>(index_bytes))
      .Number("tag_full_ms", tag_a_ms)
      .Integer("tag_full_bytes_written", static_cast<int64_t>(tag_a_bytes))
      .Number("relabel_ms", relabel_ms)
      .Number("tag_after_relabel_ms", tag_b_ms)
      .Integer("tag_after_relabel_bytes_written", static_cast<int64_t>(tag_b_new_bytes))
      .Number("tag_after_relabel_written_vs_index",
              static_cast<double>(tag_b_new_bytes) / static_cast<double>(index_bytes))
      .Number("tag_after_relabel_written_vs_full_tag",
              static_cast<double>(tag_b_new_bytes) / static_cast<double>(tag_a_bytes))
      .Boolean("tag_after_relabel_from_change_record", probe.from_changes)
      .Integer("tag_after_relabel_previous_bytes_read",
               static_cast<int64_t>(probe.previous_bytes_read))
      .Number("tag_after_relabel_previous_read_vs_index",
              static_cast<double>(probe.previous_bytes_read) / static_cast<double>(index_bytes))
      .Stats("open_tag_ms", open_ms)
      .Stats("diff_ms", diff_ms)
      .Boolean("diff_by_record_deltas", diff_cost.by_record_deltas)
      .Integer("diff_bytes_read", static_cast<int64_t>(diff_cost.bytes))
      .Number("diff_read_vs_index",
              static_cast<double>(diff_cost.bytes) / static_cast<double>(index_bytes));
  AddMemory(&json);
  json.Print();
  Log("%llu videos: full tag %.0f ms (%llu bytes); relabel of %zu: %.0f ms; tag after it %.0f ms, "
      "%llu bytes written (%.1f%% of the index's %llu); open a tag %.2f ms (median); diff %.0f ms "
      "reading %llu bytes (%.2f%% of the index)",
      static_cast<unsigned long long>(videos), tag_a_ms,
      static_cast<unsigned long long>(tag_a_bytes), picked.size(), relabel_ms, tag_b_ms,
      static_cast<unsigned long long>(tag_b_new_bytes),
      100.0 * static_cast<double>(tag_b_new_bytes) / static_cast<double>(index_bytes),
      static_cast<unsigned long long>(index_bytes), Summarize(open_ms).median,
      Summarize(diff_ms).median, static_cast<unsigned long long>(diff_cost.bytes),
      100.0 * static_cast<double>(diff_cost.bytes) / static_cast<double>(index_bytes));
  return 0;
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("version_bench");
  try {
    return gulpdb::bench::Run(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
