#include "engine/video/gop_decoder.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "engine/video/libav_support.h"
#include "gulpdb/error.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/mem.h>
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>
}

namespace gulpdb::video {
namespace {

std::string Where(const VideoPackets& video, size_t frame) {
  return "decode h264 video " + std::string(video.id) + " frame " + std::to_string(frame);
}

[[noreturn]] void Corrupt(const VideoPackets& video, size_t frame, const std::string& detail) {
  throw CorruptionError(Where(video, frame) + ": " + detail);
}

bool PixelFormatMatches(int format, ChromaFormat chroma) {
  switch (chroma) {
    case ChromaFormat::k420:
      return format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P;
    case ChromaFormat::k444:
      return format == AV_PIX_FMT_YUV444P || format == AV_PIX_FMT_YUVJ444P;
  }
  return false;
}

std::string PoolKey(const VideoParams& params) {
  return std::to_string(params.width) + "x" + std::to_string(params.height) + ":" +
         std::to_string(static_cast<int>(params.chroma)) + ":" + params.extradata;
}

}  // namespace

VideoPackets PacketsOf(const EncodedVideo& video, std::string_view id) {
  VideoPackets packets;
  packets.id = id;
  packets.params = &video.params;
  packets.frames.reserve(video.packets.size());
  for (size_t i = 0; i < video.packets.size(); ++i) {
    packets.frames.push_back(FramePacket{video.packet(i), video.packets[i].keyframe});
  }
  return packets;
}

std::vector<DecodeRun> PlanRuns(const VideoPackets& video, const int64_t* frames, size_t count) {
  const size_t n = video.frames.size();
  std::vector<size_t> sorted;
  sorted.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (frames[i] < 0 || static_cast<uint64_t>(frames[i]) >= n) {
      throw OutOfRangeError("decode h264 video " + std::string(video.id) + " frame " +
                            std::to_string(frames[i]) + ": out of range (the video has " +
                            std::to_string(n) + " frames)");
    }
    sorted.push_back(static_cast<size_t>(frames[i]));
  }
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<DecodeRun> runs;
  size_t key = 0;
  bool have_key = false;  // `key` is the keyframe at or before the last frame seen
  size_t scanned = 0;     // frames [0, scanned) have been looked at for keyframes
  for (size_t k : sorted) {
    for (; scanned <= k; ++scanned) {
      if (video.frames[scanned].keyframe) {
        key = scanned;
        have_key = true;
      }
    }
    if (!have_key) Corrupt(video, k, "no keyframe at or before it");
    if (!runs.empty() && runs.back().first == key) {
      runs.back().last = k;
    } else {
      runs.push_back(DecodeRun{key, k});
    }
  }
  return runs;
}

struct GopDecoder::Context {
  std::string key;
  AVCodecContext* codec = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* packet = nullptr;
  SwsContext* sws = nullptr;
  // The RGB rows as swscale writes them (aligned, with room to spare), then
  // copied out: swscale's SIMD may write past a row's last pixel.
  uint8_t* rgb = nullptr;
  int rgb_linesize = 0;

  ~Context() {
    av_freep(&rgb);
    sws_freeContext(sws);
    av_packet_free(&packet);
    av_frame_free(&frame);
    avcodec_free_context(&codec);
  }
};

GopDecoder::GopDecoder(size_t max_contexts) : max_contexts_(std::max<size_t>(1, max_contexts)) {
  InitLibav();
}

GopDecoder::~GopDecoder() = default;

GopDecoder& GopDecoder::ForThisThread() {
  thread_local GopDecoder decoder;
  return decoder;
}

std::unique_ptr<GopDecoder::Context> GopDecoder::Acquire(const VideoPackets& video) {
  const VideoParams& params = *video.params;
  std::string key = PoolKey(params);
  for (auto it = pool_.begin(); it != pool_.end(); ++it) {
    if ((*it)->key == key) {
      std::unique_ptr<Context> context = std::move(*it);
      pool_.erase(it);
      ++stats_.contexts_reused;
      return context;
    }
  }
  auto context = std::make_unique<Context>();
  context->key = std::move(key);
  const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_H264);
  if (codec == nullptr) Corrupt(video, 0, "this libavcodec has no H.264 decoder");
  context->codec = avcodec_alloc_context3(codec);
  context->frame = av_frame_alloc();
  context->packet = av_packet_alloc();
  if (context->codec == nullptr || context->frame == nullptr || context->packet == nullptr) {
    throw OutOfMemoryError(Where(video, 0) + ": out of memory");
  }
  AVCodecContext* c = context->codec;
  const size_t extradata_size = params.extradata.size();
  c->extradata = static_cast<uint8_t*>(av_mallocz(extradata_size + AV_INPUT_BUFFER_PADDING_SIZE));
  if (c->extradata == nullptr) throw OutOfMemoryError(Where(video, 0) + ": out of memory");
  std::memcpy(c->extradata, params.extradata.data(), extradata_size);
  c->extradata_size = static_cast<int>(extradata_size);
  c->width = params.width;
  c->height = params.height;
  c->thread_count = 1;  // one context per thread; the caller parallelises across threads
  // A damaged packet is an error, not a concealed (silently wrong) frame.
  c->err_recognition = AV_EF_EXPLODE | AV_EF_CRCCHECK | AV_EF_BITSTREAM | AV_EF_BUFFER;
  c->flags &= ~AV_CODEC_FLAG_OUTPUT_CORRUPT;
  ClearLibavMessage();
  const int ret = avcodec_open2(c, codec, nullptr);
  if (ret < 0) {
    Corrupt(video, 0, "the decoder refuses the video's parameters: " + DescribeLibavError(ret));
  }
  context->rgb_linesize = FFALIGN(params.width * 3, 64) + 64;
  context->rgb = static_cast<uint8_t*>(
      av_malloc(static_cast<size_t>(context->rgb_linesize) * static_cast<size_t>(params.height)));
  if (context->rgb == nullptr) throw OutOfMemoryError(Where(video, 0) + ": out of memory");
  ++stats_.contexts_created;
  return context;
}

