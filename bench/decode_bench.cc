// Decoded clips per second through the dataset (Dataset::ReadFrames and
// ReadBatch, OpenOptions::decode_threads 1 and 2), against a bare TurboJPEG
// loop over the same clips measured in the same run.
//
//   decode_bench --dir D --clips FILE [--reps R] [--batch B]
//   decode_bench --smoke
//
// Clips come from FILE ("id<TAB>start<TAB>count" lines); page cache warm.
// Methods, each a pass over every clip:
//   bare_1t              pread of the clip's bytes (offsets resolved beforehand,
//                        descriptors opened beforehand) and tjDecompress2 of each
//                        frame into one reused N×H×W×3 buffer, with the flags
//                        gulpdb uses by default (fast DCT, fast upsampling)
//   bare_1t_alloc        bare_1t decoding into a buffer malloc'ed per clip (as any
//                        API that returns a new array per read must), to show
//                        what the page faults of fresh memory cost
//   bare_2t              the same on two threads, each taking every other clip
//   read_frames_1t       ReadFrames(id, start:start+count), decode_threads = 1
//   read_frames_1t_accurate  the same with DctMethod::kAccurate (the IDCT and
//                        upsampling Pillow uses), for a like-for-like comparison
//   read_frames_2t       the same with decode_threads = 2 (a clip's frames in parallel)
//   read_batch_2t        ReadBatch of B clips at a time, decode_threads = 2
//   read_frames_2callers two threads calling ReadFrames on a decode_threads = 1
//                        dataset, each taking every other clip (DataLoader-style)
// Before timing, the first clip's pixels from gulpdb and from bare TurboJPEG
// are compared. Repetitions are interleaved across methods. Minor page faults
// per clip (getrusage) are reported for each method, and throughput per
// CPU-second (user + system time of the process), which other load on the
// machine disturbs much less than wall time.
//
// Whole passes one after another move with the machine's load; decode_ab
// interleaves gulpdb and the bare loop clip by clip and judges the target.
//
// The baseline (bench/bare_decoder.h) calls TurboJPEG directly; the library's own
// code reaches TurboJPEG only through engine/codec/jpeg_codec.cc.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bare_decoder.h"
#include "bench/bench_util.h"
#include "gulpdb/dataset.h"
#include "gulpdb/jpeg.h"

namespace gulpdb::bench {
namespace {

struct Method {
  Method(std::string name_in, int threads_in, std::function<size_t()> pass_in)
      : name(std::move(name_in)), threads(threads_in), pass(std::move(pass_in)) {}

  std::string name;
  int threads = 1;
  std::function<size_t()> pass;  // decoded bytes
  std::vector<double> seconds;
  std::vector<double> minor_faults;  // per pass
  std::vector<double> cpu_seconds;   // per pass, all threads
};

uint64_t MinorFaults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_minflt);
}

// Runs fn(t) on `threads` threads (the caller is thread 0) and waits for them.
void OnThreads(int threads, const std::function<void(int)>& fn) {
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t) others.emplace_back(fn, t);
  fn(0);
  for (std::thread& th : others) th.join();
}

