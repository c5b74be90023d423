#include "ingest/jpeg_files.h"

#include <string_view>

#include "engine/codec/resample.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "ingest/resize.h"
#include "util/file_io.h"

namespace gulpdb::ingest {

std::vector<std::string> LoadJpegFiles(const std::vector<std::string>& paths,
                                       const FrameSettings& settings) {
  std::vector<std::string> frames;
  frames.reserve(paths.size());
  JpegDecoder& decoder = ThreadLocalDecoder();
  DecodeOptions decode;
  decode.dct = DctMethod::kAccurate;
  for (const std::string& path : paths) {
    util::RequireUsableEntry(path, "read");  // says why a link cannot be read
    std::string bytes = util::ReadFile(path);
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    try {
      if (settings.keep_jpeg) {
        decoder.OutputShape(data, bytes.size(), decode);
        frames.push_back(std::move(bytes));
        continue;
      }
      ImageShape shape;
      std::vector<uint8_t> pixels = decoder.Decode(data, bytes.size(), decode, &shape);
      if (settings.frame_size > 0) {
        const auto [w, h] = ShortEdgeSize(shape.width, shape.height, settings.frame_size);
        pixels =
            engine::ResizeBilinear(pixels.data(), shape.width, shape.height, shape.channels, w, h);
        shape.width = w;
        shape.height = h;
      }
      frames.push_back(ThreadLocalEncoder().Encode(pixels.data(), shape.width, shape.height,
                                                   shape.channels, settings.encode));
    } catch (const Error& e) {
      std::string_view detail = e.what();
      for (std::string_view prefix : {"decode jpeg: ", "encode jpeg: "}) {
        if (detail.substr(0, prefix.size()) == prefix) detail.remove_prefix(prefix.size());
      }
      e.ThrowWithMessage("decode " + path + ": " + std::string(detail));
    }
  }
  return frames;
}

}  // namespace gulpdb::ingest
