// Tests for the JPEG codec (include/gulpdb/jpeg.h), the thread pool that
// decodes batches (util/thread_pool.h) and the SHA-256 used to compare pixels
// with the interop fixtures.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "tests/support/manifest.h"
#include "tests/support/sha256.h"
#include "util/thread_pool.h"

namespace gulpdb {
namespace {

namespace fs = std::filesystem;
using test::Sha256Hex;
using util::ThreadPool;

// ---- helpers ----

std::string HexOf(const std::string& text) { return Sha256Hex(text.data(), text.size()); }

// A smooth test image (low-frequency gradients), so that JPEG's error is small.
std::vector<uint8_t> SmoothImage(int width, int height, int channels) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * static_cast<size_t>(height) *
                              static_cast<size_t>(channels));
  size_t k = 0;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const double v = 128.0 + 60.0 * std::sin(0.05 * x + 1.3 * c) * std::cos(0.04 * y) +
                         30.0 * std::cos(0.03 * (x + y) + c);
        pixels[k++] = static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 255.0)));
      }
    }
  }
  return pixels;
}

struct PixelError {
  double mean = 0;
  int max = 0;
};

PixelError Compare(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  PixelError error;
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int d = std::abs(int{a[i]} - int{b[i]});
    sum += d;
    error.max = std::max(error.max, d);
  }
  error.mean = a.empty() ? 0 : sum / static_cast<double>(a.size());
  return error;
}

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

std::string EncodeSmooth(int width, int height, int channels, const EncodeOptions& options = {}) {
  const std::vector<uint8_t> pixels = SmoothImage(width, height, channels);
  return ThreadLocalEncoder().Encode(pixels.data(), width, height, channels, options);
}

// Offset of the first byte of entropy-coded data: just after the SOS segment.
size_t EntropyStart(const std::string& jpeg) {
  for (size_t i = 2; i + 3 < jpeg.size();) {
    BOOST_REQUIRE_EQUAL(static_cast<unsigned char>(jpeg[i]), 0xFF);
    const auto marker = static_cast<unsigned char>(jpeg[i + 1]);
    const size_t length = static_cast<size_t>(static_cast<unsigned char>(jpeg[i + 2])) << 8 |
                          static_cast<unsigned char>(jpeg[i + 3]);
    if (marker == 0xDA) return i + 2 + length;
    i += 2 + length;
  }
  BOOST_FAIL("no SOS marker");
  return 0;
}

// Offset of the first marker with code `marker` (e.g. 0xDA for SOS, 0xC0 for SOF0).
size_t FindMarker(const std::string& jpeg, unsigned char marker) {
  for (size_t i = 2; i + 3 < jpeg.size();) {
    BOOST_REQUIRE_EQUAL(static_cast<unsigned char>(jpeg[i]), 0xFF);
    if (static_cast<unsigned char>(jpeg[i + 1]) == marker) return i;
    const size_t length = static_cast<size_t>(static_cast<unsigned char>(jpeg[i + 2])) << 8 |
                          static_cast<unsigned char>(jpeg[i + 3]);
    i += 2 + length;
  }
  BOOST_FAIL("marker not found");
  return 0;
}

// Reads [offset, offset + size) of `path` with pread.
std::string PreadFile(const fs::path& path, uint64_t offset, size_t size) {
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  BOOST_REQUIRE_MESSAGE(file.fd >= 0, "open " << path);
  std::string bytes(size, '\0');
  size_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(file.fd, bytes.data() + done, size - done, static_cast<off_t>(offset + done));
    BOOST_REQUIRE_MESSAGE(n > 0, "pread " << path << " at " << offset + done);
    done += static_cast<size_t>(n);
  }
  return bytes;
}

// ---- fixture manifests ----

// One frame of a fixture, with the data file that holds it.
struct FixtureFrame : test::ManifestFrame {
  std::string item_id;
  std::string data_file;
};

struct Manifest {
  std::vector<FixtureFrame> frames;
  size_t frame_info_total = 0;  // sum of len(frame_info) over items
};

Manifest ReadManifest(const fs::path& dir) {
  const test::Manifest m = test::ReadManifest(dir.string());
  Manifest out;
  out.frame_info_total = m.frame_count();
  for (const test::ManifestItem& item : m.items) {
    for (const test::ManifestFrame& f : item.frames) {
      FixtureFrame frame;
      static_cast<test::ManifestFrame&>(frame) = f;
      frame.item_id = item.id;
      frame.data_file = m.chunk(item.chunk_id).data_file;
      out.frames.push_back(std::move(frame));
    }
  }
  return out;
}

std::vector<fs::path> GulpFixtureDirs() {
  std::vector<fs::path> dirs;
  for (const std::string& d : test::GulpFixtureDirs()) dirs.emplace_back(d);
  return dirs;
}

ImageShape ShapeFromManifest(const std::vector<int>& dims) {
  ImageShape shape;
  if (dims.size() >= 2) {
    shape.height = dims[0];
    shape.width = dims[1];
    shape.channels = dims.size() == 3 ? dims[2] : 1;  // a 2-D array is grayscale
  }
  return shape;
}

std::ostream& operator<<(std::ostream& os, const ImageShape& shape) {
  return os << shape.height << "x" << shape.width << "x" << shape.channels;
}

}  // namespace
}  // namespace gulpdb

