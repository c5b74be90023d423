// Tests for the H.264 room (engine/video): parsing ffmpeg's streams into
// frames, frame-exact GOP decoding against the ffmpeg program's decoding of
// the whole stream, the decoder pool, what a request feeds the decoder, and
// damaged inputs.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/video/gop_decoder.h"
#include "engine/video/h264_stream.h"
#include "gulpdb/error.h"
#include "tests/support/h264_encode.h"
#include "tests/support/test_util.h"

namespace gulpdb {
namespace {

using test::Contains;
using test::H264Settings;
using video::EncodedVideo;
using video::GopDecoder;
using video::PacketsOf;
using video::ParseH264Stream;
using video::VideoPackets;

size_t FrameBytes(const EncodedVideo& v) {
  return static_cast<size_t>(v.params.width) * static_cast<size_t>(v.params.height) * 3;
}

// Frame k of `all` (frames back to back).
std::string FrameOf(const std::string& all, size_t bytes, size_t k) {
  return all.substr(k * bytes, bytes);
}

// Reads `frames` through `decoder` and checks each against the reference.
void CheckFrames(GopDecoder& decoder, const VideoPackets& packets, const std::string& reference,
                 size_t bytes, const std::vector<int64_t>& frames, const std::string& what) {
  const std::vector<std::string> got = decoder.Decode(packets, frames);
  BOOST_REQUIRE_EQUAL(got.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    const auto k = static_cast<size_t>(frames[i]);
    if (got[i] != FrameOf(reference, bytes, k)) {
      BOOST_ERROR(what << ": frame " << k << " (request slot " << i
                       << ") differs from the whole-stream decode");
    }
  }
}

// Every check of frame exactness on one encoded stream.
void CheckExactness(const std::string& stream, const std::string& what, int gop,
                    std::mt19937& rng) {
  const EncodedVideo v = ParseH264Stream(stream, what);
  const size_t n = v.frame_count();
  const size_t bytes = FrameBytes(v);
  BOOST_TEST_MESSAGE(what << ": " << n << " frames, " << stream.size() << " bytes");
  // Keyframes exactly every gop-th frame.
  for (size_t k = 0; k < n; ++k) {
    BOOST_REQUIRE_MESSAGE(v.packets[k].keyframe == (k % static_cast<size_t>(gop) == 0),
                          what << ": frame " << k << " keyframe flag");
  }
  // The packets are the stream: nothing dropped or added between them.
  BOOST_REQUIRE(v.bytes == stream);

  // The independent reference: the ffmpeg program's decoding of the whole stream.
  const std::string reference = test::FfmpegDecodeRgb(stream);
  BOOST_REQUIRE_EQUAL(reference.size(), n * bytes);
  const VideoPackets packets = PacketsOf(v, what);
  GopDecoder decoder;

  std::vector<int64_t> all(n);
  for (size_t k = 0; k < n; ++k) all[k] = static_cast<int64_t>(k);
  CheckFrames(decoder, packets, reference, bytes, all, what + " whole stream");
  BOOST_CHECK_EQUAL(decoder.stats().gops_decoded,
                    (n + static_cast<size_t>(gop) - 1) / static_cast<size_t>(gop));
  BOOST_CHECK_EQUAL(decoder.stats().packets_sent, n);

  // Every frame on its own, in random order.
  std::vector<int64_t> order = all;
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t k : order) CheckFrames(decoder, packets, reference, bytes, {k}, what + " single");

