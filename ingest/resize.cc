#include "ingest/resize.h"

#include <algorithm>
#include <cstdint>

namespace gulpdb::ingest {

std::pair<int, int> ShortEdgeSize(int width, int height, int size) {
  auto scaled = [size](int a, int b) {
    return static_cast<int>(std::max<int64_t>(1, int64_t{size} * a / b));
  };
  if (height < width) return {scaled(width, height), size};
  return {size, scaled(height, width)};
}

}  // namespace gulpdb::ingest
