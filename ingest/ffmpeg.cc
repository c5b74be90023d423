#include "ingest/ffmpeg.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <utility>

#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "util/file_io.h"
#include "util/sys_error.h"

namespace gulpdb::ingest {
namespace {

std::string FirstLine(const std::string& text) {
  const size_t nl = text.find('\n');
  return nl == std::string::npos ? text : text.substr(0, nl);
}

std::string FormatRate(double rate) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", rate);
  return text;
}

// Opens `path` first: ffmpeg would report a missing or unreadable file as a
// failed decode, and this makes it a NotFoundError or an IoError instead; a
// device, a FIFO or a dangling link is refused saying so (ffmpeg would read
// /dev/zero for ever).
void CheckReadable(const std::string& path) {
  util::RequireUsableEntry(path, "read");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) util::ThrowErrno("read", path, errno);
  struct stat st;
  const bool is_dir = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  ::close(fd);
  if (is_dir) throw InvalidArgumentError("read " + path + ": is a directory, not a file");
}

// The ffmpeg command that writes the frames of `path` as PPM images on its
// stdout: every frame of a video at settings.frame_rate, or the first frame
// of an image, resized by GulpIO's short-edge rule.
std::vector<std::string> DecodeArgv(const std::string& path, bool image,
                                    const FrameSettings& settings) {
  std::vector<std::string> argv = {settings.ffmpeg, "-nostdin", "-hide_banner", "-loglevel",
                                   "error",         "-i",       "file:" + path, "-map",
                                   "0:v:0",         "-an",      "-sn",          "-dn"};
  std::string filters;
  if (!image && settings.frame_rate > 0) filters = "fps=" + FormatRate(settings.frame_rate);
  if (settings.frame_size > 0) {
    // GulpIO's short-edge rule, evaluated by ffmpeg on the decoded size (which
    // already accounts for rotation metadata). Quotes protect the commas.
    const std::string s = std::to_string(settings.frame_size);
    if (!filters.empty()) filters += ",";
    filters += "scale=w='if(lt(ih,iw),max(1,trunc(" + s + "*iw/ih))," + s + ")'" +
               ":h='if(lt(ih,iw)," + s + ",max(1,trunc(" + s + "*ih/iw)))':flags=bilinear";
  }
  if (!filters.empty()) {
    argv.push_back("-vf");
    argv.push_back(filters);
  }
  if (image) {
    argv.push_back("-frames:v");
    argv.push_back("1");
  }
  for (const char* a : {"-f", "image2pipe", "-c:v", "ppm", "-pix_fmt", "rgb24", "-"}) {
    argv.push_back(a);
  }
  return argv;
}

// A second ffmpeg child that encodes RGB frames written to its stdin with
// libx264 into a raw Annex-B stream on its stdout (docs/h264.md). A thread
// reads its stdout and stderr while the caller writes frames, so neither
// side waits for the other (no deadlock however large the output). The
// destructor, unless Finish() ran, kills the child and joins the thread.
class H264Encoder {
 public:
  H264Encoder(const FrameSettings& settings, int width, int height, std::string what,
              ChildSet* children)
      : what_(std::move(what)),
        child_(Argv(settings, width, height), children, ChildStdin::kStream),
        reader_([this] { ReadOutput(); }) {}
  ~H264Encoder() {
    if (reader_.joinable()) {
      child_.Kill();
      reader_.join();
    }
  }
  H264Encoder(const H264Encoder&) = delete;
  H264Encoder& operator=(const H264Encoder&) = delete;

  // Feeds one frame. Throws CorruptionError when the encoder has ended.
  void Write(const std::vector<uint8_t>& rgb) {
    if (!child_.WriteIn(rgb.data(), rgb.size())) {
      Finish();  // throws: the encoder ended before its input did
      Fail("ffmpeg stopped reading frames");
    }
  }

