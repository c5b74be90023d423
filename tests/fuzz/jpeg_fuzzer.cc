// Fuzz target: JPEG header parsing and decoding (gulpdb::JpegDecoder, jpeg.h).
//
// Input: one byte of options, then the JPEG bytes. The option byte picks
//   bits 0-1  PixelFormat (kAuto, kRGB, kBGR, kGray)
//   bit  2    DctMethod (kFast, kAccurate)
//   bits 3-4  scale_denom (1, 2, 4, 8)
//   bit  5    lenient
//   bit  6    also check the wrong-size buffer error and RGB/BGR symmetry
//   bit  7    also decode through the allocating Decode()
// Properties checked:
//   - OutputShape and DecodeInto return or throw CorruptionError,
//     InvalidArgumentError (CMYK/YCCK) or ResourceExhaustedError (pixel limit);
//   - the shape follows jpeg.h's rule: positive dimensions, ceil(full size /
//     scale_denom) as ScaledDimension computes it, channels 1 for kGray, 3 for
//     kRGB/kBGR, 1 or 3 for kAuto;
//   - DecodeInto writes into a buffer of exactly OutputShape().bytes() (ASan
//     catches a byte more), and refuses any other size with
//     InvalidArgumentError;
//   - a strict decode that succeeds gives the same pixels when lenient, and
//     a lenient decode that fails fails strictly too;
//   - BGR is RGB with the channels swapped; Decode() equals DecodeInto;
//   - a decoder's history does not matter: the decoder used for all of the
//     above first decodes another image (a primer with other tables), and a
//     new decoder gives the same outcome and pixels.
// max_pixels is lowered to 2^22 so that a header claiming a huge image is
// refused cheaply (ResourceExhaustedError) instead of costing a long decode;
// the limit itself is the property tested there.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr const char* kTarget = "jpeg";
constexpr uint64_t kMaxPixels = uint64_t{1} << 22;

std::string Describe(const gulpdb::ImageShape& s) {
  return std::to_string(s.height) + "x" + std::to_string(s.width) + "x" +
         std::to_string(s.channels);
}

// OutputShape, or nullopt for the errors a bad or unsupported JPEG may draw.
std::optional<gulpdb::ImageShape> Shape(gulpdb::JpegDecoder& decoder, const uint8_t* jpeg,
                                        size_t size, const gulpdb::DecodeOptions& options) {
  try {
    return decoder.OutputShape(jpeg, size, options);
  } catch (const gulpdb::CorruptionError&) {
  } catch (const gulpdb::InvalidArgumentError&) {
  } catch (const gulpdb::ResourceExhaustedError&) {
  }
  return std::nullopt;
}

// Decodes into an exact-size heap buffer; nullptr on CorruptionError.
std::unique_ptr<uint8_t[]> DecodeExact(gulpdb::JpegDecoder& decoder, const uint8_t* jpeg,
                                       size_t size, const gulpdb::DecodeOptions& options,
                                       size_t out_size) {
  std::unique_ptr<uint8_t[]> out(new uint8_t[out_size]);
  try {
    decoder.DecodeInto(jpeg, size, options, out.get(), out_size);
  } catch (const gulpdb::CorruptionError&) {
    return nullptr;
  }
  return out;
}

// A small colour JPEG with uncommon quantization tables (quality 37, 4:2:0).
const std::string& Primer() {
  static const std::string primer = [] {
    std::vector<uint8_t> pixels(16 * 16 * 3);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37 % 251);
    gulpdb::EncodeOptions encode;
    encode.quality = 37;
    encode.subsampling = gulpdb::Subsampling::k420;
    return gulpdb::JpegEncoder().Encode(pixels.data(), 16, 16, 3, encode);
  }();
  return primer;
}

}  // namespace

