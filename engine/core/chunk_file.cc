#include "engine/core/chunk_file.h"

#include <fcntl.h>
#include <limits.h>

#include <algorithm>

#include "gulpdb/error.h"

namespace gulpdb::engine {
namespace {

int FlagsFor(ChunkFile::Mode mode) {
  switch (mode) {
    case ChunkFile::Mode::kRead:
      return O_RDONLY;
    case ChunkFile::Mode::kAppend:
      return O_RDWR;
    case ChunkFile::Mode::kCreate:
      return O_RDWR | O_CREAT | O_EXCL;
  }
  return O_RDONLY;
}

// Zero bytes for padding; a frame needs at most three.
constexpr char kZeros[4] = {0, 0, 0, 0};

}  // namespace

ChunkFile::ChunkFile(std::string path, Mode mode)
    : path_(std::move(path)), fd_(util::OpenFile(path_, FlagsFor(mode))) {}

void ChunkFile::ReadAt(uint64_t offset, void* dst, size_t size) const {
  const size_t got = util::PreadFull(fd_.get(), dst, size, offset, path_);
  if (got != size) {
    // Where the file really ends: a read that starts past the end gets no
    // byte, so offset + got would name the offset, not the end.
    throw CorruptionError("read " + path_ + ": wanted " + std::to_string(size) +
                          " bytes at offset " + std::to_string(offset) + " but the file ends at " +
                          std::to_string(std::min(offset + got, Size())));
  }
}

std::vector<FrameInfo> ChunkFile::AppendFrames(uint64_t offset,
                                               const std::vector<std::string_view>& jpegs) {
  std::vector<FrameInfo> frames;
  frames.reserve(jpegs.size());
  std::vector<struct iovec> iov;
  iov.reserve(2 * jpegs.size());
  uint64_t at = offset;
  for (std::string_view jpeg : jpegs) {
    const uint32_t pad = PadFor(jpeg.size());
    iov.push_back({const_cast<char*>(jpeg.data()), jpeg.size()});
    if (pad != 0) iov.push_back({const_cast<char*>(kZeros), pad});
    frames.push_back(FrameInfo{at, pad, static_cast<uint32_t>(jpeg.size() + pad)});
    at += jpeg.size() + pad;
  }
  // pwritev takes at most IOV_MAX entries per call.
  uint64_t write_at = offset;
  for (size_t first = 0; first < iov.size(); first += IOV_MAX) {
    const size_t count = std::min<size_t>(IOV_MAX, iov.size() - first);
    uint64_t bytes = 0;
    for (size_t i = first; i < first + count; ++i) bytes += iov[i].iov_len;
    util::PwritevFull(fd_.get(), iov.data() + first, static_cast<int>(count), write_at, path_);
    write_at += bytes;
  }
  return frames;
}

}  // namespace gulpdb::engine
