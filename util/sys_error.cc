#include "util/sys_error.h"

#include <cerrno>
#include <cstring>

#include "gulpdb/error.h"

namespace gulpdb::util {

void ThrowErrno(const std::string& operation, const std::string& path, int err) {
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

}  // namespace gulpdb::util
