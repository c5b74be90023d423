#include "util/file_identity.h"

#include <cerrno>

#include "util/sys_error.h"

namespace gulpdb::util {
namespace {

int64_t Nanoseconds(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace

FileIdentity IdentityOfStat(const struct stat& st) {
  FileIdentity id;
  id.size = static_cast<uint64_t>(st.st_size);
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.mtime_ns = Nanoseconds(st.st_mtim);
  id.ctime_ns = Nanoseconds(st.st_ctim);
  return id;
}

std::optional<FileIdentity> IdentityOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    ThrowErrno("stat", path, errno);
  }
  return IdentityOfStat(st);
}

}  // namespace gulpdb::util
