// Fixed-size decoding (jpeg.h, "Fixed-size output"): the geometry of every
// resize and crop mode, and the pixels against a reference written here from
// the header's formulas (double-precision bilinear over an independent scaled
// decode), within 1 level of 255.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "engine/codec/resample.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "support/test_util.h"

namespace gulpdb {
namespace {

using test::TempDir;

// A detailed image: diagonal stripes, a gradient and per-pixel noise, so that
// a wrong sample position or weight shows in the pixels.
std::vector<uint8_t> Detailed(int w, int h, int channels, uint32_t seed) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * static_cast<size_t>(h) *
                          static_cast<size_t>(channels));
  uint32_t state = seed * 2654435761u + 1;
  size_t i = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        state = state * 1664525u + 1013904223u;
        const int stripes = ((x + 2 * y + 5 * c) / 3) % 2 == 0 ? 60 : 0;
        const int gradient = (x * 97 / std::max(1, w) + y * 71 / std::max(1, h) + 40 * c) % 150;
        px[i++] = static_cast<uint8_t>(stripes + gradient + static_cast<int>(state >> 28));
      }
    }
  }
  return px;
}

std::string Jpeg(int w, int h, int channels, uint32_t seed, int quality = 95) {
  const std::vector<uint8_t> px = Detailed(w, h, channels, seed);
  EncodeOptions e;
  e.quality = quality;
  return ThreadLocalEncoder().Encode(px.data(), w, h, channels, e);
}

// Where channel k of pixel (y, x) is in a w-wide image of c channels.
size_t At(int y, int x, int w, int c, int k) {
  return static_cast<size_t>((int64_t{y} * w + x) * c + k);
}

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

DecodeOptions Out(int h, int w, ResizeMode resize = ResizeMode::kShortEdge,
                  CropMode crop = CropMode::kCenter, uint64_t seed = 0) {
  DecodeOptions o;
  o.out_height = h;
  o.out_width = w;
  o.resize = resize;
  o.crop = crop;
  o.crop_seed = seed;
  return o;
}

// ---- the reference, from the header's text --------------------------------------

struct RefGeometry {
  int d = 1;
  int rh = 0, rw = 0;     // scaled frame
  int cy = 0, cx = 0;     // window in the scaled frame
  int top = 0, left = 0;  // scaled frame in the output (fit)
};

int CeilDiv(int a, int d) { return (a + d - 1) / d; }

