#include "ingest/resize.h"

#include <algorithm>
#include <cstddef>

namespace gulpdb::ingest {

std::pair<int, int> ShortEdgeSize(int width, int height, int size) {
  auto scaled = [size](int a, int b) {
    return static_cast<int>(std::max<int64_t>(1, int64_t{size} * a / b));
  };
  if (height < width) return {scaled(width, height), size};
  return {size, scaled(height, width)};
}

std::vector<uint8_t> ResizeBilinear(const uint8_t* src, int sw, int sh, int channels, int dw,
                                    int dh) {
  struct Tap {
    size_t a, b;
    float w;
  };
  auto taps = [](int from, int to) {
    std::vector<Tap> t(static_cast<size_t>(to));
    const float ratio = static_cast<float>(from) / static_cast<float>(to);
    for (int i = 0; i < to; ++i) {
      float s = (static_cast<float>(i) + 0.5f) * ratio - 0.5f;
      if (s < 0) s = 0;
      int a = static_cast<int>(s);
      float w = s - static_cast<float>(a);
      if (a >= from - 1) {
        a = from - 1;
        w = 0;
      }
      t[static_cast<size_t>(i)] = {static_cast<size_t>(a),
                                   static_cast<size_t>(std::min(a + 1, from - 1)), w};
    }
    return t;
  };
  const std::vector<Tap> xs = taps(sw, dw), ys = taps(sh, dh);
  const size_t c = static_cast<size_t>(channels);
  const size_t src_row = static_cast<size_t>(sw) * c;
  std::vector<uint8_t> out(static_cast<size_t>(dw) * static_cast<size_t>(dh) * c);
  uint8_t* o = out.data();
  for (const Tap& y : ys) {
    const uint8_t* r0 = src + y.a * src_row;
    const uint8_t* r1 = src + y.b * src_row;
    for (const Tap& x : xs) {
      for (size_t k = 0; k < c; ++k) {
        const float top = static_cast<float>(r0[x.a * c + k]) * (1 - x.w) +
                          static_cast<float>(r0[x.b * c + k]) * x.w;
        const float bottom = static_cast<float>(r1[x.a * c + k]) * (1 - x.w) +
                             static_cast<float>(r1[x.b * c + k]) * x.w;
        *o++ = static_cast<uint8_t>(top * (1 - y.w) + bottom * y.w + 0.5f);
      }
    }
  }
  return out;
}

}  // namespace gulpdb::ingest
