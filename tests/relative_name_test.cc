// util/relative_name.h: the one check a name from a bucket, a manifest, a
// snapshot or an index passes before it becomes a path.
#include "util/relative_name.h"

#include <boost/test/unit_test.hpp>
#include <string>

#include "gulpdb/error.h"
#include "support/test_util.h"

namespace gulpdb::util {
namespace {

using test::Contains;

BOOST_AUTO_TEST_SUITE(relative_name_test)

BOOST_AUTO_TEST_CASE(names_inside_a_directory_are_accepted) {
  for (const std::string& name : {
           std::string("data_0.gulp"),
           std::string("meta_12.gmeta"),
           std::string("shards/ingest-0001/part-00000/data_0.gulp"),
           std::string("a..b"),  // dots inside a segment are a name, not "..",
           std::string("..."),   // nor is a segment of three dots
           std::string(".hidden"),
           std::string("caf\xc3\xa9.gulp"),  // UTF-8 (and any byte >= 0x80)
           std::string(255, 'x'),
       }) {
    BOOST_TEST(RelativeNameProblem(name) == "", name);
    BOOST_TEST(IsRelativeName(name));
    BOOST_TEST(JoinRelative("/out", name, "export", "a name") == "/out/" + name);
  }
  BOOST_TEST(JoinRelative("/out/", "x", "op", "a name") == "/out/x");
}

BOOST_AUTO_TEST_CASE(names_that_could_leave_the_directory_or_hide_are_refused) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty"},
      {"/etc/passwd", "an absolute path"},
      {"..", "a '..' segment"},
      {"../x", "a '..' segment"},
      {"a/../../x", "a '..' segment"},
      {"a/..", "a '..' segment"},
      {".", "a '.' segment"},
      {"./x", "a '.' segment"},
      {"a//b", "an empty segment"},
      {"a/", "an empty segment"},
      {std::string("a\0b", 3), "a NUL byte at byte 1"},
      {"..\\..\\x", "a backslash at byte 2"},
      {"a\nb", "a control character (0x0A) at byte 1"},
      {"a\x7f", "a control character (0x7F) at byte 1"},
      {std::string(256, 'x'), "a segment longer than 255 bytes"},
      {std::string(5000, 'x'), "longer than 4096 bytes"},
  };
  for (const auto& [name, why] : cases) {
    BOOST_TEST_INFO("name '" << EscapeBytes(name) << "'");
    BOOST_TEST(Contains(RelativeNameProblem(name), why), RelativeNameProblem(name));
    BOOST_TEST(!IsRelativeName(name));
    BOOST_CHECK_THROW(JoinRelative("/out", name, "export", "a name"), CorruptionError);
  }
}

BOOST_AUTO_TEST_CASE(the_error_names_the_operation_whose_name_and_why_escaped) {
  try {
    CheckRelativeName("../\x01x", "export s3://b/p", "chunk 3's .gmeta name");
    BOOST_FAIL("accepted");
  } catch (const CorruptionError& e) {
    BOOST_TEST(std::string(e.what()) ==
               "export s3://b/p: chunk 3's .gmeta name '../\\x01x' is not a safe relative "
               "name: a control character (0x01) at byte 3");
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::util
