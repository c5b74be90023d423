// Resampling filters for fixed-size decoding: the engine's bilinear filter
// (engine/codec/resample.h) against libswscale, for speed and quality. The numbers
// in engine/codec/resample.h's opening comment come from this program.
//
//   resize_bench [--smoke] [--frames N] [--rounds R] [--json PATH]
//
// Frames: N frames (default 20; every 5th, or consecutive ones when the video
// is too short for that) of imageio's realshort.mp4
// (320x240) and cockatoo.mp4 (1280x720), decoded by ffmpeg at their own size
// and encoded with gulpdb's encoder (quality 90, 4:2:0, as ffmpeg-extracted
// datasets usually are); without ffmpeg or the videos, synthetic frames of the
// same sizes (the output says which). Cases: 320x240 -> 112x112,
// 1280x720 -> 224x224 and 1280x720 -> 112x112.
//
// Two measurements per case and filter, each the best of R rounds (default 9)
// of CPU time per frame on one thread (other load on the machine disturbs CPU
// time less than wall time):
//   filter   the whole full-size decode resized to the output (stretched):
//            the filter alone.
//   decode   what fixed-size decoding does (short edge + centre crop,
//            PlanFrameGeometry): the DCT-scaled decode, then the filter. For
//            the bilinear filter only the kept window is computed; swscale
//            scales the whole frame and the window is copied out. Timed for
//            the resampling alone and for decode + resampling.
// Quality: mean and max absolute difference (0-255, every channel of every
// pixel) against an exact area average (box filter, double precision) of the
// full-size decode over the same output pixels.
//
// swscale runs with SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP |
// SWS_ACCURATE_RND (faster and more accurate than its defaults on RGB24), its
// context cached per size as sws_getCachedContext does.
//
// --smoke: small synthetic frames, one round; checks that every filter runs
// and that the bilinear window equals the same window cut from a full resize.
#include <time.h>

extern "C" {
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "engine/codec/resample.h"
#include "gulpdb/jpeg.h"

namespace {

using gulpdb::DecodeOptions;
using gulpdb::FrameGeometry;
using gulpdb::ImageShape;
using gulpdb::bench::Json;
using gulpdb::bench::Log;

const char* const kImageioDir = "/usr/lib/python3/dist-packages/imageio/resources/images/";

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> px;  // RGB, plus slack: swscale's SIMD may read past the end
  const uint8_t* data() const { return px.data(); }
};

Image Decode(const std::string& jpeg, int denom) {
  DecodeOptions o;
  o.format = gulpdb::PixelFormat::kRGB;
  o.scale_denom = denom;
  ImageShape shape;
  Image im;
  im.px = gulpdb::ThreadLocalDecoder().Decode(reinterpret_cast<const uint8_t*>(jpeg.data()),
                                              jpeg.size(), o, &shape);
  im.px.resize(im.px.size() + 64);
  im.width = shape.width;
  im.height = shape.height;
  return im;
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Every `step`-th frame of `video`, `count` of them, as JPEG (quality 90, 4:2:0).
std::vector<std::string> VideoJpegs(const std::string& video, int width, int height, int count,
                                    int step) {
  std::vector<std::string> jpegs;
  const std::string command = "ffmpeg -nostdin -loglevel error -i " + ShellQuote(video) +
                              " -vf 'select=not(mod(n\\," + std::to_string(step) + "))' -vsync 0" +
                              " -frames:v " + std::to_string(count) +
                              " -f rawvideo -pix_fmt rgb24 - 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return jpegs;
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  gulpdb::EncodeOptions e;
  e.subsampling = gulpdb::Subsampling::k420;
  while (static_cast<int>(jpegs.size()) < count &&
         std::fread(rgb.data(), 1, rgb.size(), pipe) == rgb.size()) {
    jpegs.push_back(gulpdb::ThreadLocalEncoder().Encode(rgb.data(), width, height, 3, e));
  }
  ::pclose(pipe);
  return jpegs;
}

std::vector<std::string> SyntheticJpegs(int width, int height, int count) {
  std::vector<std::string> jpegs;
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  uint32_t state = 1;
  for (int f = 0; f < count; ++f) {
    size_t i = 0;
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        for (int c = 0; c < 3; ++c) {
          state = state * 1664525u + 1013904223u;
          const int stripes = ((x + 2 * y + 3 * f + 5 * c) / 4) % 2 == 0 ? 70 : 0;
          rgb[i++] = static_cast<uint8_t>(stripes + (x + y) % 120 + static_cast<int>(state >> 28));
        }
      }
    }
    gulpdb::EncodeOptions e;
    e.subsampling = gulpdb::Subsampling::k420;
    jpegs.push_back(gulpdb::ThreadLocalEncoder().Encode(rgb.data(), width, height, 3, e));
  }
  return jpegs;
}

