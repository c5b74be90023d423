#include "cli/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "gulpdb/error.h"
#include "util/file_io.h"
#include "util/sys_error.h"

namespace gulpdb::cli {

void MakeDirectory(const std::string& path) {
  if (util::MakeDirectory(path, 0755, "create directory")) return;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    throw InvalidArgumentError("create directory " + path + ": not a directory (a file is there)");
  }
}

void WriteNewFile(const std::string& path, std::string_view bytes, Overwrite overwrite) {
  if (overwrite == Overwrite::kReplace) util::RemoveFile(path);
  // O_EXCL: never follows a symbolic link, never truncates what is there.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) {
      throw InvalidArgumentError("write " + path + ": the file exists (--force overwrites it)");
    }
    util::ThrowErrno("write", path, errno);
  }
  try {
    util::WriteFull(fd, bytes, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) util::ThrowErrno("write", path, errno);
}

}  // namespace gulpdb::cli
