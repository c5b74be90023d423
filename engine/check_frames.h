// The frame checks of `gulpdb check` (check.cc): one video's frames read
// from its chunk (a file, or the object a published manifest names) and
// checked for what a reader would trip on: bytes past the committed length,
// JPEG markers, pad bytes, and, in deep mode, CRC-32Cs and decoding (an
// H.264 video's groups of pictures decoded whole).
//
// Thread safety: Check may run on many threads at once (check runs it on
// the decode pool); `problem` must be thread-safe.
#ifndef GULPDB_ENGINE_CHECK_FRAMES_H_
#define GULPDB_ENGINE_CHECK_FRAMES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/chunk_bytes.h"
#include "gulpdb/dataset.h"
#include "index/records.h"

namespace gulpdb::engine {

// A chunk as check sees it: its record, its bytes, and what its videos add up to.
struct CheckedChunk {
  index::ChunkRecord record;
  // The file, or the object of a remote dataset; null when it cannot be opened.
  std::shared_ptr<const ChunkBytes> file;
  uint64_t size = 0;
  uint32_t live_videos = 0;  // recomputed from the video records
  uint64_t live_bytes = 0;
  uint32_t unverified_videos = 0;  // videos with frames but no CRC-32C
};

class FrameChecker {
 public:
  // problem(where, what, frame): one problem; `frame` when it is one frame's.
  using Problem =
      std::function<void(std::string where, std::string what, std::optional<size_t> frame)>;
  FrameChecker(Codec codec, bool deep, Problem problem)
      : codec_(codec), deep_(deep), problem_(std::move(problem)) {}

  // Checks the frames of video `id` (stored as `record`) in `chunk`.
  void Check(const std::string& id, const index::VideoRecord& record,
             const CheckedChunk& chunk) const;

 private:
  void CheckGops(const std::function<std::string(size_t)>& where, const std::string& id,
                 const index::VideoRecord& record, const std::vector<std::string>& packets,
                 const std::vector<bool>& packet_ok) const;
  bool CheckFrame(const std::string& where, size_t frame, std::string_view bytes,
                  const FrameInfo& f, const uint32_t* crc32c, bool h264) const;
  void Report(std::string where, std::string what,
              std::optional<size_t> frame = std::nullopt) const {
    problem_(std::move(where), std::move(what), frame);
  }

  Codec codec_;
  bool deep_;
  Problem problem_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CHECK_FRAMES_H_