uint64_t TestSplitMix(uint64_t* s) {
  *s += 0x9E3779B97F4A7C15u;
  uint64_t z = *s;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

RefGeometry Reference(int sh, int sw, const DecodeOptions& o) {
  const int h = o.out_height, w = o.out_width;
  RefGeometry g;
  const double by_w = static_cast<double>(w) / sw, by_h = static_cast<double>(h) / sh;
  // Exact comparison of the two ratios w/sw and h/sh.
  const bool width_larger = int64_t{w} * sh > int64_t{h} * sw;
  const bool width_smaller = int64_t{w} * sh < int64_t{h} * sw;
  auto round_half_up = [](double v) { return static_cast<int>(std::floor(v + 0.5)); };
  if (o.resize == ResizeMode::kShortEdge) {
    if (width_larger) {
      g.rw = w;
      g.rh = round_half_up(sh * by_w);
    } else {
      g.rh = h;
      g.rw = round_half_up(sw * by_h);
    }
    if (o.crop == CropMode::kCenter) {
      g.cy = (g.rh - h) / 2;
      g.cx = (g.rw - w) / 2;
    } else {
      uint64_t s = o.crop_seed;
      const double uy = static_cast<double>(TestSplitMix(&s) >> 32) / 4294967296.0;
      const double ux = static_cast<double>(TestSplitMix(&s) >> 32) / 4294967296.0;
      g.cy = static_cast<int>(std::floor(uy * (g.rh - h + 1)));
      g.cx = static_cast<int>(std::floor(ux * (g.rw - w + 1)));
    }
  } else if (o.resize == ResizeMode::kFit) {
    if (width_smaller) {
      g.rw = w;
      g.rh = std::max(1, round_half_up(sh * by_w));
    } else {
      g.rh = h;
      g.rw = std::max(1, round_half_up(sw * by_h));
    }
    g.top = (h - g.rh) / 2;
    g.left = (w - g.rw) / 2;
  } else {
    g.rh = h;
    g.rw = w;
  }
  for (int d : {8, 4, 2, 1}) {
    if (CeilDiv(sh, d) >= g.rh && CeilDiv(sw, d) >= g.rw) {
      g.d = d;
      break;
    }
  }
  return g;
}

// One output axis: the two decoded samples and the weight of the second.
struct RefTap {
  int a, b;
  double w;
};
RefTap Tap(int out_index, int window_origin, int decoded, int scaled) {
  double s = (out_index + window_origin + 0.5) * decoded / scaled - 0.5;
  if (s < 0) s = 0;
  int a = static_cast<int>(std::floor(s));
  double w = s - a;
  if (a >= decoded - 1) {
    a = decoded - 1;
    w = 0;
  }
  return {a, std::min(a + 1, decoded - 1), w};
}

// The output the header describes, computed from a plain decode at 1/d.
std::vector<uint8_t> ReferencePixels(const std::string& jpeg, const DecodeOptions& o,
                                     ImageShape* shape_out) {
  DecodeOptions plain;
  plain.format = o.format;
  plain.dct = o.dct;
  ImageShape full;
  ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), plain, &full);
  const RefGeometry g = Reference(full.height, full.width, o);
  plain.scale_denom = g.d;
  ImageShape dec;
  const std::vector<uint8_t> src =
      ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), plain, &dec);
  const int c = dec.channels, h = o.out_height, w = o.out_width;
  std::vector<uint8_t> out(At(h, 0, w, c, 0), 0);
  const int win_h = std::min(h, g.rh), win_w = std::min(w, g.rw);
  for (int y = 0; y < win_h; ++y) {
    const RefTap ty = Tap(y, g.cy, dec.height, g.rh);
    for (int x = 0; x < win_w; ++x) {
      const RefTap tx = Tap(x, g.cx, dec.width, g.rw);
      for (int k = 0; k < c; ++k) {
        auto at = [&](int yy, int xx) {
          return static_cast<double>(src[At(yy, xx, dec.width, c, k)]);
        };
        const double top = at(ty.a, tx.a) * (1 - tx.w) + at(ty.a, tx.b) * tx.w;
        const double bottom = at(ty.b, tx.a) * (1 - tx.w) + at(ty.b, tx.b) * tx.w;
        const double v = top * (1 - ty.w) + bottom * ty.w;
        out[At(y + g.top, x + g.left, w, c, k)] = static_cast<uint8_t>(std::floor(v + 0.5));
      }
    }
  }
  *shape_out = ImageShape{h, w, c};
  return out;
}

// Decodes `jpeg` with `o` and checks shape and pixels against the reference;
// returns the largest difference.
int CheckAgainstReference(const std::string& jpeg, const DecodeOptions& o) {
  ImageShape want_shape;
  const std::vector<uint8_t> want = ReferencePixels(jpeg, o, &want_shape);
  JpegDecoder& decoder = ThreadLocalDecoder();
  const ImageShape shape = decoder.OutputShape(Bytes(jpeg), jpeg.size(), o);
  BOOST_TEST_REQUIRE((shape == want_shape));
  std::vector<uint8_t> got(shape.bytes(), 0xAB);  // not zero: padding must be written
  decoder.DecodeInto(Bytes(jpeg), jpeg.size(), o, got.data(), got.size());
  int worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  return worst;
}

BOOST_AUTO_TEST_SUITE(fixed_size_test)

// ---- geometry ------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(short_edge_covers_then_crops_the_middle) {
  // 320x240 (wide) into 112x112: height limits, 149x112 (320*112/240 = 149.33).
  const FrameGeometry g = PlanFrameGeometry(240, 320, Out(112, 112));
  BOOST_TEST(g.scaled_height == 112);
  BOOST_TEST(g.scaled_width == 149);
  BOOST_TEST(g.crop_y == 0);
  BOOST_TEST(g.crop_x == 18);  // (149 - 112) / 2 rounded down
  BOOST_TEST(g.pad_top == 0);
  BOOST_TEST(g.pad_left == 0);
  BOOST_TEST(g.scale_denom == 2);  // 160x120 still covers 149x112; 80x60 would not
  // Tall frame: the width limits.
  const FrameGeometry t = PlanFrameGeometry(320, 240, Out(112, 112));
  BOOST_TEST(t.scaled_height == 149);
  BOOST_TEST(t.scaled_width == 112);
  BOOST_TEST(t.crop_y == 18);
  BOOST_TEST(t.crop_x == 0);
  // A non-square output: 1280x720 into 224x300 (h x w): 300/1280 < 224/720, so
  // the height limits: 224 x round(1280 * 224 / 720) = 224 x 398.
  const FrameGeometry r = PlanFrameGeometry(720, 1280, Out(224, 300));
  BOOST_TEST(r.scaled_height == 224);
  BOOST_TEST(r.scaled_width == 398);
  BOOST_TEST(r.crop_x == 49);
  BOOST_TEST(r.scale_denom == 2);
}

