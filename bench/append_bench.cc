// Durable appends: committed videos per second and commit latency for
// several batch sizes, against the floor of writing the same bytes to one
// plain file with pwritev and one fdatasync per batch (the frames made
// durable, no index), measured in the same run.
//
//   append_bench --dir D --frames DIR [--batch-sizes 1,10,100,1000]
//                [--commits 30,20,5,2] [--frames-per-video 16]
//   append_bench --smoke
//
// For each batch size b, a fresh dataset (CreateOptions defaults: 100 videos
// per chunk, checksums on) takes `commits` batches of b videos; each video is
// `frames-per-video` real JPEG frames from DIR. Timed: every Append and
// Commit, and closing the writer (videos/s), and each Commit on its own
// (latency). The baseline writes each batch's frames, padded as in a chunk,
// with pwritev and then fdatasyncs, appending to one file. The two take
// turns in 10 rounds (RunBatchSize), so that load from elsewhere falls on
// both.
//
// System calls that flush (fdatasync, fsync, msync) are counted by running
// this program under strace (bench/run.py does, with a single batch size and
// two different commit counts, so that set-up cancels out).
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "gulpdb/dataset.h"
#include "gulpdb/jpeg.h"

namespace gulpdb::bench {
namespace {

// The frames of video `v`: a window of the pool, moving with v.
std::vector<std::string_view> VideoFrames(const std::vector<std::string>& pool, uint64_t v,
                                          size_t per_video) {
  std::vector<std::string_view> frames;
  const size_t first = static_cast<size_t>(v * 7) % (pool.size() - per_video + 1);
  for (size_t i = 0; i < per_video; ++i) frames.emplace_back(pool[first + i]);
  return frames;
}

struct Result {
  uint64_t batch = 0;
  uint64_t commits = 0;
  std::vector<double> commit_ms;
  double gulpdb_seconds = 0;
  double bare_seconds = 0;
  std::vector<double> bare_batch_ms;
  uint64_t bytes = 0;
};

// The baseline's file: each batch's frames, padded as in a chunk, written
// with one pwritev per video and made durable with one fdatasync per batch.
class BareFile {
 public:
  explicit BareFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) Die("open " + path_ + ": " + std::strerror(errno));
  }
  ~BareFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  void WriteBatch(const std::vector<std::string>& pool, uint64_t first_video, uint64_t batch,
                  size_t per_video) {
    static const char kZeros[4] = {0, 0, 0, 0};
    for (uint64_t v = first_video; v < first_video + batch; ++v) {
      iov_.clear();
      uint64_t bytes = 0;
      for (std::string_view f : VideoFrames(pool, v, per_video)) {
        iov_.push_back({const_cast<char*>(f.data()), f.size()});
        const uint32_t pad = PadFor(f.size());
        if (pad != 0) iov_.push_back({const_cast<char*>(kZeros), pad});
        bytes += f.size() + pad;
      }
      if (iov_.size() > IOV_MAX) Die("too many frames per video for one pwritev");
      const ssize_t n =
          ::pwritev(fd_, iov_.data(), static_cast<int>(iov_.size()), static_cast<off_t>(offset_));
      if (n < 0 || static_cast<uint64_t>(n) != bytes) Die("pwritev " + path_);
      offset_ += bytes;
    }
    if (::fdatasync(fd_) != 0) Die("fdatasync " + path_);
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::vector<iovec> iov_;
};

// gulpdb and the baseline take turns, `kRounds` rounds of commits/kRounds
// batches each, so that both see the same machine (other load, the disk's
// state); their times are summed per side. gulpdb's time includes closing
// the writer, which makes durable in the chunks what its journal deferred.
constexpr uint64_t kRounds = 10;

Result RunBatchSize(const std::string& dir, const std::vector<std::string>& pool, uint64_t batch,
                    uint64_t commits, size_t per_video, bool bare) {
  Result r;
  r.batch = batch;
  r.commits = commits;
  const std::string ds_dir = dir + "/batch_" + std::to_string(batch);
  RemoveTree(ds_dir);
  std::unique_ptr<Dataset> ds = Dataset::Create(ds_dir);
  std::unique_ptr<Writer> writer = ds->NewWriter();
  std::optional<BareFile> bare_file;
  if (bare) bare_file.emplace(dir + "/bare_" + std::to_string(batch) + ".bin");
  const uint64_t rounds = std::min(commits, kRounds);
  uint64_t v = 0;
  uint64_t bare_v = 0;
  for (uint64_t round = 0; round < rounds; ++round) {
    const uint64_t n = commits * (round + 1) / rounds - commits * round / rounds;
    auto start = Clock::now();
    for (uint64_t c = 0; c < n; ++c) {
      for (uint64_t i = 0; i < batch; ++i, ++v) {
        const std::vector<std::string_view> frames = VideoFrames(pool, v, per_video);
        for (std::string_view f : frames) r.bytes += f.size() + PadFor(f.size());
        writer->Append(VideoId(v), frames, "{\"label\": \"append\"}");
      }
      const auto commit_start = Clock::now();
      writer->Commit();
      r.commit_ms.push_back(SecondsSince(commit_start) * 1e3);
    }
    if (round + 1 == rounds) writer.reset();
    r.gulpdb_seconds += SecondsSince(start);
    if (!bare) continue;
    start = Clock::now();
    for (uint64_t c = 0; c < n; ++c, bare_v += batch) {
      const auto batch_start = Clock::now();
      bare_file->WriteBatch(pool, bare_v, batch, per_video);
      r.bare_batch_ms.push_back(SecondsSince(batch_start) * 1e3);
    }
    r.bare_seconds += SecondsSince(start);
  }
  ds.reset();
  RemoveTree(ds_dir);
  return r;
}

int Run(const std::string& dir, const std::vector<std::string>& pool,
        const std::vector<uint64_t>& batch_sizes, const std::vector<uint64_t>& commits,
        size_t per_video, bool bare, bool smoke) {
  if (pool.size() < per_video) Die("need at least frames-per-video frames");
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) Die("mkdir " + dir);
  std::vector<Json> rows;
  for (size_t i = 0; i < batch_sizes.size(); ++i) {
    const uint64_t batch = batch_sizes[i];
    const uint64_t n = commits[std::min(i, commits.size() - 1)];
    const Result r = RunBatchSize(dir, pool, batch, n, per_video, bare);
    const double videos = static_cast<double>(batch * n);
    Json row;
    row.Integer("batch", static_cast<int64_t>(batch))
        .Integer("commits", static_cast<int64_t>(n))
        .Integer("bytes", static_cast<int64_t>(r.bytes))
        .Number("gulpdb_videos_per_s", videos / r.gulpdb_seconds)
        .Number("gulpdb_mb_per_s", static_cast<double>(r.bytes) / 1e6 / r.gulpdb_seconds)
        .Stats("commit_ms", r.commit_ms);
    if (bare) {
      row.Number("bare_videos_per_s", videos / r.bare_seconds)
          .Number("bare_mb_per_s", static_cast<double>(r.bytes) / 1e6 / r.bare_seconds)
          .Stats("bare_batch_ms", r.bare_batch_ms);
      Log("batch %5llu: %8.1f videos/s (bare %8.1f), commit %.2f ms median",
          static_cast<unsigned long long>(batch), videos / r.gulpdb_seconds,
          videos / r.bare_seconds, Summarize(r.commit_ms).median);
    }
    rows.push_back(row);
  }
  Json json;
  json.String("benchmark", "append")
      .Boolean("smoke", smoke)
      .Integer("frames_per_video", static_cast<int64_t>(per_video))
      .Number("mean_frame_bytes", MeanBytes(pool))
      .Objects("batches", rows);
  json.Print();
  return 0;
}

