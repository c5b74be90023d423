// Frame-exact decoding of H.264 frames by index (docs/h264.md).
//
// A video is a run of packets, one per frame in display order (no B-frames:
// h264_stream.h), some of them keyframes. Frame k is decoded by feeding
// libavcodec the packets from the keyframe at or before k through k, never
// by seeking a container. A request for several frames (any order, repeats
// allowed) decodes each group of pictures (GOP) it touches once, from its
// keyframe through the last frame asked for in it, and no GOP it does not
// touch. Frames come out as RGB24 (libswscale; the colour matrix and range
// are those the stream's VUI states, BT.601 limited range when it states
// none, the same conversion as `ffmpeg -pix_fmt rgb24` for that stream).
//
// Decoder contexts are expensive to open; a GopDecoder keeps up to
// `max_contexts` of them, keyed by the video's parameters (the extradata
// bytes and geometry), and reuses one for every video with the same
// parameters, flushed (avcodec_flush_buffers) before each GOP.
//
// Failure modes (nothing is written to an output buffer that is not a right
// frame; on an error the buffers' contents are unspecified):
//   - a frame index outside [0, frame count): OutOfRangeError;
//   - empty extradata, a decoder that refuses the parameters, a packet that
//     is empty, missing or does not decode, a frame whose geometry or pixel
//     format is not the parameters', a frame libavcodec marks as damaged, a
//     keyframe where the flags say none or the other way round, a
//     GOP that yields fewer (or more) frames than its packets, frames out of
//     order, no keyframe at or before a frame: CorruptionError;
//   - allocation failures: OutOfMemoryError.
// Damage that still is a valid bitstream (a few flipped bits in a P-frame's
// slice data, say) decodes to other pixels, and no decoder can tell; the
// checksums of the stored bytes (the storage core's CRC-32C) must catch it
// before the packets get here, as they do for JPEG frames.
// Each message reads "decode h264 video <id> frame <k>: <what was wrong>".
// A context that failed is closed, never reused.
//
// Thread safety: a GopDecoder is not thread-safe; use one per thread
// (ForThisThread). Different GopDecoders share nothing and may decode at
// once. libav's log output goes nowhere (libav_support.h).
#ifndef GULPDB_ENGINE_VIDEO_GOP_DECODER_H_
#define GULPDB_ENGINE_VIDEO_GOP_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/video/h264_stream.h"

namespace gulpdb::video {

// One frame's packet as the decoder sees it. `bytes` may be left empty for a
// packet that no planned run needs (PlanRuns): the reader loads only those.
struct FramePacket {
  std::string_view bytes;
  bool keyframe = false;
};

// A video to decode from: an id for messages, its parameters (not owned;
// must outlive the call) and its frames' packets in display order.
struct VideoPackets {
  std::string_view id;
  const VideoParams* params = nullptr;
  std::vector<FramePacket> frames;
};

// The packets of a parsed stream, viewing `video` (which must outlive them).
VideoPackets PacketsOf(const EncodedVideo& video, std::string_view id);

// Packets [first, last] decoded in one go: `first` is a keyframe, and every
// frame asked for in that GOP is at most `last`.
struct DecodeRun {
  size_t first = 0;
  size_t last = 0;
};

// The runs that decoding `frames` (any order, repeats allowed) feeds to the
// decoder, in order: one per GOP touched. Throws OutOfRangeError for an index
// outside the video and CorruptionError when no keyframe is at or before one.
// Uses only the keyframe flags (not the bytes).
std::vector<DecodeRun> PlanRuns(const VideoPackets& video, const int64_t* frames, size_t count);

class GopDecoder {
 public:
  // What this decoder did since it was made: observable for tests and
  // benchmarks.
  struct Stats {
    uint64_t contexts_created = 0;  // decoder contexts opened
    uint64_t contexts_reused = 0;   // videos decoded with a pooled context
    uint64_t gops_decoded = 0;      // runs (PlanRuns) fed to a decoder
    uint64_t packets_sent = 0;      // packets fed to libavcodec
    uint64_t frames_decoded = 0;    // frames libavcodec returned
  };

  explicit GopDecoder(size_t max_contexts = 4);
  ~GopDecoder();
  GopDecoder(const GopDecoder&) = delete;
  GopDecoder& operator=(const GopDecoder&) = delete;

  // This thread's decoder, made on first use and destroyed at thread exit.
  static GopDecoder& ForThisThread();

  // Decodes frames[i] into out[i] (width * height * 3 bytes each, RGB24, rows
  // back to back) for i < count. Throws as the file comment says.
  void DecodeInto(const VideoPackets& video, const int64_t* frames, size_t count,
                  uint8_t* const* out);
  // The same, returning each frame's bytes.
  std::vector<std::string> Decode(const VideoPackets& video, const std::vector<int64_t>& frames);

  const Stats& stats() const { return stats_; }
  // How many decoder contexts are idle in the pool.
  size_t pooled_contexts() const { return pool_.size(); }

 private:
  struct Context;
  std::unique_ptr<Context> Acquire(const VideoPackets& video);
  void Release(std::unique_ptr<Context> context);
  void DecodeRunInto(Context* context, const VideoPackets& video, const DecodeRun& run,
                     const std::vector<std::pair<size_t, size_t>>& wanted, size_t* next_wanted,
                     uint8_t* const* out);

  size_t max_contexts_;
  std::vector<std::unique_ptr<Context>> pool_;  // least recently used first
  Stats stats_;
};

}  // namespace gulpdb::video

#endif  // GULPDB_ENGINE_VIDEO_GOP_DECODER_H_