// The exact area average of `src` resized to scaled_w x scaled_h, window
// (wx, wy, out_w, out_h) of it, rounded to the nearest level.
std::vector<uint8_t> AreaReference(const Image& src, int scaled_w, int scaled_h, int wx, int wy,
                                   int out_w, int out_h) {
  std::vector<uint8_t> out(static_cast<size_t>(out_w) * static_cast<size_t>(out_h) * 3);
  const double rx = static_cast<double>(src.width) / scaled_w;
  const double ry = static_cast<double>(src.height) / scaled_h;
  size_t o = 0;
  for (int y = 0; y < out_h; ++y) {
    const double y0 = (y + wy) * ry, y1 = y0 + ry;
    for (int x = 0; x < out_w; ++x) {
      const double x0 = (x + wx) * rx, x1 = x0 + rx;
      double acc[3] = {0, 0, 0};
      for (int sy = static_cast<int>(y0);
           sy < std::min(src.height, static_cast<int>(std::ceil(y1))); ++sy) {
        const double wy_ = std::min(y1, sy + 1.0) - std::max(y0, static_cast<double>(sy));
        for (int sx = static_cast<int>(x0);
             sx < std::min(src.width, static_cast<int>(std::ceil(x1))); ++sx) {
          const double w = wy_ * (std::min(x1, sx + 1.0) - std::max(x0, static_cast<double>(sx)));
          const uint8_t* p = &src.px[(static_cast<size_t>(sy) * static_cast<size_t>(src.width) +
                                      static_cast<size_t>(sx)) *
                                     3];
          for (int c = 0; c < 3; ++c) acc[c] += w * p[c];
        }
      }
      for (double a : acc) {
        out[o++] = static_cast<uint8_t>(std::clamp(std::lround(a / (rx * ry)), 0L, 255L));
      }
    }
  }
  return out;
}

struct Filter {
  std::string name;
  // Resizes src to scaled_w x scaled_h and writes the window (wx, wy, out_w, out_h) to out.
  std::function<void(const Image& src, int scaled_w, int scaled_h, int wx, int wy, int out_w,
                     int out_h, uint8_t* out)>
      run;
};

Filter Bilinear() {
  return {"bilinear (engine)",
          [](const Image& s, int sw, int sh, int wx, int wy, int ow, int oh, uint8_t* out) {
            gulpdb::engine::ResizeBilinearWindow(s.data(), s.width, s.height, 3, sw, sh, wx, wy, ow,
                                                 oh, out, static_cast<size_t>(ow) * 3);
          }};
}

Filter Swscale(const std::string& name, int flags) {
  return {name,
          [flags](const Image& s, int sw, int sh, int wx, int wy, int ow, int oh, uint8_t* out) {
            thread_local SwsContext* context = nullptr;
            thread_local std::vector<uint8_t> scaled;
            context = sws_getCachedContext(context, s.width, s.height, AV_PIX_FMT_RGB24, sw, sh,
                                           AV_PIX_FMT_RGB24, flags, nullptr, nullptr, nullptr);
            if (context == nullptr) gulpdb::bench::Die("sws_getCachedContext failed");
            const bool whole = sw == ow && sh == oh;
            scaled.resize(static_cast<size_t>(sw) * static_cast<size_t>(sh) * 3 + 64);
            const uint8_t* src[4] = {s.data(), nullptr, nullptr, nullptr};
            const int src_stride[4] = {s.width * 3, 0, 0, 0};
            uint8_t* dst[4] = {whole ? out : scaled.data(), nullptr, nullptr, nullptr};
            const int dst_stride[4] = {sw * 3, 0, 0, 0};
            sws_scale(context, src, src_stride, 0, s.height, dst, dst_stride);
            if (whole) return;
            for (int y = 0; y < oh; ++y) {
              std::memcpy(out + static_cast<size_t>(y) * static_cast<size_t>(ow) * 3,
                          scaled.data() + (static_cast<size_t>(y + wy) * static_cast<size_t>(sw) +
                                           static_cast<size_t>(wx)) *
                                              3,
                          static_cast<size_t>(ow) * 3);
            }
          }};
}

