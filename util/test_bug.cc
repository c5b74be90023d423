#include "util/test_bug.h"

#include <optional>
#include <string>

#include "util/env.h"

namespace gulpdb::util {

bool TestBugEnabled(std::string_view name) {
  const std::optional<std::string> value = EnvText("GULPDB_TEST_BUG");
  return value && !name.empty() && name == *value;
}

}  // namespace gulpdb::util
