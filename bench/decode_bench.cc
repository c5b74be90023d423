// Decode throughput: gulpdb's JPEG decoder against a bare TurboJPEG loop, and
// the thread pool against one thread.
//
//   decode_bench [--smoke] [--frames N] [--reps R] [--video PATH] [--json PATH]
//
// Input: N real 640x480 frames from a video (decoded to RGB by ffmpeg, encoded
// with gulpdb's JpegEncoder at quality 90, 4:4:4 — GulpIO2's settings). Without
// ffmpeg or the video, a synthetic gradient + noise image is used instead, and
// the output says so.
//
// Measured, each over R repetitions of decoding all N frames (min/median/max):
//   (a) bare TurboJPEG: tjDecompress2 with the same flags into one reused buffer
//   (b) JpegDecoder on one thread into a caller-provided N×H×W×C batch buffer
//   (c) the same with ThreadPool over all hardware threads
//   (d) the same with plain std::threads, each decoding a fixed share: what the
//       machine's cores deliver without a pool, to tell pool overhead from a
//       host that does not scale (e.g. vCPUs sharing one physical core)
// Targets: (b)/(a) >= 0.95 (the wrapper costs nothing that matters) and
// (c)/(b) >= 1.8 on 2 cores. Ratios are given for the medians and for the best
// repetitions (less sensitive to a noisy host). Timings are reported, never
// asserted.
//
// --smoke: a tiny synthetic run (well under a second) that checks the three
// paths agree; the test suite runs it.
//
// This benchmark includes <turbojpeg.h> for the baseline; it is not part of the
// library.
#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/thread_pool.h"
#include "gulpdb/jpeg.h"

namespace {

constexpr const char* kDefaultVideo =
    "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4";

struct Config {
  bool smoke = false;
  int frames = 64;
  int reps = 15;
  int width = 640;
  int height = 480;
  std::string video = kDefaultVideo;
  std::string json_path;
};

struct Frames {
  std::vector<std::string> jpegs;
  std::string source;  // what the frames were made from
};

struct Stats {
  double min = 0;
  double median = 0;
  double max = 0;
};

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "decode_bench: %s\n", message.c_str());
  std::exit(1);
}

Stats Summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  Stats stats;
  stats.min = values.front();
  stats.max = values.back();
  const size_t mid = values.size() / 2;
  stats.median = values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  return stats;
}

// Single-quotes `text` for /bin/sh.
std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// Decodes up to `count` frames of `video` to width×height RGB with ffmpeg and
// encodes each with JpegEncoder. Returns fewer (possibly no) frames on failure.
std::vector<std::string> FramesFromVideo(const Config& config, int count) {
  std::vector<std::string> jpegs;
  if (std::ifstream(config.video).fail()) return jpegs;
  const std::string command = "ffmpeg -nostdin -loglevel error -i " + ShellQuote(config.video) +
                              " -vf scale=" + std::to_string(config.width) + ":" +
                              std::to_string(config.height) + " -frames:v " +
                              std::to_string(count) + " -f rawvideo -pix_fmt rgb24 - 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return jpegs;
  const size_t frame_bytes =
      static_cast<size_t>(config.width) * static_cast<size_t>(config.height) * 3;
  std::vector<uint8_t> rgb(frame_bytes);
  gulpdb::EncodeOptions options;  // quality 90, 4:4:4
  while (static_cast<int>(jpegs.size()) < count &&
         std::fread(rgb.data(), 1, frame_bytes, pipe) == frame_bytes) {
    jpegs.push_back(
        gulpdb::ThreadLocalEncoder().Encode(rgb.data(), config.width, config.height, 3, options));
  }
  if (pclose(pipe) != 0 && static_cast<int>(jpegs.size()) < count) jpegs.clear();
  return jpegs;
}

// A gradient with noise: compresses like a camera frame rather than a flat one.
std::vector<std::string> SyntheticFrames(const Config& config, int count) {
  std::vector<std::string> jpegs;
  std::mt19937 rng(12345);
  std::vector<uint8_t> rgb(static_cast<size_t>(config.width) * static_cast<size_t>(config.height) *
                           3);
  for (int f = 0; f < count; ++f) {
    size_t k = 0;
    for (int y = 0; y < config.height; ++y) {
      for (int x = 0; x < config.width; ++x) {
        for (int c = 0; c < 3; ++c) {
          const int base = (x * 255 / config.width + y * 255 / config.height + 40 * c + 7 * f) / 2;
          const int noise = static_cast<int>(rng() % 33) - 16;
          rgb[k++] = static_cast<uint8_t>(std::clamp(base + noise, 0, 255));
        }
      }
    }
    jpegs.push_back(
        gulpdb::ThreadLocalEncoder().Encode(rgb.data(), config.width, config.height, 3, {}));
  }
  return jpegs;
}

