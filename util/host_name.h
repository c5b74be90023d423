// This machine's name, as the engine writes it where another host may read
// it: in a push lease (who holds it) and in the names of half-built indexes
// (whose process ids mean something only on the host that made them).
//
// Errors: none; a host whose name cannot be read is "unknown".
//
// Thread safety: thread-safe (gethostname).
#ifndef GULPDB_UTIL_HOST_NAME_H_
#define GULPDB_UTIL_HOST_NAME_H_

#include <string>

namespace gulpdb::util {

// The host name (gethostname), or "unknown" when there is none.
std::string HostName();

// HostName() with '.' and '/' made '_', for one part of a file name whose
// parts are separated by dots.
std::string HostNameInFileName();

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_HOST_NAME_H_
