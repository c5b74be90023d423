// The JPEG codec over TurboJPEG 2.1 (the tj* API; Debian 12 has no tj3*).
//
// This is the only file of the library that includes <turbojpeg.h>. Every
// TurboJPEG failure becomes a gulpdb::Error in ThrowTurboJpegError. TurboJPEG
// reports errors with return codes (it uses setjmp/longjmp internally and never
// calls back into our code), so no exception ever crosses C frames.
#include "engine/codec/jpeg_codec.h"

#include <turbojpeg.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/codec/frame_geometry.h"
#include "engine/codec/resample.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"

namespace gulpdb {
namespace {

static_assert(sizeof(unsigned long) >= sizeof(size_t),  // NOLINT(runtime/int): TurboJPEG's type
              "TurboJPEG sizes are unsigned long; a size_t must fit");

// libjpeg's JPEG_MAX_DIMENSION: the largest width or height it will encode.
constexpr int kMaxEncodeDimension = 65500;

// TurboJPEG 2.1 rejects progressive JPEGs with more than 500 scans with this
// flag; without it a tiny file can make the decoder spin for minutes.
constexpr int kBaseDecodeFlags = TJFLAG_LIMITSCANS;

enum class TjOperation { kCreate, kDecode, kEncode };

// What TurboJPEG said about its last failure on `handle`.
struct TjStatus {
  bool warning = false;  // tjGetErrorCode() == TJERR_WARNING
  std::string message;
};

// Reads the error state of `handle` (or TurboJPEG's thread-local error string
// when `handle` is null). Call once per failure: tjGetErrorStr2 clears the
// instance error flag.
TjStatus LastStatus(tjhandle handle) {
  TjStatus status;
  status.warning = handle != nullptr && tjGetErrorCode(handle) == TJERR_WARNING;
  const char* message = tjGetErrorStr2(handle);
  status.message = message != nullptr ? message : "unknown TurboJPEG error";
  return status;
}

// The one place where a TurboJPEG failure becomes a typed error.
[[noreturn]] void ThrowTurboJpegError(TjOperation operation, const TjStatus& status) {
  switch (operation) {
    case TjOperation::kCreate:
      // tjInit* fails only when it cannot allocate its instance.
      throw OutOfMemoryError("create turbojpeg instance: " + status.message);
    case TjOperation::kDecode:
      if (status.warning) {
        throw CorruptionError("decode jpeg: " + status.message +
                              " (a libjpeg warning; DecodeOptions::lenient accepts it)");
      }
      throw CorruptionError("decode jpeg: " + status.message);
    case TjOperation::kEncode:
      // Arguments are validated before tjCompress2, so what is left is the
      // image the caller gave us.
      throw InvalidArgumentError("encode jpeg: " + status.message);
  }
  throw CorruptionError("turbojpeg: " + status.message);
}

// The scaling factor 1/scale_denom from TurboJPEG's own table, so that our
// shape rule is TurboJPEG's.
tjscalingfactor ScalingFactor(int scale_denom) {
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  if (scale_denom == 1 || scale_denom == 2 || scale_denom == 4 || scale_denom == 8) {
    for (int i = 0; factors != nullptr && i < count; ++i) {
      if (factors[i].num == 1 && factors[i].denom == scale_denom) return factors[i];
    }
  }
  throw InvalidArgumentError("decode jpeg: scale_denom must be 1, 2, 4 or 8, got " +
                             std::to_string(scale_denom));
}

int Scaled(int dimension, const tjscalingfactor& factor) { return TJSCALED(dimension, factor); }

// Everything decided before pixels are decoded: validated options, the header,
// the output shape and TurboJPEG's arguments.
struct DecodePlan {
  ImageShape shape;    // what the caller gets
  ImageShape decoded;  // what TurboJPEG produces; shape unless fixed_size
  int pixel_format = TJPF_RGB;
  int flags = 0;
  bool fixed_size = false;  // DecodeOptions ask for an output size
  FrameGeometry geometry;   // when fixed_size