Frames LoadFrames(const Config& config) {
  Frames frames;
  if (!config.smoke) {
    frames.jpegs = FramesFromVideo(config, config.frames);
    if (static_cast<int>(frames.jpegs.size()) == config.frames) {
      frames.source = config.video;
      return frames;
    }
    std::printf("NOTE: could not read %d frames of %s with ffmpeg; using synthetic frames\n",
                config.frames, config.video.c_str());
  }
  frames.jpegs = SyntheticFrames(config, config.frames);
  frames.source = "synthetic gradient+noise";
  return frames;
}

double Seconds(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

void PrintStats(const char* name, const Stats& fps) {
  std::printf("  %-34s %9.1f %9.1f %9.1f frames/s (min/median/max)\n", name, fps.min, fps.median,
              fps.max);
}

void WriteStatsJson(std::ofstream& out, const char* name, const Stats& fps, bool last) {
  out << "    \"" << name << "\": {\"fps_min\": " << fps.min << ", \"fps_median\": " << fps.median
      << ", \"fps_max\": " << fps.max << "}" << (last ? "\n" : ",\n");
}

Config ParseArgs(int argc, char** argv) {
  Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--smoke") {
      config.smoke = true;
    } else if (arg == "--frames") {
      config.frames = std::atoi(value().c_str());
    } else if (arg == "--reps") {
      config.reps = std::atoi(value().c_str());
    } else if (arg == "--video") {
      config.video = value();
    } else if (arg == "--json") {
      config.json_path = value();
    } else if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: decode_bench [--smoke] [--frames N] [--reps R] [--video PATH] "
          "[--json PATH]\n");
      std::exit(0);
    } else {
      Die("unknown argument " + arg);
    }
  }
  if (config.smoke) {
    config.frames = 6;
    config.reps = 3;
    config.width = 96;
    config.height = 64;
  }
  if (config.frames < 1 || config.reps < 1) Die("--frames and --reps must be >= 1");
  return config;
}

