// Random contiguous clips decoded from an H.264 stream by engine/video's
// GopDecoder: one decoder for every clip (its pooled context reused) against
// a new decoder (a new libavcodec context) per clip, the cost the pool
// saves. A quick measure, not part of bench/run.py.
//
//   video_gop_bench STREAM.h264 [CLIPS] [CLIP_FRAMES]
// STREAM.h264: a raw H.264 stream without B-frames, for instance (one line)
//   ffmpeg -f lavfi -i testsrc2=size=320x240:rate=25 -frames:v 256 -pix_fmt yuv420p
//     -c:v libx264 -g 8 -keyint_min 8 -sc_threshold 0 -bf 0 -crf 23 -f h264 s.h264
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "engine/video/gop_decoder.h"
#include "engine/video/h264_stream.h"

namespace {

double Run(const gulpdb::video::VideoPackets& packets, int clips, int length, bool pooled,
           uint64_t* packets_sent) {
  std::mt19937 rng(1);
  const int n = static_cast<int>(packets.frames.size());
  gulpdb::video::GopDecoder shared;
  *packets_sent = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < clips; ++c) {
    const int first = std::uniform_int_distribution<int>(0, n - length)(rng);
    std::vector<int64_t> frames;
    for (int k = first; k < first + length; ++k) frames.push_back(k);
    if (pooled) {
      shared.Decode(packets, frames);
    } else {
      gulpdb::video::GopDecoder fresh;
      fresh.Decode(packets, frames);
      *packets_sent += fresh.stats().packets_sent;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (pooled) *packets_sent = shared.stats().packets_sent;
  return clips / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s STREAM.h264 [CLIPS] [CLIP_FRAMES]\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const int clips = argc > 2 ? std::atoi(argv[2]) : 200;
  const int length = argc > 3 ? std::atoi(argv[3]) : 16;
  const gulpdb::video::EncodedVideo video = gulpdb::video::ParseH264Stream(bytes, argv[1]);
  const gulpdb::video::VideoPackets packets = gulpdb::video::PacketsOf(video, argv[1]);
  if (static_cast<int>(video.frame_count()) < length) {
    std::fprintf(stderr, "the stream has fewer than %d frames\n", length);
    return 2;
  }
  for (bool pooled : {true, false, true, false}) {
    uint64_t sent = 0;
    const double rate = Run(packets, clips, length, pooled, &sent);
    std::printf("%-28s %8.1f clips/s  %8.1f frames/s  %.2f packets decoded per frame\n",
                pooled ? "pooled context" : "new context per clip", rate, rate * length,
                static_cast<double>(sent) / (static_cast<double>(clips) * length));
  }
  return 0;
}
