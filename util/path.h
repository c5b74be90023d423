// Path text, without touching the file system.
//
// Thread safety: pure functions.
#ifndef GULPDB_UTIL_PATH_H_
#define GULPDB_UTIL_PATH_H_

#include <string>

namespace gulpdb::util {

// The directory holding `path`, trailing slashes ignored: "a/b" -> "a",
// "a/b/" -> "a", "/x" -> "/", "/" -> "/", "x" -> ".", "" -> ".".
inline std::string ParentOf(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_PATH_H_
