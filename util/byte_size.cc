#include "util/byte_size.h"

#include <string>

namespace gulpdb::util {

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  uint64_t n = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (n > (uint64_t{1} << 50)) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i == 0) return std::nullopt;
  std::string unit(text.substr(i));
  if (unit.size() == 3 && unit.compare(1, 2, "iB") == 0) unit = unit.substr(0, 1);
  int shift = 0;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "K" || unit == "k") {
    shift = 10;
  } else if (unit == "M") {
    shift = 20;
  } else if (unit == "G") {
    shift = 30;
  } else if (unit == "T") {
    shift = 40;
  } else {
    return std::nullopt;
  }
  if (shift != 0 && n > (uint64_t{1} << (60 - shift))) return std::nullopt;
  return n << shift;
}

}  // namespace gulpdb::util