int Run(const Config& config) {
  const Frames frames = LoadFrames(config);
  const size_t n = frames.jpegs.size();
  const gulpdb::DecodeOptions options;  // RGB, fast DCT + fast upsampling, strict
  const gulpdb::ImageShape shape = gulpdb::ThreadLocalDecoder().OutputShape(
      reinterpret_cast<const uint8_t*>(frames.jpegs[0].data()), frames.jpegs[0].size(), options);
  const size_t frame_bytes = shape.bytes();
  size_t jpeg_bytes = 0;
  for (const std::string& jpeg : frames.jpegs) jpeg_bytes += jpeg.size();
  gulpdb::engine::ThreadPool pool;  // all hardware threads

  std::printf(
      "decode_bench: %zu frames of %dx%dx%d from %s, %.1f KiB/frame, %d reps, "
      "%zu threads\n",
      n, shape.width, shape.height, shape.channels, frames.source.c_str(),
      static_cast<double>(jpeg_bytes) / static_cast<double>(n) / 1024.0, config.reps, pool.size());

  // (a) The baseline: the flags gulpdb uses by default, one reused buffer.
  const int flags = TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE | TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
  tjhandle handle = tjInitDecompress();
  if (handle == nullptr) Die("tjInitDecompress failed");
  std::vector<uint8_t> reused(frame_bytes);
  auto bare = [&] {
    for (const std::string& jpeg : frames.jpegs) {
      if (tjDecompress2(handle, reinterpret_cast<const unsigned char*>(jpeg.data()),
                        static_cast<unsigned long>(jpeg.size()), reused.data(), 0, 0, 0, TJPF_RGB,
                        flags) != 0) {
        Die(std::string("tjDecompress2: ") + tjGetErrorStr2(handle));
      }
    }
  };
  // (b) and (c) write into an N×H×W×C batch, touched beforehand so that page
  // faults are not measured.
  std::vector<uint8_t> batch_single(frame_bytes * n, 1);
  std::vector<uint8_t> batch_pool(frame_bytes * n, 2);
  auto decode_one = [&](std::vector<uint8_t>& batch, size_t i) {
    const std::string& jpeg = frames.jpegs[i];
    gulpdb::ThreadLocalDecoder().DecodeInto(reinterpret_cast<const uint8_t*>(jpeg.data()),
                                            jpeg.size(), options, batch.data() + i * frame_bytes,
                                            frame_bytes);
  };
  auto single = [&] {
    for (size_t i = 0; i < n; ++i) decode_one(batch_single, i);
  };
  auto pooled = [&] { pool.ParallelFor(n, [&](size_t i) { decode_one(batch_pool, i); }); };
  std::vector<uint8_t> batch_threads(frame_bytes * n, 3);
  auto threaded = [&] {
    std::vector<std::thread> threads;
    for (size_t t = 0; t < pool.size(); ++t) {
      threads.emplace_back([&, t] {
        for (size_t i = t; i < n; i += pool.size()) decode_one(batch_threads, i);
      });
    }
    for (std::thread& thread : threads) thread.join();
  };

  // Warm up (thread-local decoders, caches), then check the three paths agree.
  bare();
  single();
  pooled();
  threaded();
  if (batch_single != batch_pool) Die("thread pool output differs from single-thread output");
  if (batch_single != batch_threads) Die("std::thread output differs from single-thread output");
  if (std::memcmp(reused.data(), batch_single.data() + (n - 1) * frame_bytes, frame_bytes) != 0) {
    Die("JpegDecoder output differs from bare TurboJPEG output");
  }

  // Interleaved repetitions, so that drift in machine load hits all three alike.
  std::vector<double> fps_bare, fps_single, fps_pool, fps_threads;
  const double frames_per_pass = static_cast<double>(n);
  for (int r = 0; r < config.reps; ++r) {
    fps_bare.push_back(frames_per_pass / Seconds(bare));
    fps_single.push_back(frames_per_pass / Seconds(single));
    fps_pool.push_back(frames_per_pass / Seconds(pooled));
    fps_threads.push_back(frames_per_pass / Seconds(threaded));
  }
  tjDestroy(handle);

  const Stats a = Summarize(fps_bare);
  const Stats b = Summarize(fps_single);
  const Stats c = Summarize(fps_pool);
  const Stats d = Summarize(fps_threads);
  const double wrapper_ratio = b.median / a.median;
  const double pool_ratio = c.median / b.median;
  const double threads_ratio = d.median / b.median;
  PrintStats("(a) bare TurboJPEG tjDecompress2", a);
  PrintStats("(b) JpegDecoder, 1 thread, batch", b);
  PrintStats("(c) ThreadPool, all threads, batch", c);
  PrintStats("(d) plain std::threads, batch", d);
  std::printf("  (b)/(a) = %.3f median, %.3f best  (target >= 0.95: %s)\n", wrapper_ratio,
              b.max / a.max, wrapper_ratio >= 0.95 ? "met" : "NOT met");
  std::printf("  (c)/(b) = %.3f median, %.3f best  (target >= 1.8 on 2 cores: %s)\n", pool_ratio,
              c.max / b.max, pool_ratio >= 1.8 ? "met" : "NOT met");
  std::printf("  (d)/(b) = %.3f median, %.3f best  (what the host's threads give)\n", threads_ratio,
              d.max / b.max);
  std::printf("  (c)/(d) = %.3f median, %.3f best  (pool against plain threads)\n",
              c.median / d.median, c.max / d.max);
  if (config.smoke) std::printf("  (smoke run: timings are not meaningful)\n");

  if (!config.json_path.empty()) {
    std::ofstream out(config.json_path);
    if (!out) Die("cannot write " + config.json_path);
    out << "{\n  \"benchmark\": \"decode_bench\",\n  \"smoke\": "
        << (config.smoke ? "true" : "false") << ",\n  \"source\": \""
        << (frames.source == config.video ? "video" : "synthetic") << "\",\n  \"frames\": " << n
        << ",\n  \"height\": " << shape.height << ",\n  \"width\": " << shape.width
        << ",\n  \"channels\": " << shape.channels << ",\n  \"mean_jpeg_bytes\": " << jpeg_bytes / n
        << ",\n  \"reps\": " << config.reps << ",\n  \"threads\": " << pool.size()
        << ",\n  \"results\": {\n";
    WriteStatsJson(out, "bare_turbojpeg", a, false);
    WriteStatsJson(out, "jpeg_decoder_single_thread", b, false);
    WriteStatsJson(out, "thread_pool", c, false);
    WriteStatsJson(out, "plain_threads", d, true);
    out << "  },\n  \"ratios\": {\"decoder_over_bare\": " << wrapper_ratio
        << ", \"pool_over_single\": " << pool_ratio
        << ", \"plain_threads_over_single\": " << threads_ratio
        << ", \"decoder_over_bare_best\": " << b.max / a.max
        << ", \"pool_over_single_best\": " << c.max / b.max << "},\n"
        << "  \"targets\": {\"decoder_over_bare\": 0.95, \"pool_over_single\": 1.8}\n}\n";
    if (!out) Die("cannot write " + config.json_path);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(ParseArgs(argc, argv));
  } catch (const std::exception& e) {
    Die(e.what());
  }
}
