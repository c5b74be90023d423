// Fixed-size decoding, the arithmetic part: which DCT scaling, which scaled
// size, which window or padding (include/gulpdb/jpeg.h, "Fixed-size output";
// PlanFrameGeometry is its public face). Pure functions, thread-safe.
#ifndef GULPDB_ENGINE_CODEC_FRAME_GEOMETRY_H_
#define GULPDB_ENGINE_CODEC_FRAME_GEOMETRY_H_

#include <cstdint>

#include "gulpdb/jpeg.h"

namespace gulpdb::engine {

// The largest output side DecodeOptions accepts (libjpeg's JPEG_MAX_DIMENSION).
inline constexpr int kMaxOutputSide = 65500;

// True when `options` ask for a fixed-size output, false for 0 × 0. Throws
// InvalidArgumentError for an output size or resize/crop settings that are not
// valid (jpeg.h lists them), and ResourceExhaustedError for an output of more
// than options.max_pixels pixels.
bool CheckOutputOptions(const DecodeOptions& options);

// The crop seed of request `request` of a batch read: crop_seed + request ×
// 0x9E3779B97F4A7C15 (mod 2^64), so request 0 keeps the caller's seed.
uint64_t RequestCropSeed(uint64_t crop_seed, uint64_t request);

// Writes the decoded `src_width` x `src_height` frame of `channels`
// interleaved channels at `src` into `out` (`shape`, `channels` per pixel)
// as `g` says: scaled, its window cut out, and zeros around it where kFit
// pads. The JPEG and H.264 paths place their frames with it.
void PlaceFrame(const uint8_t* src, int src_width, int src_height, int channels,
                const FrameGeometry& g, const ImageShape& shape, uint8_t* out);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CODEC_FRAME_GEOMETRY_H_