void GopDecoder::Release(std::unique_ptr<Context> context) {
  pool_.push_back(std::move(context));
  if (pool_.size() > max_contexts_) pool_.erase(pool_.begin());
}

std::vector<std::string> GopDecoder::Decode(const VideoPackets& video,
                                            const std::vector<int64_t>& frames) {
  const VideoParams* params = video.params;
  const size_t bytes = params == nullptr ? 0
                                         : static_cast<size_t>(params->width) *
                                               static_cast<size_t>(params->height) * 3;
  std::vector<std::string> out(frames.size(), std::string(bytes, '\0'));
  std::vector<uint8_t*> pointers;
  pointers.reserve(out.size());
  for (std::string& frame : out) pointers.push_back(reinterpret_cast<uint8_t*>(frame.data()));
  DecodeInto(video, frames.data(), frames.size(), pointers.data());
  return out;
}

void GopDecoder::DecodeInto(const VideoPackets& video, const int64_t* frames, size_t count,
                            uint8_t* const* out) {
  if (video.params == nullptr) {
    throw InvalidArgumentError("decode h264 video " + std::string(video.id) + ": no parameters");
  }
  const std::vector<DecodeRun> runs = PlanRuns(video, frames, count);
  if (runs.empty()) return;
  const VideoParams& params = *video.params;
  if (params.extradata.empty()) Corrupt(video, runs.front().first, "empty extradata (no SPS/PPS)");
  if (params.width <= 0 || params.height <= 0 || params.width > 16384 || params.height > 16384) {
    Corrupt(video, runs.front().first,
            "impossible frame size " + std::to_string(params.width) + "x" +
                std::to_string(params.height));
  }
  // (frame index, slot in `frames`), in frame order.
  std::vector<std::pair<size_t, size_t>> wanted;
  wanted.reserve(count);
  for (size_t i = 0; i < count; ++i) wanted.emplace_back(static_cast<size_t>(frames[i]), i);
  std::sort(wanted.begin(), wanted.end());

  std::unique_ptr<Context> context = Acquire(video);
  size_t next_wanted = 0;
  for (const DecodeRun& run : runs) {
    DecodeRunInto(context.get(), video, run, wanted, &next_wanted, out);
  }
  Release(std::move(context));
}

