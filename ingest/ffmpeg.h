// Decoding videos and non-JPEG images with ffmpeg: one child process per
// file, its frames read from a pipe as a stream of binary PPM images and
// encoded as JPEG by gulpdb's encoder, its stderr collected meanwhile so that
// neither pipe can fill up and block the child. No temporary files.
//
// Why PPM rather than raw RGB or MJPEG: each frame carries its own size, so
// there is no ffprobe round-trip and no guessing what size ffmpeg settled on
// (rotation metadata, odd sizes, size changes mid-stream); unlike an MJPEG
// pipe, the pixels come once and are encoded once, by gulpdb's encoder, at the
// quality and subsampling GulpIO2 uses. The header costs ~15 bytes a frame.
#ifndef GULPDB_INGEST_FFMPEG_H_
#define GULPDB_INGEST_FFMPEG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ingest/child_process.h"
#include "ingest/frame_settings.h"

namespace gulpdb::ingest {

// Reads the frames a child writes to its stdout as binary PPM images
// ("P6\n<w> <h>\n255\n" + w*h*3 bytes of RGB each), while collecting its
// stderr. Not thread-safe.
class PpmStream {
 public:
  PpmStream(ChildProcess* child, std::string what) : child_(child), what_(std::move(what)) {}

  // Reads the next frame into `*pixels` (resized to w*h*3); false at the end
  // of the stream. Throws CorruptionError for output that is not a PPM stream.
  bool Next(std::vector<uint8_t>* pixels, int* width, int* height);

  // Reads what is left of stderr (after stdout ended) and returns it.
  const std::string& DrainErrors();

 private:
  [[noreturn]] void Corrupt(const std::string& detail);
  // Parses "P6 <w> <h> 255" + one whitespace byte at the start of header_.
  bool ParseHeader(size_t* end, int* width, int* height);
  void ReadErrors();
  // Reads up to `max` bytes of stdout; 0 at its end.
  size_t Read(void* dst, size_t max);

  ChildProcess* child_;
  std::string what_;
  std::string header_;  // bytes read but not consumed (a header, maybe some pixels)
  std::string errors_;
};

// Decodes `path` with ffmpeg and encodes its frames (all of a video at
// settings.frame_rate, or the first frame of an image; a video shorter than
// one frame period at that rate, which ffmpeg's fps filter drops whole,
// yields its first frame, decoded again by a second child: a video always
// yields at least one). Throws CorruptionError for a file ffmpeg cannot
// decode or that has no frames, FatalError when ffmpeg cannot be started,
// and, before starting ffmpeg, what util::RequireUsableEntry throws for a
// dangling link, a device or a FIFO. Sets `*warning` to what ffmpeg reported
// on a successful run.
std::vector<std::string> DecodeWithFfmpeg(const std::string& path, bool image,
                                          const FrameSettings& settings, ChildSet* children,
                                          std::string* warning);

// Decodes the video `path` as DecodeWithFfmpeg does (the same frames: count,
// times, size) and encodes them with libx264 through a second ffmpeg child
// (settings.gop, settings.crf, no B-frames; 4:2:0, or 4:4:4 for an odd width
// or height), returning the raw Annex-B H.264 stream and setting
// `*frame_count` to the frames fed. Throws as DecodeWithFfmpeg, and
// CorruptionError "encode <path> as h264: ..." when the encoder fails or
// when the frame size changes within the video.
std::string EncodeH264WithFfmpeg(const std::string& path, const FrameSettings& settings,
                                 ChildSet* children, size_t* frame_count, std::string* warning);

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_FFMPEG_H_
