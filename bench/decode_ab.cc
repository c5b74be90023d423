// Decoding through the dataset against a bare TurboJPEG loop, interleaved
// unit by unit, so that load from other processes hits both alike.
//
//   decode_ab --dir D --clips FILE [--rounds R] [--batch B] [--only METHOD]
//   decode_ab --smoke
//
// decode_bench times whole passes over every clip, one method after another;
// on a shared machine a burst of other load during one pass moves its ratio
// by more than the gap it should show (ratios from 0.78 to 1.57 in one hour).
// Here the unit of work is small and every method does each unit in turn,
// in a rotating order, round after round:
//   1 thread  unit = one clip (--clips FILE lines, "id<TAB>start<TAB>count")
//             bare_1t         pread of the clip's bytes and tjDecompress2 of
//                             each frame into one reused buffer (offsets and
//                             descriptors resolved beforehand), with the
//                             flags gulpdb uses by default
//             read_frames_1t  Dataset::ReadFrames, decode_threads = 1 (every
//                             frame's CRC-32C checked, the default)
//             read_frames_1t_unverified  the same, opened with
//                             verify_checksums = false (what the check costs)
//   2 threads unit = B clips
//             bare_2t         the same bare loop on two threads (the caller
//                             and one waiting thread), each every other clip
//             read_batch_2t   Dataset::ReadBatch of the B clips,
//                             decode_threads = 2
//             read_frames_2callers  two threads calling ReadFrames on a
//                             decode_threads = 1 dataset, each every other clip
// A method's time is the sum over units of the median of its rounds for that
// unit; its CPU time likewise (the calling thread's CPU time at 1 thread, the
// process's at 2). The ratio is the bare loop's time over the method's, the
// target >= 0.95 (bench/README.md, "Decoding"). Before timing, the first
// clip's pixels from gulpdb and from the bare loop are compared. --only runs
// one method R times over its units, untimed, for an instruction count
// (valgrind --tool=callgrind; the count of two R's differ by the units' cost).
//
// The baseline (bench/bare_decoder.h) calls TurboJPEG directly; the library's own
// code reaches TurboJPEG only through engine/codec/jpeg_codec.cc.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bare_decoder.h"
#include "bench/bench_util.h"
#include "gulpdb/dataset.h"
#include "gulpdb/jpeg.h"

namespace gulpdb::bench {
namespace {

constexpr double kTarget = 0.95;

double ThreadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double LoadAverage() {
  double load[3] = {0, 0, 0};
  return ::getloadavg(load, 3) > 0 ? load[0] : -1;
}

// A second thread that waits for work, so that 2-thread units pay a hand-off,
// not a thread start, as the dataset's decode pool does.
class Helper {
 public:
  Helper() : thread_([this] { Main(); }) {}
  ~Helper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;

  // Runs fn(1) on the helper and fn(0) on the caller; returns when both are done.
  void Both(const std::function<void(int)>& fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      busy_ = true;
    }
    cv_.notify_all();
    fn(0);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !busy_; });
  }

 private:
  void Main() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || busy_; });
      if (stop_) return;
      const std::function<void(int)>* fn = fn_;
      lock.unlock();
      (*fn)(1);
      lock.lock();
      busy_ = false;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ = false;
  bool stop_ = false;
  const std::function<void(int)>* fn_ = nullptr;
  std::thread thread_;  // last: starts after the members it uses
};

struct Method {
  std::string name;
  std::function<size_t(size_t unit)> run;      // decoded bytes
  std::vector<std::vector<double>> wall, cpu;  // [unit][round]
  double wall_total = 0, cpu_total = 0;        // sums of the per-unit medians
};

// Rounds over `units` units, every method once per unit in a rotating order;
// fills each method's sums of medians. `thread_cpu`: the caller's CPU time
// (1 thread), else the process's.
void Interleave(std::vector<Method>* methods, size_t units, uint64_t rounds, bool thread_cpu) {
  for (Method& m : *methods) {
    m.wall.assign(units, {});
    m.cpu.assign(units, {});
    for (size_t u = 0; u < units; ++u) m.run(u);  // warm-up
  }
  const size_t n = methods->size();
  for (uint64_t r = 0; r < rounds; ++r) {
    for (size_t u = 0; u < units; ++u) {
      for (size_t k = 0; k < n; ++k) {
        Method& m = (*methods)[(k + u + r) % n];
        const double cpu = thread_cpu ? ThreadCpuSeconds() : ProcessCpuSeconds();
        const auto start = Clock::now();
        m.run(u);
        m.wall[u].push_back(SecondsSince(start));
        m.cpu[u].push_back((thread_cpu ? ThreadCpuSeconds() : ProcessCpuSeconds()) - cpu);
      }
    }
  }
  for (Method& m : *methods) {
    m.wall_total = m.cpu_total = 0;
    for (size_t u = 0; u < units; ++u) {
      m.wall_total += Summarize(m.wall[u]).median;
      m.cpu_total += Summarize(m.cpu[u]).median;
    }
  }
}