struct Quality {
  double mean = 0;
  int max = 0;
};

Quality Compare(const std::vector<std::vector<uint8_t>>& got,
                const std::vector<std::vector<uint8_t>>& want) {
  double total = 0;
  size_t n = 0;
  Quality q;
  for (size_t i = 0; i < got.size(); ++i) {
    for (size_t k = 0; k < want[i].size(); ++k) {
      const int d = std::abs(static_cast<int>(got[i][k]) - static_cast<int>(want[i][k]));
      total += d;
      q.max = std::max(q.max, d);
      ++n;
    }
  }
  q.mean = total / static_cast<double>(n);
  return q;
}

// Best of `rounds` of CPU microseconds per call of `fn` over `count` items.
double BestMicros(int rounds, size_t count, const std::function<void(size_t)>& fn) {
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) {
    const double start = ThreadCpuSeconds();
    for (size_t i = 0; i < count; ++i) fn(i);
    best = std::min(best, (ThreadCpuSeconds() - start) * 1e6 / static_cast<double>(count));
  }
  return best;
}

struct Case {
  std::string video;
  int width, height, out;
};

}  // namespace

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("resize_bench");
  gulpdb::bench::Options opt(argc, argv, 1,
                             "resize_bench [--smoke] [--frames N] [--rounds R] [--json PATH]");
  const bool smoke = opt.Flag("smoke");
  const int frames = static_cast<int>(opt.Uint("frames", smoke ? 3 : 20));
  const int rounds = static_cast<int>(opt.Uint("rounds", smoke ? 1 : 9));
  const std::string json_path = opt.Str("json", "");
  opt.Finish();

  std::vector<Case> cases = {{"realshort.mp4", 320, 240, 112},
                             {"cockatoo.mp4", 1280, 720, 224},
                             {"cockatoo.mp4", 1280, 720, 112}};
  if (smoke) cases = {{"", 64, 48, 24}, {"", 160, 90, 40}};
  const int full = SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP | SWS_ACCURATE_RND;
  const std::vector<Filter> filters = {Bilinear(), Swscale("swscale SWS_AREA", SWS_AREA | full),
                                       Swscale("swscale SWS_BILINEAR", SWS_BILINEAR | full)};

  std::vector<Json> rows;
  for (const Case& c : cases) {
    std::vector<std::string> jpegs;
    std::string source = "synthetic";
    if (!c.video.empty()) {
      // Every 5th frame where the video is long enough, else consecutive ones.
      for (int step : {5, 1}) {
        if (static_cast<int>(jpegs.size()) < frames) {
          jpegs = VideoJpegs(kImageioDir + c.video, c.width, c.height, frames, step);
        }
      }
      source = c.video;
    }
    if (static_cast<int>(jpegs.size()) < frames) {
      jpegs = SyntheticJpegs(c.width, c.height, frames);
      source = "synthetic";
    }
    DecodeOptions fixed;
    fixed.out_height = c.out;
    fixed.out_width = c.out;
    const FrameGeometry g = gulpdb::PlanFrameGeometry(c.height, c.width, fixed);
    std::vector<Image> whole, reduced;
    std::vector<std::vector<uint8_t>> ref_stretch, ref_crop;
    for (const std::string& j : jpegs) {
      whole.push_back(Decode(j, 1));
      reduced.push_back(Decode(j, g.scale_denom));
      ref_stretch.push_back(AreaReference(whole.back(), c.out, c.out, 0, 0, c.out, c.out));
      ref_crop.push_back(AreaReference(whole.back(), g.scaled_width, g.scaled_height, g.crop_x,
                                       g.crop_y, c.out, c.out));
    }
    const double decode_us =
        BestMicros(rounds, jpegs.size(), [&](size_t i) { Decode(jpegs[i], g.scale_denom); });
    Log("%dx%d -> %dx%d (%s): short edge %dx%d, window at (%d, %d), DCT 1/%d decode %.0f us",
        c.width, c.height, c.out, c.out, source.c_str(), g.scaled_width, g.scaled_height, g.crop_x,
        g.crop_y, g.scale_denom, decode_us);
    for (const Filter& f : filters) {
      const size_t bytes = static_cast<size_t>(c.out) * static_cast<size_t>(c.out) * 3;
      std::vector<std::vector<uint8_t>> out(jpegs.size(), std::vector<uint8_t>(bytes));
      const double filter_us = BestMicros(rounds, jpegs.size(), [&](size_t i) {
        f.run(whole[i], c.out, c.out, 0, 0, c.out, c.out, out[i].data());
      });
      const Quality filter_q = Compare(out, ref_stretch);
      const double resample_us = BestMicros(rounds, jpegs.size(), [&](size_t i) {
        f.run(reduced[i], g.scaled_width, g.scaled_height, g.crop_x, g.crop_y, c.out, c.out,
              out[i].data());
      });
      const Quality decode_q = Compare(out, ref_crop);
      const double pipeline_us = BestMicros(rounds, jpegs.size(), [&](size_t i) {
        const Image r = Decode(jpegs[i], g.scale_denom);
        f.run(r, g.scaled_width, g.scaled_height, g.crop_x, g.crop_y, c.out, c.out, out[i].data());
      });
      Log("  %-22s filter %7.1f us (err %.3f, max %3d) | decode path: resample %7.1f us, "
          "decode+resample %7.1f us (err %.3f, max %3d)",
          f.name.c_str(), filter_us, filter_q.mean, filter_q.max, resample_us, pipeline_us,
          decode_q.mean, decode_q.max);
      if (smoke && f.name == filters.front().name) {
        // The window equals the same window of a whole resize.
        const Image& r = reduced[0];
        std::vector<uint8_t> all(static_cast<size_t>(g.scaled_width) *
                                 static_cast<size_t>(g.scaled_height) * 3);
        f.run(r, g.scaled_width, g.scaled_height, 0, 0, g.scaled_width, g.scaled_height,
              all.data());
        std::vector<uint8_t> window(bytes);
        f.run(r, g.scaled_width, g.scaled_height, g.crop_x, g.crop_y, c.out, c.out, window.data());
        for (int y = 0; y < c.out; ++y) {
          const uint8_t* row = all.data() + (static_cast<size_t>(y + g.crop_y) *
                                                 static_cast<size_t>(g.scaled_width) +
                                             static_cast<size_t>(g.crop_x)) *
                                                3;
          if (std::memcmp(row,
                          window.data() + static_cast<size_t>(y) * static_cast<size_t>(c.out) * 3,
                          static_cast<size_t>(c.out) * 3) != 0) {
            gulpdb::bench::Die("the bilinear window differs from the whole resize's");
          }
        }
      }
      Json row;
      row.String("case", std::to_string(c.width) + "x" + std::to_string(c.height) + " -> " +
                             std::to_string(c.out) + "x" + std::to_string(c.out))
          .String("source", source)
          .String("filter", f.name)
          .Integer("scale_denom", g.scale_denom)
          .Number("decode_us", decode_us)
          .Number("filter_us", filter_us)
          .Number("filter_mean_err", filter_q.mean)
          .Integer("filter_max_err", filter_q.max)
          .Number("resample_us", resample_us)
          .Number("decode_resample_us", pipeline_us)
          .Number("decode_path_mean_err", decode_q.mean)
          .Integer("decode_path_max_err", decode_q.max);
      rows.push_back(row);
    }
  }
  Json doc;
  doc.Integer("frames", frames).Integer("rounds", rounds).Objects("results", rows);
  if (!json_path.empty()) gulpdb::bench::WriteWholeFile(json_path, doc.str() + "\n");
  doc.Print();
  return 0;
}