BOOST_AUTO_TEST_CASE(short_edge_rounds_half_up) {
  // 5 wide, 2 tall into 3x3: 5 * 3 / 2 = 7.5 -> 8.
  const FrameGeometry g = PlanFrameGeometry(2, 5, Out(3, 3));
  BOOST_TEST(g.scaled_height == 3);
  BOOST_TEST(g.scaled_width == 8);
  BOOST_TEST(g.crop_x == 2);
  // 7 wide, 3 tall into 2x2: 7 * 2 / 3 = 4.67 -> 5.
  const FrameGeometry h = PlanFrameGeometry(3, 7, Out(2, 2));
  BOOST_TEST(h.scaled_width == 5);
  BOOST_TEST(h.crop_x == 1);
}

BOOST_AUTO_TEST_CASE(fit_pads_around_the_centred_frame) {
  const FrameGeometry g = PlanFrameGeometry(240, 320, Out(112, 112, ResizeMode::kFit));
  BOOST_TEST(g.scaled_width == 112);
  BOOST_TEST(g.scaled_height == 84);
  BOOST_TEST(g.pad_top == 14);
  BOOST_TEST(g.pad_left == 0);
  BOOST_TEST(g.crop_y == 0);
  BOOST_TEST(g.crop_x == 0);
  // Odd padding rounds the top/left offset down: 3 rows of padding -> 1 above, 2 below.
  const FrameGeometry o = PlanFrameGeometry(10, 20, Out(13, 20, ResizeMode::kFit));
  BOOST_TEST(o.scaled_height == 10);
  BOOST_TEST(o.scaled_width == 20);
  BOOST_TEST(o.pad_top == 1);
  // A needle of a frame keeps at least one pixel.
  const FrameGeometry n = PlanFrameGeometry(1, 1000, Out(10, 10, ResizeMode::kFit));
  BOOST_TEST(n.scaled_height == 1);
  BOOST_TEST(n.scaled_width == 10);
  BOOST_TEST(n.pad_top == 4);
}

BOOST_AUTO_TEST_CASE(stretch_scales_each_axis) {
  const FrameGeometry g = PlanFrameGeometry(240, 320, Out(100, 50, ResizeMode::kStretch));
  BOOST_TEST(g.scaled_height == 100);
  BOOST_TEST(g.scaled_width == 50);
  BOOST_TEST(g.crop_y + g.crop_x + g.pad_top + g.pad_left == 0);
  BOOST_TEST(g.scale_denom == 2);  // 120 >= 100 and 160 >= 50; at 1/4, 60 < 100
}

BOOST_AUTO_TEST_CASE(dct_scale_is_the_largest_that_still_covers) {
  BOOST_TEST(PlanFrameGeometry(720, 1280, Out(224, 224)).scale_denom == 2);  // 398x224
  BOOST_TEST(PlanFrameGeometry(720, 1280, Out(112, 112)).scale_denom == 4);  // 199x112
  BOOST_TEST(PlanFrameGeometry(3000, 4000, Out(112, 112)).scale_denom == 8);
  BOOST_TEST(PlanFrameGeometry(112, 112, Out(112, 112)).scale_denom == 1);
  // 222x296 covers 112x149; at 1/2 it is 111 tall: too short. 224x298 at 1/2 is 112x149.
  BOOST_TEST(PlanFrameGeometry(222, 296, Out(112, 112)).scale_denom == 1);
  BOOST_TEST(PlanFrameGeometry(224, 298, Out(112, 112)).scale_denom == 2);
  // 224x299 covers 112x150 (149.5 rounds up); at 1/2 it is 150 wide: enough.
  BOOST_TEST(PlanFrameGeometry(224, 299, Out(112, 112)).scale_denom == 2);
  // Enlarging: never reduced.
  BOOST_TEST(PlanFrameGeometry(16, 24, Out(64, 64)).scale_denom == 1);
}