// The JSON object of one thread count; logs each method against the bare loop
// (methods->front()).
Json Report(const char* label, const std::vector<Method>& methods, size_t clips, double load_start,
            double load_end) {
  const Method& bare = methods.front();
  Json j;
  j.Number("load_start", load_start).Number("load_end", load_end);
  Json all;
  for (const Method& m : methods) {
    const double ratio = bare.wall_total / m.wall_total;
    const double cpu_ratio = bare.cpu_total / m.cpu_total;
    Json one;
    one.Number("clips_per_s", static_cast<double>(clips) / m.wall_total)
        .Number("clips_per_cpu_s", static_cast<double>(clips) / m.cpu_total)
        .Number("ratio", ratio)
        .Number("cpu_ratio", cpu_ratio);
    all.Object(m.name, one);
    if (&m == &bare) {
      Log("%s: %-22s %7.1f clips/s, %7.1f per CPU-second (load %.2f -> %.2f)", label,
          m.name.c_str(), static_cast<double>(clips) / m.wall_total,
          static_cast<double>(clips) / m.cpu_total, load_start, load_end);
    } else {
      Log("%s: %-22s %7.1f clips/s, %.3fx the bare loop (per CPU-second %.3fx); target >= %.2fx: "
          "%s",
          label, m.name.c_str(), static_cast<double>(clips) / m.wall_total, ratio, cpu_ratio,
          kTarget, ratio >= kTarget ? "met" : "NOT met");
    }
  }
  j.Object("methods", all);
  return j;
}