  // Ends the input, waits for the encoder and returns its stream. Throws
  // CorruptionError when it failed or wrote nothing, IoError when its output
  // could not be read.
  std::string Finish() {
    child_.CloseIn();
    reader_.join();
    const int status = child_.Wait();
    if (read_errno_ != 0) util::ThrowErrno("read the h264 encoder output of", what_, read_errno_);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      Fail("ffmpeg " + DescribeStatus(status));
    }
    if (out_.empty()) Fail("ffmpeg wrote no stream");
    return std::move(out_);
  }

 private:
  static std::vector<std::string> Argv(const FrameSettings& s, int width, int height) {
    // 4:2:0 halves the chroma planes, so it needs even sizes; 4:4:4 holds any.
    const bool odd = width % 2 != 0 || height % 2 != 0;
    const std::string gop = std::to_string(s.gop);
    // The frames' rate, for the encoder's rate control only (no timestamps
    // are stored); "every frame" has none, so 25.
    const std::string rate = s.frame_rate > 0 ? FormatRate(s.frame_rate) : "25";
    return {s.ffmpeg,
            "-nostdin",
            "-hide_banner",
            "-loglevel",
            "error",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-s",
            std::to_string(width) + "x" + std::to_string(height),
            "-r",
            rate,
            "-i",
            "pipe:0",
            "-an",
            "-c:v",
            "libx264",
            "-g",
            gop,
            "-keyint_min",
            gop,
            "-sc_threshold",
            "0",
            "-bf",
            "0",
            "-crf",
            std::to_string(s.crf),
            "-pix_fmt",
            odd ? "yuv444p" : "yuv420p",
            "-f",
            "h264",
            "pipe:1"};
  }

  [[noreturn]] void Fail(const std::string& detail) {
    const std::string line = FirstLine(errors_);
    throw CorruptionError("encode " + what_ + " as h264: " + detail +
                          (line.empty() ? "" : ": " + line));
  }

  // On the reader thread: stdout into out_, stderr into errors_, until both end.
  void ReadOutput() {
    char chunk[65536];
    while (child_.out() >= 0 || child_.err() >= 0) {
      pollfd fds[2] = {{child_.out(), POLLIN, 0}, {child_.err(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        read_errno_ = errno;
        return;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        const ssize_t n = ::read(fds[i].fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && i == 0) {
          read_errno_ = errno;
          return;
        }
        if (n <= 0) {
          if (i == 0) child_.CloseOut();
          if (i == 1) child_.CloseErr();
          continue;
        }
        if (i == 0) out_.append(chunk, static_cast<size_t>(n));
        if (i == 1 && errors_.size() < 8192) errors_.append(chunk, static_cast<size_t>(n));
      }
    }
  }

  std::string what_;
  ChildProcess child_;
  std::string out_, errors_;  // written by the reader thread until it is joined
  int read_errno_ = 0;
  std::thread reader_;  // last: starts once the rest is built
};

}  // namespace

bool PpmStream::Next(std::vector<uint8_t>* pixels, int* width, int* height) {
  size_t header_end = 0;
  while (!ParseHeader(&header_end, width, height)) {
    if (header_.size() > 64) Corrupt("bad frame header");
    char chunk[4096];
    const size_t n = Read(chunk, sizeof(chunk));
    if (n == 0) {
      if (header_.empty()) return false;
      Corrupt("the output ends inside a frame header");
    }
    header_.append(chunk, n);
  }
  const size_t need = static_cast<size_t>(*width) * static_cast<size_t>(*height) * size_t{3};
  pixels->resize(need);
  size_t have = std::min(need, header_.size() - header_end);
  std::memcpy(pixels->data(), header_.data() + header_end, have);
  header_.erase(0, header_end + have);
  while (have < need) {
    const size_t n = Read(pixels->data() + have, need - have);
    if (n == 0) Corrupt("the output ends inside a frame");
    have += n;
  }
  return true;
}

const std::string& PpmStream::DrainErrors() {
  while (child_->err() >= 0) ReadErrors();
  return errors_;
}

void PpmStream::Corrupt(const std::string& detail) {
  throw CorruptionError("decode " + what_ + ": ffmpeg output: " + detail);
}

bool PpmStream::ParseHeader(size_t* end, int* width, int* height) {
  size_t pos = 0;
  uint64_t values[3] = {0, 0, 0};
  auto space = [&](size_t p) {
    return p < header_.size() &&
           (header_[p] == ' ' || header_[p] == '\n' || header_[p] == '\r' || header_[p] == '\t');
  };
  if (header_.size() < 2) return false;
  if (header_[0] != 'P' || header_[1] != '6') Corrupt("not a PPM frame");
  pos = 2;
  for (uint64_t& v : values) {
    if (pos >= header_.size()) return false;
    if (!space(pos)) Corrupt("bad frame header");
    while (space(pos)) ++pos;
    const size_t digits = pos;
    while (pos < header_.size() && header_[pos] >= '0' && header_[pos] <= '9' && v < 1000000) {
      v = v * 10 + static_cast<uint64_t>(header_[pos] - '0');
      ++pos;
    }
    if (pos >= header_.size()) return false;
    if (pos == digits || !space(pos)) Corrupt("bad frame header");
  }
  if (values[2] != 255) Corrupt("not 8-bit RGB");
  if (values[0] < 1 || values[0] > 65500 || values[1] < 1 || values[1] > 65500) {
    Corrupt("frame size out of range");
  }
  *width = static_cast<int>(values[0]);
  *height = static_cast<int>(values[1]);
  *end = pos + 1;
  return true;
}

