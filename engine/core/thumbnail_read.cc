// Dataset::ReadThumbnails (dataset.h): frames as small JPEG images for
// showing them. A JPEG frame that fits is sent as stored; a larger one is
// decoded with libjpeg's DCT scaling (the cheap way to shrink a JPEG: the
// decoder skips the high frequencies) and encoded again; H.264 frames are
// decoded, resized (engine/codec/resample.h) and encoded.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine/codec/resample.h"
#include "engine/core/dataset_impl.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"

namespace gulpdb {
namespace {

constexpr int kMaxSide = 65500;  // libjpeg's largest image side

// The shape a `height` x `width` frame is shown at: the longer side
// `max_side`, the aspect ratio kept (the other side rounded, at least 1).
// The frame's own size when it fits, or when max_side is 0.
std::pair<int, int> FitInside(int height, int width, int max_side) {
  if (max_side == 0 || (height <= max_side && width <= max_side)) return {height, width};
  const double scale = static_cast<double>(max_side) / static_cast<double>(std::max(height, width));
  const auto side = [&](int n) {
    return std::clamp(static_cast<int>(std::lround(static_cast<double>(n) * scale)), 1, max_side);
  };
  return {side(height), side(width)};
}

std::string Encode(const uint8_t* pixels, const ImageShape& shape, int quality) {
  EncodeOptions options;
  options.quality = quality;
  options.subsampling = Subsampling::k444;
  return ThreadLocalEncoder().Encode(pixels, shape.width, shape.height, shape.channels, options);
}

// The thumbnail of one stored JPEG, or nullopt when the frame fits as it is.
std::optional<std::string> JpegThumbnail(std::string_view jpeg, const ThumbnailOptions& options) {
  JpegDecoder& decoder = ThreadLocalDecoder();
  const auto* bytes = reinterpret_cast<const uint8_t*>(jpeg.data());
  const ImageShape full = decoder.OutputShape(bytes, jpeg.size());
  const int max_side = options.max_side;
  if (max_side == 0 || (full.height <= max_side && full.width <= max_side)) return std::nullopt;
  DecodeOptions decode;
  for (const int denom : {2, 4, 8}) {
    if (ScaledDimension(full.height, denom) <= max_side &&
        ScaledDimension(full.width, denom) <= max_side) {
      decode.scale_denom = denom;
      break;
    }
  }
  if (decode.scale_denom == 1) {
    // More than 8 times too large: 1/8, then the bilinear step (jpeg.h,
    // "Fixed-size output"), to the aspect-kept size.
    const auto [height, width] = FitInside(full.height, full.width, max_side);
    decode.out_height = height;
    decode.out_width = width;
    decode.resize = ResizeMode::kStretch;
  }
  ImageShape shape;
  const std::vector<uint8_t> pixels = decoder.Decode(bytes, jpeg.size(), decode, &shape);
  return Encode(pixels.data(), shape, options.quality);
}

// One decoded frame (an H.264 dataset's) as a thumbnail.
std::string PixelThumbnail(const uint8_t* pixels, const ImageShape& shape,
                           const ThumbnailOptions& options) {
  const auto [height, width] = FitInside(shape.height, shape.width, options.max_side);
  if (height == shape.height && width == shape.width) return Encode(pixels, shape, options.quality);
  const std::vector<uint8_t> small =
      engine::ResizeBilinear(pixels, shape.width, shape.height, shape.channels, width, height);
  return Encode(small.data(), ImageShape{height, width, shape.channels}, options.quality);
}

// Request r's frames, each its stored JPEG (`stored`, when `made` is
// nullopt) or the thumbnail made of it, into one buffer.
StoredFrames Assemble(const std::vector<std::optional<std::string>>& made,
                      const StoredFrames* stored, std::vector<uint32_t> indices,
                      const std::string& where) {
  const auto bytes_of = [&](size_t i) -> std::string_view {
    return made[i] ? std::string_view(*made[i]) : (*stored)[i];
  };
  size_t total = 0;
  for (size_t i = 0; i < made.size(); ++i) total += bytes_of(i).size();
  StoredFrames out;
  char* buffer = engine::DatasetAccess::AllocateBuffer(out, total);
  if (buffer == nullptr && total != 0) throw OutOfMemoryError(where + ": out of memory");
  std::vector<std::pair<size_t, size_t>>& spans = engine::DatasetAccess::Spans(out);
  size_t at = 0;
  for (size_t i = 0; i < made.size(); ++i) {
    const std::string_view frame = bytes_of(i);
    if (!frame.empty()) std::memcpy(buffer + at, frame.data(), frame.size());
    spans.emplace_back(at, frame.size());
    at += frame.size();
  }
  engine::DatasetAccess::Indices(out) = std::move(indices);
  return out;
}

// Dataset::ReadThumbnailBatch of `dataset`, whose internals are `impl`.
std::vector<StoredFrames> ThumbnailBatch(const Dataset& dataset, const engine::DatasetImpl& impl,
                                         const std::vector<FrameRequest>& requests,
                                         const ThumbnailOptions& options) {
  const auto where = [&](size_t r) {
    return "thumbnail id '" + requests[r].id + "' in " + impl.dir;
  };
  const std::string what = requests.size() == 1 ? where(0) : "thumbnails in " + impl.dir;
  if (options.max_side < 0 || options.max_side > kMaxSide) {
    throw InvalidArgumentError(what + ": max_side " + std::to_string(options.max_side) +
                               " is outside 0..65500");
  }
  if (options.quality < 1 || options.quality > 100) {
    throw InvalidArgumentError(what + ": quality " + std::to_string(options.quality) +
                               " is outside 1..100");
  }
  // Every frame of every request read at once (concurrently for a dataset
  // in an object store), then each frame's thumbnail (nullopt: the stored
  // JPEG itself) made on the decode threads.
  std::vector<std::vector<std::optional<std::string>>> made(requests.size());
  std::vector<std::pair<size_t, size_t>> jobs;  // (request, frame)
  std::vector<StoredFrames> stored;
  std::vector<DecodedFrames> pixels;
  const bool h264 = impl.codec == Codec::kH264;
  if (h264) {
    pixels = dataset.ReadBatch(requests);
  } else {
    stored = dataset.ReadJpegBatch(requests);
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    const size_t frames = h264 ? pixels[r].size() : stored[r].size();
    made[r].resize(frames);
    for (size_t i = 0; i < frames; ++i) jobs.emplace_back(r, i);
  }
  impl.DecodePool().ParallelFor(jobs.size(), [&](size_t j) {
    const auto [r, i] = jobs[j];
    try {
      made[r][i] = h264 ? PixelThumbnail(pixels[r].data(i), pixels[r].shape(i), options)
                        : JpegThumbnail(stored[r][i], options);
    } catch (const Error& e) {
      const uint32_t frame = h264 ? pixels[r].indices()[i] : stored[r].indices()[i];
      e.ThrowWithContext(where(r) + " frame " + std::to_string(frame) + ": ");
    }
  });
  std::vector<StoredFrames> out;
  out.reserve(requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    out.push_back(Assemble(made[r], h264 ? nullptr : &stored[r],
                           h264 ? pixels[r].indices() : stored[r].indices(), where(r)));
  }
  return out;
}

}  // namespace

StoredFrames Dataset::ReadThumbnails(std::string_view id, const Selection& selection,
                                     const ThumbnailOptions& options) const {
  std::vector<FrameRequest> one(1);
  one[0].id = std::string(id);
  one[0].selection = selection;
  return std::move(ReadThumbnailBatch(one, options).front());
}

std::vector<StoredFrames> Dataset::ReadThumbnailBatch(const std::vector<FrameRequest>& requests,
                                                      const ThumbnailOptions& options) const {
  return ThumbnailBatch(*this, *impl_, requests, options);
}

}  // namespace gulpdb
