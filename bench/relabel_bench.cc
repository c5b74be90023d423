// Relabeling (docs/edits.md): a 1% label fix through ingest::Relabel (the
// `gulpdb relabel` path: a CSV list parsed, ids checked, label2idx.json
// extended, one writer batch of meta edits) and through the Writer alone
// (UpdateMeta of each video, one Commit), against a bare LMDB loop that puts
// the same records and meta index entries in one durable commit, in the
// same run, round after round.
//
//   relabel_bench [--dir D] [--videos N] [--repeat R] [--no-tag] [--smoke]
//
// The dataset (BuildRelabelDataset, made anew each run): N videos with hashed ids, 16 tiny frames
// each, meta
// {"label": "class<k>" (100 values), "idx": k, "duration": <0 to 100>},
// meta indexes on label and duration. Round r relabels the 1% of videos
// whose hash picks them for r, each to another class.
//
// The baseline: an LMDB environment of its own with a videos database (id ->
// a FlatBuffers VideoRecord of the same frames and meta, as gulpdb encodes
// it) and a meta index database (the label entry of each video: the value
// and the video's place, -> id), built once. A round there is one write
// transaction that puts each edited video's new record, deletes its old
// label entry and puts the new one, committed durably: the index work of a
// relabel with nothing around it.
//
// Two phases of R rounds of each: the first without a tag (no change
// record), the second with a tag made before each of gulpdb's rounds
// (untimed), so that every edit also records the keys it changes in the
// index's change record (index/change_record.h), as it does for a user who
// tags; --no-tag runs the first alone.
//
// Reported for each phase: the median of R rounds of each, the ratio baseline / gulpdb
// (the target is >= 0.5), and the bytes gulpdb wrote to chunk files during
// the rounds, counted by the file layer's I/O hook (util/file_io.h) and
// checked against the chunk files' sizes and modification times.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "gulpdb/dataset.h"
#include "gulpdb/ingest.h"
#include "index/lmdb_env.h"
#include "index/records.h"
#include "util/file_io.h"