BOOST_AUTO_TEST_CASE(geometry_matches_the_reference_over_many_sizes) {
  int checked = 0;
  for (int sh : {1, 2, 3, 7, 16, 33, 120, 240, 241, 720}) {
    for (int sw : {1, 2, 5, 8, 31, 160, 320, 321, 1280}) {
      for (auto [h, w] : std::vector<std::pair<int, int>>{
               {1, 1}, {3, 5}, {112, 112}, {64, 48}, {224, 224}, {17, 300}}) {
        for (ResizeMode mode : {ResizeMode::kShortEdge, ResizeMode::kFit, ResizeMode::kStretch}) {
          for (uint64_t seed : {0u, 1u, 12345u}) {
            const CropMode crop =
                mode == ResizeMode::kShortEdge && seed != 0 ? CropMode::kRandom : CropMode::kCenter;
            const DecodeOptions o = Out(h, w, mode, crop, seed);
            const FrameGeometry g = PlanFrameGeometry(sh, sw, o);
            const RefGeometry r = Reference(sh, sw, o);
            BOOST_TEST_CONTEXT(sh << "x" << sw << " -> " << h << "x" << w << " mode "
                                  << static_cast<int>(mode) << " seed " << seed) {
              BOOST_TEST(g.scaled_height == r.rh);
              BOOST_TEST(g.scaled_width == r.rw);
              BOOST_TEST(g.crop_y == r.cy);
              BOOST_TEST(g.crop_x == r.cx);
              BOOST_TEST(g.pad_top == r.top);
              BOOST_TEST(g.pad_left == r.left);
              BOOST_TEST(g.scale_denom == r.d);
              // The window lies inside the scaled frame; the scaled frame inside a fit output.
              BOOST_TEST(g.crop_y + std::min(h, g.scaled_height) <= g.scaled_height);
              BOOST_TEST(g.crop_x + std::min(w, g.scaled_width) <= g.scaled_width);
              BOOST_TEST(g.pad_top + std::min(h, g.scaled_height) <= h);
              BOOST_TEST(g.pad_left + std::min(w, g.scaled_width) <= w);
            }
            ++checked;
          }
        }
      }
    }
  }
  BOOST_TEST(checked == 10 * 9 * 6 * 3 * 3);
}

BOOST_AUTO_TEST_CASE(random_crops_are_seeded_and_cover_every_position) {
  // 320x240 -> 112x112: 149 wide, so x in 0..37 (38 positions); y is always 0.
  std::set<int> xs;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    const DecodeOptions o = Out(112, 112, ResizeMode::kShortEdge, CropMode::kRandom, seed);
    const FrameGeometry g = PlanFrameGeometry(240, 320, o);
    BOOST_TEST_REQUIRE(g.crop_y == 0);
    BOOST_TEST_REQUIRE(g.crop_x >= 0);
    BOOST_TEST_REQUIRE(g.crop_x <= 37);
    BOOST_TEST_REQUIRE(PlanFrameGeometry(240, 320, o).crop_x == g.crop_x);  // deterministic
    xs.insert(g.crop_x);
  }
  BOOST_TEST(xs.size() == 38u);
  // Both axes vary when both have slack: 100x100 into 50x60 (h x w).
  std::set<std::pair<int, int>> origins;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const FrameGeometry g =
        PlanFrameGeometry(100, 100, Out(50, 60, ResizeMode::kShortEdge, CropMode::kRandom, seed));
    BOOST_TEST_REQUIRE(g.crop_x == 0);  // 60x60: no slack across
    BOOST_TEST_REQUIRE(g.crop_y <= 10);
    origins.insert({g.crop_y, g.crop_x});
  }
  BOOST_TEST(origins.size() == 11u);
}

