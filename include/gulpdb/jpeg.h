// JPEG decoding and encoding for gulpdb frames.
//
// Frames are stored as JPEG bytes; this is the one place that turns them into
// pixels and back. Decoding writes straight into a caller-owned buffer, so a
// batch of frames can be decoded in parallel into one N×H×W×C array.
//
// Pixel layout: rows top to bottom, tightly packed (no row padding), channels
// interleaved — an H×W×C C-contiguous uint8 array, the layout NumPy and the
// GulpIO readers use. RGB order unless PixelFormat::kBGR is asked for.
//
// Output shape rule. For a JPEG of `width`×`height` pixels decoded with
// scale_denom d (1, 2, 4 or 8):
//   out_height = ceil(height / d), out_width = ceil(width / d)
// (TurboJPEG's TJSCALED rule; ScaledDimension computes it), and
//   channels = 1 for PixelFormat::kGray, 3 for kRGB and kBGR,
//              and for kAuto 1 if the JPEG is grayscale, else 3.
// kAuto reproduces GulpIO2: grayscale frames come back as H×W (1 channel).
// (TurboJPEG decodes at the largest factor whose output fits these dimensions;
// for very small images a larger factor than 1/d can give the same dimensions,
// and then it is used. The shape rule holds either way.)
//
// Errors (all derived from gulpdb::Error, message "decode jpeg: <detail>" or
// "encode jpeg: <detail>"):
//   CorruptionError        the bytes are not a decodable JPEG: empty, truncated,
//                          random, tables only, bad entropy data. By default a
//                          libjpeg *warning* ("Corrupt JPEG data: ...") is an
//                          error too, because the pixels would be silently
//                          wrong; DecodeOptions::lenient accepts warnings.
//   InvalidArgumentError   a caller mistake: a null buffer, an out_size that is
//                          not OutputShape().bytes(), an unsupported scale,
//                          bad encode parameters. Also CMYK/YCCK JPEGs, which
//                          this codec does not convert.
//   ResourceExhaustedError the JPEG header claims more than
//                          DecodeOptions::max_pixels pixels; nothing is
//                          allocated for it.
// On any error the contents of a caller's output buffer are unspecified.
//
// Thread safety: a JpegDecoder or JpegEncoder is NOT thread-safe (it owns one
// TurboJPEG instance with mutable state); distinct objects may be used from
// distinct threads at once. ThreadLocalDecoder()/ThreadLocalEncoder() hand each
// thread its own. The free functions are thread-safe.
#ifndef GULPDB_JPEG_H_
#define GULPDB_JPEG_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gulpdb/export.h"

namespace gulpdb {

enum class PixelFormat {
  kAuto,  // 1 channel for grayscale JPEGs, RGB otherwise (what GulpIO2 returns)
  kRGB,
  kBGR,
  kGray,  // colour JPEGs are reduced to their luma channel
};

enum class DctMethod {
  kFast,      // fast IDCT + fast upsampling: GulpIO2's setting, bit-identical to its pixels
  kAccurate,  // libjpeg's defaults (accurate IDCT, smooth upsampling): GulpIO, OpenCV, Pillow
};

// Decoding refuses JPEGs whose header claims more pixels (width × height of the
// source image, before scaling) than this: 2^27, e.g. 16384×8192. A corrupt or
// hostile header can claim up to 65535×65535 and would make libjpeg allocate
// gigabytes.
inline constexpr uint64_t kDefaultMaxJpegPixels = uint64_t{1} << 27;

struct DecodeOptions {
  PixelFormat format = PixelFormat::kAuto;
  DctMethod dct = DctMethod::kFast;
  // Decode at 1/scale_denom of the size, using libjpeg's DCT scaling (cheaper
  // than a full decode). 1, 2, 4 or 8.
  int scale_denom = 1;
  // Accept images for which libjpeg only warns (corrupt entropy data, missing
  // end of data): the damaged region decodes as flat gray/garbage. Fatal errors
  // still throw. An image that draws a warning is decoded twice, which is how a
  // warning is told apart from a fatal error that follows it.
  bool lenient = false;
  uint64_t max_pixels = kDefaultMaxJpegPixels;
};

struct ImageShape {
  int height = 0;
  int width = 0;
  int channels = 0;