extern "C" int GULPDB_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static gulpdb::JpegDecoder decoder;  // reused, as a reader thread reuses its own
  (void)decoder.Decode(reinterpret_cast<const uint8_t*>(Primer().data()), Primer().size());
  const uint8_t bits = data[0];
  const uint8_t* jpeg = data + 1;
  const size_t jpeg_size = size - 1;

  gulpdb::DecodeOptions options;
  options.format = static_cast<gulpdb::PixelFormat>(bits & 3);
  options.dct = (bits & 4) != 0 ? gulpdb::DctMethod::kAccurate : gulpdb::DctMethod::kFast;
  options.scale_denom = 1 << ((bits >> 3) & 3);
  options.lenient = (bits & 0x20) != 0;
  options.max_pixels = kMaxPixels;
  const bool extra_checks = (bits & 0x40) != 0;
  const bool check_decode = (bits & 0x80) != 0;

  const std::optional<gulpdb::ImageShape> shape = Shape(decoder, jpeg, jpeg_size, options);
  if (!shape) return 0;
  FUZZ_CHECK(kTarget, shape->height > 0 && shape->width > 0, Describe(*shape));
  switch (options.format) {
    case gulpdb::PixelFormat::kGray:
      FUZZ_CHECK(kTarget, shape->channels == 1, Describe(*shape));
      break;
    case gulpdb::PixelFormat::kRGB:
    case gulpdb::PixelFormat::kBGR:
      FUZZ_CHECK(kTarget, shape->channels == 3, Describe(*shape));
      break;
    case gulpdb::PixelFormat::kAuto:
      FUZZ_CHECK(kTarget, shape->channels == 1 || shape->channels == 3, Describe(*shape));
      break;
  }
  gulpdb::DecodeOptions unscaled = options;
  unscaled.scale_denom = 1;
  const std::optional<gulpdb::ImageShape> full = Shape(decoder, jpeg, jpeg_size, unscaled);
  FUZZ_CHECK(
      kTarget, full.has_value(),
      "the header reads at 1/" + std::to_string(options.scale_denom) + " but not at full size");
  FUZZ_CHECK(
      kTarget,
      shape->height == gulpdb::ScaledDimension(full->height, options.scale_denom) &&
          shape->width == gulpdb::ScaledDimension(full->width, options.scale_denom) &&
          shape->channels == full->channels,
      Describe(*shape) + " at 1/" + std::to_string(options.scale_denom) + " of " + Describe(*full));

  const size_t bytes = shape->bytes();
  if (extra_checks) {
    std::unique_ptr<uint8_t[]> wrong(new uint8_t[bytes + 1]);
    bool refused = false;
    try {
      decoder.DecodeInto(jpeg, jpeg_size, options, wrong.get(), bytes + 1);
    } catch (const gulpdb::InvalidArgumentError&) {
      refused = true;
    }
    FUZZ_CHECK(kTarget, refused, "DecodeInto accepted a buffer of the wrong size");
  }

  const std::unique_ptr<uint8_t[]> pixels = DecodeExact(decoder, jpeg, jpeg_size, options, bytes);
  {
    gulpdb::JpegDecoder fresh;
    const std::unique_ptr<uint8_t[]> again = DecodeExact(fresh, jpeg, jpeg_size, options, bytes);
    FUZZ_CHECK(kTarget,
               (pixels == nullptr) == (again == nullptr) &&
                   (pixels == nullptr || std::memcmp(pixels.get(), again.get(), bytes) == 0),
               std::string("a new decoder ") + (again == nullptr ? "fails" : "succeeds") +
                   " where the primed one " + (pixels == nullptr ? "fails" : "succeeds") +
                   (pixels != nullptr && again != nullptr ? ", with other pixels" : ""));
  }
  gulpdb::DecodeOptions other = options;
  other.lenient = !options.lenient;
  if (pixels != nullptr && !options.lenient) {
    const std::unique_ptr<uint8_t[]> lenient = DecodeExact(decoder, jpeg, jpeg_size, other, bytes);
    FUZZ_CHECK(kTarget, lenient != nullptr && std::memcmp(lenient.get(), pixels.get(), bytes) == 0,
               "a lenient decode differs from a successful strict one");
  }
  if (pixels == nullptr && options.lenient) {
    FUZZ_CHECK(kTarget, DecodeExact(decoder, jpeg, jpeg_size, other, bytes) == nullptr,
               "a strict decode succeeds where a lenient one fails");
  }
  if (pixels == nullptr) return 0;

  if (extra_checks && (options.format == gulpdb::PixelFormat::kRGB ||
                       options.format == gulpdb::PixelFormat::kBGR)) {
    gulpdb::DecodeOptions swapped = options;
    swapped.format = options.format == gulpdb::PixelFormat::kRGB ? gulpdb::PixelFormat::kBGR
                                                                 : gulpdb::PixelFormat::kRGB;
    const std::unique_ptr<uint8_t[]> mirror = DecodeExact(decoder, jpeg, jpeg_size, swapped, bytes);
    FUZZ_CHECK(kTarget, mirror != nullptr, "RGB and BGR decodes disagree on success");
    for (size_t i = 0; i + 2 < bytes; i += 3) {
      FUZZ_CHECK(kTarget,
                 mirror[i] == pixels[i + 2] && mirror[i + 1] == pixels[i + 1] &&
                     mirror[i + 2] == pixels[i],
                 "pixel " + std::to_string(i / 3) + " is not the RGB/BGR mirror");
    }
  }
  if (check_decode) {
    gulpdb::ImageShape decoded_shape;
    std::vector<uint8_t> decoded;
    try {
      decoded = decoder.Decode(jpeg, jpeg_size, options, &decoded_shape);
    } catch (const gulpdb::Error& e) {
      gulpdb::fuzz::Fail(kTarget,
                         std::string("Decode fails where DecodeInto succeeds: ") + e.what());
    }
    FUZZ_CHECK(kTarget,
               decoded_shape == *shape && decoded.size() == bytes &&
                   std::memcmp(decoded.data(), pixels.get(), bytes) == 0,
               "Decode differs from DecodeInto");
  }
  return 0;
}