BOOST_AUTO_TEST_CASE(bad_options_are_refused_with_clear_errors) {
  auto refused = [](const DecodeOptions& o, const std::string& needle) {
    try {
      PlanFrameGeometry(240, 320, o);
    } catch (const InvalidArgumentError& e) {
      BOOST_TEST_CONTEXT(e.what()) {
        BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos);
      }
      return;
    }
    BOOST_ERROR("not refused: " + needle);
  };
  refused(Out(0, 112), "output size must be 1..65500");
  refused(Out(112, 0), "got 112x0");
  refused(Out(-5, 10), "got -5x10");
  refused(Out(70000, 10), "output size must be 1..65500");
  refused(Out(112, 112, ResizeMode::kFit, CropMode::kRandom), "a random crop needs kShortEdge");
  refused(Out(112, 112, ResizeMode::kStretch, CropMode::kRandom), "kStretch keeps the whole frame");
  refused(Out(112, 112, static_cast<ResizeMode>(9)), "unknown ResizeMode");
  refused(Out(112, 112, ResizeMode::kFit, static_cast<CropMode>(9)), "unknown CropMode");
  DecodeOptions scaled = Out(112, 112);
  scaled.scale_denom = 2;
  refused(scaled, "scale_denom must be 1 with an output size");
  refused(Out(0, 0, ResizeMode::kFit), "need an output size");
  refused(Out(0, 0, ResizeMode::kShortEdge, CropMode::kRandom), "need an output size");
  refused(Out(0, 0), "ask for no output size");

  DecodeOptions huge = Out(20000, 20000);  // 4e8 pixels > 2^27
  BOOST_CHECK_THROW(PlanFrameGeometry(240, 320, huge), OutOfMemoryError);
  // A needle covering a wide output would be 65535 * 65500 pixels long.
  BOOST_CHECK_THROW(PlanFrameGeometry(65535, 1, Out(1, 65500)), InvalidArgumentError);

  // The codec refuses the same options before looking at the image.
  const std::string jpeg = Jpeg(16, 16, 3, 1);
  BOOST_CHECK_THROW(ThreadLocalDecoder().OutputShape(Bytes(jpeg), jpeg.size(), Out(0, 7)),
                    InvalidArgumentError);
  BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), huge), OutOfMemoryError);
}

// ---- pixels ----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(every_mode_gives_the_output_shape_and_reference_pixels) {
  const std::vector<std::pair<int, int>> frames = {{240, 320}, {120, 160}, {360, 480}, {37, 53},
                                                   {53, 37},   {8, 8},     {1, 1},     {1, 9}};
  const std::vector<std::pair<int, int>> outputs = {{112, 112}, {31, 17}, {1, 1}, {64, 200}};
  int worst = 0, cases = 0;
  for (auto [fh, fw] : frames) {
    const std::string jpeg = Jpeg(fw, fh, 3, static_cast<uint32_t>(fh * 1000 + fw));
    for (auto [h, w] : outputs) {
      for (ResizeMode mode : {ResizeMode::kShortEdge, ResizeMode::kFit, ResizeMode::kStretch}) {
        for (CropMode crop : {CropMode::kCenter, CropMode::kRandom}) {
          if (crop == CropMode::kRandom && mode != ResizeMode::kShortEdge) continue;
          for (DctMethod dct : {DctMethod::kFast, DctMethod::kAccurate}) {
            DecodeOptions o = Out(h, w, mode, crop, 77);
            o.dct = dct;
            BOOST_TEST_CONTEXT(fh << "x" << fw << " -> " << h << "x" << w << " mode "
                                  << static_cast<int>(mode) << " crop " << static_cast<int>(crop)) {
              const int diff = CheckAgainstReference(jpeg, o);
              BOOST_TEST(diff <= 1);
              worst = std::max(worst, diff);
            }
            ++cases;
          }
        }
      }
    }
  }
  BOOST_TEST(cases == 8 * 4 * 4 * 2);
  BOOST_TEST_MESSAGE("largest difference from the reference: " << worst);
}