void GopDecoder::DecodeRunInto(Context* context, const VideoPackets& video, const DecodeRun& run,
                               const std::vector<std::pair<size_t, size_t>>& wanted,
                               size_t* next_wanted, uint8_t* const* out) {
  const VideoParams& params = *video.params;
  AVCodecContext* c = context->codec;
  AVFrame* frame = context->frame;
  AVPacket* packet = context->packet;
  const size_t row_bytes = static_cast<size_t>(params.width) * 3;
  ++stats_.gops_decoded;
  avcodec_flush_buffers(c);
  ClearLibavMessage();
  size_t next_frame = run.first;  // the index the next decoded frame must have

  auto emit = [&](size_t sent_through) {
    ++stats_.frames_decoded;
    const size_t index = next_frame;
    if (index > run.last) {
      Corrupt(video, run.first,
              "the GOP yields more frames than its " + std::to_string(run.last - run.first + 1) +
                  " packets");
    }
    if (frame->decode_error_flags != 0 || (frame->flags & AV_FRAME_FLAG_CORRUPT) != 0) {
      Corrupt(video, index, "the decoder marks the frame damaged");
    }
    // Keyframes where the packets' flags say, and only there: a run starts
    // from a picture that needs no other, and a keyframe inside a run is a
    // packet out of its place.
    const bool keyframe = frame->key_frame != 0 && frame->pict_type == AV_PICTURE_TYPE_I;
    if (keyframe != video.frames[index].keyframe) {
      Corrupt(video, index,
              keyframe ? "a keyframe where the packets' flags say none"
                       : "the packet flagged as a keyframe is not one");
    }
    if (frame->width != params.width || frame->height != params.height) {
      Corrupt(video, index,
              "the frame is " + std::to_string(frame->width) + "x" + std::to_string(frame->height) +
                  " but the video's parameters say " + std::to_string(params.width) + "x" +
                  std::to_string(params.height) + " (extradata of another stream?)");
    }
    if (!PixelFormatMatches(frame->format, params.chroma)) {
      Corrupt(video, index, "the frame's pixel format is not the video's parameters'");
    }
    if (frame->pts != static_cast<int64_t>(index) || index > sent_through) {
      Corrupt(video, index,
              "the decoder returned frames out of order (frame " + std::to_string(frame->pts) +
                  " in its place)");
    }
    ++next_frame;
    if (*next_wanted >= wanted.size() || wanted[*next_wanted].first != index) return;
    const auto src_format = static_cast<AVPixelFormat>(frame->format);
    context->sws = sws_getCachedContext(context->sws, frame->width, frame->height, src_format,
                                        frame->width, frame->height, AV_PIX_FMT_RGB24, SWS_BICUBIC,
                                        nullptr, nullptr, nullptr);
    if (context->sws == nullptr) throw OutOfMemoryError(Where(video, index) + ": out of memory");
    // The matrix and range the stream states (BT.601 limited when it states
    // none), as ffmpeg's scale filter does; RGB is full range.
    const bool full_range = frame->color_range == AVCOL_RANGE_JPEG ||
                            src_format == AV_PIX_FMT_YUVJ420P || src_format == AV_PIX_FMT_YUVJ444P;
    const int* coefficients = sws_getCoefficients(frame->colorspace);
    sws_setColorspaceDetails(context->sws, coefficients, full_range ? 1 : 0,
                             sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
    uint8_t* dst[4] = {context->rgb, nullptr, nullptr, nullptr};
    int dst_linesize[4] = {context->rgb_linesize, 0, 0, 0};
    const int rows =
        sws_scale(context->sws, frame->data, frame->linesize, 0, frame->height, dst, dst_linesize);
    if (rows != frame->height) Corrupt(video, index, "colour conversion failed");
    uint8_t* first_out = out[wanted[*next_wanted].second];
    for (int y = 0; y < params.height; ++y) {
      std::memcpy(
          first_out + static_cast<size_t>(y) * row_bytes,
          context->rgb + static_cast<size_t>(y) * static_cast<size_t>(context->rgb_linesize),
          row_bytes);
    }
    ++*next_wanted;
    // The same frame asked for again.
    for (; *next_wanted < wanted.size() && wanted[*next_wanted].first == index; ++*next_wanted) {
      std::memcpy(out[wanted[*next_wanted].second], first_out,
                  row_bytes * static_cast<size_t>(params.height));
    }
  };

  auto receive = [&](size_t sent_through, bool draining) {
    for (;;) {
      const int ret = avcodec_receive_frame(c, frame);
      if (ret == AVERROR(EAGAIN)) {
        if (draining) Corrupt(video, run.last, "the decoder does not drain");
        return;
      }
      if (ret == AVERROR_EOF) return;
      if (ret < 0) {
        Corrupt(video, std::min(next_frame, run.last),
                "the packet does not decode: " + DescribeLibavError(ret));
      }
      emit(sent_through);
      av_frame_unref(frame);
    }
  };

  for (size_t i = run.first; i <= run.last; ++i) {
    const std::string_view bytes = video.frames[i].bytes;
    if (bytes.empty()) Corrupt(video, i, "empty or missing packet");
    if (bytes.size() > static_cast<size_t>(INT32_MAX) - AV_INPUT_BUFFER_PADDING_SIZE) {
      Corrupt(video, i, "packet of " + std::to_string(bytes.size()) + " bytes is too large");
    }
    // av_new_packet zeroes the padding libavcodec's bitstream readers need.
    if (av_new_packet(packet, static_cast<int>(bytes.size())) < 0) {
      throw OutOfMemoryError(Where(video, i) + ": out of memory");
    }
    std::memcpy(packet->data, bytes.data(), bytes.size());
    packet->pts = packet->dts = static_cast<int64_t>(i);
    const int ret = avcodec_send_packet(c, packet);
    av_packet_unref(packet);
    ++stats_.packets_sent;
    if (ret < 0) Corrupt(video, i, "the packet does not decode: " + DescribeLibavError(ret));
    receive(i, false);
  }
  // The end of the run: the decoder gives up any frame it still holds.
  const int ret = avcodec_send_packet(c, nullptr);
  if (ret < 0) Corrupt(video, run.last, "draining the decoder: " + DescribeLibavError(ret));
  receive(run.last, true);
  avcodec_flush_buffers(c);
  if (next_frame != run.last + 1) {
    Corrupt(video, next_frame,
            "the GOP from frame " + std::to_string(run.first) + " yields " +
                std::to_string(next_frame - run.first) + " frames for its " +
                std::to_string(run.last - run.first + 1) + " packets");
  }
}

}  // namespace gulpdb::video
