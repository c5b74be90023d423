// The codec's entry for the engine's decoded reads, beside the public
// JpegDecoder (include/gulpdb/jpeg.h), whose errors and shape rule it shares.
// Thread-safe: each call uses a TurboJPEG instance of its own.
#ifndef GULPDB_ENGINE_CODEC_JPEG_CODEC_H_
#define GULPDB_ENGINE_CODEC_JPEG_CODEC_H_

#include <cstddef>
#include <cstdint>

#include "gulpdb/jpeg.h"

namespace gulpdb::engine {

// Decodes `jpeg` into `out` (expected.bytes() bytes) when its output shape
// with `options` is `expected`, reading the header once; returns false, with
// nothing decoded and `out` untouched, when the shape differs. Otherwise as
// JpegDecoder::DecodeInto: the same errors (a header error is thrown before
// the shape is compared), the same pixels. This saves a reader that expects
// every frame of a video to have one shape the separate OutputShape pass
// (a second TurboJPEG instance and header parse per frame).
bool DecodeIntoIfShape(const uint8_t* jpeg, size_t size, const DecodeOptions& options,
                       const ImageShape& expected, uint8_t* out);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CODEC_JPEG_CODEC_H_
