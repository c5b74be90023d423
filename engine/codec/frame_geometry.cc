#include "engine/codec/frame_geometry.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "engine/codec/resample.h"
#include "gulpdb/error.h"

namespace gulpdb {
namespace engine {
namespace {

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15u;

// A scaled side may be far larger than the output (a very narrow frame
// covering a wide output); beyond this the arithmetic would overflow.
constexpr int64_t kMaxScaledSide = int64_t{1} << 30;

// One step of SplitMix64 (Steele, Lea and Flood 2014): advances `*state` and
// returns the next output.
uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += kGoldenGamma);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

// floor(u × (slack + 1)) for u = the top 32 bits of `draw` / 2^32: a position
// in 0..slack, uniform up to 2^-32 (exact in 64 bits: slack <= kMaxScaledSide).
int Position(uint64_t draw, int slack) {
  const uint64_t u = draw >> 32;
  return static_cast<int>((u * static_cast<uint64_t>(slack + 1)) >> 32);
}

// round(a × b / c), halves up, for a, b, c in 1..65535. Throws
// InvalidArgumentError when the result exceeds kMaxScaledSide.
int RoundedRatio(int a, int b, int c, const DecodeOptions& options, int height, int width) {
  const int64_t result = (int64_t{2} * a * b + c) / (int64_t{2} * c);
  if (result > kMaxScaledSide) {
    throw InvalidArgumentError("decode jpeg: a " + std::to_string(height) + "x" +
                               std::to_string(width) + " frame scaled to cover " +
                               std::to_string(options.out_height) + "x" +
                               std::to_string(options.out_width) + " would be " +
                               std::to_string(result) + " pixels long, more than 2^30");
  }
  return static_cast<int>(result);
}

const char* ResizeName(ResizeMode mode) {
  switch (mode) {
    case ResizeMode::kShortEdge:
      return "kShortEdge";
    case ResizeMode::kFit:
      return "kFit";
    case ResizeMode::kStretch:
      return "kStretch";
  }
  return "an unknown ResizeMode";
}

}  // namespace

bool CheckOutputOptions(const DecodeOptions& options) {
  const int h = options.out_height;
  const int w = options.out_width;
  if (options.resize != ResizeMode::kShortEdge && options.resize != ResizeMode::kFit &&
      options.resize != ResizeMode::kStretch) {
    throw InvalidArgumentError("decode jpeg: unknown ResizeMode");
  }
  if (options.crop != CropMode::kCenter && options.crop != CropMode::kRandom) {
    throw InvalidArgumentError("decode jpeg: unknown CropMode");
  }
  if (h == 0 && w == 0) {
    if (options.resize != ResizeMode::kShortEdge || options.crop != CropMode::kCenter) {
      throw InvalidArgumentError(
          "decode jpeg: resize and crop modes need an output size (out_height and out_width)");
    }
    return false;
  }
  if (h < 1 || w < 1 || h > kMaxOutputSide || w > kMaxOutputSide) {
    throw InvalidArgumentError("decode jpeg: output size must be 1.." +
                               std::to_string(kMaxOutputSide) +
                               " on both sides (or 0x0 for none), got " + std::to_string(h) + "x" +
                               std::to_string(w) + " (height x width)");
  }
  if (options.scale_denom != 1) {
    throw InvalidArgumentError(
        "decode jpeg: scale_denom must be 1 with an output size (the decoder picks the DCT "
        "scaling itself), got " +
        std::to_string(options.scale_denom));
  }
  if (options.crop == CropMode::kRandom && options.resize != ResizeMode::kShortEdge) {
    throw InvalidArgumentError(std::string("decode jpeg: a random crop needs kShortEdge; ") +
                               ResizeName(options.resize) +
                               " keeps the whole frame, so there is nothing to crop");
  }
  const uint64_t pixels = static_cast<uint64_t>(h) * static_cast<uint64_t>(w);
  if (pixels > options.max_pixels) {
    throw OutOfMemoryError("decode jpeg: output size " + std::to_string(h) + "x" +
                           std::to_string(w) + " exceeds the limit of " +
                           std::to_string(options.max_pixels) +
                           " pixels (DecodeOptions::max_pixels)");
  }
  return true;
}

uint64_t RequestCropSeed(uint64_t crop_seed, uint64_t request) {
  return crop_seed + request * kGoldenGamma;
}

void PlaceFrame(const uint8_t* src, int src_width, int src_height, int channels,
                const FrameGeometry& g, const ImageShape& shape, uint8_t* out) {
  const size_t out_row = static_cast<size_t>(shape.width) * static_cast<size_t>(channels);
  int window_height = shape.height;
  int window_width = shape.width;
  if (g.scaled_height < window_height || g.scaled_width < window_width) {  // kFit: pad
    std::memset(out, 0, static_cast<size_t>(shape.height) * out_row);
    window_height = g.scaled_height;
    window_width = g.scaled_width;
  }
  uint8_t* window = out + static_cast<size_t>(g.pad_top) * out_row +
                    static_cast<size_t>(g.pad_left) * static_cast<size_t>(channels);
  ResizeBilinearWindow(src, src_width, src_height, channels, g.scaled_width, g.scaled_height,
                       g.crop_x, g.crop_y, window_width, window_height, window, out_row);
}

}  // namespace engine