// Boost.Test prints ImageShape through this.
namespace boost::test_tools::tt_detail {
template <>
struct print_log_value<gulpdb::ImageShape> {
  void operator()(std::ostream& os, const gulpdb::ImageShape& shape) {
    gulpdb::operator<<(os, shape);
  }
};
}  // namespace boost::test_tools::tt_detail

namespace gulpdb {
namespace {

BOOST_AUTO_TEST_SUITE(jpeg_codec_test)

// ---- SHA-256 (FIPS 180-4 / NIST example vectors) ----

BOOST_AUTO_TEST_CASE(sha256_matches_standard_vectors) {
  BOOST_TEST(Sha256Hex(nullptr, 0) ==
             "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(HexOf("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(HexOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  BOOST_TEST(HexOf("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnop"
                   "qklmnopqrlmnopqrsmnopqrstnopqrstu") ==
             "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  BOOST_TEST(HexOf(std::string(1000000, 'a')) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Padding edge cases: the length field fits in the last block or spills over.
BOOST_AUTO_TEST_CASE(sha256_block_boundaries) {
  BOOST_TEST(HexOf(std::string(55, 'a')) ==
             "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  BOOST_TEST(HexOf(std::string(56, 'a')) ==
             "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  BOOST_TEST(HexOf(std::string(63, 'a')) ==
             "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
  BOOST_TEST(HexOf(std::string(64, 'a')) ==
             "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

// ---- decoding the interop fixtures ----

// Every frame of every gulpio* fixture decodes to exactly the pixels recorded in
// its manifest: fast DCT (GulpIO2) and accurate DCT (GulpIO), with the recorded
// shape (grayscale frames are 2-D, i.e. one channel).
BOOST_AUTO_TEST_CASE(fixture_frames_decode_to_recorded_pixels) {
  const std::vector<fs::path> dirs = GulpFixtureDirs();
  BOOST_TEST_REQUIRE(dirs.size() >= 4u);
  size_t all_frames = 0;
  for (const fs::path& dir : dirs) {
    BOOST_TEST_CONTEXT("fixture " << dir.filename().string()) {
      const Manifest manifest = ReadManifest(dir);
      size_t checked = 0;
      size_t gray = 0;
      for (const FixtureFrame& frame : manifest.frames) {
        BOOST_TEST_CONTEXT("item " << frame.item_id << " loc " << frame.loc) {
          const std::string jpeg =
              PreadFile(dir / frame.data_file, frame.loc, static_cast<size_t>(frame.jpeg_len));
          BOOST_TEST(HexOf(jpeg) == frame.jpeg_sha256);
          const ImageShape expected = ShapeFromManifest(frame.decoded_shape);

          JpegDecoder& decoder = ThreadLocalDecoder();
          ImageShape shape;
          const std::vector<uint8_t> fast = decoder.Decode(Bytes(jpeg), jpeg.size(), {}, &shape);
          BOOST_TEST(shape == expected);
          BOOST_TEST(decoder.OutputShape(Bytes(jpeg), jpeg.size()) == expected);
          BOOST_TEST(Sha256Hex(fast.data(), fast.size()) == frame.sha_fast);

          DecodeOptions accurate_options;
          accurate_options.dct = DctMethod::kAccurate;
          std::vector<uint8_t> accurate(expected.bytes());
          decoder.DecodeInto(Bytes(jpeg), jpeg.size(), accurate_options, accurate.data(),
                             accurate.size());
          BOOST_TEST(Sha256Hex(accurate.data(), accurate.size()) == frame.sha_accurate);

          if (frame.colorspace == "Gray") {
            ++gray;
            BOOST_TEST(frame.decoded_shape.size() == 2u);
            BOOST_TEST(shape.channels == 1);
          }
          ++checked;
        }
      }
      BOOST_TEST(checked == manifest.frame_info_total);
      BOOST_TEST(checked > 0u);
      BOOST_TEST_MESSAGE(dir.filename().string()
                         << ": " << checked << " frames, " << gray << " grayscale");
      all_frames += checked;
    }
  }
  // The fixtures hold 67 + 67 + 15 + 40 frames.
  BOOST_TEST(all_frames >= 189u);
}

// The same fixture frames decoded in parallel into one batch buffer give the
// same bytes as one thread.
BOOST_AUTO_TEST_CASE(parallel_batch_decode_matches_serial) {
  const fs::path dir = fs::path(GULPDB_FIXTURES_DIR) / "gulpio2_json_videos";
  const Manifest manifest = ReadManifest(dir);
  BOOST_TEST_REQUIRE(manifest.frames.size() == 40u);
  std::vector<std::string> jpegs;
  for (const FixtureFrame& frame : manifest.frames) {
    jpegs.push_back(
        PreadFile(dir / frame.data_file, frame.loc, static_cast<size_t>(frame.jpeg_len)));
  }
  // A batch holds frames of one shape (the videos of this fixture differ):
  // size it from the first header and keep the frames that match.
  const ImageShape shape = ThreadLocalDecoder().OutputShape(Bytes(jpegs[0]), jpegs[0].size());
  std::vector<std::string> batch_jpegs;
  std::vector<std::string> expected_sha;
  for (size_t i = 0; i < jpegs.size(); ++i) {
    if (ThreadLocalDecoder().OutputShape(Bytes(jpegs[i]), jpegs[i].size()) == shape) {
      batch_jpegs.push_back(jpegs[i]);
      expected_sha.push_back(manifest.frames[i].sha_fast);
    }
  }
  BOOST_TEST_REQUIRE(batch_jpegs.size() >= 10u);
  jpegs = batch_jpegs;
  const size_t frame_bytes = shape.bytes();
  std::vector<uint8_t> serial(frame_bytes * jpegs.size());
  std::vector<uint8_t> parallel(frame_bytes * jpegs.size(), 0xAB);
  for (size_t i = 0; i < jpegs.size(); ++i) {
    ThreadLocalDecoder().DecodeInto(Bytes(jpegs[i]), jpegs[i].size(), {},
                                    serial.data() + i * frame_bytes, frame_bytes);
  }
  ThreadPool pool(4);
  pool.ParallelFor(jpegs.size(), [&](size_t i) {
    ThreadLocalDecoder().DecodeInto(Bytes(jpegs[i]), jpegs[i].size(), {},
                                    parallel.data() + i * frame_bytes, frame_bytes);
  });
  BOOST_TEST((serial == parallel));
  for (size_t i = 0; i < jpegs.size(); ++i) {
    BOOST_TEST(Sha256Hex(serial.data() + i * frame_bytes, frame_bytes) == expected_sha[i]);
  }
}

// ---- encode -> decode ----

BOOST_AUTO_TEST_CASE(round_trip_rgb_and_gray) {
  const int sizes[][2] = {{1, 1}, {3, 5}, {5, 3}, {17, 31}, {31, 17}, {640, 480}};
  for (const auto& size : sizes) {
    const int width = size[0];
    const int height = size[1];
    for (int channels : {3, 1}) {
      BOOST_TEST_CONTEXT(width << "x" << height << "x" << channels) {
        const std::vector<uint8_t> pixels = SmoothImage(width, height, channels);
        const std::string jpeg =
            ThreadLocalEncoder().Encode(pixels.data(), width, height, channels);
        BOOST_TEST_REQUIRE(jpeg.size() > 4u);
        BOOST_TEST(static_cast<unsigned char>(jpeg[0]) == 0xFF);
        BOOST_TEST(static_cast<unsigned char>(jpeg[1]) == 0xD8);
        BOOST_TEST(static_cast<unsigned char>(jpeg[jpeg.size() - 2]) == 0xFF);
        BOOST_TEST(static_cast<unsigned char>(jpeg[jpeg.size() - 1]) == 0xD9);

        for (DctMethod dct : {DctMethod::kFast, DctMethod::kAccurate}) {
          DecodeOptions options;
          options.dct = dct;
          ImageShape shape;
          const std::vector<uint8_t> decoded =
              ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), options, &shape);
          BOOST_TEST(shape.height == height);
          BOOST_TEST(shape.width == width);
          BOOST_TEST(shape.channels == channels);  // kAuto: gray JPEG -> 1 channel
          const PixelError error = Compare(pixels, decoded);
          BOOST_TEST(error.mean < 1.5);
          BOOST_TEST(error.max <= 12);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(round_trip_subsampling_options) {
  const std::vector<uint8_t> pixels = SmoothImage(64, 48, 3);
  for (Subsampling subsampling : {Subsampling::k444, Subsampling::k422, Subsampling::k420}) {
    EncodeOptions options;
    options.subsampling = subsampling;
    const std::string jpeg = ThreadLocalEncoder().Encode(pixels.data(), 64, 48, 3, options);
    ImageShape shape;
    const std::vector<uint8_t> decoded =
        ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), {}, &shape);
    BOOST_TEST((shape == ImageShape{48, 64, 3}));
    BOOST_TEST(Compare(pixels, decoded).mean < 2.0);
  }
  // Quality changes the size of the JPEG, in the expected direction.
  EncodeOptions low;
  low.quality = 20;
  EncodeOptions high;
  high.quality = 98;
  const std::vector<uint8_t> noisy = [] {
    std::vector<uint8_t> p(96 * 64 * 3);
    std::mt19937 rng(7);
    for (uint8_t& v : p) v = static_cast<uint8_t>(rng());
    return p;
  }();
  BOOST_TEST(ThreadLocalEncoder().Encode(noisy.data(), 96, 64, 3, low).size() <
             ThreadLocalEncoder().Encode(noisy.data(), 96, 64, 3, high).size());

  // Subsampling::kGray from RGB input gives a grayscale JPEG.
  EncodeOptions gray;
  gray.subsampling = Subsampling::kGray;
  const std::string gray_jpeg = ThreadLocalEncoder().Encode(pixels.data(), 64, 48, 3, gray);
  BOOST_TEST((ThreadLocalDecoder().OutputShape(Bytes(gray_jpeg), gray_jpeg.size()) ==
              ImageShape{48, 64, 1}));
}

// ---- output formats and scaling ----

BOOST_AUTO_TEST_CASE(scaled_decode_follows_ceil_rule) {
  const int sizes[][2] = {{1, 1}, {3, 5}, {17, 31}, {33, 9}, {640, 480}, {641, 479}};
  for (const auto& size : sizes) {
    const int width = size[0];
    const int height = size[1];
    for (int channels : {3, 1}) {
      const std::string jpeg = EncodeSmooth(width, height, channels);
      for (int denom : {1, 2, 4, 8}) {
        BOOST_TEST_CONTEXT(width << "x" << height << "x" << channels << " at 1/" << denom) {
          const int h = (height + denom - 1) / denom;
          const int w = (width + denom - 1) / denom;
          BOOST_TEST(ScaledDimension(height, denom) == h);
          BOOST_TEST(ScaledDimension(width, denom) == w);
          DecodeOptions options;
          options.scale_denom = denom;
          const ImageShape expected{h, w, channels};
          BOOST_TEST(ThreadLocalDecoder().OutputShape(Bytes(jpeg), jpeg.size(), options) ==
                     expected);
          std::vector<uint8_t> out(expected.bytes());
          ThreadLocalDecoder().DecodeInto(Bytes(jpeg), jpeg.size(), options, out.data(),
                                          out.size());
        }
      }
    }
  }
  // Spot checks of the rule itself.
  BOOST_TEST(ScaledDimension(480, 8) == 60);
  BOOST_TEST(ScaledDimension(481, 8) == 61);
  BOOST_TEST(ScaledDimension(1, 8) == 1);
  BOOST_TEST(ScaledDimension(17, 2) == 9);
}

// A 1/2 decode of a smooth image is close to the full decode averaged 2×2.
BOOST_AUTO_TEST_CASE(scaled_decode_is_a_downscale) {
  const int width = 640;
  const int height = 480;
  const std::string jpeg = EncodeSmooth(width, height, 3);
  const std::vector<uint8_t> full = ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size());
  DecodeOptions half_options;
  half_options.scale_denom = 2;
  const std::vector<uint8_t> half =
      ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), half_options);
  std::vector<uint8_t> box(half.size());
  for (int y = 0; y < height / 2; ++y) {
    for (int x = 0; x < width / 2; ++x) {
      for (int c = 0; c < 3; ++c) {
        int sum = 0;
        for (int dy = 0; dy < 2; ++dy) {
          for (int dx = 0; dx < 2; ++dx) {
            sum += full[static_cast<size_t>(((2 * y + dy) * width + 2 * x + dx) * 3 + c)];
          }
        }
        box[static_cast<size_t>((y * (width / 2) + x) * 3 + c)] = static_cast<uint8_t>(sum / 4);
      }
    }
  }
  BOOST_TEST(Compare(box, half).mean < 2.0);
}

BOOST_AUTO_TEST_CASE(bgr_is_rgb_reversed_and_gray_has_one_channel) {
  const std::string jpeg = EncodeSmooth(31, 17, 3);
  DecodeOptions rgb_options;
  rgb_options.format = PixelFormat::kRGB;
  DecodeOptions bgr_options;
  bgr_options.format = PixelFormat::kBGR;
  ImageShape rgb_shape;
  ImageShape bgr_shape;
  const std::vector<uint8_t> rgb =
      ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), rgb_options, &rgb_shape);
  const std::vector<uint8_t> bgr =
      ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), bgr_options, &bgr_shape);
  BOOST_TEST((rgb_shape == ImageShape{17, 31, 3}));
  BOOST_TEST((bgr_shape == rgb_shape));
  BOOST_TEST_REQUIRE(rgb.size() == bgr.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < rgb.size(); i += 3) {
    if (rgb[i] != bgr[i + 2] || rgb[i + 1] != bgr[i + 1] || rgb[i + 2] != bgr[i]) ++mismatches;
  }
  BOOST_TEST(mismatches == 0u);
  BOOST_TEST((rgb != bgr));  // the image is not gray, so the orders differ

  // kAuto on a colour JPEG is RGB.
  BOOST_TEST((ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size()) == rgb));

  DecodeOptions gray_options;
  gray_options.format = PixelFormat::kGray;
  ImageShape gray_shape;
  const std::vector<uint8_t> gray =
      ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), gray_options, &gray_shape);
  BOOST_TEST((gray_shape == ImageShape{17, 31, 1}));
  BOOST_TEST(gray.size() == 17u * 31u);
  // Luma of the RGB decode, within rounding and upsampling differences.
  double error = 0;
  for (size_t i = 0; i < gray.size(); ++i) {
    const double luma = 0.299 * rgb[3 * i] + 0.587 * rgb[3 * i + 1] + 0.114 * rgb[3 * i + 2];
    error += std::abs(luma - gray[i]);
  }
  BOOST_TEST(error / static_cast<double>(gray.size()) < 2.0);

