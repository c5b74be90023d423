#include "engine/video/h264_stream.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "engine/video/libav_support.h"
#include "gulpdb/error.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>
}

namespace gulpdb::video {
namespace {

[[noreturn]] void Fail(const std::string& what, const std::string& detail) {
  throw CorruptionError("parse h264 " + what + ": " + detail);
}

// The stream's bytes as libavformat's input.
struct MemoryInput {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
};

int ReadPacket(void* opaque, uint8_t* buf, int buf_size) {
  auto* in = static_cast<MemoryInput*>(opaque);
  if (in->pos >= in->size) return AVERROR_EOF;
  const size_t n = std::min(in->size - in->pos, static_cast<size_t>(buf_size));
  std::memcpy(buf, in->data + in->pos, n);
  in->pos += n;
  return static_cast<int>(n);
}

int64_t Seek(void* opaque, int64_t offset, int whence) {
  auto* in = static_cast<MemoryInput*>(opaque);
  const auto size = static_cast<int64_t>(in->size);
  int64_t target;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE:
      return size;
    case SEEK_SET:
      target = offset;
      break;
    case SEEK_CUR:
      target = static_cast<int64_t>(in->pos) + offset;
      break;
    case SEEK_END:
      target = size + offset;
      break;
    default:
      return AVERROR(EINVAL);
  }
  if (target < 0 || target > size) return AVERROR(EINVAL);
  in->pos = static_cast<size_t>(target);
  return target;
}

struct AvioDeleter {
  void operator()(AVIOContext* avio) const {
    if (avio == nullptr) return;
    av_freep(&avio->buffer);
    avio_context_free(&avio);
  }
};
struct FormatDeleter {
  void operator()(AVFormatContext* fmt) const { avformat_close_input(&fmt); }
};
struct PacketDeleter {
  void operator()(AVPacket* pkt) const { av_packet_free(&pkt); }
};

constexpr int kAvioBufferSize = 64 * 1024;

}  // namespace

EncodedVideo ParseH264Stream(std::string_view stream, const std::string& what) {
  InitLibav();
  ClearLibavMessage();
  if (stream.empty()) Fail(what, "empty stream");
  MemoryInput input{reinterpret_cast<const uint8_t*>(stream.data()), stream.size()};
  auto* buffer = static_cast<uint8_t*>(av_malloc(kAvioBufferSize));
  if (buffer == nullptr) throw OutOfMemoryError("parse h264 " + what + ": out of memory");
  std::unique_ptr<AVIOContext, AvioDeleter> avio(
      avio_alloc_context(buffer, kAvioBufferSize, 0, &input, &ReadPacket, nullptr, &Seek));
  if (!avio) {
    av_free(buffer);
    throw OutOfMemoryError("parse h264 " + what + ": out of memory");
  }
  AVFormatContext* raw = avformat_alloc_context();
  if (raw == nullptr) throw OutOfMemoryError("parse h264 " + what + ": out of memory");
  raw->pb = avio.get();
  raw->flags |= AVFMT_FLAG_CUSTOM_IO;
  const AVInputFormat* format = av_find_input_format("h264");
  if (format == nullptr) Fail(what, "this libavformat has no raw H.264 demuxer");
  // On failure avformat_open_input frees the context (not the custom AVIO).
  int ret = avformat_open_input(&raw, nullptr, format, nullptr);
  if (ret < 0) Fail(what, "not an H.264 stream: " + DescribeLibavError(ret));
  std::unique_ptr<AVFormatContext, FormatDeleter> fmt(raw);
  ret = avformat_find_stream_info(fmt.get(), nullptr);
  if (ret < 0) Fail(what, "cannot read the stream's parameters: " + DescribeLibavError(ret));
  if (fmt->nb_streams != 1 || fmt->streams[0]->codecpar->codec_id != AV_CODEC_ID_H264) {
    Fail(what, "not an H.264 elementary stream");
  }
  const AVCodecParameters* par = fmt->streams[0]->codecpar;

  EncodedVideo video;
  video.params.width = par->width;
  video.params.height = par->height;
  if (par->width <= 0 || par->height <= 0) Fail(what, "no frame size (no SPS)");
  switch (par->format) {
    case AV_PIX_FMT_YUV420P:
    case AV_PIX_FMT_YUVJ420P:
      video.params.chroma = ChromaFormat::k420;
      break;
    case AV_PIX_FMT_YUV444P:
    case AV_PIX_FMT_YUVJ444P:
      video.params.chroma = ChromaFormat::k444;
      break;
    default: {
      const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(par->format));
      Fail(what, std::string("pixel format ") + (name != nullptr ? name : "unknown") +
                     " (only 8-bit yuv420p and yuv444p are supported)");
    }
  }
  if (par->video_delay != 0) {
    Fail(what,
         "the stream reorders frames (B-frames; encode with -bf 0): decode order "
         "would not be display order");
  }
  if (par->extradata == nullptr || par->extradata_size <= 0) {
    Fail(what, "no decoder parameters (SPS/PPS) in the stream");
  }
  video.params.extradata.assign(reinterpret_cast<const char*>(par->extradata),
                                static_cast<size_t>(par->extradata_size));

  std::unique_ptr<AVPacket, PacketDeleter> pkt(av_packet_alloc());
  if (!pkt) throw OutOfMemoryError("parse h264 " + what + ": out of memory");
  video.bytes.reserve(stream.size());
  while ((ret = av_read_frame(fmt.get(), pkt.get())) >= 0) {
    const bool key = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
    const bool corrupt = (pkt->flags & AV_PKT_FLAG_CORRUPT) != 0;
    const auto size = static_cast<size_t>(pkt->size);
    const size_t index = video.packets.size();
    if (corrupt) Fail(what, "frame " + std::to_string(index) + " is marked corrupt");
    if (size == 0) Fail(what, "frame " + std::to_string(index) + " is empty");
    if (index == 0 && !key) Fail(what, "the first frame is not a keyframe");
    PacketInfo info;
    info.offset = video.bytes.size();
    info.size = static_cast<uint32_t>(size);
    info.keyframe = key;
    video.bytes.append(reinterpret_cast<const char*>(pkt->data), size);
    video.packets.push_back(info);
    av_packet_unref(pkt.get());
  }
  if (ret != AVERROR_EOF) Fail(what, "reading packets: " + DescribeLibavError(ret));
  if (video.packets.empty()) Fail(what, "no frames");
  return video;
}

}  // namespace gulpdb::video