namespace gulpdb::bench {
namespace {

constexpr int kFrames = kLabelledFrames;
constexpr uint64_t kLabels = kLabelClasses;

std::string Meta(uint64_t i, uint64_t label) { return LabelledMeta(i, label, /*with_idx=*/true); }

// The labels of every video after `round` rounds, kept incrementally.
struct Labels {
  std::vector<uint16_t> now;
  explicit Labels(uint64_t videos) : now(videos) {
    for (uint64_t i = 0; i < videos; ++i) now[i] = static_cast<uint16_t>(i % kLabels);
  }
};

std::string MetaList(uint64_t i, uint64_t label) { return "[" + Meta(i, label) + "]"; }

index::VideoRecord RecordOf(uint64_t i, uint64_t label) {
  index::VideoRecord r;
  r.chunk = static_cast<uint32_t>(i / 100);
  r.seq = i;
  const uint32_t frame = static_cast<uint32_t>(TinyFrame().size());
  const uint32_t padded = (frame + 3) / 4 * 4;
  for (int f = 0; f < kFrames; ++f) {
    r.frames.push_back(FrameInfo{(i % 100) * kFrames * padded + static_cast<uint64_t>(f) * padded,
                                 padded - frame, padded});
  }
  r.meta_data = MetaList(i, label);
  return r;
}

// The baseline's meta index key of video i's label: the value's text and
// its place, as long as gulpdb's.
std::string LabelKey(uint64_t i, uint64_t label) {
  std::string key("\x01label", 6);
  key += '\0';
  key += "\"class" + std::to_string(label) + "\"";
  for (int b = 7; b >= 0; --b) key.push_back(static_cast<char>((i >> (8 * b)) & 0xff));
  return key;
}

struct Baseline {
  std::unique_ptr<index::Env> env;
  index::Dbi videos = 0, meta = 0;
};

Baseline BuildBaseline(const std::string& dir, uint64_t videos) {
  RemoveTree(dir);
  util::MakeDirectories(dir);
  Baseline b;
  index::EnvOptions o;
  b.env = index::Env::Open(dir, o);
  b.videos = b.env->OpenDb("videos", true);
  b.meta = b.env->OpenDb("meta", true);
  for (uint64_t start = 0; start < videos; start += 50000) {
    b.env->Update([&](index::Txn& txn) {
      for (uint64_t i = start; i < std::min(videos, start + 50000); ++i) {
        const std::string id = HashedVideoId(i);
        txn.Put(b.videos, id, index::EncodeVideoRecord(RecordOf(i, i % kLabels)));
        txn.Put(b.meta, LabelKey(i, i % kLabels), id);
      }
    });
  }
  return b;
}

// Chunk file bytes written, counted by the file layer's hook.
std::atomic<uint64_t> chunk_bytes_written{0};
util::fault::Injection CountChunkWrites(util::fault::Op op, const std::string& path, uint64_t,
                                        size_t size, void*) {
  if (op == util::fault::Op::kWrite && path.size() > 5 &&
      path.compare(path.size() - 5, 5, ".gulp") == 0) {
    chunk_bytes_written += size;
  }
  return {};
}

// Size and modification time of each chunk file, as one string.
std::string ChunkStamps(const std::string& dir) {
  std::string out;
  for (const std::string& name : ByChunkNumber(ListFiles(dir, "data_", ".gulp"))) {
    struct stat st;
    if (::stat((dir + "/" + name).c_str(), &st) != 0) Die("stat " + name);
    out += name + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return out;
}

// The rounds of one phase: `repeat` of each kind, taking turns (Relabel,
// the Writer alone, the bare loop), each relabeling its own 1% (the bare
// loop its own copy of them). `tagged`: a tag is made before each of
// gulpdb's rounds (untimed), so that the round runs with the change record
// on and every key it touches is a first change since the tag.
struct Phase {
  std::vector<double> relabel_ms, writer_ms, bare_ms;
  // CPU time (user + system) of the same rounds: less of the machine's load
  // than their wall time.
  std::vector<double> relabel_cpu_ms, writer_cpu_ms, bare_cpu_ms;
  uint64_t edited = 0;
  int rounds = 0;
};

struct Rounds {
  const std::string& base;
  const std::string& dir;
  uint64_t videos;
  Baseline& bare;
  Labels labels;       // the dataset's
  Labels bare_labels;  // the baseline's
  int next_round = 0;

  void Tag(int round) {
    OpenOptions rw;
    rw.read_only = false;
    Dataset::Open(dir, rw)->Tag("before-round-" + std::to_string(round));
  }

  Phase Run(int repeat, bool tagged) {
    Phase phase;
    for (int r = 0; r < 3 * repeat; ++r) {
      const int round = next_round++;
      const int kind = r % 3;
      std::vector<uint64_t> picked;
      for (uint64_t i = 0; i < videos; ++i) {
        if (RelabelPicked(i, round)) picked.push_back(i);
      }
      Labels& current = kind == 2 ? bare_labels : labels;
      std::vector<uint16_t> next(picked.size());
      std::vector<std::string> ids(picked.size());
      for (size_t k = 0; k < picked.size(); ++k) {
        next[k] = RelabelNext(current.now[picked[k]], round);
        ids[k] = HashedVideoId(picked[k]);
      }
      if (tagged && kind != 2) Tag(round);
      if (kind == 0) {
        const std::string list = base + "/labels.csv";
        WriteRelabelList(list, ids, next);
        ingest::RelabelOptions o;
        o.dir = dir;
        o.labels = list;
        const auto start = Clock::now();
        const double cpu = ProcessCpuSeconds();
        const ingest::RelabelReport report = ingest::Relabel(o);
        phase.relabel_ms.push_back(SecondsSince(start) * 1e3);
        phase.relabel_cpu_ms.push_back((ProcessCpuSeconds() - cpu) * 1e3);
        if (report.changed != picked.size()) Die("relabel changed fewer videos than listed");
      } else if (kind == 1) {
        OpenOptions rw;
        rw.read_only = false;
        auto ds = Dataset::Open(dir, rw);
        std::vector<std::string> patches;
        for (size_t k = 0; k < picked.size(); ++k) {
          patches.push_back("{\"label\": \"class" + std::to_string(next[k]) +
                            "\", \"idx\": " + std::to_string(next[k]) + "}");
        }
        const auto start = Clock::now();
        const double cpu = ProcessCpuSeconds();
        auto w = ds->NewWriter();
        for (size_t k = 0; k < ids.size(); ++k) w->UpdateMeta(ids[k], patches[k]);
        w->CommitLast();
        w.reset();
        phase.writer_ms.push_back(SecondsSince(start) * 1e3);
        phase.writer_cpu_ms.push_back((ProcessCpuSeconds() - cpu) * 1e3);
      } else {
        std::vector<std::string> records, old_keys, new_keys;
        for (size_t k = 0; k < picked.size(); ++k) {
          const uint64_t i = picked[k];
          records.push_back(index::EncodeVideoRecord(RecordOf(i, next[k])));
          old_keys.push_back(LabelKey(i, bare_labels.now[i]));
          new_keys.push_back(LabelKey(i, next[k]));
        }
        const auto start = Clock::now();
        const double cpu = ProcessCpuSeconds();
        bare.env->Update([&](index::Txn& txn) {
          for (size_t k = 0; k < ids.size(); ++k) {
            txn.Put(bare.videos, ids[k], records[k]);
            txn.Del(bare.meta, old_keys[k]);
            txn.Put(bare.meta, new_keys[k], ids[k]);
          }
        });
        phase.bare_ms.push_back(SecondsSince(start) * 1e3);
        phase.bare_cpu_ms.push_back((ProcessCpuSeconds() - cpu) * 1e3);
      }
      for (size_t k = 0; k < picked.size(); ++k) current.now[picked[k]] = next[k];
      phase.edited += picked.size();
      ++phase.rounds;
    }
    return phase;
  }
};

void AddPhase(Json* json, const std::string& prefix, const Phase& p) {
  const double relabel = Summarize(p.relabel_ms).median;
  const double writer = Summarize(p.writer_ms).median;
  const double baseline = Summarize(p.bare_ms).median;
  json->Integer(prefix + "edited_per_round",
                static_cast<int64_t>(p.edited / static_cast<uint64_t>(std::max(1, p.rounds))))
      .Stats(prefix + "relabel_ms", p.relabel_ms)
      .Stats(prefix + "writer_ms", p.writer_ms)
      .Stats(prefix + "bare_lmdb_ms", p.bare_ms)
      .Number(prefix + "relabel_vs_bare", baseline / relabel)
      .Number(prefix + "writer_vs_bare", baseline / writer)
      .Stats(prefix + "relabel_cpu_ms", p.relabel_cpu_ms)
      .Stats(prefix + "writer_cpu_ms", p.writer_cpu_ms)
      .Stats(prefix + "bare_lmdb_cpu_ms", p.bare_cpu_ms);
  Log("%s: relabel %.1f ms, writer %.1f ms, bare LMDB %.1f ms (%.2fx, %.2fx); CPU %.1f, %.1f, "
      "%.1f ms",
      prefix.empty() ? "without a tag" : "with a tag (change record on)", relabel, writer, baseline,
      baseline / relabel, baseline / writer, Summarize(p.relabel_cpu_ms).median,
      Summarize(p.writer_cpu_ms).median, Summarize(p.bare_cpu_ms).median);
}

int Run(int argc, char** argv) {
  Options opt(argc, argv, 1,
              "relabel_bench [--dir D] [--videos N] [--repeat R] [--no-tag] [--smoke]");
  const bool smoke = opt.Flag("smoke");
  const bool no_tag = opt.Flag("no-tag");
  const std::string base = opt.Str("dir", ScratchDir("relabel_bench"));
  const uint64_t videos = std::max<uint64_t>(1000, opt.Uint("videos", smoke ? 5000 : 1000000));
  const int repeat = static_cast<int>(std::max<uint64_t>(1, opt.Uint("repeat", smoke ? 2 : 5)));
  opt.Finish();
  const std::string dir = base + "/dataset";
  const std::string bare_dir = base + "/bare";
  util::MakeDirectories(base);

  // Each run starts from the dataset as built: the rounds relabel it.
  const auto build_start = Clock::now();
  RemoveTree(dir);
  BuildRelabelDataset(dir, videos);
  Baseline bare = BuildBaseline(bare_dir, videos);
  Log("built %llu videos (and the baseline) in %.1f s", static_cast<unsigned long long>(videos),
      SecondsSince(build_start));

  const std::string stamps_before = ChunkStamps(dir);
  util::fault::SetIoHook(&CountChunkWrites, nullptr);
  Rounds rounds{base, dir, videos, bare, Labels(videos), Labels(videos)};
  // Without a tag first (no change record), then with one.
  const Phase untagged = rounds.Run(repeat, /*tagged=*/false);
  Phase tagged;
  if (!no_tag) tagged = rounds.Run(repeat, /*tagged=*/true);
  util::fault::SetIoHook(nullptr, nullptr);
  const bool stamps_same = ChunkStamps(dir) == stamps_before;
  const Labels& labels = rounds.labels;

  // The answer is right: a sample of videos has the label the rounds gave it,
  // and the label index agrees.
  {
    auto ds = Dataset::Open(dir);
    for (uint64_t i = 0; i < videos; i += std::max<uint64_t>(1, videos / 200)) {
      const std::string want = MetaList(i, labels.now[i]);
      if (ds->Get(HashedVideoId(i)).meta_data != want) {
        Die("video " + std::to_string(i) + " has " + ds->Get(HashedVideoId(i)).meta_data +
            ", not " + want);
      }
    }
    uint64_t want_class7 = 0;
    for (uint64_t i = 0; i < videos; ++i) want_class7 += labels.now[i] == 7;
    if (ds->Select("label = 'class7'").size() != want_class7) Die("the label index disagrees");
  }

  // The count can say more than 0: an append with the hook on counts its
  // frames (after the measurements, so the dataset they relabeled is gone
  // after this run anyway).
  uint64_t append_bytes = 0;
  {
    const uint64_t before = chunk_bytes_written.load();
    util::fault::SetIoHook(&CountChunkWrites, nullptr);
    OpenOptions rw;
    rw.read_only = false;
    auto ds = Dataset::Open(dir, rw);
    auto w = ds->NewWriter();
    const std::string frame = TinyFrame();
    w->Append("calibration", std::vector<std::string_view>(kFrames, frame), "{}");
    w->CommitLast();
    util::fault::SetIoHook(nullptr, nullptr);
    append_bytes = chunk_bytes_written.load() - before;
    if (append_bytes == 0) Die("the I/O hook counted no chunk write for an append");
  }
  const uint64_t relabel_chunk_bytes = chunk_bytes_written.load() - append_bytes;

  Json json;
  json.String("benchmark", "relabel")
      .Boolean("smoke", smoke)
      .Integer("videos", static_cast<int64_t>(videos))
      .Integer("frames_per_video", kFrames)
      .Integer("repeat", repeat);
  AddPhase(&json, "", untagged);
  if (!no_tag) AddPhase(&json, "tagged_", tagged);
  json.Integer("chunk_bytes_written", static_cast<int64_t>(relabel_chunk_bytes))
      .Integer("calibration_append_chunk_bytes", static_cast<int64_t>(append_bytes))
      .Boolean("chunk_files_unchanged", stamps_same);
  AddMemory(&json);
  json.Print();
  Log("chunk bytes written %llu, chunk files %s",
      static_cast<unsigned long long>(relabel_chunk_bytes), stamps_same ? "unchanged" : "CHANGED");
  if (relabel_chunk_bytes != 0 || !stamps_same) Die("a relabel wrote to chunk files");
  return 0;
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("relabel_bench");
  try {
    return gulpdb::bench::Run(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