BOOST_AUTO_TEST_CASE(fit_padding_is_zero_and_the_frame_sits_centred) {
  // A uniform grey frame, so that every non-padding pixel is (about) grey.
  std::vector<uint8_t> grey(64 * 32 * 3, 200);
  const std::string jpeg = ThreadLocalEncoder().Encode(grey.data(), 64, 32, 3);
  const DecodeOptions o = Out(40, 40, ResizeMode::kFit);  // 40x20 centred: rows 10..29
  ImageShape shape;
  const std::vector<uint8_t> px = ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), o, &shape);
  BOOST_TEST((shape == ImageShape{40, 40, 3}));
  for (int y = 0; y < 40; ++y) {
    const bool inside = y >= 10 && y < 30;
    for (int x = 0; x < 40; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int v = px[At(y, x, 40, 3, c)];
        if (inside) {
          BOOST_TEST_REQUIRE(std::abs(v - 200) <= 2);
        } else {
          BOOST_TEST_REQUIRE(v == 0);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(grayscale_frames_keep_one_channel) {
  const std::string gray = Jpeg(50, 30, 1, 3);
  const std::string colour = Jpeg(50, 30, 3, 4);
  for (ResizeMode mode : {ResizeMode::kShortEdge, ResizeMode::kFit, ResizeMode::kStretch}) {
    DecodeOptions o = Out(21, 21, mode);
    o.format = PixelFormat::kAuto;
    BOOST_TEST(CheckAgainstReference(gray, o) <= 1);
    BOOST_TEST(
        (ThreadLocalDecoder().OutputShape(Bytes(gray), gray.size(), o) == ImageShape{21, 21, 1}));
    o.format = PixelFormat::kGray;
    BOOST_TEST(CheckAgainstReference(colour, o) <= 1);
    BOOST_TEST((ThreadLocalDecoder().OutputShape(Bytes(colour), colour.size(), o) ==
                ImageShape{21, 21, 1}));
    o.format = PixelFormat::kRGB;
    BOOST_TEST(CheckAgainstReference(gray, o) <= 1);
    BOOST_TEST(
        (ThreadLocalDecoder().OutputShape(Bytes(gray), gray.size(), o) == ImageShape{21, 21, 3}));
  }
}

BOOST_AUTO_TEST_CASE(one_pixel_frames_fill_the_output_with_their_colour) {
  const uint8_t rgb[3] = {200, 40, 90};
  const std::string jpeg = ThreadLocalEncoder().Encode(rgb, 1, 1, 3);
  ImageShape plain_shape;
  const std::vector<uint8_t> pixel =
      ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), {}, &plain_shape);
  BOOST_TEST_REQUIRE(pixel.size() == 3u);
  for (ResizeMode mode : {ResizeMode::kShortEdge, ResizeMode::kStretch}) {
    const std::vector<uint8_t> px =
        ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), Out(5, 7, mode));
    BOOST_TEST_REQUIRE(px.size() == 5u * 7 * 3);
    for (size_t i = 0; i < px.size(); ++i) BOOST_TEST_REQUIRE(px[i] == pixel[i % 3]);
  }
  // Fit: a 5x5 square of the colour in the middle of 5x7, zeros either side.
  const std::vector<uint8_t> fit =
      ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), Out(5, 7, ResizeMode::kFit));
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int want = x >= 1 && x < 6 ? pixel[static_cast<size_t>(c)] : 0;
        BOOST_TEST_REQUIRE(fit[At(y, x, 7, 3, c)] == want);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(enlarging_interpolates_between_the_source_pixels) {
  // 2x1 frame (black | white) stretched to 1x8: a ramp, symmetric, monotonic.
  const uint8_t src[2] = {0, 255};
  const std::string jpeg = ThreadLocalEncoder().Encode(src, 2, 1, 1, {100, Subsampling::k444});
  DecodeOptions o = Out(1, 8, ResizeMode::kStretch);
  o.format = PixelFormat::kGray;
  BOOST_TEST(CheckAgainstReference(jpeg, o) <= 1);
  const std::vector<uint8_t> px = ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), o);
  BOOST_TEST_REQUIRE(px.size() == 8u);
  for (size_t x = 1; x < 8; ++x) BOOST_TEST(px[x] >= px[x - 1]);
  BOOST_TEST(px[0] == px[1]);  // the outer quarter-pixels repeat the edge
  BOOST_TEST(px[3] < 128);
  BOOST_TEST(px[4] > 128);
  // And an 8x8 frame to 40x33 (larger than the frame on both sides) in every mode.
  const std::string small = Jpeg(8, 8, 3, 9);
  for (ResizeMode mode : {ResizeMode::kShortEdge, ResizeMode::kFit, ResizeMode::kStretch}) {
    BOOST_TEST(CheckAgainstReference(small, Out(40, 33, mode)) <= 1);
  }
}

BOOST_AUTO_TEST_CASE(a_frame_already_at_the_output_size_decodes_unchanged) {
  const std::string jpeg = Jpeg(48, 32, 3, 5);
  const std::vector<uint8_t> plain = ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size());
  for (ResizeMode mode : {ResizeMode::kShortEdge, ResizeMode::kFit, ResizeMode::kStretch}) {
    const std::vector<uint8_t> fixed =
        ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), Out(32, 48, mode));
    BOOST_TEST(fixed == plain);
  }
}