  // A grayscale JPEG asked for as RGB has three equal channels.
  const std::string gray_jpeg = EncodeSmooth(31, 17, 1);
  ImageShape expanded_shape;
  const std::vector<uint8_t> expanded =
      ThreadLocalDecoder().Decode(Bytes(gray_jpeg), gray_jpeg.size(), rgb_options, &expanded_shape);
  BOOST_TEST((expanded_shape == ImageShape{17, 31, 3}));
  bool channels_equal = true;
  for (size_t i = 0; i < expanded.size(); i += 3) {
    channels_equal =
        channels_equal && expanded[i] == expanded[i + 1] && expanded[i] == expanded[i + 2];
  }
  BOOST_TEST(channels_equal);
}

// ---- bad input: typed errors, never a crash ----

BOOST_AUTO_TEST_CASE(truncated_jpeg_is_corruption) {
  const std::string jpeg = EncodeSmooth(64, 48, 3);
  const size_t sos = FindMarker(jpeg, 0xDA);
  const size_t entropy = EntropyStart(jpeg);
  const size_t cuts[] = {1,
                         2,
                         3,
                         10,
                         100,
                         sos,
                         sos + 4,
                         entropy,
                         entropy + 1,
                         (entropy + jpeg.size()) / 2,
                         jpeg.size() - 2,
                         jpeg.size() - 1};
  for (size_t cut : cuts) {
    BOOST_TEST_CONTEXT("cut at " << cut << " of " << jpeg.size()) {
      const std::string truncated = jpeg.substr(0, cut);
      std::vector<uint8_t> out(64 * 48 * 3);
      BOOST_CHECK_THROW(ThreadLocalDecoder().DecodeInto(Bytes(truncated), truncated.size(), {},
                                                        out.data(), out.size()),
                        CorruptionError);
      BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(truncated), truncated.size()),
                        CorruptionError);
      // Lenient accepts a cut inside the scan (libjpeg pads the missing data and
      // warns) but not one inside the header (a fatal error follows the warning).
      DecodeOptions lenient;
      lenient.lenient = true;
      if (cut >= entropy) {
        ImageShape shape;
        ThreadLocalDecoder().Decode(Bytes(truncated), truncated.size(), lenient, &shape);
        BOOST_TEST((shape == ImageShape{48, 64, 3}));
      } else {
        BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(truncated), truncated.size(), lenient),
                          CorruptionError);
      }
    }
  }
  // The decoder is still usable after all those failures.
  BOOST_TEST(ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size()).size() == 64u * 48u * 3u);
}