FrameGeometry PlanFrameGeometry(int height, int width, const DecodeOptions& options) {
  if (!engine::CheckOutputOptions(options)) {
    throw InvalidArgumentError("frame geometry: the options ask for no output size");
  }
  if (height < 1 || width < 1) {
    throw InvalidArgumentError("frame geometry: frame size must be positive, got " +
                               std::to_string(height) + "x" + std::to_string(width));
  }
  const int out_h = options.out_height;
  const int out_w = options.out_width;
  FrameGeometry g;
  // Which side's ratio is larger: out_w / width against out_h / height.
  const int64_t by_width = int64_t{out_w} * height;
  const int64_t by_height = int64_t{out_h} * width;
  switch (options.resize) {
    case ResizeMode::kShortEdge:
      if (by_width > by_height) {
        g.scaled_width = out_w;
        g.scaled_height =
            std::max(out_h, engine::RoundedRatio(height, out_w, width, options, height, width));
      } else {
        g.scaled_height = out_h;
        g.scaled_width =
            std::max(out_w, engine::RoundedRatio(width, out_h, height, options, height, width));
      }
      if (options.crop == CropMode::kRandom) {
        uint64_t state = options.crop_seed;
        const uint64_t draw_y = engine::SplitMix64(&state);
        const uint64_t draw_x = engine::SplitMix64(&state);
        g.crop_y = engine::Position(draw_y, g.scaled_height - out_h);
        g.crop_x = engine::Position(draw_x, g.scaled_width - out_w);
      } else {
        g.crop_y = (g.scaled_height - out_h) / 2;
        g.crop_x = (g.scaled_width - out_w) / 2;
      }
      break;
    case ResizeMode::kFit:
      if (by_width < by_height) {
        g.scaled_width = out_w;
        g.scaled_height = std::clamp(
            engine::RoundedRatio(height, out_w, width, options, height, width), 1, out_h);
      } else {
        g.scaled_height = out_h;
        g.scaled_width = std::clamp(
            engine::RoundedRatio(width, out_h, height, options, height, width), 1, out_w);
      }
      g.pad_top = (out_h - g.scaled_height) / 2;
      g.pad_left = (out_w - g.scaled_width) / 2;
      break;
    case ResizeMode::kStretch:
      g.scaled_height = out_h;
      g.scaled_width = out_w;
      break;
  }
  g.scale_denom = 1;
  for (int d : {8, 4, 2}) {
    if (ScaledDimension(height, d) >= g.scaled_height &&
        ScaledDimension(width, d) >= g.scaled_width) {
      g.scale_denom = d;
      break;
    }
  }
  return g;
}

}  // namespace gulpdb
