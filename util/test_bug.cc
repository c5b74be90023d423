#include "util/test_bug.h"

#include <cstdlib>

namespace gulpdb::util {

bool TestBugEnabled(std::string_view name) {
  const char* value = std::getenv("GULPDB_TEST_BUG");
  return value != nullptr && !name.empty() && name == value;
}

}  // namespace gulpdb::util
