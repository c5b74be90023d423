// Test inputs for the H.264 room (engine/video): streams encoded by the
// ffmpeg program (libx264) as gulpdb's ingest will encode them, and the
// ffmpeg program's own decoding of a stream, as an independent reference.
#ifndef GULPDB_TESTS_SUPPORT_H264_ENCODE_H_
#define GULPDB_TESTS_SUPPORT_H264_ENCODE_H_

#include <string>
#include <vector>

namespace gulpdb::test {

struct H264Settings {
  int gop = 8;   // every gop-th frame is a keyframe (-g N -keyint_min N -sc_threshold 0)
  int crf = 23;  // libx264's constant rate factor
  int width = 320;
  int height = 240;
  int frames = 32;
  std::string pix_fmt = "yuv420p";  // or yuv444p
  int bframes = 0;                  // -bf: anything but 0 makes a stream the room refuses
};

// Encodes `frames` frames of ffmpeg input `input` (arguments before and
// including -i), scaled to width x height, as a raw Annex-B H.264 stream
// without B-frames (-bf 0), yuv420p; returns the stream's bytes. Throws
// std::runtime_error with ffmpeg's message when it fails.
std::string EncodeH264(const std::vector<std::string>& input, const H264Settings& settings);

// ffmpeg's lavfi source `source` (testsrc2, mandelbrot, ...) at the size and
// 25 frames/s.
std::string EncodeLavfi(const std::string& source, const H264Settings& settings);

// Raw RGB24 frames (width x height each, back to back) encoded as above.
std::string EncodeRgbFrames(const std::string& rgb, const H264Settings& settings);

// python3-imageio's sample clip cockatoo.mp4 (1280x720, 280 frames).
std::string CockatooPath();

// The whole stream decoded by the ffmpeg program to RGB24 (-pix_fmt rgb24),
// one frame per packet, frames back to back.
std::string FfmpegDecodeRgb(const std::string& stream);

}  // namespace gulpdb::test

#endif  // GULPDB_TESTS_SUPPORT_H264_ENCODE_H_