BOOST_AUTO_TEST_CASE(downscaling_stays_close_to_an_exact_area_average) {
  // The DCT-scaled decode plus bilinear against a box filter over the full
  // decode: a smooth image, so that the two low-pass filters agree closely.
  const int w = 320, h = 240;
  std::vector<uint8_t> smooth(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        smooth[At(y, x, w, 3, c)] =
            static_cast<uint8_t>(127 + 100 * std::sin(x * 0.05 + c) * std::cos(y * 0.04 - c));
      }
    }
  }
  const std::string jpeg = ThreadLocalEncoder().Encode(smooth.data(), w, h, 3, {95});
  const std::vector<uint8_t> full = ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size());
  const DecodeOptions o = Out(112, 112);  // 149x112, window at x = 18, DCT 1/2
  const std::vector<uint8_t> got = ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), o);
  const double rx = static_cast<double>(w) / 149, ry = static_cast<double>(h) / 112;
  double total = 0;
  int worst = 0;
  for (int y = 0; y < 112; ++y) {
    for (int x = 0; x < 112; ++x) {
      const double x0 = (x + 18) * rx, x1 = x0 + rx, y0 = y * ry, y1 = y0 + ry;
      for (int c = 0; c < 3; ++c) {
        double sum = 0;
        for (int sy = static_cast<int>(y0); sy < std::ceil(y1); ++sy) {
          const double wy = std::min(y1, sy + 1.0) - std::max(y0, static_cast<double>(sy));
          for (int sx = static_cast<int>(x0); sx < std::ceil(x1); ++sx) {
            const double wx = std::min(x1, sx + 1.0) - std::max(x0, static_cast<double>(sx));
            sum += wx * wy * full[At(sy, sx, w, 3, c)];
          }
        }
        const int area = static_cast<int>(std::lround(sum / (rx * ry)));
        const int diff = std::abs(area - got[At(y, x, 112, 3, c)]);
        total += diff;
        worst = std::max(worst, diff);
      }
    }
  }
  const double mean = total / (112.0 * 112 * 3);
  BOOST_TEST_MESSAGE("against the area average: mean " << mean << ", max " << worst);
  BOOST_TEST(mean < 1.5);
  BOOST_TEST(worst <= 6);
}

BOOST_AUTO_TEST_CASE(the_resampler_handles_any_channel_count_and_row_stride) {
  // A window written with a wider row stride equals the same window of the
  // whole resize, and the whole resize is within one level of the reference.
  for (int c : {1, 2, 3, 4}) {
    const int sw = 23, sh = 17, dw = 40, dh = 9;
    const std::vector<uint8_t> src = Detailed(sw, sh, c, static_cast<uint32_t>(c));
    const std::vector<uint8_t> whole = engine::ResizeBilinear(src.data(), sw, sh, c, dw, dh);
    BOOST_TEST_REQUIRE(whole.size() == At(dh, 0, dw, c, 0));
    for (int y = 0; y < dh; ++y) {
      const RefTap ty = Tap(y, 0, sh, dh);
      for (int x = 0; x < dw; ++x) {
        const RefTap tx = Tap(x, 0, sw, dw);
        for (int k = 0; k < c; ++k) {
          auto at = [&](int yy, int xx) { return static_cast<double>(src[At(yy, xx, sw, c, k)]); };
          const double v = (at(ty.a, tx.a) * (1 - tx.w) + at(ty.a, tx.b) * tx.w) * (1 - ty.w) +
                           (at(ty.b, tx.a) * (1 - tx.w) + at(ty.b, tx.b) * tx.w) * ty.w;
          BOOST_TEST_REQUIRE(std::abs(whole[At(y, x, dw, c, k)] - std::floor(v + 0.5)) <= 1);
        }
      }
    }
    const int wx = 7, wy = 2, ww = 20, wh = 5, stride_pixels = 26;
    std::vector<uint8_t> window(At(wh, 0, stride_pixels, c, 0), 0xCD);
    engine::ResizeBilinearWindow(src.data(), sw, sh, c, dw, dh, wx, wy, ww, wh, window.data(),
                                 static_cast<size_t>(stride_pixels * c));
    for (int y = 0; y < wh; ++y) {
      for (int x = 0; x < stride_pixels; ++x) {
        for (int k = 0; k < c; ++k) {
          const uint8_t got = window[At(y, x, stride_pixels, c, k)];
          if (x < ww) {
            BOOST_TEST_REQUIRE(got == whole[At(y + wy, x + wx, dw, c, k)]);
          } else {
            BOOST_TEST_REQUIRE(got == 0xCD);  // past the window: untouched
          }
        }
      }
    }
  }
}

