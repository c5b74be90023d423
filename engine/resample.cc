#include "engine/resample.h"

#include <algorithm>
#include <cstddef>

namespace gulpdb::engine {
namespace {

// The two source samples of one output position and the weight of the second.
struct Tap {
  size_t a, b;
  float w;
};

// Taps of outputs first .. first + count - 1 of a `from` -> `to` resize.
std::vector<Tap> Taps(int from, int to, int first, int count) {
  std::vector<Tap> taps(static_cast<size_t>(count));
  const float ratio = static_cast<float>(from) / static_cast<float>(to);
  for (int i = 0; i < count; ++i) {
    float s = (static_cast<float>(first + i) + 0.5f) * ratio - 0.5f;
    if (s < 0) s = 0;
    int a = static_cast<int>(s);
    float w = s - static_cast<float>(a);
    if (a >= from - 1) {
      a = from - 1;
      w = 0;
    }
    taps[static_cast<size_t>(i)] = {static_cast<size_t>(a),
                                    static_cast<size_t>(std::min(a + 1, from - 1)), w};
  }
  return taps;
}

}  // namespace

void ResizeBilinearWindow(const uint8_t* src, int src_width, int src_height, int channels,
                          int scaled_width, int scaled_height, int window_x, int window_y,
                          int out_width, int out_height, uint8_t* out, size_t out_stride) {
  const std::vector<Tap> xs = Taps(src_width, scaled_width, window_x, out_width);
  const std::vector<Tap> ys = Taps(src_height, scaled_height, window_y, out_height);
  const size_t c = static_cast<size_t>(channels);
  const size_t src_row = static_cast<size_t>(src_width) * c;
  for (const Tap& y : ys) {
    const uint8_t* r0 = src + y.a * src_row;
    const uint8_t* r1 = src + y.b * src_row;
    uint8_t* o = out;
    for (const Tap& x : xs) {
      for (size_t k = 0; k < c; ++k) {
        const float top = static_cast<float>(r0[x.a * c + k]) * (1 - x.w) +
                          static_cast<float>(r0[x.b * c + k]) * x.w;
        const float bottom = static_cast<float>(r1[x.a * c + k]) * (1 - x.w) +
                             static_cast<float>(r1[x.b * c + k]) * x.w;
        *o++ = static_cast<uint8_t>(top * (1 - y.w) + bottom * y.w + 0.5f);
      }
    }
    out += out_stride;
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
