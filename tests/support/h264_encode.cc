#include "tests/support/h264_encode.h"

#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ingest/child_process.h"
#include "tests/support/test_util.h"

namespace gulpdb::test {
namespace {

std::string Drain(int fd) {
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return text;
    }
  }
}

// Runs ffmpeg with `args` (its output goes to a file named in them).
void RunFfmpeg(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-y"};
  argv.insert(argv.end(), args.begin(), args.end());
  ingest::ChildSet children;
  ingest::ChildProcess child(argv, &children);
  const std::string err = Drain(child.err());
  Drain(child.out());
  const int status = child.Wait();
  if (status != 0) {
    std::string command;
    for (const std::string& a : argv) command += a + " ";
    throw std::runtime_error(command + ": " + ingest::DescribeStatus(status) + ": " + err);
  }
}

}  // namespace

std::string EncodeH264(const std::vector<std::string>& input, const H264Settings& s) {
  TempDir dir;
  const std::string out = dir / "out.h264";
  std::vector<std::string> args = input;
  const std::vector<std::string> encode = {
      "-frames:v",
      std::to_string(s.frames),
      "-an",
      "-vf",
      "scale=" + std::to_string(s.width) + ":" + std::to_string(s.height),
      "-pix_fmt",
      s.pix_fmt,
      "-c:v",
      "libx264",
      "-preset",
      "fast",
      "-g",
      std::to_string(s.gop),
      "-keyint_min",
      std::to_string(s.gop),
      "-sc_threshold",
      "0",
      "-bf",
      std::to_string(s.bframes),
      "-crf",
      std::to_string(s.crf),
      "-f",
      "h264",
      out};
  args.insert(args.end(), encode.begin(), encode.end());
  RunFfmpeg(args);
  return ReadFile(out);
}

std::string EncodeLavfi(const std::string& source, const H264Settings& s) {
  return EncodeH264(
      {"-f", "lavfi", "-i",
       source + "=size=" + std::to_string(s.width) + "x" + std::to_string(s.height) + ":rate=25"},
      s);
}

std::string EncodeRgbFrames(const std::string& rgb, const H264Settings& s) {
  TempDir dir;
  WriteFile(dir / "in.rgb", rgb);
  return EncodeH264(
      {"-f", "rawvideo", "-pix_fmt", "rgb24", "-s",
       std::to_string(s.width) + "x" + std::to_string(s.height), "-r", "25", "-i", dir / "in.rgb"},
      s);
}

std::string CockatooPath() {
  return "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4";
}

std::string FfmpegDecodeRgb(const std::string& stream) {
  TempDir dir;
  WriteFile(dir / "in.h264", stream);
  RunFfmpeg({"-f", "h264", "-i", dir / "in.h264", "-fps_mode", "passthrough", "-f", "rawvideo",
             "-pix_fmt", "rgb24", dir / "out.rgb"});
  return ReadFile(dir / "out.rgb");
}

}  // namespace gulpdb::test