void PpmStream::ReadErrors() {
  char chunk[4096];
  const ssize_t n = ::read(child_->err(), chunk, sizeof(chunk));
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    child_->CloseErr();
    return;
  }
  if (errors_.size() < 8192) errors_.append(chunk, static_cast<size_t>(n));
}

size_t PpmStream::Read(void* dst, size_t max) {
  for (;;) {
    pollfd fds[2] = {{child_->out(), POLLIN, 0}, {child_->err(), POLLIN, 0}};
    const nfds_t count = child_->err() >= 0 ? 2 : 1;
    if (::poll(fds, count, -1) < 0) {
      if (errno == EINTR) continue;
      util::ThrowErrno("poll ffmpeg output of", what_, errno);
    }
    if (count == 2 && fds[1].revents != 0) ReadErrors();
    if (fds[0].revents != 0) {
      const ssize_t n = ::read(child_->out(), dst, max);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) util::ThrowErrno("read ffmpeg output of", what_, errno);
      return static_cast<size_t>(n);
    }
  }
}

namespace {

using FrameSink = std::function<void(const std::vector<uint8_t>& rgb, int width, int height)>;

// Runs the decoding ffmpeg of DecodeArgv on `path`, passes each frame to
// `sink` and returns how many it passed; `*errors` gets what ffmpeg said on
// stderr. Throws CorruptionError when ffmpeg fails.
size_t RunDecoder(const std::string& path, bool image, const FrameSettings& settings,
                  ChildSet* children, const FrameSink& sink, std::string* errors) {
  ChildProcess child(DecodeArgv(path, image, settings), children);
  PpmStream stream(&child, path);
  std::vector<uint8_t> pixels;
  int width = 0, height = 0;
  size_t frames = 0;
  while (stream.Next(&pixels, &width, &height)) {
    sink(pixels, width, height);
    ++frames;
  }
  *errors = stream.DrainErrors();
  const int status = child.Wait();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw CorruptionError("decode " + path + ": ffmpeg " + DescribeStatus(status) +
                          (errors->empty() ? "" : ": " + FirstLine(*errors)));
  }
  return frames;
}

// The frames of `path` (see DecodeWithFfmpeg) passed to `sink`. A video
// shorter than one frame period at settings.frame_rate (one frame at 8 fps)
// gets nothing from the fps filter; it yields its first frame instead, as an
// image does, so that a video always yields at least one frame. Throws
// CorruptionError when there is none at all. Returns ffmpeg's warning line,
// if it printed one.
std::string DecodeFrames(const std::string& path, bool image, const FrameSettings& settings,
                         ChildSet* children, const FrameSink& sink) {
  CheckReadable(path);
  std::string errors;
  size_t frames = RunDecoder(path, image, settings, children, sink, &errors);
  if (frames == 0 && !image && settings.frame_rate > 0) {
    frames = RunDecoder(path, /*image=*/true, settings, children, sink, &errors);
  }
  if (frames == 0) {
    throw CorruptionError("decode " + path + ": no video frames" +
                          (errors.empty() ? "" : ": " + FirstLine(errors)));
  }
  return errors.empty() ? "" : "decode " + path + ": ffmpeg: " + FirstLine(errors);
}

}  // namespace

std::vector<std::string> DecodeWithFfmpeg(const std::string& path, bool image,
                                          const FrameSettings& settings, ChildSet* children,
                                          std::string* warning) {
  JpegEncoder& encoder = ThreadLocalEncoder();
  std::vector<std::string> frames;
  const std::string said = DecodeFrames(
      path, image, settings, children, [&](const std::vector<uint8_t>& rgb, int width, int height) {
        frames.push_back(encoder.Encode(rgb.data(), width, height, 3, settings.encode));
      });
  if (!said.empty()) *warning = said;
  return frames;
}

std::string EncodeH264WithFfmpeg(const std::string& path, const FrameSettings& settings,
                                 ChildSet* children, size_t* frame_count, std::string* warning) {
  std::optional<H264Encoder> encoder;  // started at the first frame, whose size it takes
  int first_width = 0, first_height = 0;
  size_t frames = 0;
  const std::string said = DecodeFrames(
      path, /*image=*/false, settings, children,
      [&](const std::vector<uint8_t>& rgb, int width, int height) {
        if (!encoder) {
          first_width = width;
          first_height = height;
          encoder.emplace(settings, width, height, path, children);
        } else if (width != first_width || height != first_height) {
          throw CorruptionError("decode " + path + ": frame " + std::to_string(frames) + " is " +
                                std::to_string(width) + "x" + std::to_string(height) +
                                " after frames of " + std::to_string(first_width) + "x" +
                                std::to_string(first_height));
        }
        encoder->Write(rgb);
        ++frames;
      });
  std::string h264 = encoder->Finish();
  if (!said.empty()) *warning = said;
  *frame_count = frames;
  return h264;
}

}  // namespace gulpdb::ingest
