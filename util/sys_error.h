// Failed system calls as typed errors: the one place where an errno value
// becomes a gulpdb::Error, for every layer (index/, s3/, engine/,
// ingest/, the command). Not part of the public API: callers of gulpdb see
// only the Error types of gulpdb/error.h.
//
// Thread safety: thread-safe (strerror of glibc is).
#ifndef GULPDB_UTIL_SYS_ERROR_H_
#define GULPDB_UTIL_SYS_ERROR_H_

#include <string>

namespace gulpdb::util {

// Throws the error for a failed system call: "<operation> <path>: <strerror(err)>".
//   ENOENT            NotFoundError
//   ENOSPC, EDQUOT    ResourceExhaustedError
//   ENOTDIR, EEXIST   InvalidArgumentError (a path that names the wrong kind
//                     of thing, or something already there: the caller's
//                     argument, not the device, is at fault)
//   anything else     IoError
[[noreturn]] void ThrowErrno(const std::string& operation, const std::string& path, int err);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_SYS_ERROR_H_
