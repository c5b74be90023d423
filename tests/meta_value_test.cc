// What equality of meta values means (engine/query/meta_value.h): the rule
// the meta index and the scan share, checked value by value, and how the
// first meta entry's keys are found.
#include "engine/query/meta_value.h"

#include <boost/test/unit_test.hpp>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "gulpdb/query.h"

namespace gulpdb::engine {
namespace {

bool Same(std::string_view a, std::string_view b) {
  return CanonicalMetaValue(a) == CanonicalMetaValue(b);
}

std::vector<std::string_view> Values(std::string_view meta, std::vector<std::string> keys) {
  for (std::string& k : keys) k = PythonJsonString(k);
  std::vector<std::string_view> values;
  std::string error;
  BOOST_REQUIRE_MESSAGE(FindFirstEntryValues(meta, keys, &values, &error), error);
  return values;
}

BOOST_AUTO_TEST_SUITE(meta_value_test)

BOOST_AUTO_TEST_CASE(numbers_compare_by_exact_decimal_value) {
  BOOST_TEST(Same("1", "1.0"));
  BOOST_TEST(Same("1", "1e0"));
  BOOST_TEST(Same("1", "10E-1"));
  BOOST_TEST(Same("1", "0.1e1"));
  BOOST_TEST(Same("100", "1e2"));
  BOOST_TEST(Same("100", "1.00E+2"));
  BOOST_TEST(Same("0", "-0.0"));
  BOOST_TEST(Same("0", "0e99"));
  BOOST_TEST(Same("-2.50", "-25e-1"));
  BOOST_TEST(!Same("1", "-1"));
  BOOST_TEST(!Same("1", "2"));
  BOOST_TEST(!Same("0.1", "0.10000000000000001"));  // no rounding to binary floating point
  BOOST_TEST(!Same("12", "21"));
  // Integers beyond 64 bits keep every digit.
  BOOST_TEST(Same("123456789012345678901234567890", "1234567890123456789012345678.9e2"));
  BOOST_TEST(!Same("123456789012345678901234567890", "123456789012345678901234567891"));
  // An exponent of more than 17 digits compares by text.
  BOOST_TEST(Same("1e100000000000000000000", "1e100000000000000000000"));
  BOOST_TEST(!Same("1e100000000000000000000", "10e99999999999999999999"));
  BOOST_TEST(Same("1e00000000000000000000000001", "10"));  // leading zeros do not count
}

BOOST_AUTO_TEST_CASE(types_never_mix) {
  BOOST_TEST(!Same("1", "\"1\""));
  BOOST_TEST(!Same("true", "1"));
  BOOST_TEST(!Same("false", "0"));
  BOOST_TEST(!Same("null", "0"));
  BOOST_TEST(!Same("null", "\"null\""));
  BOOST_TEST(!Same("[]", "{}"));
  BOOST_TEST(!Same("[1]", "1"));
  BOOST_TEST(Same("NaN", "NaN"));
  BOOST_TEST(!Same("Infinity", "-Infinity"));
  BOOST_TEST(!Same("Infinity", "1e400"));
}

BOOST_AUTO_TEST_CASE(strings_compare_by_decoded_text) {
  BOOST_TEST(Same("\"caf\\u00e9\"", "\"caf\xc3\xa9\""));
  BOOST_TEST(Same("\"a/b\"", "\"a\\/b\""));
  BOOST_TEST(Same("\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\""));
  BOOST_TEST(Same("\"tab\\there\"", "\"tab\\u0009here\""));
  BOOST_TEST(!Same("\"cat\"", "\"Cat\""));
  BOOST_TEST(!Same("\"cat\"", "\"cat \""));
  BOOST_TEST(Same("  \"cat\"\n", "\"cat\""));  // whitespace around a value does not count
}

BOOST_AUTO_TEST_CASE(containers_compare_member_by_member) {
  BOOST_TEST(Same("{\"a\": 1, \"b\": [2, 3.0]}", "{\"b\":[2.0,3],\"a\":1e0}"));
  BOOST_TEST(!Same("[1, 2]", "[2, 1]"));
  BOOST_TEST(!Same("{\"a\": 1}", "{\"a\": 1, \"b\": 2}"));
  BOOST_TEST(Same("{\"a\": 1, \"a\": 2}", "{\"a\": 2}"));  // the last value of a repeated key
  BOOST_TEST(Same("[[], {}]", "[ [ ] , { } ]"));
}

BOOST_AUTO_TEST_CASE(bad_json_is_refused_with_its_offset) {
  for (const char* bad : {"", "cat", "01", "1.", "[1,", "{\"a\" 1}", "\"x", "1 2", "tru"}) {
    BOOST_CHECK_EXCEPTION(CanonicalMetaValue(bad), InvalidArgumentError,
                          [](const InvalidArgumentError& e) {
                            return std::string(e.what()).find("parse json") != std::string::npos;
                          });
  }
}

BOOST_AUTO_TEST_CASE(only_the_first_entry_counts) {
  const auto v = Values("[{\"label\": \"cat\", \"n\": 1}, {\"label\": \"dog\", \"x\": 2}]",
                        {"label", "x", "n"});
  BOOST_TEST(v[0] == "\"cat\"");
  BOOST_TEST(v[1].empty());
  BOOST_TEST(v[2] == "1");
  BOOST_TEST(Values("[]", {"label"})[0].empty());
  BOOST_TEST(Values("[[1, 2], {\"label\": 1}]", {"label"})[0].empty());  // not an object
  BOOST_TEST(Values("[{}]", {"label"})[0].empty());
  BOOST_TEST(Values("[{\"label\": 1, \"label\": 2}]", {"label"})[0] == "2");
  BOOST_TEST(Values("[{\"caf\\u00e9\": 1}]", {"caf\xc3\xa9"})[0] == "1");
  BOOST_TEST(Values(" [ { \"k\" : [1, {\"k\": 2}] } ] ", {"k"})[0] == "[1, {\"k\": 2}]");
}

BOOST_AUTO_TEST_CASE(a_meta_data_that_is_not_a_list_is_reported) {
  std::vector<std::string_view> values;
  std::string error;
  const std::vector<std::string> keys = {PythonJsonString("k")};
  for (const char* bad : {"{}", "", "[{\"k\": }]", "[{\"k\" 1}]", "[{\"k\": 1", "[{k: 1}]"}) {
    BOOST_TEST(!FindFirstEntryValues(bad, keys, &values, &error), bad);
    BOOST_TEST(!error.empty());
  }
}

BOOST_AUTO_TEST_CASE(command_line_terms_match_numbers_and_their_text) {
  const MetaCondition n = ParseMetaCondition("label=3");
  BOOST_TEST(n.key == "label");
  BOOST_REQUIRE(n.values.size() == 2u);
  BOOST_TEST(Same(n.values[0], "3"));
  BOOST_TEST(Same(n.values[1], "\"3\""));
  const MetaCondition s = ParseMetaCondition("label=\"3\"");
  BOOST_REQUIRE(s.values.size() == 1u);
  BOOST_TEST(Same(s.values[0], "\"3\""));
  const MetaCondition text = ParseMetaCondition("template=Pushing [something] left");
  BOOST_REQUIRE(text.values.size() == 1u);
  BOOST_TEST(Same(text.values[0], "\"Pushing [something] left\""));
  const MetaCondition eq = ParseMetaCondition("a=b=c");  // the key ends at the first '='
  BOOST_TEST(eq.key == "a");
  BOOST_TEST(Same(eq.values[0], "\"b=c\""));
  const MetaCondition empty = ParseMetaCondition("label=");
  BOOST_TEST(Same(empty.values[0], "\"\""));
  BOOST_CHECK_THROW(ParseMetaCondition("label"), InvalidArgumentError);
  BOOST_CHECK_THROW(ParseMetaCondition("label=\xff"), InvalidArgumentError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::engine