  // Fixed-size output that is the decoded frame itself.
  bool identity() const {
    return !fixed_size ||
           (decoded.height == shape.height && decoded.width == shape.width &&
            geometry.scaled_height == shape.height && geometry.scaled_width == shape.width);
  }
};

DecodePlan Plan(tjhandle handle, const uint8_t* jpeg, size_t size, const DecodeOptions& options) {
  DecodePlan plan;
  switch (options.dct) {
    case DctMethod::kFast:
      plan.flags = kBaseDecodeFlags | TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE;
      break;
    case DctMethod::kAccurate:
      plan.flags = kBaseDecodeFlags | TJFLAG_ACCURATEDCT;
      break;
    default:
      throw InvalidArgumentError("decode jpeg: unknown DctMethod");
  }
  const tjscalingfactor factor = ScalingFactor(options.scale_denom);
  plan.fixed_size = engine::CheckOutputOptions(options);
  if (jpeg == nullptr && size != 0) throw InvalidArgumentError("decode jpeg: null input buffer");
  if (size == 0) throw CorruptionError("decode jpeg: empty input (0 bytes)");

  // tjDecompressHeader3 leaves the outputs untouched for a tables-only stream.
  int width = 0;
  int height = 0;
  int subsampling = -1;
  int colorspace = -1;
  if (tjDecompressHeader3(handle, jpeg, static_cast<unsigned long>(size), &width, &height,
                          &subsampling, &colorspace) != 0) {
    TjStatus status = LastStatus(handle);
    // TurboJPEG keeps reporting TJERR_WARNING when a fatal error follows a
    // warning. Only a warning leaves a complete header behind, so the outputs
    // tell the two apart.
    status.warning =
        status.warning && width > 0 && height > 0 && subsampling >= 0 && colorspace >= 0;
    if (!status.warning || !options.lenient) ThrowTurboJpegError(TjOperation::kDecode, status);
  }
  if (width <= 0 || height <= 0) {
    throw CorruptionError("decode jpeg: no image in the datastream (tables only)");
  }
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    throw InvalidArgumentError("decode jpeg: CMYK/YCCK JPEGs are not supported");
  }
  const uint64_t pixels = static_cast<uint64_t>(width) * static_cast<uint64_t>(height);
  if (pixels > options.max_pixels) {
    throw OutOfMemoryError("decode jpeg: image of " + std::to_string(width) + "x" +
                           std::to_string(height) + " pixels exceeds the limit of " +
                           std::to_string(options.max_pixels) +
                           " pixels (DecodeOptions::max_pixels)");
  }

  switch (options.format) {
    case PixelFormat::kAuto:
      plan.pixel_format = colorspace == TJCS_GRAY ? TJPF_GRAY : TJPF_RGB;
      break;
    case PixelFormat::kRGB:
      plan.pixel_format = TJPF_RGB;
      break;
    case PixelFormat::kBGR:
      plan.pixel_format = TJPF_BGR;
      break;
    case PixelFormat::kGray:
      plan.pixel_format = TJPF_GRAY;
      break;
    default:
      throw InvalidArgumentError("decode jpeg: unknown PixelFormat");
  }
  plan.shape.channels = tjPixelSize[plan.pixel_format];
  plan.decoded.channels = plan.shape.channels;
  if (plan.fixed_size) {
    plan.geometry = PlanFrameGeometry(height, width, options);
    const tjscalingfactor reduced = ScalingFactor(plan.geometry.scale_denom);
    plan.decoded.height = Scaled(height, reduced);
    plan.decoded.width = Scaled(width, reduced);
    plan.shape.height = options.out_height;
    plan.shape.width = options.out_width;
  } else {
    plan.shape.height = Scaled(height, factor);
    plan.shape.width = Scaled(width, factor);
    plan.decoded = plan.shape;
  }
  return plan;
}

int DecompressOnce(tjhandle handle, const uint8_t* jpeg, size_t size, const DecodePlan& plan,
                   uint8_t* out, int extra_flags) {
  // Asking for exactly the scaled size makes TurboJPEG pick a factor whose
  // output has exactly these dimensions; pitch 0 means tightly packed rows.
  return tjDecompress2(handle, jpeg, static_cast<unsigned long>(size), out, plan.decoded.width,
                       /*pitch=*/0, plan.decoded.height, plan.pixel_format,
                       plan.flags | extra_flags);
}

// Decodes into `out`, which holds plan.decoded.bytes().
void DecompressDecoded(tjhandle handle, const uint8_t* jpeg, size_t size, const DecodePlan& plan,
                       bool lenient, uint8_t* out) {
  if (DecompressOnce(handle, jpeg, size, plan, out, TJFLAG_STOPONWARNING) == 0) return;
  const TjStatus strict = LastStatus(handle);
  if (!lenient || !strict.warning) ThrowTurboJpegError(TjOperation::kDecode, strict);

  // Lenient and the image draws a warning: decode again without stopping.
  // TurboJPEG 2.1 still returns -1 and keeps reporting TJERR_WARNING even if a
  // fatal error follows the warning (and the output is then incomplete). libjpeg
  // formats only the first warning of an image, while a fatal error overwrites
  // the message, so an unchanged message means there were only warnings.
  if (DecompressOnce(handle, jpeg, size, plan, out, 0) == 0) return;
  const TjStatus relaxed = LastStatus(handle);
  if (relaxed.warning && relaxed.message == strict.message) return;
  TjStatus fatal = relaxed;
  fatal.warning = false;
  ThrowTurboJpegError(TjOperation::kDecode, fatal);
}

// Decoded frames wait here to be resized; reused by the thread's next frame,
// unless larger than this.
constexpr size_t kMaxKeptScratch = size_t{16} << 20;

// Decodes into `out`, which holds plan.shape.bytes(): straight, or into a
// scratch buffer first, then scaled and cropped or padded into `out`.
void Decompress(tjhandle handle, const uint8_t* jpeg, size_t size, const DecodePlan& plan,
                bool lenient, uint8_t* out) {
  if (plan.identity()) {
    DecompressDecoded(handle, jpeg, size, plan, lenient, out);
    return;
  }
  thread_local std::vector<uint8_t> scratch;
  struct Trim {
    ~Trim() {
      if (scratch.capacity() > kMaxKeptScratch) std::vector<uint8_t>().swap(scratch);
    }
  } trim;
  // Grows only (resize would zero every byte it adds, each time).
  if (scratch.size() < plan.decoded.bytes()) scratch.resize(plan.decoded.bytes());
  DecompressDecoded(handle, jpeg, size, plan, lenient, scratch.data());

  engine::PlaceFrame(scratch.data(), plan.decoded.width, plan.decoded.height, plan.shape.channels,
                     plan.geometry, plan.shape, out);
}

}  // namespace

