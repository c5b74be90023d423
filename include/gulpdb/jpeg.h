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
// (TurboJPEG's TJSCALED rule; ScaledDimension computes it), or
// out_height × out_width when DecodeOptions asks for a fixed-size output, and
//   channels = 1 for PixelFormat::kGray, 3 for kRGB and kBGR,
//              and for kAuto 1 if the JPEG is grayscale, else 3.
// kAuto reproduces GulpIO2: grayscale frames come back as H×W (1 channel).
// (TurboJPEG decodes at the largest factor whose output fits these dimensions;
// for very small images a larger factor than 1/d can give the same dimensions,
// and then it is used. The shape rule holds either way.)
//
// Fixed-size output. With DecodeOptions::out_height = H and out_width = W
// (both >= 1), every frame comes out H×W×channels whatever its own size
// S_h×S_w, in three steps: scale the frame to R_h×R_w, then crop or pad that
// to H×W (FrameGeometry below holds the numbers for one frame size).
//   ResizeMode::kShortEdge  keep the aspect ratio and cover H×W: the side
//       whose ratio H/S_h or W/S_w is the larger becomes exactly H (or W), the
//       other round(S_other × that ratio) (half up; never less than the
//       output). The output is the H×W window of the scaled frame at
//       CropMode::kCenter  ((R_h - H) / 2, (R_w - W) / 2), rounded down;
//       CropMode::kRandom  (floor(u_y (R_h - H + 1)), floor(u_x (R_w - W + 1))),
//           with u_y, u_x in [0, 1) drawn from crop_seed (32 bits each, from
//           SplitMix64(crop_seed) and the value after it).
//   ResizeMode::kFit  keep the aspect ratio and fit inside H×W: the side
//       whose ratio is the smaller becomes exactly H (or W), the other
//       round(S_other × that ratio) (half up, at least 1). The scaled frame is
//       centred (offsets rounded down) on zeros (black), so the padding is
//       zero bytes on every channel.
//   ResizeMode::kStretch  R = H×W: each axis scaled on its own.
//   kFit and kStretch keep the whole frame: their crop must be kCenter.
// Scaling is bilinear, with pixel centres aligned as OpenCV's INTER_LINEAR:
// output column x of the window samples decoded column
// (x + crop_x + 0.5) × D_w / R_w - 0.5 (clamped to the image; rows the same),
// where D_w is the width the JPEG was decoded at; weights are 11-bit fixed
// point (as OpenCV's), so a value is within one level of the exact one. Decoding uses libjpeg's DCT
// scaling first: 1/d for the largest d in {8, 4, 2, 1} for which
// ceil(S_h / d) >= R_h and ceil(S_w / d) >= R_w, so that the bilinear step
// never enlarges a reduced image and, unless d is 8, shrinks by less than 2
// (where a 2-tap filter skips no pixel). Why bilinear, with the measurements
// that chose it: the resampler's notes in gulpdb's source tree.
// The output size may exceed the frame (it is then enlarged, with d = 1).
// A frame that is already H×W and needs no scaling is decoded straight into
// the output. scale_denom must be 1 when an output size is given.
// Dataset::ReadBatch decodes request r with crop_seed + r × 0x9E3779B97F4A7C15
// (mod 2^64): the frames of one request share one window position; requests
// get independent ones, and ReadFrames is request 0.
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
//                          bad encode parameters, an output size with a side
//                          outside 1..65500 or only one side set, a random
//                          crop without kShortEdge, an unknown ResizeMode or
//                          CropMode. Also CMYK/YCCK JPEGs, which this codec
//                          does not convert.
//   ResourceExhaustedError the JPEG header claims more than
//                          DecodeOptions::max_pixels pixels, or the output
//                          size is larger than that; nothing is allocated for
//                          it.
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

// How a frame is scaled to a fixed output size (see "Fixed-size output").
enum class ResizeMode {
  kShortEdge,  // keep the aspect ratio, cover the output, crop
  kFit,        // keep the aspect ratio, fit inside the output, pad with zeros
  kStretch,    // scale each axis to the output
};

// Which window of a kShortEdge-scaled frame is kept.
enum class CropMode {
  kCenter,
  kRandom,  // a window drawn from DecodeOptions::crop_seed
};

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
  // Fixed-size output (see above): every frame out_height × out_width; 0 × 0
  // (the default) keeps each frame's own size, and then resize and crop must
  // keep their defaults.
  int out_height = 0;
  int out_width = 0;
  ResizeMode resize = ResizeMode::kShortEdge;
  CropMode crop = CropMode::kCenter;
  uint64_t crop_seed = 0;  // CropMode::kRandom only
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

// Where one frame goes in a fixed-size output (see "Fixed-size output").
struct FrameGeometry {
  int scale_denom = 1;  // the DCT scaling the decoder uses: 1/scale_denom
  // The frame after scaling, before the crop or the padding.
  int scaled_height = 0;
  int scaled_width = 0;
  // kShortEdge: the output is the window of the scaled frame whose top-left
  // corner is here; 0 for kFit and kStretch.
  int crop_y = 0;
  int crop_x = 0;
  // kFit: the scaled frame's top-left corner in the output; 0 otherwise.
  int pad_top = 0;
  int pad_left = 0;
};

// The geometry of a frame of `height` × `width` pixels (as its JPEG header
// says, before any scaling) decoded with `options`, which must ask for an
// output size. Pure arithmetic: nothing is decoded. Throws
// InvalidArgumentError for a frame side < 1 or options DecodeInto would
// refuse (see Errors above), ResourceExhaustedError for an output larger than
// options.max_pixels.
GULPDB_EXPORT FrameGeometry PlanFrameGeometry(int height, int width, const DecodeOptions& options);

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