BOOST_AUTO_TEST_CASE(error_message_names_operation_and_cause) {
  const std::string jpeg = EncodeSmooth(64, 48, 3);
  const std::string truncated = jpeg.substr(0, (EntropyStart(jpeg) + jpeg.size()) / 2);
  try {
    ThreadLocalDecoder().Decode(Bytes(truncated), truncated.size());
    BOOST_FAIL("no exception");
  } catch (const CorruptionError& e) {
    const std::string message = e.what();
    BOOST_TEST_MESSAGE(message);
    BOOST_TEST(message.rfind("decode jpeg: ", 0) == 0u);
    BOOST_TEST(message.find("Premature end of JPEG file") != std::string::npos);
    BOOST_TEST((e.code() == ErrorCode::kCorruption));
  }
}

// A failed header read leaves TurboJPEG 2.1's decompressor mid-header; the
// decoder must not carry that state into the next image.
BOOST_AUTO_TEST_CASE(decoder_recovers_after_failed_header) {
  const std::string good = EncodeSmooth(24, 16, 3);
  const std::string bad = "\xFF\xD8\xFF\x86 random garbage after a bogus marker";
  JpegDecoder decoder;
  for (int round = 0; round < 3; ++round) {
    BOOST_CHECK_THROW(decoder.OutputShape(Bytes(bad), bad.size()), CorruptionError);
    BOOST_TEST((decoder.OutputShape(Bytes(good), good.size()) == ImageShape{16, 24, 3}));
    BOOST_CHECK_THROW(decoder.Decode(Bytes(bad), bad.size()), CorruptionError);
    BOOST_TEST(decoder.Decode(Bytes(good), good.size()).size() == 16u * 24u * 3u);
    const std::string truncated = good.substr(0, good.size() / 2);
    BOOST_CHECK_THROW(decoder.Decode(Bytes(truncated), truncated.size()), CorruptionError);
    BOOST_TEST(decoder.Decode(Bytes(good), good.size()).size() == 16u * 24u * 3u);
  }
}

