#include "remote/payload_hash.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "gulpdb/error.h"
#include "util/sha256.h"
#include "util/sys_error.h"

namespace gulpdb::remote {

std::string Sha256Hex(std::string_view data) { return util::Sha256Hex(data); }

std::string Sha256HexOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length) {
  util::Sha256 sha;
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
    sha.Update(buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
  return sha.FinishHex();
}

}  // namespace gulpdb::remote
