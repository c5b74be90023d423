// Decoded reads of an h264 dataset (docs/h264.md, "The stored form"): the
// packets a selection needs are read as JPEG frames are (chunk_reader.h,
// ReadPacketRequests: from the keyframe at or before each selected frame
// through it, only the groups of pictures the selection touches), decoded by
// the video room (engine/video/gop_decoder.h) on the dataset's decode pool,
// one job per group of pictures, then resized, cropped or padded and laid out
// exactly as JPEG frames are (gulpdb/jpeg.h, "Fixed-size output", without
// the DCT scaling step: the bilinear resampler works from the full frame).
//
// Options that only mean something for JPEG (a DCT method other than the
// default, scale_denom other than 1) and PixelFormat::kGray are an
// InvalidArgumentError naming the dataset; kAuto and kRGB give RGB, kBGR BGR.
//
// Thread safety: as Dataset (any number of threads at once).
#ifndef GULPDB_ENGINE_CORE_H264_READ_H_
#define GULPDB_ENGINE_CORE_H264_READ_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/core/chunk_reader.h"
#include "engine/core/dataset_impl.h"

namespace gulpdb::engine {

// Where the decoded frames of a batch go: LayOut(r, indices, shape) is
// called once per request before any of its frames is decoded (every frame
// of a request has `shape`), then Data(r, i) gives frame i's bytes.
struct DecodedSink {
  std::function<void(size_t request, const std::vector<uint32_t>& indices, const ImageShape& shape)>
      lay_out;
  std::function<uint8_t*(size_t request, size_t frame)> data;
};

// Throws InvalidArgumentError for JPEG-only options (before anything is
// read), and as Dataset::ReadBatch otherwise; decoding errors name the id
// and the frame. `request_options` holds one DecodeOptions per request.
// Every packet fed to the decoder is checked as `verify` says
// (chunk_reader.h).
void ReadH264Batch(const DatasetImpl& impl, const std::vector<FrameRequest>& requests,
                   const std::vector<DecodeOptions>& request_options, const DecodedSink& sink,
                   Verify verify);

// The InvalidArgumentError ReadH264Batch throws for options that only mean
// something for JPEG frames (Dataset::CheckDecodeOptions).
void CheckH264Options(const DatasetImpl& impl, const DecodeOptions& options);

// Dataset::ReadH264Stream.
std::string ReadH264StreamOf(const DatasetImpl& impl, std::string_view id);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_H264_READ_H_