BOOST_AUTO_TEST_CASE(random_bytes_are_corruption) {
  std::mt19937 rng(20240601);
  for (size_t size : {1u, 2u, 7u, 64u, 1000u, 100000u}) {
    for (bool with_soi : {false, true}) {
      BOOST_TEST_CONTEXT(size << " random bytes, SOI " << with_soi) {
        std::string bytes(size, '\0');
        for (char& c : bytes) c = static_cast<char>(rng());
        if (with_soi && size >= 2) {
          bytes[0] = '\xFF';
          bytes[1] = '\xD8';
        }
        BOOST_CHECK_THROW(ThreadLocalDecoder().OutputShape(Bytes(bytes), bytes.size()),
                          CorruptionError);
        BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(bytes), bytes.size()), CorruptionError);
        DecodeOptions lenient;
        lenient.lenient = true;
        BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(bytes), bytes.size(), lenient),
                          CorruptionError);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(zero_length_input_is_corruption) {
  const uint8_t byte = 0xFF;
  uint8_t out[3];
  BOOST_CHECK_THROW(ThreadLocalDecoder().OutputShape(&byte, 0), CorruptionError);
  BOOST_CHECK_THROW(ThreadLocalDecoder().OutputShape(nullptr, 0), CorruptionError);
  BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(nullptr, 0), CorruptionError);
  BOOST_CHECK_THROW(ThreadLocalDecoder().DecodeInto(&byte, 0, {}, out, sizeof(out)),
                    CorruptionError);
  // A null pointer with a non-zero size is the caller's mistake.
  BOOST_CHECK_THROW(ThreadLocalDecoder().OutputShape(nullptr, 10), InvalidArgumentError);
}