  // Random contiguous ranges, and scattered sets (unsorted, with repeats).
  for (int i = 0; i < 12; ++i) {
    const size_t length = std::uniform_int_distribution<size_t>(1, std::min<size_t>(n, 24))(rng);
    const size_t first = std::uniform_int_distribution<size_t>(0, n - length)(rng);
    std::vector<int64_t> range;
    for (size_t k = first; k < first + length; ++k) range.push_back(static_cast<int64_t>(k));
    const uint64_t gops_before = decoder.stats().gops_decoded;
    CheckFrames(decoder, packets, reference, bytes, range, what + " range");
    // Each GOP the range touches is decoded once.
    const size_t g = static_cast<size_t>(gop);
    BOOST_CHECK_EQUAL(decoder.stats().gops_decoded - gops_before,
                      (first + length - 1) / g - first / g + 1);

    const size_t count = std::uniform_int_distribution<size_t>(1, 8)(rng);
    std::vector<int64_t> scattered;
    for (size_t j = 0; j < count; ++j) {
      scattered.push_back(
          std::uniform_int_distribution<int64_t>(0, static_cast<int64_t>(n) - 1)(rng));
    }
    scattered.push_back(scattered.front());  // a repeat
    CheckFrames(decoder, packets, reference, bytes, scattered, what + " scattered");
  }
}

BOOST_AUTO_TEST_SUITE(h264_test)

BOOST_AUTO_TEST_CASE(testsrc2_frames_in_any_order_equal_the_whole_stream_decode) {
  std::mt19937 rng(20261127);
  for (int gop : {1, 4, 8, 16}) {
    H264Settings s;
    s.gop = gop;
    s.frames = 64;
    CheckExactness(test::EncodeLavfi("testsrc2", s), "testsrc2-gop" + std::to_string(gop), gop,
                   rng);
  }
}

BOOST_AUTO_TEST_CASE(yuv444_frames_in_any_order_equal_the_whole_stream_decode) {
  // 4:4:4, the layout for frame sizes 4:2:0 cannot hold (odd dimensions).
  std::mt19937 rng(444);
  H264Settings s;
  s.gop = 4;
  s.frames = 24;
  s.width = 161;
  s.height = 121;
  s.pix_fmt = "yuv444p";
  const std::string stream = test::EncodeLavfi("testsrc2", s);
  BOOST_CHECK(ParseH264Stream(stream, "444").params.chroma == video::ChromaFormat::k444);
  CheckExactness(stream, "testsrc2-444-gop4", 4, rng);
}

BOOST_AUTO_TEST_CASE(cockatoo_frames_in_any_order_equal_the_whole_stream_decode) {
  std::mt19937 rng(23);
  for (int gop : {1, 4, 8, 16}) {
    H264Settings s;
    s.gop = gop;
    s.frames = 280;  // the whole clip
    CheckExactness(test::EncodeH264({"-i", test::CockatooPath()}, s),
                   "cockatoo-gop" + std::to_string(gop), gop, rng);
  }
}

BOOST_AUTO_TEST_CASE(raw_rgb_frames_encode_and_decode_to_their_size) {
  // The helper's raw-frame path; the frame count and size come through.
  H264Settings s;
  s.width = 64;
  s.height = 48;
  s.frames = 5;
  s.gop = 2;
  std::string rgb(64 * 48 * 3 * 5, '\0');
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<char>((i * 7) % 251);
  const EncodedVideo v = ParseH264Stream(test::EncodeRgbFrames(rgb, s), "rgb");
  BOOST_CHECK_EQUAL(v.frame_count(), 5u);
  BOOST_CHECK_EQUAL(v.params.width, 64);
  BOOST_CHECK_EQUAL(v.params.height, 48);
  BOOST_CHECK(v.params.chroma == video::ChromaFormat::k420);
  GopDecoder decoder;
  const std::vector<std::string> frames = decoder.Decode(PacketsOf(v, "rgb"), {4, 0});
  BOOST_CHECK_EQUAL(frames[0].size(), 64u * 48 * 3);
}

BOOST_AUTO_TEST_CASE(pool_reuses_a_context_for_equal_parameters_only) {
  H264Settings s;
  s.frames = 16;
  const EncodedVideo a = ParseH264Stream(test::EncodeLavfi("testsrc2", s), "a");
  const EncodedVideo b = ParseH264Stream(test::EncodeLavfi("mandelbrot", s), "b");
  // Two sources, same encoder settings: the same decoder parameters.
  BOOST_REQUIRE(a.params == b.params);
  BOOST_REQUIRE(a.bytes != b.bytes);
  s.width = 160;
  s.height = 120;
  const EncodedVideo c = ParseH264Stream(test::EncodeLavfi("testsrc2", s), "c");
  BOOST_REQUIRE(!(a.params == c.params));

  GopDecoder decoder;
  decoder.Decode(PacketsOf(a, "a"), {3});
  BOOST_CHECK_EQUAL(decoder.stats().contexts_created, 1u);
  BOOST_CHECK_EQUAL(decoder.stats().contexts_reused, 0u);
  decoder.Decode(PacketsOf(b, "b"), {12, 5});
  BOOST_CHECK_EQUAL(decoder.stats().contexts_created, 1u);
  BOOST_CHECK_EQUAL(decoder.stats().contexts_reused, 1u);
  BOOST_CHECK_EQUAL(decoder.pooled_contexts(), 1u);
  decoder.Decode(PacketsOf(c, "c"), {0});
  BOOST_CHECK_EQUAL(decoder.stats().contexts_created, 2u);
  BOOST_CHECK_EQUAL(decoder.pooled_contexts(), 2u);
  // Back to the first parameters: pooled, and still exact after the others.
  const std::vector<std::string> again = decoder.Decode(PacketsOf(a, "a"), {9});
  BOOST_CHECK_EQUAL(decoder.stats().contexts_created, 2u);
  BOOST_CHECK_EQUAL(decoder.stats().contexts_reused, 2u);
  GopDecoder fresh;
  BOOST_CHECK(again == fresh.Decode(PacketsOf(a, "a"), {9}));

  // A pool of one keeps the most recent parameters only.
  GopDecoder small(1);
  small.Decode(PacketsOf(a, "a"), {0});
  small.Decode(PacketsOf(c, "c"), {0});
  small.Decode(PacketsOf(b, "b"), {0});
  BOOST_CHECK_EQUAL(small.stats().contexts_created, 3u);
  BOOST_CHECK_EQUAL(small.pooled_contexts(), 1u);
}

BOOST_AUTO_TEST_CASE(a_clip_feeds_the_decoder_only_the_packets_it_needs) {
  H264Settings s;
  s.gop = 8;
  s.frames = 64;
  const EncodedVideo v = ParseH264Stream(test::EncodeLavfi("testsrc2", s), "clip");
  const VideoPackets packets = PacketsOf(v, "clip");
  struct Case {
    std::vector<int64_t> frames;
    uint64_t packets, gops;
  };
  std::vector<int64_t> aligned, unaligned;
  for (int64_t k = 16; k < 32; ++k) aligned.push_back(k);    // GOPs 16-23 and 24-31
  for (int64_t k = 20; k < 36; ++k) unaligned.push_back(k);  // 16-23, 24-31, 32-35
  std::vector<int64_t> backwards(unaligned.rbegin(), unaligned.rend());
  const std::vector<Case> cases = {
      {aligned, 16, 2},
      {unaligned, 20, 3},
      {backwards, 20, 3},
      {{3, 50}, 4 + 3, 2},  // 0-3 and 48-50
      {{50, 3, 50, 49}, 4 + 3, 2},
      {{63}, 8, 1},
      {{8}, 1, 1},
  };
  for (const Case& c : cases) {
    GopDecoder decoder;
    decoder.Decode(packets, c.frames);
    BOOST_CHECK_EQUAL(decoder.stats().packets_sent, c.packets);
    BOOST_CHECK_EQUAL(decoder.stats().gops_decoded, c.gops);
    BOOST_CHECK_EQUAL(decoder.stats().frames_decoded, c.packets);
    const auto runs = video::PlanRuns(packets, c.frames.data(), c.frames.size());
    BOOST_CHECK_EQUAL(runs.size(), c.gops);
  }
  // The runs name the packets a reader must load: the others may stay empty.
  VideoPackets sparse = packets;
  const std::vector<int64_t> wanted = {20, 21, 50};
  const auto runs = video::PlanRuns(packets, wanted.data(), wanted.size());
  std::vector<bool> needed(sparse.frames.size(), false);
  for (const auto& r : runs) {
    for (size_t k = r.first; k <= r.last; ++k) needed[k] = true;
  }
  for (size_t k = 0; k < needed.size(); ++k) {
    if (!needed[k]) sparse.frames[k].bytes = {};
  }
  GopDecoder decoder;
  BOOST_CHECK(decoder.Decode(sparse, wanted) == decoder.Decode(packets, wanted));
}

// The error of decoding `frames`, or "" when it succeeds.
template <typename E>
std::string ErrorOf(GopDecoder& decoder, const VideoPackets& packets,
                    const std::vector<int64_t>& frames) {
  try {
    decoder.Decode(packets, frames);
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

BOOST_AUTO_TEST_CASE(damaged_inputs_are_typed_errors_naming_the_video_and_frame) {
  H264Settings s;
  s.gop = 8;
  s.frames = 24;
  const EncodedVideo v = ParseH264Stream(test::EncodeLavfi("testsrc2", s), "vid-1");
  const VideoPackets good = PacketsOf(v, "vid-1");
  const std::string reference = test::FfmpegDecodeRgb(v.bytes);
  const size_t bytes = FrameBytes(v);
  GopDecoder decoder;

  // Frame indices out of range.
  for (int64_t k : {int64_t{-1}, int64_t{24}, int64_t{1} << 40}) {
    const std::string e = ErrorOf<OutOfRangeError>(decoder, good, {0, k});
    BOOST_CHECK_MESSAGE(
        Contains(e, "video vid-1 frame " + std::to_string(k)) && Contains(e, "24 frames"),
        "frame " << k << ": " << e);
  }

  // A truncated packet (frame 11, a P-frame of the second GOP).
  std::vector<std::string> storage;
  storage.reserve(8);
  {
    VideoPackets bad = good;
    storage.push_back(std::string(v.packet(11).substr(0, v.packet(11).size() / 2)));
    bad.frames[11].bytes = storage.back();
    const std::string e = ErrorOf<CorruptionError>(decoder, bad, {13});
    BOOST_CHECK_MESSAGE(Contains(e, "video vid-1 frame 11"), e);
    // Frames of the other GOPs still decode, and right.
    CheckFrames(decoder, bad, reference, bytes, {7, 16, 23}, "after a truncated packet");
  }
  // Bytes flipped in the middle of a keyframe's slice data: the decoder
  // finds it.
  {
    VideoPackets bad = good;
    std::string damaged(v.packet(8));
    for (size_t i = damaged.size() / 2; i < damaged.size() / 2 + 16; ++i) {
      damaged[i] = static_cast<char>(~damaged[i]);
    }
    storage.push_back(damaged);
    bad.frames[8].bytes = storage.back();
    const std::string e = ErrorOf<CorruptionError>(decoder, bad, {12});
    BOOST_CHECK_MESSAGE(Contains(e, "video vid-1 frame 8"), "flipped keyframe: " << e);
  }
  // Flipped bytes anywhere: a CorruptionError naming the video, or a decode
  // (damage that is still a valid bitstream decodes to other pixels, which
  // only a checksum of the stored bytes can tell: the storage core's CRCs),
  // never a crash or another error.
  {
    std::mt19937 rng(11);
    int detected = 0, decoded = 0;
    for (int trial = 0; trial < 64; ++trial) {
      const size_t k = std::uniform_int_distribution<size_t>(0, 23)(rng);
      std::string damaged(v.packet(k));
      const size_t at = std::uniform_int_distribution<size_t>(0, damaged.size() - 1)(rng);
      const size_t length = std::uniform_int_distribution<size_t>(1, 8)(rng);
      for (size_t i = at; i < at + length && i < damaged.size(); ++i) {
        damaged[i] = static_cast<char>(damaged[i] ^ static_cast<char>(1 + rng() % 255));
      }
      VideoPackets bad = good;
      bad.frames[k].bytes = damaged;
      try {
        decoder.Decode(bad, {static_cast<int64_t>(k)});
        ++decoded;
      } catch (const CorruptionError& e) {
        ++detected;
        BOOST_CHECK_MESSAGE(Contains(e.what(), "video vid-1 frame "), e.what());
      }
    }
    BOOST_TEST_MESSAGE("flipped bytes: " << detected << " of 64 found by the decoder");
    BOOST_CHECK_EQUAL(detected + decoded, 64);
  }
  // A packet with no picture in it (only parameter sets), a P-frame twice,
  // two pictures in one packet.
  for (int variant = 0; variant < 3; ++variant) {
    VideoPackets bad = good;
    if (variant == 0) storage.push_back(v.params.extradata);
    if (variant == 1) storage.push_back(std::string(v.packet(17)));
    if (variant == 2) storage.push_back(std::string(v.packet(17)) + std::string(v.packet(18)));
    bad.frames[18].bytes = storage.back();
    const std::string e = ErrorOf<CorruptionError>(decoder, bad, {20});
    BOOST_CHECK_MESSAGE(Contains(e, "video vid-1 frame 18: "), "variant " << variant << ": " << e);
  }
  // A keyframe where the flags say none (a packet out of its place).
  {
    VideoPackets bad = good;
    bad.frames[18].bytes = good.frames[16].bytes;
    const std::string e = ErrorOf<CorruptionError>(decoder, bad, {20});
    BOOST_CHECK_MESSAGE(Contains(e, "video vid-1 frame 18: a keyframe where"), e);
  }
  // A missing (empty) packet.
  {
    VideoPackets bad = good;
    bad.frames[5].bytes = {};
    const std::string e = ErrorOf<CorruptionError>(decoder, bad, {6});
    BOOST_CHECK_MESSAGE(Contains(e, "video vid-1 frame 5: empty or missing packet"), e);
  }
  // Empty extradata.
  {
    video::VideoParams params = v.params;
    params.extradata.clear();
    VideoPackets bad = good;
    bad.params = &params;
    const std::string e = ErrorOf<CorruptionError>(decoder, bad, {0});
    BOOST_CHECK_MESSAGE(Contains(e, "video vid-1 frame 0: empty extradata"), e);
  }
  // Garbage extradata.
  {
    video::VideoParams params = v.params;
    params.extradata = std::string("\x00\x00\x00\x01\x67\xff\xff\xff\xff\xff", 10);
    VideoPackets bad = good;
    bad.params = &params;
    // The keyframes carry their parameter sets too: either the decoder
    // refuses these, or the frames are right.
    try {
      CheckFrames(decoder, bad, reference, bytes, {1, 9}, "with garbage extradata");
    } catch (const CorruptionError& e) {
      BOOST_CHECK_MESSAGE(Contains(e.what(), "video vid-1 frame 0"), e.what());
    }
  }
  // Parameters of another stream (another frame size) with these packets.
  {
    H264Settings other = s;
    other.width = 160;
    other.height = 120;
    const EncodedVideo o = ParseH264Stream(test::EncodeLavfi("testsrc2", other), "other");
    VideoPackets bad = good;
    bad.params = &o.params;
    const std::string e = ErrorOf<CorruptionError>(decoder, bad, {9});
    BOOST_CHECK_MESSAGE(
        Contains(e, "video vid-1 frame 8") && Contains(e, "320x240") && Contains(e, "160x120"), e);
  }
  // No keyframe at or before a frame.
  {
    VideoPackets bad = good;
    bad.frames[0].keyframe = false;
    const std::string e = ErrorOf<CorruptionError>(decoder, bad, {9, 3});
    BOOST_CHECK_MESSAGE(Contains(e, "video vid-1 frame 3: no keyframe"), e);
  }
  // A keyframe flag on a P-frame: its GOP starts where no picture can, and
  // the decoder yields none of the run's frames (it drops pictures whose
  // references it never saw).
  {
    VideoPackets bad = good;
    bad.frames[4].keyframe = true;
    const std::string e = ErrorOf<CorruptionError>(decoder, bad, {5});
    BOOST_CHECK_MESSAGE(Contains(e,
                                 "video vid-1 frame 4: the GOP from frame 4 yields 0 frames for "
                                 "its 2 packets"),
                        e);
  }
  // After all of that the decoder is as good as new.
  std::vector<int64_t> all;
  for (int64_t k = 0; k < 24; ++k) all.push_back(k);
  CheckFrames(decoder, good, reference, bytes, all, "after the errors");
}

BOOST_AUTO_TEST_CASE(streams_the_room_cannot_use_are_corruption_errors) {
  auto parse_error = [](const std::string& stream) -> std::string {
    try {
      ParseH264Stream(stream, "input.h264");
    } catch (const CorruptionError& e) {
      return e.what();
    }
    return "";
  };
  BOOST_CHECK(Contains(parse_error(""), "parse h264 input.h264: empty stream"));
  BOOST_CHECK(Contains(parse_error("not a video at all, just text"), "parse h264 input.h264: "));
  std::mt19937 rng(5);
  std::string noise(4096, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  BOOST_CHECK(Contains(parse_error(noise), "parse h264 input.h264: "));
  H264Settings s;
  s.frames = 16;
  s.bframes = 2;
  BOOST_CHECK_MESSAGE(Contains(parse_error(test::EncodeLavfi("testsrc2", s)), "B-frames"),
                      "a stream with B-frames is refused");
  // A stream cut short parses to its whole frames; the cut one is then a
  // decode error (or missing), never a wrong picture.
  s.bframes = 0;
  const std::string stream = test::EncodeLavfi("testsrc2", s);
  const EncodedVideo whole = ParseH264Stream(stream, "whole");
  const std::string cut =
      stream.substr(0, static_cast<size_t>(whole.packets[10].offset) + whole.packets[10].size / 2);
  const EncodedVideo v = ParseH264Stream(cut, "cut");
  BOOST_REQUIRE_EQUAL(v.frame_count(), 11u);
  GopDecoder decoder;
  const std::string e = ErrorOf<CorruptionError>(decoder, PacketsOf(v, "cut"), {10});
  BOOST_CHECK_MESSAGE(Contains(e, "video cut frame 10"), e);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