  // Number of bytes of the decoded image: height × width × channels.
  size_t bytes() const {
    return static_cast<size_t>(height) * static_cast<size_t>(width) * static_cast<size_t>(channels);
  }
  friend bool operator==(const ImageShape& a, const ImageShape& b) {
    return a.height == b.height && a.width == b.width && a.channels == b.channels;
  }
  friend bool operator!=(const ImageShape& a, const ImageShape& b) { return !(a == b); }
};

// Chroma subsampling of an encoded JPEG.
enum class Subsampling { k444, k422, k420, kGray };

struct EncodeOptions {
  int quality = 90;                             // 1..100
  Subsampling subsampling = Subsampling::k444;  // ignored for 1-channel input
};

// Size of one dimension after decoding at 1/scale_denom: ceil(dimension /
// scale_denom), from TurboJPEG's own scaling-factor table. Throws
// InvalidArgumentError if scale_denom is not 1, 2, 4 or 8 or dimension < 1.
GULPDB_EXPORT int ScaledDimension(int dimension, int scale_denom);

// Decodes JPEG images with one TurboJPEG decompressor.
//
// Move-only. Each call creates its own TurboJPEG instance and drops it when
// it returns (so constructing one never fails): libjpeg carries tables and
// error state from one image to the next, and a call's result must not depend
// on what the decoder decoded before. Inputs are only read during a call and
// never retained.
class GULPDB_EXPORT JpegDecoder {
 public:
  JpegDecoder() noexcept;
  ~JpegDecoder();
  JpegDecoder(JpegDecoder&&) noexcept;
  JpegDecoder& operator=(JpegDecoder&&) noexcept;
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Reads only the header of `jpeg` and returns the shape DecodeInto would
  // produce with `options` (see the shape rule above). Cheap: no pixel data is
  // decoded. Throws as described at the top of this file; with the default
  // (strict) options a header that only draws a warning also throws.
  ImageShape OutputShape(const uint8_t* jpeg, size_t size, const DecodeOptions& options = {});

  // Decodes `jpeg` into `out`, which must hold exactly
  // OutputShape(jpeg, size, options).bytes() bytes (else InvalidArgumentError,
  // and nothing is decoded). `out` is caller-owned; on error its contents are
  // unspecified.
  void DecodeInto(const uint8_t* jpeg, size_t size, const DecodeOptions& options, uint8_t* out,
                  size_t out_size);

  // Convenience: allocates and returns the pixels, and stores their shape in
  // `*shape` if `shape` is not null.
  std::vector<uint8_t> Decode(const uint8_t* jpeg, size_t size, const DecodeOptions& options = {},
                              ImageShape* shape = nullptr);

 private:
  struct HandleDeleter {
    void operator()(void* handle) const noexcept;
  };
  void* Handle();  // creates the instance on first use

  std::unique_ptr<void, HandleDeleter> handle_;
};

// Encodes images with one TurboJPEG compressor. Move-only, lazily created,
// like JpegDecoder.
class GULPDB_EXPORT JpegEncoder {
 public:
  JpegEncoder() noexcept;
  ~JpegEncoder();
  JpegEncoder(JpegEncoder&&) noexcept;
  JpegEncoder& operator=(JpegEncoder&&) noexcept;
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // Encodes `pixels`, a tightly packed height × width × channels image
  // (channels 1 = gray, 3 = RGB order), and returns the JPEG bytes. A
  // 1-channel image always gives a grayscale JPEG; a 3-channel image with
  // Subsampling::kGray gives a grayscale JPEG of its luma. Baseline JPEG, the
  // encoder GulpIO2 uses (TurboJPEG defaults; fast DCT below quality 96).
  // Throws InvalidArgumentError for a null `pixels`, width or height outside
  // 1..65500, channels other than 1 or 3, or quality outside 1..100.
  std::string Encode(const uint8_t* pixels, int width, int height, int channels,
                     const EncodeOptions& options = {});

 private:
  struct HandleDeleter {
    void operator()(void* handle) const noexcept;
  };
  void* Handle();

  std::unique_ptr<void, HandleDeleter> handle_;
};

// The calling thread's own decoder/encoder, created on first use and destroyed
// when the thread exits. Never hand the reference to another thread.
GULPDB_EXPORT JpegDecoder& ThreadLocalDecoder();
GULPDB_EXPORT JpegEncoder& ThreadLocalEncoder();

}  // namespace gulpdb

#endif  // GULPDB_JPEG_H_
