// util/test_bug.h: GULPDB_TEST_BUG names one bug to put back, exactly.
#include "util/test_bug.h"

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <optional>
#include <string>

namespace gulpdb::util {
namespace {

// Sets GULPDB_TEST_BUG (nullptr: unsets it) for one scope.
class TestBugVariable {
 public:
  explicit TestBugVariable(const char* value) {
    if (const char* old = std::getenv("GULPDB_TEST_BUG")) old_ = old;
    Set(value);
  }
  ~TestBugVariable() { Set(old_ ? old_->c_str() : nullptr); }

 private:
  static void Set(const char* value) {
    if (value == nullptr) {
      ::unsetenv("GULPDB_TEST_BUG");
    } else {
      ::setenv("GULPDB_TEST_BUG", value, 1);
    }
  }
  std::optional<std::string> old_;
};

BOOST_AUTO_TEST_SUITE(test_bug_test)

BOOST_AUTO_TEST_CASE(only_the_bug_the_variable_names_exactly_is_put_back) {
  {
    TestBugVariable unset(nullptr);
    BOOST_TEST(!TestBugEnabled("copy-mtime"));
  }
  {
    TestBugVariable empty("");
    BOOST_TEST(!TestBugEnabled("copy-mtime"));
    BOOST_TEST(!TestBugEnabled(""));
  }
  {
    TestBugVariable one("copy-mtime");
    BOOST_TEST(TestBugEnabled("copy-mtime"));
    BOOST_TEST(!TestBugEnabled("compact-newest"));
    BOOST_TEST(!TestBugEnabled("copy"));
    BOOST_TEST(!TestBugEnabled("copy-mtime2"));
  }
  {
    TestBugVariable two("copy-mtime,compact-newest");  // one name only
    BOOST_TEST(!TestBugEnabled("copy-mtime"));
    BOOST_TEST(!TestBugEnabled("compact-newest"));
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::util
