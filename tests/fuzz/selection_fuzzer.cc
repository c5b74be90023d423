// Fuzz target: frame selections as `gulpdb extract --frames SEL` and the
// Python bindings parse them (gulpdb::Selection::Parse, selection.h), resolved
// against a frame count.
//
// Input: two bytes, little-endian, the frame count n (0..65535); the rest is
// the selection text. Properties checked:
//   - Parse returns or throws InvalidArgumentError; Resolve returns or, for
//     a list of indices only, throws OutOfRangeError;
//   - the resolved indices are exactly what Python gives for the same slice
//     or list of a sequence of n items (computed here independently, from the
//     canonical text ToString() returns, in 128-bit arithmetic), so all lie in
//     [0, n);
//   - ToString() parses back to a selection with the same resolution.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/error.h"
#include "gulpdb/selection.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr const char* kTarget = "selection";

__extension__ typedef __int128 Int;  // wide enough for any int64 bound and step

struct Resolved {
  bool out_of_range = false;
  std::vector<uint32_t> indices;
};

Resolved Resolve(const gulpdb::Selection& s, uint32_t n) {
  Resolved r;
  try {
    r.indices = s.Resolve(n, "fuzz");
  } catch (const gulpdb::OutOfRangeError&) {
    r.out_of_range = true;
  }
  return r;
}

// A decimal integer as ToString() writes it (std::to_string of an int64).
Int ParseCanonical(std::string_view s) {
  FUZZ_CHECK(kTarget, !s.empty(), "an empty number in canonical text");
  bool negative = s.front() == '-';
  if (negative) s.remove_prefix(1);
  FUZZ_CHECK(kTarget, !s.empty() && s.size() <= 19, "not a canonical number: " + std::string(s));
  Int v = 0;
  for (char c : s) {
    FUZZ_CHECK(kTarget, c >= '0' && c <= '9', "not a canonical number: " + std::string(s));
    v = v * 10 + (c - '0');
  }
  return negative ? -v : v;
}

// Python's slice.indices(n) followed by range(), and list indexing.
Resolved Expected(const std::string& canonical, uint32_t n) {
  Resolved r;
  const Int len = n;
  if (canonical == "all") {
    for (uint32_t i = 0; i < n; ++i) r.indices.push_back(i);
    return r;
  }
  if (canonical.find(':') == std::string::npos) {
    size_t begin = 0;
    for (;;) {
      const size_t comma = canonical.find(',', begin);
      Int i = ParseCanonical(std::string_view(canonical).substr(
          begin, comma == std::string::npos ? std::string::npos : comma - begin));
      if (i < 0) i += len;
      if (i < 0 || i >= len) {
        r.out_of_range = true;
        r.indices.clear();
        return r;
      }
      r.indices.push_back(static_cast<uint32_t>(i));
      if (comma == std::string::npos) return r;
      begin = comma + 1;
    }
  }
  std::optional<Int> part[3];
  size_t begin = 0;
  for (int k = 0; k < 3; ++k) {
    const size_t colon = canonical.find(':', begin);
    const std::string_view text = std::string_view(canonical).substr(
        begin, colon == std::string::npos ? std::string::npos : colon - begin);
    if (!text.empty()) part[k] = ParseCanonical(text);
    if (colon == std::string::npos) break;
    begin = colon + 1;
  }
  const Int step = part[2].value_or(1);
  FUZZ_CHECK(kTarget, step != 0, "a zero step was accepted: " + canonical);
  auto adjust = [&](std::optional<Int> bound, bool is_start) -> Int {
    if (!bound) return is_start ? (step < 0 ? len - 1 : 0) : (step < 0 ? -1 : len);
    Int v = *bound;
    if (v < 0) {
      v += len;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= len) {
      v = step < 0 ? len - 1 : len;
    }
    return v;
  };
  const Int start = adjust(part[0], true);
  const Int stop = adjust(part[1], false);
  Int count = 0;
  if (step > 0 && start < stop) count = (stop - start - 1) / step + 1;
  if (step < 0 && stop < start) count = (start - stop - 1) / (-step) + 1;
  for (Int i = 0; i < count; ++i) r.indices.push_back(static_cast<uint32_t>(start + i * step));
  return r;
}

std::string Show(const Resolved& r) {
  if (r.out_of_range) return "out of range";
  std::string s = "[";
  for (size_t i = 0; i < r.indices.size() && i < 20; ++i) {
    s += (i == 0 ? "" : ", ") + std::to_string(r.indices[i]);
  }
  return s + (r.indices.size() > 20 ? ", ...]" : "]") + " (" + std::to_string(r.indices.size()) +
         " indices)";
}

}  // namespace

extern "C" int GULPDB_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint32_t n = static_cast<uint32_t>(data[0] | (data[1] << 8));
  const std::string_view text = gulpdb::fuzz::AsText(data + 2, size - 2);

  std::optional<gulpdb::Selection> selection;
  try {
    selection = gulpdb::Selection::Parse(text);
  } catch (const gulpdb::InvalidArgumentError&) {
    return 0;
  }
  const std::string canonical = selection->ToString();
  const Resolved got = Resolve(*selection, n);
  const Resolved want = Expected(canonical, n);
  FUZZ_CHECK(kTarget, got.out_of_range == want.out_of_range && got.indices == want.indices,
             "'" + std::string(text) + "' (" + canonical + ") of " + std::to_string(n) +
                 " frames resolves to " + Show(got) + ", Python gives " + Show(want));
  for (uint32_t i : got.indices) FUZZ_CHECK(kTarget, i < n, "index " + std::to_string(i));

  std::optional<gulpdb::Selection> again;
  try {
    again = gulpdb::Selection::Parse(canonical);
  } catch (const gulpdb::InvalidArgumentError& e) {
    gulpdb::fuzz::Fail(kTarget, "ToString() '" + canonical + "' does not parse: " + e.what());
  }
  const Resolved round = Resolve(*again, n);
  FUZZ_CHECK(kTarget, round.out_of_range == got.out_of_range && round.indices == got.indices,
             "'" + canonical + "' resolves differently after a round trip");
  return 0;
}