// SOI, the tables and the frame header, then EOI: a header with no scan.
BOOST_AUTO_TEST_CASE(header_only_jpeg_is_corruption) {
  const std::string jpeg = EncodeSmooth(32, 16, 3);
  const size_t sos = FindMarker(jpeg, 0xDA);
  const std::string header_only = jpeg.substr(0, sos) + "\xFF\xD9";
  for (bool lenient : {false, true}) {
    DecodeOptions options;
    options.lenient = lenient;
    BOOST_CHECK_THROW(
        ThreadLocalDecoder().OutputShape(Bytes(header_only), header_only.size(), options),
        CorruptionError);
    BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(header_only), header_only.size(), options),
                      CorruptionError);
  }
  // Without even the EOI.
  const std::string no_eoi = jpeg.substr(0, sos);
  BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(no_eoi), no_eoi.size()), CorruptionError);
  // SOI + quantization tables + EOI: a "tables only" stream.
  const size_t dqt = FindMarker(jpeg, 0xDB);
  const size_t sof = FindMarker(jpeg, 0xC0);
  BOOST_TEST_REQUIRE(dqt < sof);
  const std::string tables_only = "\xFF\xD8" + jpeg.substr(dqt, sof - dqt) + "\xFF\xD9";
  BOOST_CHECK_THROW(ThreadLocalDecoder().OutputShape(Bytes(tables_only), tables_only.size()),
                    CorruptionError);
}

// Why this corruption and not a random bit flip: a flipped bit in Huffman data
// often still decodes (to wrong coefficients) without any warning, so it cannot
// be detected at all. A byte turned into 0xFF followed by a byte that is not 0x00
// is a marker in the middle of the scan; libjpeg stops the scan there and always
// warns ("Corrupt JPEG data: premature end of data segment"), so by default the
// decode throws, and the lenient decode gives wrong-but-complete pixels.
BOOST_AUTO_TEST_CASE(marker_inside_entropy_data_is_corruption) {
  const int width = 160;
  const int height = 120;
  const std::string jpeg = EncodeSmooth(width, height, 3);
  const size_t entropy = EntropyStart(jpeg);
  // The first position a few bytes into the scan whose neighbours leave the
  // existing byte stuffing intact and whose next byte makes FF a marker.
  size_t pos = entropy + 8;
  while (pos + 2 < jpeg.size() && (jpeg[pos - 1] == '\xFF' || jpeg[pos] == '\xFF' ||
                                   jpeg[pos + 1] == '\x00' || jpeg[pos + 1] == '\xFF')) {
    ++pos;
  }
  BOOST_TEST_REQUIRE(pos + 2 < jpeg.size() / 2 + entropy / 2);
  std::string corrupt = jpeg;
  corrupt[pos] = '\xFF';

  std::vector<uint8_t> out(static_cast<size_t>(width * height * 3));
  try {
    ThreadLocalDecoder().DecodeInto(Bytes(corrupt), corrupt.size(), {}, out.data(), out.size());
    BOOST_FAIL("no exception");
  } catch (const CorruptionError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(std::string(e.what()).find("Corrupt JPEG data") != std::string::npos);
  }
  DecodeOptions accurate;
  accurate.dct = DctMethod::kAccurate;
  BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(corrupt), corrupt.size(), accurate),
                    CorruptionError);

  DecodeOptions lenient;
  lenient.lenient = true;
  ImageShape shape;
  const std::vector<uint8_t> damaged =
      ThreadLocalDecoder().Decode(Bytes(corrupt), corrupt.size(), lenient, &shape);
  BOOST_TEST((shape == ImageShape{height, width, 3}));
  const std::vector<uint8_t> clean = ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size());
  BOOST_TEST((damaged != clean));
}

// TurboJPEG 2.1 keeps reporting TJERR_WARNING when a fatal error follows a
// warning; lenient decoding must still reject the fatal error. Here three stray
// bytes before the DHT marker draw a warning, and a second SOS in a baseline
// file is fatal ("Didn't expect more than one scan").
BOOST_AUTO_TEST_CASE(lenient_rejects_fatal_error_after_warning) {
  const std::string jpeg = EncodeSmooth(64, 48, 3);
  const size_t dht = FindMarker(jpeg, 0xC4);
  const size_t sos = FindMarker(jpeg, 0xDA);
  const std::string sos_segment = jpeg.substr(sos, EntropyStart(jpeg) - sos);
  const std::string warned = jpeg.substr(0, dht) + "\x12\x34\x56" + jpeg.substr(dht);
  const std::string warned_then_fatal =
      warned.substr(0, warned.size() - 2) + sos_segment + "\xFF\xD9";

  DecodeOptions lenient;
  lenient.lenient = true;
  // The warning alone: an error by default, accepted (with correct pixels,
  // since the stray bytes are outside the image data) when lenient.
  try {
    ThreadLocalDecoder().Decode(Bytes(warned), warned.size());
    BOOST_FAIL("no exception");
  } catch (const CorruptionError& e) {
    BOOST_TEST(std::string(e.what()).find("extraneous bytes") != std::string::npos);
  }
  BOOST_TEST((ThreadLocalDecoder().Decode(Bytes(warned), warned.size(), lenient) ==
              ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size())));
  // Warning, then a fatal error: rejected in both modes, naming the fatal one
  // when lenient.
  BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(warned_then_fatal), warned_then_fatal.size()),
                    CorruptionError);
  try {
    ThreadLocalDecoder().Decode(Bytes(warned_then_fatal), warned_then_fatal.size(), lenient);
    BOOST_FAIL("no exception");
  } catch (const CorruptionError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(std::string(e.what()).find("more than one scan") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(wrong_output_size_is_invalid_argument) {
  const std::string jpeg = EncodeSmooth(17, 31, 3);
  const size_t right = 17u * 31u * 3u;
  std::vector<uint8_t> out(right + 1);
  BOOST_CHECK_THROW(
      ThreadLocalDecoder().DecodeInto(Bytes(jpeg), jpeg.size(), {}, out.data(), right - 1),
      InvalidArgumentError);
  BOOST_CHECK_THROW(
      ThreadLocalDecoder().DecodeInto(Bytes(jpeg), jpeg.size(), {}, out.data(), right + 1),
      InvalidArgumentError);
  BOOST_CHECK_THROW(ThreadLocalDecoder().DecodeInto(Bytes(jpeg), jpeg.size(), {}, nullptr, right),
                    InvalidArgumentError);
  DecodeOptions gray;
  gray.format = PixelFormat::kGray;  // needs a third of the bytes
  BOOST_CHECK_THROW(
      ThreadLocalDecoder().DecodeInto(Bytes(jpeg), jpeg.size(), gray, out.data(), right),
      InvalidArgumentError);
  BOOST_CHECK_NO_THROW(
      ThreadLocalDecoder().DecodeInto(Bytes(jpeg), jpeg.size(), {}, out.data(), right));
}

BOOST_AUTO_TEST_CASE(bad_scale_denom_is_invalid_argument) {
  const std::string jpeg = EncodeSmooth(16, 16, 3);
  for (int denom : {0, -1, 3, 5, 16, 1 << 30}) {
    BOOST_TEST_CONTEXT("scale_denom " << denom) {
      DecodeOptions options;
      options.scale_denom = denom;
      BOOST_CHECK_THROW(ThreadLocalDecoder().OutputShape(Bytes(jpeg), jpeg.size(), options),
                        InvalidArgumentError);
      BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), options),
                        InvalidArgumentError);
      BOOST_CHECK_THROW(ScaledDimension(100, denom), InvalidArgumentError);
    }
  }
  BOOST_CHECK_THROW(ScaledDimension(0, 2), InvalidArgumentError);
}

