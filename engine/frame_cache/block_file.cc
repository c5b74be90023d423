#include "engine/frame_cache/block_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "util/crc32c.h"
#include "util/test_bug.h"

namespace gulpdb::engine {
namespace {

constexpr char kMagic[8] = {'G', 'D', 'B', 'F', 'B', 'L', 'K', '1'};
constexpr uint64_t kFixedBytes = 96;  // magic, sizes, offset, length, name

uint64_t PageCount(uint64_t length) { return (length + kBlockPageBytes - 1) / kBlockPageBytes; }

void Put32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void Put64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint64_t Get(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// pread of exactly `size` bytes; false on a short read or an error.
bool PreadExact(int fd, char* dst, uint64_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t got = ::pread(fd, dst, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    dst += got;
    size -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

}  // namespace

uint64_t BlockHeaderSize(uint64_t length) { return kFixedBytes + 4 * PageCount(length) + 4; }

std::string EncodeBlockHeader(const BlockId& id, std::string_view data) {
  std::string h(kMagic, sizeof kMagic);
  Put32(&h, static_cast<uint32_t>(BlockHeaderSize(id.length)));
  Put32(&h, kBlockPageBytes);
  Put64(&h, id.offset);
  Put64(&h, id.length);
  h.append(id.name);
  h.resize(kFixedBytes, '\0');
  for (uint64_t p = 0; p < PageCount(id.length); ++p) {
    const uint64_t begin = p * kBlockPageBytes;
    const uint64_t size = std::min<uint64_t>(kBlockPageBytes, data.size() - begin);
    Put32(&h, util::Crc32c(data.data() + begin, size));
  }
  Put32(&h, util::Crc32c(h.data(), h.size()));
  return h;
}

std::string ReadBlockBytes(int fd, uint64_t file_size, const BlockId& id, uint64_t offset,
                           uint64_t size, char* out) noexcept {
  try {
    const uint64_t header_size = BlockHeaderSize(id.length);
    if (util::TestBugEnabled("frame-trust-blocks")) {
      // The bytes are read where they should be, unchecked; what is not
      // there reads as zeros.
      if (offset > id.length || size > id.length - offset) return "a read outside the block";
      if (size == 0) return "";
      std::memset(out, 0, size);
      const ssize_t got = ::pread(fd, out, size, static_cast<off_t>(header_size + offset));
      (void)got;
      return "";
    }
    if (file_size != header_size + id.length) {
      return "its size is " + std::to_string(file_size) + " bytes, not the " +
             std::to_string(header_size + id.length) + " of a block of " +
             std::to_string(id.length) + " bytes";
    }
    if (offset > id.length || size > id.length - offset) return "a read outside the block";
    std::string header(header_size, '\0');
    if (!PreadExact(fd, header.data(), header_size, 0)) return "its header cannot be read";
    const uint64_t stored_crc = Get(header.data() + header_size - 4, 4);
    if (std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) return "not a frame-cache block";
    if (util::Crc32c(header.data(), header_size - 4) != stored_crc) {
      return "its header fails its CRC-32C";
    }
    if (Get(header.data() + 8, 4) != header_size || Get(header.data() + 12, 4) != kBlockPageBytes ||
        Get(header.data() + 16, 8) != id.offset || Get(header.data() + 24, 8) != id.length ||
        std::string_view(header.data() + 32, id.name.size()) != id.name) {
      return "its header describes another block";
    }
    if (size == 0) return "";
    const uint64_t first = offset / kBlockPageBytes;
    const uint64_t last = (offset + size - 1) / kBlockPageBytes;
    const uint64_t begin = first * kBlockPageBytes;
    const uint64_t end = std::min<uint64_t>((last + 1) * kBlockPageBytes, id.length);
    std::vector<char> pages(end - begin);
    if (!PreadExact(fd, pages.data(), pages.size(), header_size + begin)) {
      return "its bytes cannot be read";
    }
    for (uint64_t p = first; p <= last; ++p) {
      const uint64_t at = p * kBlockPageBytes - begin;
      const uint64_t n = std::min<uint64_t>(kBlockPageBytes, pages.size() - at);
      if (util::Crc32c(pages.data() + at, n) != Get(header.data() + kFixedBytes + 4 * p, 4)) {
        return "page " + std::to_string(p) + " fails its CRC-32C";
      }
    }
    std::memcpy(out, pages.data() + (offset - begin), size);
    return "";
  } catch (...) {
    return "out of memory";
  }
}

}  // namespace gulpdb::engine
