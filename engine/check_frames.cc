#include "engine/check_frames.h"

#include <utility>

#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "util/crc32c.h"
#ifdef GULPDB_HAVE_H264
#include "engine/video/gop_decoder.h"
#endif

namespace gulpdb::engine {
namespace {

constexpr uint64_t kMaxRunBytes = 16 << 20;  // adjacent frames read in one request

}  // namespace

// Checks one video's frames against its chunk file. Runs on pool threads.
// Adjacent frames are read together (one pread, or one range GET for a
// remote dataset, per run of up to kMaxRunBytes); a run that fails to read
// is read again frame by frame, so the error names the frame.
void FrameChecker::Check(const std::string& id, const index::VideoRecord& record,
                         const CheckedChunk& chunk) const {
  const std::string where_video = chunk.record.file_name + " id '" + id + "'";
  const auto where = [&](size_t i) {
    return where_video + " frame " + std::to_string(i) + " (offset " +
           std::to_string(record.frames[i].offset) + ")";
  };
  const auto readable = [&](size_t i) {
    const FrameInfo& f = record.frames[i];
    return chunk.file && f.offset + f.length <= chunk.record.committed_length &&
           f.offset + f.length <= chunk.size;
  };
  const bool h264 = record.h264.has_value();
  if (h264 != (codec_ == Codec::kH264)) {
    Report("id '" + id + "'",
           h264 ? "is an H.264 video in a dataset whose codec is " + std::string(CodecName(codec_))
                : "is not an H.264 video (no keyframes or decoder "
                  "parameters) in an h264 dataset");
    return;
  }
  // H.264 (deep): the packets whose bytes are whole, for the GOP decode.
  std::vector<std::string> packets(h264 && deep_ ? record.frames.size() : 0);
  std::vector<bool> packet_ok(packets.size(), false);
  std::string run;
  for (size_t i = 0; i < record.frames.size();) {
    const FrameInfo& first = record.frames[i];
    if (first.offset + first.length > chunk.record.committed_length) {
      Report(where(i),
             "extends past the committed length " + std::to_string(chunk.record.committed_length) +
                 " of its chunk",
             i);
      ++i;
      continue;
    }
    if (!readable(i)) {  // reported with the chunk
      ++i;
      continue;
    }
    size_t end = i + 1;
    uint64_t bytes = first.length;
    while (end < record.frames.size() && readable(end) &&
           record.frames[end].offset == first.offset + bytes &&
           bytes + record.frames[end].length <= kMaxRunBytes) {
      bytes += record.frames[end].length;
      ++end;
    }
    run.resize(bytes);
    bool whole = true;
    try {
      chunk.file->ReadAt(first.offset, run.data(), bytes);
    } catch (const Error&) {
      whole = false;
    }
    for (size_t k = i; k < end; ++k) {
      const FrameInfo& f = record.frames[k];
      std::string single;
      std::string_view frame;
      if (whole) {
        frame = std::string_view(run).substr(f.offset - first.offset, f.length);
      } else {
        single.resize(f.length);
        try {
          chunk.file->ReadAt(f.offset, single.data(), f.length);
        } catch (const Error& e) {
          Report(where(k), e.what(), k);
          continue;
        }
        frame = single;
      }
      const bool ok = CheckFrame(where(k), k, frame, f,
                                 record.crc32c.empty() ? nullptr : &record.crc32c[k], h264);
      if (!packets.empty() && ok) {
        packets[k] = std::string(frame.substr(0, f.jpeg_size()));
        packet_ok[k] = true;
      }
    }
    i = end;
  }
  if (!packets.empty()) CheckGops(where, id, record, packets, packet_ok);
}

// Deep check of an H.264 video: decodes every group of pictures whose
// packets all read whole and matched their CRCs (the others are reported
// already), reporting the first frame that does not decode.
void FrameChecker::CheckGops(const std::function<std::string(size_t)>& where, const std::string& id,
                             const index::VideoRecord& record,
                             const std::vector<std::string>& packets,
                             const std::vector<bool>& packet_ok) const {
#ifdef GULPDB_HAVE_H264
  video::VideoParams params;
  params.extradata = record.h264->extradata;
  params.width = static_cast<int>(record.h264->width);
  params.height = static_cast<int>(record.h264->height);
  params.chroma = record.h264->chroma == 1 ? video::ChromaFormat::k444 : video::ChromaFormat::k420;
  video::VideoPackets video;
  video.id = id;
  video.params = &params;
  video.frames.resize(packets.size());
  for (size_t k = 0; k < packets.size(); ++k) video.frames[k].bytes = packets[k];
  for (uint32_t k : record.keyframes) video.frames[k].keyframe = true;
  std::vector<uint8_t> scratch(static_cast<size_t>(params.width) *
                               static_cast<size_t>(params.height) * 3);
  for (size_t g = 0; g < record.keyframes.size(); ++g) {
    const size_t first = record.keyframes[g];
    const size_t end = g + 1 < record.keyframes.size() ? record.keyframes[g + 1] : packets.size();
    bool whole = true;
    for (size_t k = first; k < end; ++k) whole = whole && packet_ok[k];
    if (!whole) continue;
    // The GOP's last frame decodes every packet of the GOP.
    const int64_t last = static_cast<int64_t>(end - 1);
    uint8_t* out = scratch.data();
    try {
      video::GopDecoder::ForThisThread().DecodeInto(video, &last, 1, &out);
    } catch (const Error& e) {
      Report(where(first), std::string("the group of pictures does not decode: ") + e.what(),
             first);
    }
  }
#else
  (void)where;
  (void)id;
  (void)record;
  (void)packets;
  (void)packet_ok;
#endif
}

// One frame's bytes (JPEG and pad) as read from its chunk.
// An H.264 packet (`h264`) gets the same checks but the JPEG ones (markers,
// decode): its decode is by group of pictures (CheckGops). Returns false
// when the deep check found the bytes changed.
bool FrameChecker::CheckFrame(const std::string& where, size_t frame, std::string_view bytes,
                              const FrameInfo& f, const uint32_t* crc32c, bool h264) const {
  const std::string_view jpeg = bytes.substr(0, f.jpeg_size());
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(jpeg[k]); };
  if (h264) {
    // No markers to check: an Annex-B packet starts with a start code.
  } else if (jpeg.size() < 4 || byte(0) != 0xff || byte(1) != 0xd8) {
    Report(where, "does not start with the JPEG SOI marker FFD8", frame);
  } else if (byte(jpeg.size() - 2) != 0xff || byte(jpeg.size() - 1) != 0xd9) {
    Report(where, "does not end with the JPEG EOI marker FFD9", frame);
  }
  for (size_t k = f.jpeg_size(); k < f.length; ++k) {
    if (bytes[k] != 0) {
      Report(where, "pad byte " + std::to_string(k - f.jpeg_size()) + " is not zero", frame);
      break;
    }
  }
  if (!deep_) return true;
  if (crc32c && util::Crc32c(jpeg.data(), jpeg.size()) != *crc32c) {
    Report(where, "CRC-32C mismatch: the frame's bytes changed since they were written", frame);
    return false;
  }
  if (h264) return true;
  try {
    ThreadLocalDecoder().Decode(reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size());
  } catch (const Error& e) {
    Report(where, e.what(), frame);
  }
  return true;
}

}  // namespace gulpdb::engine
