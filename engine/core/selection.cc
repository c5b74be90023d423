#include "gulpdb/selection.h"

#include <charconv>

#include "gulpdb/error.h"

namespace gulpdb {
namespace {

// Python's PySlice_AdjustIndices for one bound.
int64_t AdjustBound(std::optional<int64_t> bound, int64_t n, int64_t step, bool is_start) {
  if (!bound) {
    if (is_start) return step < 0 ? n - 1 : 0;
    return step < 0 ? -1 : n;
  }
  int64_t v = *bound;
  if (v < 0) {
    v += n;
    if (v < 0) v = step < 0 ? -1 : 0;
  } else if (v >= n) {
    v = step < 0 ? n - 1 : n;
  }
  return v;
}

int64_t ParseInt(std::string_view text, std::string_view whole) {
  int64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && text.front() == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range && ptr == last) {
    throw InvalidArgumentError("parse frame selection '" + std::string(whole) + "': '" +
                               std::string(text) + "' is out of range (frame indices are " +
                               "64-bit integers)");
  }
  if (ec != std::errc() || ptr != last || first == last) {
    throw InvalidArgumentError("parse frame selection '" + std::string(whole) + "': '" +
                               std::string(text) + "' is not an integer");
  }
  return value;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

Selection Selection::All() { return Selection(); }

Selection Selection::Slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                           std::optional<int64_t> step) {
  if (step && *step == 0) throw InvalidArgumentError("frame slice: step cannot be zero");
  Selection s;
  s.kind_ = Kind::kSlice;
  s.start_ = start;
  s.stop_ = stop;
  s.step_ = step;
  return s;
}

Selection Selection::Indices(std::vector<int64_t> indices) {
  Selection s;
  s.kind_ = Kind::kIndices;
  s.indices_ = std::move(indices);
  return s;
}

Selection Selection::Parse(std::string_view text) {
  const std::string_view t = Trim(text);
  if (t.empty() || t == "all" || t == ":") return All();
  if (t.find(':') != std::string_view::npos) {
    std::optional<int64_t> parts[3];
    size_t begin = 0;
    for (int i = 0; i < 3; ++i) {
      const size_t colon = t.find(':', begin);
      const std::string_view part =
          Trim(t.substr(begin, colon == std::string_view::npos ? t.npos : colon - begin));
      if (!part.empty()) parts[i] = ParseInt(part, text);
      if (colon == std::string_view::npos) break;
      if (i == 2) {
        throw InvalidArgumentError("parse frame selection '" + std::string(text) +
                                   "': a slice has at most three parts");
      }
      begin = colon + 1;
    }
    return Slice(parts[0], parts[1], parts[2]);
  }
  std::vector<int64_t> indices;
  size_t begin = 0;
  for (;;) {
    const size_t comma = t.find(',', begin);
    indices.push_back(
        ParseInt(Trim(t.substr(begin, comma == t.npos ? t.npos : comma - begin)), text));
    if (comma == t.npos) break;
    begin = comma + 1;
  }
  return Indices(std::move(indices));
}

std::vector<uint32_t> Selection::Resolve(uint32_t frame_count, std::string_view id) const {
  const int64_t n = frame_count;
  std::vector<uint32_t> out;
  switch (kind_) {
    case Kind::kAll:
      out.resize(frame_count);
      for (uint32_t i = 0; i < frame_count; ++i) out[i] = i;
      break;
    case Kind::kSlice: {
      const int64_t step = step_.value_or(1);
      const int64_t start = AdjustBound(start_, n, step, true);
      const int64_t stop = AdjustBound(stop_, n, step, false);
      // Stops before stepping past `stop`: with a step near the int64 limits
      // i + step would overflow.
      if (step > 0) {
        for (int64_t i = start; i < stop; i += step) {
          out.push_back(static_cast<uint32_t>(i));
          if (step > stop - i) break;
        }
      } else {
        for (int64_t i = start; i > stop; i += step) {
          out.push_back(static_cast<uint32_t>(i));
          if (step < stop - i) break;
        }
      }
      break;
    }
    case Kind::kIndices:
      out.reserve(indices_.size());
      for (int64_t index : indices_) {
        const int64_t i = index < 0 ? index + n : index;
        if (i < 0 || i >= n) {
          throw OutOfRangeError("select frames of " + std::string(id) + ": index " +
                                std::to_string(index) + " is out of range for " +
                                std::to_string(n) + " frames");
        }
        out.push_back(static_cast<uint32_t>(i));
      }
      break;
  }
  return out;
}

std::string Selection::ToString() const {
  auto bound = [](const std::optional<int64_t>& b) { return b ? std::to_string(*b) : ""; };
  switch (kind_) {
    case Kind::kAll:
      return "all";
    case Kind::kSlice:
      return bound(start_) + ":" + bound(stop_) + (step_ ? ":" + bound(step_) : "");
    case Kind::kIndices: {
      std::string s;
      for (size_t i = 0; i < indices_.size(); ++i) {
        if (i != 0) s += ",";
        s += std::to_string(indices_[i]);
      }
      return s;
    }
  }
  return "all";
}

}  // namespace gulpdb
