// Failed system calls as typed errors, for the layers below the public API
// (index/, engine/, ingest/): the one place where an errno value becomes a
// gulpdb::Error. Not part of the public API: callers of gulpdb see only the
// Error types of gulpdb/error.h. Thread-safe (strerror of glibc is).
#ifndef GULPDB_INDEX_SYS_ERROR_H_
#define GULPDB_INDEX_SYS_ERROR_H_

#include <cerrno>
#include <cstring>
#include <string>

#include "gulpdb/error.h"

namespace gulpdb {

// Throws the error for a failed system call: "<operation> <path>: <strerror(err)>".
// ENOENT becomes NotFoundError, ENOSPC/EDQUOT ResourceExhaustedError,
// the rest IoError.
[[noreturn]] inline void ThrowErrno(const std::string& operation, const std::string& path,
                                    int err) {
  const std::string message = operation + " " + path + ": " + std::strerror(err);
  if (err == ENOENT) throw NotFoundError(message);
  if (err == ENOSPC || err == EDQUOT) throw ResourceExhaustedError(message);
  throw IoError(message);
}

}  // namespace gulpdb

#endif  // GULPDB_INDEX_SYS_ERROR_H_
