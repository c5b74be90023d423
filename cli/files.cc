#include "cli/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "gulpdb/error.h"

namespace gulpdb::cli {

void ThrowSystemError(const std::string& operation, const std::string& path, int err) {
  const std::string message = operation + " " + path + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      throw NotFoundError(message);
    case ENOSPC:
    case EDQUOT:
      throw ResourceExhaustedError(message);
    case ENOTDIR:
    case EEXIST:
      throw InvalidArgumentError(message);
    default:
      throw IoError(message);
  }
}

void MakeDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0) return;
  const int err = errno;
  struct stat st;
  if (err == EEXIST && ::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return;
    throw InvalidArgumentError("create directory " + path + ": not a directory (a file is there)");
  }
  ThrowSystemError("create directory", path, err);
}

void WriteNewFile(const std::string& path, std::string_view bytes, Overwrite overwrite) {
  if (overwrite == Overwrite::kReplace && ::unlink(path.c_str()) != 0 && errno != ENOENT) {
    ThrowSystemError("replace", path, errno);
  }
  // O_EXCL: never follows a symbolic link, never truncates what is there.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) {
      throw InvalidArgumentError("write " + path + ": the file exists (--force overwrites it)");
    }
    ThrowSystemError("write", path, errno);
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ThrowSystemError("write", path, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) ThrowSystemError("write", path, errno);
}

bool RemoveTree(const std::string& path, std::string* error) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);  // does not follow symbolic links
  if (ec) *error = "remove " + path + ": " + ec.message();
  return !ec;
}

}  // namespace gulpdb::cli