int ScaledDimension(int dimension, int scale_denom) {
  const tjscalingfactor factor = ScalingFactor(scale_denom);
  if (dimension < 1) {
    throw InvalidArgumentError("scale dimension: dimension must be >= 1, got " +
                               std::to_string(dimension));
  }
  return Scaled(dimension, factor);
}

// ---- JpegDecoder ----

void JpegDecoder::HandleDeleter::operator()(void* handle) const noexcept {
  if (handle != nullptr) tjDestroy(handle);
}

JpegDecoder::JpegDecoder() noexcept = default;
JpegDecoder::~JpegDecoder() = default;
JpegDecoder::JpegDecoder(JpegDecoder&&) noexcept = default;
JpegDecoder& JpegDecoder::operator=(JpegDecoder&&) noexcept = default;

void* JpegDecoder::Handle() {
  if (handle_ == nullptr) {
    tjhandle handle = tjInitDecompress();
    if (handle == nullptr) ThrowTurboJpegError(TjOperation::kCreate, LastStatus(nullptr));
    handle_.reset(handle);
  }
  return handle_.get();
}

// Every call decodes with a TurboJPEG instance of its own, dropped when the
// call returns, because an instance carries state from one image to the next:
//   - libjpeg keeps the quantization and Huffman tables of the last image (for
//     abbreviated datastreams), so an image that lacks tables would decode,
//     strict or lenient, with whatever tables the decoder's previous image had
//     instead of failing;
//   - after a warning the instance decodes the same damaged image to other
//     pixels the next time;
//   - when tjDecompressHeader3 fails, TurboJPEG 2.1 leaves the decompressor in
//     the middle of a header, and the next call would go on parsing the new
//     image from there.
// Creating an instance costs about a microsecond, against tens of
// microseconds for decoding even a tiny frame.
namespace {
template <typename Handle>
struct DropAtExit {
  Handle& handle;
  ~DropAtExit() { handle.reset(); }
};
}  // namespace

ImageShape JpegDecoder::OutputShape(const uint8_t* jpeg, size_t size,
                                    const DecodeOptions& options) {
  DropAtExit<decltype(handle_)> drop{handle_};
  return Plan(Handle(), jpeg, size, options).shape;
}

void JpegDecoder::DecodeInto(const uint8_t* jpeg, size_t size, const DecodeOptions& options,
                             uint8_t* out, size_t out_size) {
  DropAtExit<decltype(handle_)> drop{handle_};
  tjhandle handle = Handle();
  const DecodePlan plan = Plan(handle, jpeg, size, options);
  if (out == nullptr || out_size != plan.shape.bytes()) {
    throw InvalidArgumentError(
        "decode jpeg: output buffer of " + std::to_string(out == nullptr ? 0 : out_size) +
        " bytes" + (out == nullptr ? " (null)" : "") + ", the image needs " +
        std::to_string(plan.shape.bytes()) + " (" + std::to_string(plan.shape.height) + "x" +
        std::to_string(plan.shape.width) + "x" + std::to_string(plan.shape.channels) + ")");
  }
  Decompress(handle, jpeg, size, plan, options.lenient, out);
}

