// An H.264 elementary stream split into per-frame packets.
//
// The stream is raw Annex-B H.264 (ffmpeg `-f h264`, libx264) with no
// B-frames, so that decode order is display order and packet i is frame i
// (docs/h264.md says why). ParseH264Stream splits it with libavformat's raw
// H.264 demuxer (libavcodec's H.264 parser underneath: no NAL unit is parsed
// here) into one packet per frame, with its keyframe flag, and takes the
// decoder parameters (SPS/PPS, "extradata") and the frame size and pixel
// format from libavformat's probe of the stream.
//
// Failure modes: bytes that are not such a stream (no SPS/PPS, no frames, a
// first frame that is not a keyframe, B-frames, a pixel format other than
// 8-bit YUV 4:2:0 or 4:4:4) throw CorruptionError naming `what` (a file or
// video id). Nothing is decoded here: a packet whose slices are damaged parses;
// GopDecoder finds it.
//
// Thread safety: plain functions and value types; any number of threads may
// parse at once.
#ifndef GULPDB_ENGINE_VIDEO_H264_STREAM_H_
#define GULPDB_ENGINE_VIDEO_H264_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gulpdb::video {

// The chroma layouts the room decodes (8 bits per sample).
enum class ChromaFormat : uint8_t {
  k420 = 0,  // yuv420p: even width and height
  k444 = 1,  // yuv444p
};

// What a decoder must be told besides the packets: the stream's SPS/PPS
// (Annex-B NAL units, start codes included) and the frames' geometry. Two
// videos with equal parameters share pooled decoder contexts
// (GopDecoder), keyed by the extradata bytes.
struct VideoParams {
  std::string extradata;
  int width = 0;
  int height = 0;
  ChromaFormat chroma = ChromaFormat::k420;
  bool operator==(const VideoParams& o) const {
    return extradata == o.extradata && width == o.width && height == o.height && chroma == o.chroma;
  }
};

// One frame's packet: bytes [offset, offset + size) of EncodedVideo::bytes.
struct PacketInfo {
  uint64_t offset = 0;
  uint32_t size = 0;
  bool keyframe = false;
};

// A parsed stream: the packets of its frames in display order, back to back
// in `bytes` (the stream's own bytes, so that writing `bytes` out gives a
// stream ffmpeg reads), and the parameters to decode them.
struct EncodedVideo {
  VideoParams params;
  std::string bytes;
  std::vector<PacketInfo> packets;

  std::string_view packet(size_t i) const {
    return std::string_view(bytes).substr(static_cast<size_t>(packets[i].offset), packets[i].size);
  }
  size_t frame_count() const { return packets.size(); }
};

// Splits `stream` (the bytes of an Annex-B H.264 stream) into frames; throws
// CorruptionError "parse h264 <what>: <detail>" as above.
EncodedVideo ParseH264Stream(std::string_view stream, const std::string& what);

}  // namespace gulpdb::video

#endif  // GULPDB_ENGINE_VIDEO_H264_STREAM_H_