// A header claiming 60000x60000 pixels is refused before anything is allocated.
BOOST_AUTO_TEST_CASE(oversized_header_is_refused) {
  std::string jpeg = EncodeSmooth(16, 16, 3);
  const size_t sof = FindMarker(jpeg, 0xC0);
  // SOF0: FF C0, length (2), precision (1), height (2), width (2).
  const char big[2] = {static_cast<char>(60000 >> 8), static_cast<char>(60000 & 0xFF)};
  jpeg[sof + 5] = big[0];
  jpeg[sof + 6] = big[1];
  jpeg[sof + 7] = big[0];
  jpeg[sof + 8] = big[1];
  for (bool lenient : {false, true}) {
    DecodeOptions options;
    options.lenient = lenient;
    BOOST_CHECK_THROW(ThreadLocalDecoder().OutputShape(Bytes(jpeg), jpeg.size(), options),
                      ResourceExhaustedError);
    BOOST_CHECK_THROW(ThreadLocalDecoder().Decode(Bytes(jpeg), jpeg.size(), options),
                      ResourceExhaustedError);
  }
  // A caller may lower the limit.
  const std::string small = EncodeSmooth(100, 100, 3);
  DecodeOptions limited;
  limited.max_pixels = 100 * 100 - 1;
  BOOST_CHECK_THROW(ThreadLocalDecoder().OutputShape(Bytes(small), small.size(), limited),
                    ResourceExhaustedError);
  limited.max_pixels = 100 * 100;
  BOOST_TEST((ThreadLocalDecoder().OutputShape(Bytes(small), small.size(), limited) ==
              ImageShape{100, 100, 3}));
}

BOOST_AUTO_TEST_CASE(bad_encode_arguments_are_invalid_argument) {
  const std::vector<uint8_t> pixels = SmoothImage(8, 8, 3);
  JpegEncoder& encoder = ThreadLocalEncoder();
  BOOST_CHECK_THROW(encoder.Encode(nullptr, 8, 8, 3), InvalidArgumentError);
  BOOST_CHECK_THROW(encoder.Encode(pixels.data(), 0, 8, 3), InvalidArgumentError);
  BOOST_CHECK_THROW(encoder.Encode(pixels.data(), 8, -1, 3), InvalidArgumentError);
  BOOST_CHECK_THROW(encoder.Encode(pixels.data(), 70000, 1, 1), InvalidArgumentError);
  BOOST_CHECK_THROW(encoder.Encode(pixels.data(), 8, 8, 2), InvalidArgumentError);
  BOOST_CHECK_THROW(encoder.Encode(pixels.data(), 8, 8, 4), InvalidArgumentError);
  EncodeOptions options;
  options.quality = 0;
  BOOST_CHECK_THROW(encoder.Encode(pixels.data(), 8, 8, 3, options), InvalidArgumentError);
  options.quality = 101;
  BOOST_CHECK_THROW(encoder.Encode(pixels.data(), 8, 8, 3, options), InvalidArgumentError);
  options.quality = 1;
  BOOST_CHECK_NO_THROW(encoder.Encode(pixels.data(), 8, 8, 3, options));
}

