// Which frames of a video to read: all of them, a Python-style slice, or a
// list of indices. Thread safety: a plain value type.
#ifndef GULPDB_SELECTION_H_
#define GULPDB_SELECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/export.h"

namespace gulpdb {

class GULPDB_EXPORT Selection {
 public:
  // Every frame, in order.
  static Selection All();
  // Python's frames[start:stop:step]: absent bounds take Python's defaults,
  // negative bounds count from the end, out-of-range bounds are clamped, a
  // negative step walks backwards. A zero step is an InvalidArgumentError.
  static Selection Slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                         std::optional<int64_t> step = std::nullopt);
  // Exactly these frames, in this order, repeats allowed; negative indices
  // count from the end. An index outside [-n, n) is an InvalidArgumentError
  // (raised by Resolve, which knows n).
  static Selection Indices(std::vector<int64_t> indices);
  // Parses "all", "", "start:stop[:step]" (parts may be empty) or "i,j,k".
  // Throws InvalidArgumentError on anything else.
  static Selection Parse(std::string_view text);

  // The frame indices this selection picks from a video of `frame_count`
  // frames. `id` only names the video in error messages.
  std::vector<uint32_t> Resolve(uint32_t frame_count, std::string_view id = {}) const;

  std::string ToString() const;

 private:
  enum class Kind { kAll, kSlice, kIndices };
  Selection() = default;

  Kind kind_ = Kind::kAll;
  std::optional<int64_t> start_, stop_, step_;
  std::vector<int64_t> indices_;
};

}  // namespace gulpdb

#endif  // GULPDB_SELECTION_H_
