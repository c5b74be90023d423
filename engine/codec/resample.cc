#include "engine/codec/resample.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace gulpdb::engine {
namespace {

// Weights are fixed point with this many fraction bits, as OpenCV's
// INTER_LINEAR for 8-bit images (INTER_RESIZE_COEF_BITS): a horizontal pass
// keeps 8 + 11 bits per value, the vertical one 8 + 22, which fits an int32.
constexpr int kBits = 11;
constexpr int kOne = 1 << kBits;

// The two source samples of one output position and their weights (summing
// to kOne).
struct Tap {
  size_t a, b;
  int wa, wb;
};

// Taps of outputs first .. first + count - 1 of a `from` -> `to` resize.
std::vector<Tap> Taps(int from, int to, int first, int count) {
  std::vector<Tap> taps(static_cast<size_t>(count));
  const double ratio = static_cast<double>(from) / static_cast<double>(to);
  for (int i = 0; i < count; ++i) {
    double s = (static_cast<double>(first + i) + 0.5) * ratio - 0.5;
    if (s < 0) s = 0;
    int a = static_cast<int>(s);
    double w = s - static_cast<double>(a);
    if (a >= from - 1) {
      a = from - 1;
      w = 0;
    }
    const int wb = static_cast<int>(std::lround(w * kOne));
    taps[static_cast<size_t>(i)] = {static_cast<size_t>(a),
                                    static_cast<size_t>(std::min(a + 1, from - 1)), kOne - wb, wb};
  }
  return taps;
}

// One source row resampled horizontally: values scaled by kOne.
template <int kChannels>
void Horizontal(const uint8_t* row, const std::vector<Tap>& xs, int channels, int32_t* out) {
  const size_t c = kChannels > 0 ? static_cast<size_t>(kChannels) : static_cast<size_t>(channels);
  for (const Tap& x : xs) {
    const uint8_t* pa = row + x.a * c;
    const uint8_t* pb = row + x.b * c;
    for (size_t k = 0; k < c; ++k) *out++ = pa[k] * x.wa + pb[k] * x.wb;
  }
}

template <int kChannels>
void Resize(const uint8_t* src, int src_width, int src_height, int channels, int scaled_width,
            int scaled_height, int window_x, int window_y, int out_width, int out_height,
            uint8_t* out, size_t out_stride) {
  const std::vector<Tap> xs = Taps(src_width, scaled_width, window_x, out_width);
  const std::vector<Tap> ys = Taps(src_height, scaled_height, window_y, out_height);
  const size_t c = static_cast<size_t>(channels);
  const size_t src_row = static_cast<size_t>(src_width) * c;
  const size_t n = static_cast<size_t>(out_width) * c;
  // The horizontal passes of the last two source rows used: consecutive
  // output rows mostly share them.
  std::vector<int32_t> rows(2 * n);
  size_t cached[2] = {SIZE_MAX, SIZE_MAX};
  const auto row = [&](size_t y) -> const int32_t* {
    for (int slot = 0; slot < 2; ++slot) {
      if (cached[slot] == y) return rows.data() + static_cast<size_t>(slot) * n;
    }
    // An empty slot, else the lower row: rows only go down the image, so the
    // current pair never needs it.
    int slot = 0;
    if (cached[0] != SIZE_MAX && (cached[1] == SIZE_MAX || cached[1] < cached[0])) slot = 1;
    int32_t* dst = rows.data() + static_cast<size_t>(slot) * n;
    Horizontal<kChannels>(src + y * src_row, xs, channels, dst);
    cached[slot] = y;
    return dst;
  };
  constexpr int32_t kHalf = 1 << (2 * kBits - 1);
  for (const Tap& y : ys) {
    const int32_t* r0 = row(y.a);
    const int32_t* r1 = row(y.b);
    for (size_t i = 0; i < n; ++i) {
      out[i] = static_cast<uint8_t>((r0[i] * y.wa + r1[i] * y.wb + kHalf) >> (2 * kBits));
    }
    out += out_stride;
  }
}

}  // namespace

void ResizeBilinearWindow(const uint8_t* src, int src_width, int src_height, int channels,
                          int scaled_width, int scaled_height, int window_x, int window_y,
                          int out_width, int out_height, uint8_t* out, size_t out_stride) {
  switch (channels) {
    case 1:
      Resize<1>(src, src_width, src_height, channels, scaled_width, scaled_height, window_x,
                window_y, out_width, out_height, out, out_stride);
      return;
    case 3:
      Resize<3>(src, src_width, src_height, channels, scaled_width, scaled_height, window_x,
                window_y, out_width, out_height, out, out_stride);
      return;
    default:
      Resize<0>(src, src_width, src_height, channels, scaled_width, scaled_height, window_x,
                window_y, out_width, out_height, out, out_stride);
  }
}

std::vector<uint8_t> ResizeBilinear(const uint8_t* src, int src_width, int src_height, int channels,
                                    int dst_width, int dst_height) {
  const size_t row = static_cast<size_t>(dst_width) * static_cast<size_t>(channels);
  std::vector<uint8_t> out(row * static_cast<size_t>(dst_height));
  ResizeBilinearWindow(src, src_width, src_height, channels, dst_width, dst_height, 0, 0, dst_width,
                       dst_height, out.data(), row);
  return out;
}

}  // namespace gulpdb::engine
