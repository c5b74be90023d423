#include "util/host_name.h"

#include <unistd.h>

namespace gulpdb::util {

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

std::string HostNameInFileName() {
  std::string host = HostName();
  for (char& c : host) {
    if (c == '.' || c == '/') c = '_';
  }
  return host;
}

}  // namespace gulpdb::util