int Run(const std::string& dir, const std::string& clips_path, uint64_t rounds, size_t batch,
        bool smoke, const std::string& only = "") {
  const std::vector<Clip> clips = ReadClips(clips_path);
  if (clips.size() < 2) Die("need at least 2 clips");
  OpenOptions one, two;
  one.decode_threads = 1;
  two.decode_threads = 2;
  std::unique_ptr<Dataset> ds1 = Dataset::Open(dir, one);
  std::unique_ptr<Dataset> ds2 = Dataset::Open(dir, two);
  OpenOptions one_unverified = one;
  one_unverified.verify_checksums = false;
  std::unique_ptr<Dataset> ds1u = Dataset::Open(dir, one_unverified);
  const std::vector<ClipExtent> extents = ResolveClips(*ds1, clips);
  std::map<std::string, int> fd_of;
  std::vector<int> clip_fd;
  size_t max_clip = 0;
  for (const ClipExtent& e : extents) {
    auto it = fd_of.find(e.chunk_path);
    if (it == fd_of.end()) {
      const int fd = ::open(e.chunk_path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) Die("open " + e.chunk_path + ": " + std::strerror(errno));
      it = fd_of.emplace(e.chunk_path, fd).first;
    }
    clip_fd.push_back(it->second);
    max_clip = std::max<size_t>(max_clip, e.size);
  }
  std::vector<Selection> selections;
  std::vector<FrameRequest> requests;
  for (const Clip& c : clips) {
    selections.push_back(Selection::Slice(c.start, int64_t{c.start} + c.count));
    requests.push_back(FrameRequest{c.id, selections.back()});
  }
  const DecodedFrames first = ds1->ReadFrames(clips[0].id, selections[0]);
  size_t max_pixels = 0;
  for (const Clip& c : clips) {
    max_pixels = std::max<size_t>(max_pixels, c.count * first.shape(0).bytes());
  }
  max_pixels *= 2;  // room for frames of other sizes; the decoder checks
  BareDecoder bare0(max_clip, max_pixels), bare1(max_clip, max_pixels);
  bare0.DecodeClip(clip_fd[0], extents[0]);
  if (std::memcmp(bare0.pixels(), first.data(0), first.byte_size()) != 0) {
    Die("gulpdb's pixels differ from bare TurboJPEG's for clip 0");
  }
  Helper helper;
  const double load_before = LoadAverage();

  // 1 thread: one clip per unit.
  std::vector<Method> t1 = {
      {"bare_1t", [&](size_t i) { return bare0.DecodeClip(clip_fd[i], extents[i]); }, {}, {}},
      {"read_frames_1t",
       [&](size_t i) { return ds1->ReadFrames(clips[i].id, selections[i]).byte_size(); },
       {},
       {}},
      {"read_frames_1t_unverified",
       [&](size_t i) { return ds1u->ReadFrames(clips[i].id, selections[i]).byte_size(); },
       {},
       {}},
  };

  // 2 threads: `batch` clips per unit.
  batch = std::min(batch, clips.size());
  const size_t units = clips.size() / batch;
  const auto on_two = [&](size_t u, const std::function<size_t(size_t clip)>& one_clip) {
    size_t bytes[2] = {0, 0};
    helper.Both([&](int t) {
      for (size_t i = u * batch + static_cast<size_t>(t); i < (u + 1) * batch; i += 2) {
        bytes[t] += one_clip(i);
      }
    });
    return bytes[0] + bytes[1];
  };
  std::vector<Method> t2 = {
      {"bare_2t",
       [&](size_t u) {
         return on_two(u, [&](size_t i) {
           return (i % 2 == 0 ? bare0 : bare1).DecodeClip(clip_fd[i], extents[i]);
         });
       },
       {},
       {}},
      {"read_batch_2t",
       [&](size_t u) {
         const std::vector<FrameRequest> part(
             requests.begin() + static_cast<std::ptrdiff_t>(u * batch),
             requests.begin() + static_cast<std::ptrdiff_t>((u + 1) * batch));
         size_t total = 0;
         for (const DecodedFrames& d : ds2->ReadBatch(part)) total += d.byte_size();
         return total;
       },
       {},
       {}},
      {"read_frames_2callers",
       [&](size_t u) {
         return on_two(
             u, [&](size_t i) { return ds1->ReadFrames(clips[i].id, selections[i]).byte_size(); });
       },
       {},
       {}},
  };
  if (!only.empty()) {
    for (const auto& [methods, count] : {std::pair{&t1, clips.size()}, std::pair{&t2, units}}) {
      for (Method& m : *methods) {
        if (m.name != only) continue;
        for (uint64_t r = 0; r < rounds; ++r) {
          for (size_t u = 0; u < count; ++u) m.run(u);
        }
        return 0;
      }
    }
    Die("no method " + only);
  }
  for (std::vector<Method>* methods : {&t1, &t2}) {
    const size_t expected = (*methods)[0].run(0);
    for (Method& m : *methods) {
      if (m.run(0) != expected) Die(m.name + " decoded a different number of bytes");
    }
  }
  const double load1 = LoadAverage();
  Interleave(&t1, clips.size(), rounds, true);
  const Json j1 = Report("1 thread", t1, clips.size(), load1, LoadAverage());
  const double load2 = LoadAverage();
  Interleave(&t2, units, rounds, false);
  const Json j2 = Report("2 threads", t2, units * batch, load2, LoadAverage());
  for (const auto& [path, fd] : fd_of) ::close(fd);

  Json json;
  json.String("benchmark", "decode_ab")
      .Boolean("smoke", smoke)
      .Integer("clips", static_cast<int64_t>(clips.size()))
      .Integer("frames_per_clip", clips.front().count)
      .Integer("width", first.shape(0).width)
      .Integer("height", first.shape(0).height)
      .Integer("rounds", static_cast<int64_t>(rounds))
      .Integer("batch", static_cast<int64_t>(batch))
      .Number("target_ratio", kTarget)
      .Number("load_start", load_before)
      .Object("1", j1)
      .Object("2", j2);
  json.Print();
  return 0;
}

// A few synthetic clips in a temporary dataset: checks that every path runs
// and agrees.
int RunSmoke() {
  return RunOnSmokeDecodeData(
      "decode_ab_smoke",
      [](const std::string& dir, const std::string& clips) { return Run(dir, clips, 1, 2, true); });
}

int Main(int argc, char** argv) {
  Options opt(argc, argv, 1, "decode_ab --dir D --clips FILE [--rounds R] [--batch B] | --smoke");
  if (opt.Flag("smoke")) {
    opt.Finish();
    return RunSmoke();
  }
  const std::string dir = opt.Required("dir");
  const std::string clips = opt.Required("clips");
  const uint64_t rounds = std::max<uint64_t>(1, opt.Uint("rounds", 7));
  const size_t batch = std::max<size_t>(2, opt.Uint("batch", 8));
  const std::string only = opt.Str("only", "");
  opt.Finish();
  return Run(dir, clips, rounds, batch, false, only);
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("decode_ab");
  try {
    return gulpdb::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
