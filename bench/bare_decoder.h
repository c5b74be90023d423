// The decode benchmarks' shared pieces (decode_bench and decode_ab): the bare
// TurboJPEG loop gulpdb is measured against, and the small synthetic dataset
// of their --smoke runs.
//
// The baseline includes <turbojpeg.h> itself; the library's own code reaches
// TurboJPEG only through engine/codec/jpeg_codec.cc.
//
// Thread safety: a BareDecoder is used by one thread at a time.
#ifndef GULPDB_BENCH_BARE_DECODER_H_
#define GULPDB_BENCH_BARE_DECODER_H_

#include <turbojpeg.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace gulpdb::bench {

// The flags gulpdb decodes with by default (fast DCT and upsampling).
constexpr int kBareFlags = TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE | TJFLAG_LIMITSCANS;

// One thread's bare decoder: a TurboJPEG handle kept for every frame, and its
// buffers.
class BareDecoder {
 public:
  BareDecoder(size_t max_clip_bytes, size_t max_clip_pixels_bytes);
  ~BareDecoder();
  BareDecoder(const BareDecoder&) = delete;
  BareDecoder& operator=(const BareDecoder&) = delete;

  // Reads (pread of `fd`) and decodes one clip into `out_buffer` (of
  // `out_size` bytes; by default this decoder's own reused buffer); returns
  // its decoded bytes. Dies on any failure.
  size_t DecodeClip(int fd, const ClipExtent& clip, uint8_t* out_buffer = nullptr,
                    size_t out_size = 0);
  const uint8_t* pixels() const { return pixels_.data(); }

 private:
  tjhandle handle_;
  std::vector<char> jpeg_;
  std::vector<uint8_t> pixels_;
};

// A --smoke run: writes a dataset (4 videos of 8 frames, 96x64) and its clip
// list (one 6-frame clip per video, "id<TAB>1<TAB>6" lines) into a scratch
// directory named `name`, returns run(dataset dir, clip list file) and
// removes the directory.
int RunOnSmokeDecodeData(
    const std::string& name,
    const std::function<int(const std::string& dir, const std::string& clips_file)>& run);

}  // namespace gulpdb::bench

#endif  // GULPDB_BENCH_BARE_DECODER_H_
