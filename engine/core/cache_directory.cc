// Where gulpdb keeps what it caches on this machine (gulpdb/remote.h):
// here in the storage core, below every room that caches something (the
// GulpIO room's record of verified sources, the remote room's snapshots
// and partitions), so that none of them calls a room beside or above it.
#include <cstdlib>
#include <string>

#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "util/env.h"

namespace gulpdb {

std::string CacheDirectory() {
  if (std::optional<std::string> value = util::EnvText("GULPDB_CACHE")) return *value;
  if (std::optional<std::string> value = util::EnvText("GULPDB_CACHE_DIR")) return *value;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] != '\0') return std::string(xdg) + "/gulpdb";
  const char* home = std::getenv("HOME");
  if (home == nullptr || home[0] == '\0') {
    throw InvalidArgumentError(
        "find the gulpdb cache: none of GULPDB_CACHE, XDG_CACHE_HOME or HOME is set");
  }
  return std::string(home) + "/.cache/gulpdb";
}

}  // namespace gulpdb