// Decoders and encoders are move-only owners; a moved-from one still works.
BOOST_AUTO_TEST_CASE(codec_objects_are_movable) {
  const std::string jpeg = EncodeSmooth(8, 8, 3);
  JpegDecoder a;
  BOOST_TEST(a.Decode(Bytes(jpeg), jpeg.size()).size() == 192u);
  JpegDecoder b(std::move(a));
  BOOST_TEST(b.Decode(Bytes(jpeg), jpeg.size()).size() == 192u);
  a = std::move(b);
  BOOST_TEST(a.Decode(Bytes(jpeg), jpeg.size()).size() == 192u);
  BOOST_TEST(b.Decode(Bytes(jpeg), jpeg.size()).size() == 192u);  // NOLINT(bugprone-use-after-move)
  JpegEncoder e;
  JpegEncoder f(std::move(e));
  const std::vector<uint8_t> pixels = SmoothImage(8, 8, 3);
  BOOST_TEST(f.Encode(pixels.data(), 8, 8, 3) ==
             ThreadLocalEncoder().Encode(pixels.data(), 8, 8, 3));
}

// ---- ThreadPool ----

BOOST_AUTO_TEST_CASE(thread_pool_sums_with_1_and_4_threads) {
  for (size_t threads : {1u, 4u}) {
    BOOST_TEST_CONTEXT(threads << " threads") {
      ThreadPool pool(threads);
      BOOST_TEST(pool.size() == threads);
      for (size_t n : {0u, 1u, 2u, 3u, 1000u, 100000u}) {
        std::vector<std::atomic<int>> visits(n);
        std::atomic<uint64_t> sum{0};
        pool.ParallelFor(n, [&](size_t i) {
          visits[i].fetch_add(1);
          sum.fetch_add(i);
        });
        BOOST_TEST(sum.load() == uint64_t{n} * (n > 0 ? n - 1 : 0) / 2);
        BOOST_TEST(std::all_of(visits.begin(), visits.end(),
                               [](const std::atomic<int>& v) { return v.load() == 1; }));
      }
    }
  }
  BOOST_TEST(ThreadPool(0).size() == 1u);
  BOOST_TEST(ThreadPool().size() == ThreadPool::DefaultSize());
}

BOOST_AUTO_TEST_CASE(thread_pool_of_one_runs_inline) {
  ThreadPool pool(1);
  const std::thread::id caller = std::this_thread::get_id();
  bool all_on_caller = true;
  pool.ParallelFor(
      100, [&](size_t) { all_on_caller = all_on_caller && std::this_thread::get_id() == caller; });
  BOOST_TEST(all_on_caller);
}

BOOST_AUTO_TEST_CASE(thread_pool_uses_several_threads) {
  ThreadPool pool(4);
  std::mutex mu;
  std::vector<std::thread::id> ids;
  pool.ParallelFor(64, [&](size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> lock(mu);
    if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end()) {
      ids.push_back(std::this_thread::get_id());
    }
  });
  BOOST_TEST(ids.size() > 1u);
  BOOST_TEST(ids.size() <= 4u);
}

BOOST_AUTO_TEST_CASE(thread_pool_propagates_first_exception) {
  for (size_t threads : {1u, 4u}) {
    BOOST_TEST_CONTEXT(threads << " threads") {
      ThreadPool pool(threads);
      std::atomic<size_t> calls{0};
      // Items take 1 ms, so without skipping the loop would run all of them;
      // with skipping it stops a few items after #37.
      const size_t n = 2000;
      try {
        pool.ParallelFor(n, [&](size_t i) {
          calls.fetch_add(1);
          if (i == 37) throw std::runtime_error("item 37 failed");
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
        BOOST_FAIL("no exception");
      } catch (const std::runtime_error& e) {
        BOOST_TEST(std::string(e.what()) == "item 37 failed");
      }
      // Inline, exactly the items up to the failing one ran; in parallel, the
      // other threads stop after the item they are running.
      if (threads == 1) BOOST_TEST(calls.load() == 38u);
      BOOST_TEST(calls.load() < n / 2);

      // Typed errors keep their type, and the pool is still usable.
      BOOST_CHECK_THROW(pool.ParallelFor(10,
                                         [](size_t i) {
                                           if (i == 9) throw CorruptionError("decode jpeg: bad");
                                         }),
                        CorruptionError);
      std::atomic<size_t> after{0};
      pool.ParallelFor(1000, [&](size_t) { after.fetch_add(1); });
      BOOST_TEST(after.load() == 1000u);
    }
  }
}

BOOST_AUTO_TEST_CASE(thread_pool_concurrent_parallel_for_from_two_threads) {
  ThreadPool pool(4);
  const size_t n = 20000;
  const uint64_t expected = uint64_t{n} * (n - 1) / 2;
  std::atomic<int> wrong{0};
  auto client = [&](uint64_t salt) {
    for (int round = 0; round < 50; ++round) {
      std::atomic<uint64_t> sum{0};
      pool.ParallelFor(n, [&](size_t i) { sum.fetch_add(i + salt); });
      if (sum.load() != expected + salt * n) wrong.fetch_add(1);
    }
  };
  std::thread a(client, 0);
  std::thread b(client, 1);
  a.join();
  b.join();
  BOOST_TEST(wrong.load() == 0);
}

// A loop body may itself call ParallelFor on the same pool without deadlock.
BOOST_AUTO_TEST_CASE(thread_pool_nested_parallel_for) {
  ThreadPool pool(2);
  std::atomic<uint64_t> sum{0};
  pool.ParallelFor(
      8, [&](size_t i) { pool.ParallelFor(100, [&](size_t j) { sum.fetch_add(i * 100 + j); }); });
  BOOST_TEST(sum.load() == uint64_t{800} * 799 / 2);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
