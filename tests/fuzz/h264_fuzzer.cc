// Fuzz target: H.264 stream parsing and frame-exact GOP decoding
// (engine/video: h264_stream.h, gop_decoder.h).
//
// Input: one byte of options, then the bytes of an Annex-B H.264 stream.
// The option byte picks
//   bit  0    decode with the stream's first 64 bytes as the extradata
//             instead of the parameter sets the parser found
//   bits 1-7  a seed for which frames are asked for after the whole stream
// Properties checked:
//   - ParseH264Stream returns or throws CorruptionError; what it returns
//     has frames, a first keyframe, packets inside its bytes;
//   - decoding throws only CorruptionError (OutOfRangeError never: only
//     indices in range are asked for);
//   - when the whole stream decodes, every frame asked for again on its own
//     and in a scattered request decodes to the same pixels, with a decoder
//     that has decoded other streams before (the pooled one) and with a new
//     one. With the stream's first bytes as the extradata, that holds for the
//     frames of the first GOP only: a later keyframe decoded on its own lacks
//     the parameter sets the whole-stream decode took in-band from the GOPs
//     before it, so it has no right answer to match; asked for alone, such a
//     frame decodes or throws CorruptionError, and nothing else is checked.
// Streams with more than 64 frames or frames over 2^18 pixels are only
// parsed, to keep an input quick.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/video/gop_decoder.h"
#include "engine/video/h264_stream.h"
#include "gulpdb/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr const char* kTarget = "h264";
constexpr size_t kMaxFrames = 64;
constexpr int64_t kMaxPixels = int64_t{1} << 18;

// Decodes `frames`; false on CorruptionError.
bool Decode(gulpdb::video::GopDecoder& decoder, const gulpdb::video::VideoPackets& packets,
            const std::vector<int64_t>& frames, std::vector<std::string>* out) {
  try {
    *out = decoder.Decode(packets, frames);
  } catch (const gulpdb::CorruptionError&) {
    return false;
  }
  return true;
}

}  // namespace

extern "C" int GULPDB_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t bits = data[0];
  const std::string stream(reinterpret_cast<const char*>(data + 1), size - 1);
  gulpdb::video::EncodedVideo video;
  try {
    video = gulpdb::video::ParseH264Stream(stream, "input");
  } catch (const gulpdb::CorruptionError&) {
    return 0;
  }
  FUZZ_CHECK(kTarget, video.frame_count() > 0 && video.packets[0].keyframe, "no first keyframe");
  for (const auto& p : video.packets) {
    FUZZ_CHECK(kTarget, p.size > 0 && p.offset + p.size <= video.bytes.size(), "packet outside");
  }
  if (video.frame_count() > kMaxFrames ||
      int64_t{video.params.width} * video.params.height > kMaxPixels) {
    return 0;
  }
  static gulpdb::video::GopDecoder pooled(2);  // reused across inputs, as a reader thread's
  gulpdb::video::VideoParams other = video.params;
  if ((bits & 1) != 0) other.extradata = std::string(stream.substr(0, 64));
  gulpdb::video::VideoPackets packets = gulpdb::video::PacketsOf(video, "input");
  packets.params = &other;

  const auto n = static_cast<int64_t>(video.frame_count());
  std::vector<int64_t> all;
  for (int64_t k = 0; k < n; ++k) all.push_back(k);
  std::vector<std::string> whole;
  if (!Decode(pooled, packets, all, &whole)) return 0;
  FUZZ_CHECK(kTarget, whole.size() == all.size(), "frame count");

  // Frames a request may compare: all of them with the parser's parameter
  // sets, the first GOP's with the stream's first bytes as the extradata.
  int64_t comparable = n;
  if ((bits & 1) != 0) {
    comparable = 1;
    while (comparable < n && !video.packets[static_cast<size_t>(comparable)].keyframe) ++comparable;
  }
  std::mt19937 rng(bits >> 1);
  std::vector<int64_t> scattered;
  std::vector<int64_t> undefined;  // asked for alone; may throw CorruptionError
  for (int i = 0; i < 4; ++i) {
    const int64_t k = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
    (k < comparable ? scattered : undefined).push_back(k);
  }
  const int64_t last = n - 1;
  gulpdb::video::GopDecoder fresh;
  for (gulpdb::video::GopDecoder* decoder : {&pooled, &fresh}) {
    if (!scattered.empty()) {
      std::vector<std::string> got;
      FUZZ_CHECK(kTarget, Decode(*decoder, packets, scattered, &got),
                 "a scattered request fails where the whole stream decodes");
      for (size_t i = 0; i < scattered.size(); ++i) {
        FUZZ_CHECK(
            kTarget, got[i] == whole[static_cast<size_t>(scattered[i])],
            "frame " + std::to_string(scattered[i]) + " differs from the whole-stream decode");
      }
    }
    for (int64_t k : undefined) {
      std::vector<std::string> got;
      if (Decode(*decoder, packets, {k}, &got)) FUZZ_CHECK(kTarget, got.size() == 1, "frame count");
    }
    std::vector<std::string> single;
    const bool decoded = Decode(*decoder, packets, {last}, &single);
    if (last < comparable) {
      FUZZ_CHECK(kTarget, decoded, "the last frame alone fails where the whole stream decodes");
      FUZZ_CHECK(kTarget, single[0] == whole.back(), "the last frame alone differs");
    }
  }
  return 0;
}
