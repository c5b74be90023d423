#include "remote/payload_hash.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "gulpdb/error.h"
#include "util/sha256.h"
#include "util/sys_error.h"

namespace gulpdb::remote {
namespace {

// Gives `update` the `length` bytes of `fd` from `offset`, piece by piece.
template <typename Update>
void ReadRegion(int fd, const std::string& path, uint64_t offset, uint64_t length,
                const Update& update) {
  std::vector<char> buf(size_t{1} << 20);
  uint64_t done = 0;
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - done));
    const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) util::ThrowErrno("read", path, errno);
    if (n == 0) {
      throw IoError("read " + path + ": file ends at " + std::to_string(offset + done) +
                    ", before the " + std::to_string(length) + " bytes from offset " +
                    std::to_string(offset) + " to upload");
    }
    update(buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
}

// SHA-256 and MD5 side by side.
class TwoDigests {
 public:
  void Update(const void* data, size_t n) {
    sha_.Update(data, n);
    md5_.Update(data, n);
  }
  PayloadDigests Finish() {
    PayloadDigests out;
    out.sha256_hex = sha_.FinishHex();
    util::Md5::Digest md5 = md5_.Finish();
    out.md5_hex = std::move(md5.hex);
    out.md5_base64 = std::move(md5.base64);
    return out;
  }

 private:
  util::Sha256 sha_;
  util::Md5 md5_;
};

}  // namespace

std::string Sha256Hex(std::string_view data) { return util::Sha256Hex(data); }

std::string Sha256HexOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length) {
  util::Sha256 sha;
  ReadRegion(fd, path, offset, length, [&](const char* data, size_t n) { sha.Update(data, n); });
  return sha.FinishHex();
}

PayloadDigests DigestsOf(std::string_view data) {
  TwoDigests d;
  d.Update(data.data(), data.size());
  return d.Finish();
}

PayloadDigests DigestsOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length) {
  TwoDigests d;
  ReadRegion(fd, path, offset, length, [&](const char* data, size_t n) { d.Update(data, n); });
  return d.Finish();
}

bool IsMd5Etag(std::string_view etag) {
  if (etag.size() != 34 || etag.front() != '"' || etag.back() != '"') return false;
  for (const char c : etag.substr(1, 32)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace gulpdb::remote
