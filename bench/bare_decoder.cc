#include "bench/bare_decoder.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string_view>

#include "gulpdb/dataset.h"
#include "gulpdb/jpeg.h"

namespace gulpdb::bench {

BareDecoder::BareDecoder(size_t max_clip_bytes, size_t max_clip_pixels_bytes)
    : handle_(tjInitDecompress()), jpeg_(max_clip_bytes), pixels_(max_clip_pixels_bytes, 1) {
  if (handle_ == nullptr) Die("tjInitDecompress failed");
}

BareDecoder::~BareDecoder() { tjDestroy(handle_); }

size_t BareDecoder::DecodeClip(int fd, const ClipExtent& clip, uint8_t* out_buffer,
                               size_t out_size) {
  if (out_buffer == nullptr) {
    out_buffer = pixels_.data();
    out_size = pixels_.size();
  }
  uint64_t done = 0;
  while (done < clip.size) {
    const ssize_t n =
        ::pread(fd, jpeg_.data() + done, clip.size - done, static_cast<off_t>(clip.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die("pread failed");
    done += static_cast<uint64_t>(n);
  }
  size_t out = 0;
  uint64_t at = 0;
  for (const FrameInfo& f : clip.frames) {
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    const auto* data = reinterpret_cast<const unsigned char*>(jpeg_.data() + at);
    const auto size = static_cast<unsigned long>(f.jpeg_size());  // NOLINT(runtime/int)
    if (tjDecompressHeader3(handle_, data, size, &width, &height, &subsampling, &colorspace) != 0) {
      Die(std::string("tjDecompressHeader3: ") + tjGetErrorStr2(handle_));
    }
    const size_t bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
    if (out + bytes > out_size) Die("clip larger than its buffer");
    if (tjDecompress2(handle_, data, size, out_buffer + out, width, 0, height, TJPF_RGB,
                      kBareFlags) != 0) {
      Die(std::string("tjDecompress2: ") + tjGetErrorStr2(handle_));
    }
    out += bytes;
    at += f.length;
  }
  return out;
}

namespace {

void WriteSmokeDecodeData(const std::string& dir, const std::string& clips_file) {
  std::unique_ptr<Dataset> ds = Dataset::Create(dir);
  std::unique_ptr<Writer> w = ds->NewWriter();
  std::vector<uint8_t> rgb(96 * 64 * 3);
  std::string lines;
  for (int v = 0; v < 4; ++v) {
    std::vector<std::string> jpegs;
    for (int f = 0; f < 8; ++f) {
      for (size_t i = 0; i < rgb.size(); ++i) {
        rgb[i] = static_cast<uint8_t>((i * 7 + static_cast<size_t>(v * 31 + f * 3)) % 251);
      }
      jpegs.push_back(ThreadLocalEncoder().Encode(rgb.data(), 96, 64, 3));
    }
    w->Append(VideoId(static_cast<uint64_t>(v)),
              std::vector<std::string_view>(jpegs.begin(), jpegs.end()));
    lines += VideoId(static_cast<uint64_t>(v)) + "\t1\t6\n";
  }
  w->Commit();
  WriteWholeFile(clips_file, lines);
}

}  // namespace

int RunOnSmokeDecodeData(
    const std::string& name,
    const std::function<int(const std::string& dir, const std::string& clips_file)>& run) {
  const std::string root = ScratchDir(name);
  RemoveTree(root);
  if (::mkdir(root.c_str(), 0755) != 0) Die("mkdir " + root);
  const std::string dir = root + "/ds", clips = root + "/clips.tsv";
  WriteSmokeDecodeData(dir, clips);
  const int rc = run(dir, clips);
  RemoveTree(root);
  return rc;
}

}  // namespace gulpdb::bench