// ---- through a dataset -------------------------------------------------------------

BOOST_AUTO_TEST_CASE(videos_of_different_sizes_read_as_one_uniform_batch) {
  TempDir tmp;
  const std::vector<std::pair<int, int>> sizes = {{240, 320}, {120, 160}, {360, 480}};
  std::vector<std::vector<std::string>> videos;
  {
    auto ds = Dataset::Create(tmp.path());
    auto writer = ds->NewWriter();
    for (size_t v = 0; v < sizes.size(); ++v) {
      std::vector<std::string> frames;
      for (int f = 0; f < 4; ++f) {
        frames.push_back(Jpeg(sizes[v].second, sizes[v].first, 3,
                              static_cast<uint32_t>(v * 10) + static_cast<uint32_t>(f), 90));
      }
      writer->Append("v" + std::to_string(v), test::Views(frames));
      videos.push_back(std::move(frames));
    }
    writer->Commit();
  }
  for (size_t threads : {size_t{1}, size_t{3}}) {
    OpenOptions open;
    open.decode_threads = threads;
    auto ds = Dataset::Open(tmp.path(), open);
    std::vector<FrameRequest> requests(3);
    for (size_t v = 0; v < 3; ++v) requests[v].id = "v" + std::to_string(v);
    requests[1].selection = Selection::Slice(1, 4, 2);
    for (ResizeMode mode : {ResizeMode::kShortEdge, ResizeMode::kFit, ResizeMode::kStretch}) {
      const DecodeOptions o = Out(112, 112, mode);
      const std::vector<DecodedFrames> batch = ds->ReadBatch(requests, o);
      BOOST_TEST_REQUIRE(batch.size() == 3u);
      for (size_t v = 0; v < 3; ++v) {
        BOOST_TEST(batch[v].uniform());
        BOOST_TEST((batch[v].shape(0) == ImageShape{112, 112, 3}));
        BOOST_TEST(batch[v].byte_size() == batch[v].size() * 112 * 112 * 3);
        for (size_t i = 0; i < batch[v].size(); ++i) {
          const std::string& jpeg = videos[v][batch[v].indices()[i]];
          const std::vector<uint8_t> want =
              ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), o);
          BOOST_TEST_REQUIRE(std::equal(want.begin(), want.end(), batch[v].data(i)));
        }
      }
      BOOST_TEST(batch[1].size() == 2u);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_random_crop_is_one_window_per_request) {
  TempDir tmp;
  std::vector<std::string> frames;
  for (int f = 0; f < 3; ++f) frames.push_back(Jpeg(320, 240, 3, static_cast<uint32_t>(f)));
  {
    auto ds = Dataset::Create(tmp.path());
    auto writer = ds->NewWriter();
    writer->Append("a", test::Views(frames));
    writer->Commit();
  }
  auto ds = Dataset::Open(tmp.path());
  const DecodeOptions o = Out(112, 112, ResizeMode::kShortEdge, CropMode::kRandom, 4242);
  std::vector<FrameRequest> requests(6);
  for (FrameRequest& r : requests) r.id = "a";
  const std::vector<DecodedFrames> batch = ds->ReadBatch(requests, o);
  std::set<int> windows;
  for (size_t r = 0; r < requests.size(); ++r) {
    // Request r uses crop_seed + r * 0x9E3779B97F4A7C15, for every frame.
    DecodeOptions each = o;
    each.crop_seed = o.crop_seed + r * 0x9E3779B97F4A7C15u;
    windows.insert(PlanFrameGeometry(240, 320, each).crop_x);
    for (size_t i = 0; i < frames.size(); ++i) {
      const std::vector<uint8_t> want =
          ThreadLocalDecoder().Decode(Bytes(frames[i]), frames[i].size(), each);
      BOOST_TEST_REQUIRE(std::equal(want.begin(), want.end(), batch[r].data(i)));
    }
  }
  BOOST_TEST(windows.size() > 1u);  // requests do not all share one window
  // ReadFrames is request 0, and the same seed gives the same clip.
  const DecodedFrames one = ds->ReadFrames("a", Selection::All(), o);
  BOOST_TEST(std::equal(one.data(0), one.data(0) + one.byte_size(), batch[0].data(0)));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