int Main(int argc, char** argv) {
  Options opt(argc, argv, 1,
              "append_bench --dir D --frames DIR [--batch-sizes 1,10,100,1000] "
              "[--commits 30,20,5,2] [--frames-per-video 16] [--no-bare] | --smoke");
  const bool smoke = opt.Flag("smoke");
  if (smoke) {
    opt.Finish();
    const std::string root = ScratchDir("append_bench_smoke");
    RemoveTree(root);
    std::vector<std::string> pool;
    std::vector<uint8_t> rgb(48 * 32 * 3);
    for (int f = 0; f < 8; ++f) {
      for (size_t i = 0; i < rgb.size(); ++i)
        rgb[i] = static_cast<uint8_t>((i + static_cast<size_t>(f)) % 253);
      pool.push_back(ThreadLocalEncoder().Encode(rgb.data(), 48, 32, 3));
    }
    const int rc = Run(root, pool, {1, 10}, {3, 2}, 4, true, true);
    RemoveTree(root);
    return rc;
  }
  const std::string dir = opt.Required("dir");
  const std::string frames = opt.Required("frames");
  const std::vector<uint64_t> batch_sizes = opt.UintList("batch-sizes", {1, 10, 100, 1000});
  const std::vector<uint64_t> commits = opt.UintList("commits", {30, 20, 5, 2});
  const size_t per_video = opt.Uint("frames-per-video", 16);
  const bool bare = !opt.Flag("no-bare");
  opt.Finish();
  if (batch_sizes.empty() || commits.empty()) opt.Usage("empty list");
  return Run(dir, LoadJpegs(frames), batch_sizes, commits, per_video, bare, false);
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("append_bench");
  try {
    return gulpdb::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