int Run(const std::string& dir, const std::string& clips_path, uint64_t reps, size_t batch,
        bool smoke) {
  const std::vector<Clip> clips = ReadClips(clips_path);
  OpenOptions one, two;
  one.decode_threads = 1;
  two.decode_threads = 2;
  std::unique_ptr<Dataset> ds1 = Dataset::Open(dir, one);
  std::unique_ptr<Dataset> ds2 = Dataset::Open(dir, two);
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
  // Decoded size of the largest clip, from the first pass of gulpdb itself.
  const DecodedFrames first = ds1->ReadFrames(
      clips[0].id, Selection::Slice(clips[0].start, int64_t{clips[0].start} + clips[0].count));
  const ImageShape shape = first.shape(0);
  size_t max_pixels = 0;
  for (const Clip& c : clips) max_pixels = std::max<size_t>(max_pixels, c.count * shape.bytes());
  max_pixels *= 2;  // room for frames of other sizes; the decoder checks
  std::vector<std::unique_ptr<BareDecoder>> bare;
  for (int t = 0; t < 2; ++t) bare.push_back(std::make_unique<BareDecoder>(max_clip, max_pixels));
  bare[0]->DecodeClip(clip_fd[0], extents[0]);
  if (std::memcmp(bare[0]->pixels(), first.data(0), first.byte_size()) != 0) {
    Die("gulpdb's pixels differ from bare TurboJPEG's for clip 0");
  }

  std::vector<Selection> selections;
  std::vector<FrameRequest> requests;
  for (const Clip& c : clips) {
    selections.push_back(Selection::Slice(c.start, int64_t{c.start} + c.count));
    requests.push_back(FrameRequest{c.id, selections.back()});
  }
  const auto bare_pass = [&](int threads) {
    std::vector<size_t> bytes(static_cast<size_t>(threads), 0);
    OnThreads(threads, [&](int t) {
      for (size_t i = static_cast<size_t>(t); i < extents.size();
           i += static_cast<size_t>(threads)) {
        bytes[static_cast<size_t>(t)] +=
            bare[static_cast<size_t>(t)]->DecodeClip(clip_fd[i], extents[i]);
      }
    });
    size_t total = 0;
    for (size_t b : bytes) total += b;
    return total;
  };
  DecodeOptions accurate;
  accurate.dct = DctMethod::kAccurate;
  const auto frames_pass = [&](const Dataset& ds, int callers, const DecodeOptions& options = {}) {
    std::vector<size_t> bytes(static_cast<size_t>(callers), 0);
    OnThreads(callers, [&](int t) {
      for (size_t i = static_cast<size_t>(t); i < clips.size(); i += static_cast<size_t>(callers)) {
        bytes[static_cast<size_t>(t)] +=
            ds.ReadFrames(clips[i].id, selections[i], options).byte_size();
      }
    });
    size_t total = 0;
    for (size_t b : bytes) total += b;
    return total;
  };
  std::vector<Method> methods = {
      {"bare_1t", 1, [&] { return bare_pass(1); }},
      {"bare_1t_alloc", 1,
       [&] {
         size_t total = 0;
         for (size_t i = 0; i < extents.size(); ++i) {
           const size_t size = extents[i].frames.size() * shape.bytes();
           std::unique_ptr<uint8_t, void (*)(void*)> out(static_cast<uint8_t*>(std::malloc(size)),
                                                         std::free);
           total += bare[0]->DecodeClip(clip_fd[i], extents[i], out.get(), size);
         }
         return total;
       }},
      {"read_frames_1t", 1, [&] { return frames_pass(*ds1, 1); }},
      {"read_frames_1t_accurate", 1, [&] { return frames_pass(*ds1, 1, accurate); }},
      {"bare_2t", 2, [&] { return bare_pass(2); }},
      {"read_frames_2t", 2, [&] { return frames_pass(*ds2, 1); }},
      {"read_batch_2t", 2,
       [&] {
         size_t total = 0;
         for (size_t i = 0; i < requests.size(); i += batch) {
           const std::vector<FrameRequest> part(
               requests.begin() + static_cast<std::ptrdiff_t>(i),
               requests.begin() +
                   static_cast<std::ptrdiff_t>(std::min(i + batch, requests.size())));
           for (const DecodedFrames& d : ds2->ReadBatch(part)) total += d.byte_size();
         }
         return total;
       }},
      {"read_frames_2callers", 2, [&] { return frames_pass(*ds1, 2); }},
  };
  size_t expected = 0;
  for (Method& m : methods) {
    const size_t bytes = m.pass();  // warm-up, and every method decodes the same pixels
    if (expected == 0) expected = bytes;
    if (bytes != expected) Die(m.name + " decoded a different number of bytes");
  }
  for (uint64_t r = 0; r < reps; ++r) {
    for (Method& m : methods) {
      const uint64_t faults = MinorFaults();
      const double cpu = ProcessCpuSeconds();
      const auto start = Clock::now();
      m.pass();
      m.seconds.push_back(SecondsSince(start));
      m.cpu_seconds.push_back(ProcessCpuSeconds() - cpu);
      m.minor_faults.push_back(static_cast<double>(MinorFaults() - faults));
    }
  }
  for (const auto& [path, fd] : fd_of) ::close(fd);

  uint64_t frames = 0;
  for (const Clip& c : clips) frames += c.count;
  Json results;
  for (const Method& m : methods) {
    std::vector<double> clips_per_s, frames_per_s, clips_per_cpu_s;
    for (double s : m.seconds) {
      clips_per_s.push_back(static_cast<double>(clips.size()) / s);
      frames_per_s.push_back(static_cast<double>(frames) / s);
    }
    for (double s : m.cpu_seconds) clips_per_cpu_s.push_back(static_cast<double>(clips.size()) / s);
    Json j;
    j.Integer("threads", m.threads)
        .Stats("clips_per_s", clips_per_s)
        .Stats("frames_per_s", frames_per_s)
        .Stats("clips_per_cpu_s", clips_per_cpu_s)
        .Number("minor_faults_per_clip",
                Summarize(m.minor_faults).median / static_cast<double>(clips.size()));
    results.Object(m.name, j);
    const Summary s = Summarize(clips_per_s);
    Log("%-24s %8.1f clips/s (min %.1f, max %.1f), %.1f per CPU-second, %.0f minor faults per "
        "clip",
        m.name.c_str(), s.median, s.min, s.max, Summarize(clips_per_cpu_s).median,
        Summarize(m.minor_faults).median / static_cast<double>(clips.size()));
  }
  uint64_t jpeg_bytes = 0;
  for (const ClipExtent& e : extents) jpeg_bytes += e.jpeg_bytes;
  Json json;
  json.String("benchmark", "decode")
      .Boolean("smoke", smoke)
      .Integer("clips", static_cast<int64_t>(clips.size()))
      .Integer("frames_per_clip", clips.front().count)
      .Integer("width", shape.width)
      .Integer("height", shape.height)
      .Integer("channels", shape.channels)
      .Number("mean_jpeg_bytes", static_cast<double>(jpeg_bytes) / static_cast<double>(frames))
      .Integer("batch", static_cast<int64_t>(batch))
      .Integer("hardware_threads", std::thread::hardware_concurrency())
      .Object("methods", results);
  json.Print();
  return 0;
}

// A few synthetic clips in a temporary dataset: checks that every path runs
// and agrees.
int RunSmoke() {
  return RunOnSmokeDecodeData(
      "decode_bench_smoke",
      [](const std::string& dir, const std::string& clips) { return Run(dir, clips, 1, 2, true); });
}

int Main(int argc, char** argv) {
  Options opt(argc, argv, 1, "decode_bench --dir D --clips FILE [--reps R] [--batch B] | --smoke");
  if (opt.Flag("smoke")) {
    opt.Finish();
    return RunSmoke();
  }
  const std::string dir = opt.Required("dir");
  const std::string clips = opt.Required("clips");
  const uint64_t reps = std::max<uint64_t>(1, opt.Uint("reps", 5));
  const size_t batch = std::max<size_t>(1, opt.Uint("batch", 8));
  opt.Finish();
  return Run(dir, clips, reps, batch, false);
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("decode_bench");
  try {
    return gulpdb::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