std::vector<uint8_t> JpegDecoder::Decode(const uint8_t* jpeg, size_t size,
                                         const DecodeOptions& options, ImageShape* shape) {
  DropAtExit<decltype(handle_)> drop{handle_};
  tjhandle handle = Handle();
  const DecodePlan plan = Plan(handle, jpeg, size, options);
  std::vector<uint8_t> pixels(plan.shape.bytes());
  Decompress(handle, jpeg, size, plan, options.lenient, pixels.data());
  if (shape != nullptr) *shape = plan.shape;
  return pixels;
}

// ---- JpegEncoder ----

void JpegEncoder::HandleDeleter::operator()(void* handle) const noexcept {
  if (handle != nullptr) tjDestroy(handle);
}

JpegEncoder::JpegEncoder() noexcept = default;
JpegEncoder::~JpegEncoder() = default;
JpegEncoder::JpegEncoder(JpegEncoder&&) noexcept = default;
JpegEncoder& JpegEncoder::operator=(JpegEncoder&&) noexcept = default;

void* JpegEncoder::Handle() {
  if (handle_ == nullptr) {
    tjhandle handle = tjInitCompress();
    if (handle == nullptr) ThrowTurboJpegError(TjOperation::kCreate, LastStatus(nullptr));
    handle_.reset(handle);
  }
  return handle_.get();
}

std::string JpegEncoder::Encode(const uint8_t* pixels, int width, int height, int channels,
                                const EncodeOptions& options) {
  if (pixels == nullptr) throw InvalidArgumentError("encode jpeg: null pixel buffer");
  if (width < 1 || width > kMaxEncodeDimension || height < 1 || height > kMaxEncodeDimension) {
    throw InvalidArgumentError("encode jpeg: width and height must be in 1.." +
                               std::to_string(kMaxEncodeDimension) + ", got " +
                               std::to_string(width) + "x" + std::to_string(height));
  }
  if (channels != 1 && channels != 3) {
    throw InvalidArgumentError("encode jpeg: channels must be 1 or 3, got " +
                               std::to_string(channels));
  }
  if (options.quality < 1 || options.quality > 100) {
    throw InvalidArgumentError("encode jpeg: quality must be in 1..100, got " +
                               std::to_string(options.quality));
  }
  int subsampling = TJSAMP_GRAY;
  if (channels == 3) {
    switch (options.subsampling) {
      case Subsampling::k444:
        subsampling = TJSAMP_444;
        break;
      case Subsampling::k422:
        subsampling = TJSAMP_422;
        break;
      case Subsampling::k420:
        subsampling = TJSAMP_420;
        break;
      case Subsampling::kGray:
        subsampling = TJSAMP_GRAY;
        break;
      default:
        throw InvalidArgumentError("encode jpeg: unknown Subsampling");
    }
  }
  const int pixel_format = channels == 3 ? TJPF_RGB : TJPF_GRAY;

  tjhandle handle = Handle();
  // TurboJPEG allocates the output; own it from the moment the call returns,
  // failure included (it may have allocated before failing).
  unsigned char* jpeg = nullptr;
  unsigned long jpeg_size = 0;  // NOLINT(runtime/int): TurboJPEG's type
  const int rc = tjCompress2(handle, pixels, width, /*pitch=*/0, height, pixel_format, &jpeg,
                             &jpeg_size, subsampling, options.quality, /*flags=*/0);
  struct TjFree {
    void operator()(unsigned char* p) const noexcept { tjFree(p); }
  };
  std::unique_ptr<unsigned char, TjFree> owned(jpeg);
  if (rc != 0) ThrowTurboJpegError(TjOperation::kEncode, LastStatus(handle));
  return std::string(reinterpret_cast<const char*>(owned.get()), jpeg_size);
}

namespace engine {

bool DecodeIntoIfShape(const uint8_t* jpeg, size_t size, const DecodeOptions& options,
                       const ImageShape& expected, uint8_t* out) {
  struct Destroy {
    void operator()(void* handle) const noexcept { tjDestroy(handle); }
  };
  // A fresh instance, as every JpegDecoder call (above).
  const std::unique_ptr<void, Destroy> handle(tjInitDecompress());
  if (handle == nullptr) ThrowTurboJpegError(TjOperation::kCreate, LastStatus(nullptr));
  const DecodePlan plan = Plan(handle.get(), jpeg, size, options);
  if (plan.shape != expected) return false;
  if (out == nullptr) throw InvalidArgumentError("decode jpeg: null output buffer");
  Decompress(handle.get(), jpeg, size, plan, options.lenient, out);
  return true;
}

}  // namespace engine

JpegDecoder& ThreadLocalDecoder() {
  thread_local JpegDecoder decoder;
  return decoder;
}

JpegEncoder& ThreadLocalEncoder() {
  thread_local JpegEncoder encoder;
  return encoder;
}

}  // namespace gulpdb
