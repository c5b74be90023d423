#include "gulpdb/selection.h"

#include <boost/test/unit_test.hpp>

#include "gulpdb/error.h"

namespace gulpdb {
namespace {

using V = std::vector<uint32_t>;

BOOST_AUTO_TEST_SUITE(selection_test)

BOOST_AUTO_TEST_CASE(all_picks_every_frame) {
  BOOST_TEST(Selection::All().Resolve(4) == (V{0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(Selection::All().Resolve(0).empty());
}

// Expected values are what Python's list(range(10))[slice] gives.
BOOST_AUTO_TEST_CASE(slices_follow_python) {
  const auto r = [](std::optional<int64_t> a, std::optional<int64_t> b, std::optional<int64_t> c) {
    return Selection::Slice(a, b, c).Resolve(10);
  };
  BOOST_TEST(r(1, 10, 2) == (V{1, 3, 5, 7, 9}), boost::test_tools::per_element());
  BOOST_TEST(r(-3, std::nullopt, std::nullopt) == (V{7, 8, 9}), boost::test_tools::per_element());
  BOOST_TEST(r(std::nullopt, -7, std::nullopt) == (V{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(r(std::nullopt, std::nullopt, -1) == (V{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(r(8, 2, -3) == (V{8, 5}), boost::test_tools::per_element());
  BOOST_TEST(r(-1, -4, -1) == (V{9, 8, 7}), boost::test_tools::per_element());
  BOOST_TEST(r(100, 200, 1).empty());
  BOOST_TEST(r(-100, 2, 1) == (V{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(r(100, std::nullopt, -4) == (V{9, 5, 1}), boost::test_tools::per_element());
  BOOST_TEST(r(5, 5, 1).empty());
  BOOST_TEST(r(2, 5, -1).empty());
  BOOST_CHECK_THROW(Selection::Slice(0, 1, 0), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(index_lists_allow_negative_and_reject_out_of_range) {
  BOOST_TEST(Selection::Indices({1, -1, 1}).Resolve(5) == (V{1, 4, 1}),
             boost::test_tools::per_element());
  BOOST_CHECK_THROW(Selection::Indices({5}).Resolve(5), InvalidArgumentError);
  BOOST_CHECK_THROW(Selection::Indices({-6}).Resolve(5), InvalidArgumentError);
  try {
    Selection::Indices({7}).Resolve(3, "vid");
    BOOST_FAIL("out of range must throw");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(std::string(e.what()).find("vid") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find("7") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(parse_says_a_huge_index_is_out_of_range_not_that_it_is_no_integer) {
  for (const char* text :
       {"99999999999999999999999", "0:99999999999999999999999", "1,-99999999999999999999999"}) {
    try {
      Selection::Parse(text);
      BOOST_ERROR("accepted " << text);
    } catch (const InvalidArgumentError& e) {
      BOOST_TEST(std::string(e.what()).find("is out of range") != std::string::npos, e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(parse_accepts_cli_forms) {
  BOOST_TEST(Selection::Parse("0:16:2").Resolve(8) == (V{0, 2, 4, 6}),
             boost::test_tools::per_element());
  BOOST_TEST(Selection::Parse("1,5,3").Resolve(8) == (V{1, 5, 3}),
             boost::test_tools::per_element());
  BOOST_TEST(Selection::Parse("::-2").Resolve(5) == (V{4, 2, 0}), boost::test_tools::per_element());
  BOOST_TEST(Selection::Parse("all").Resolve(2) == (V{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(Selection::Parse("-2:").Resolve(5) == (V{3, 4}), boost::test_tools::per_element());
  BOOST_CHECK_THROW(Selection::Parse("a:b"), InvalidArgumentError);
  BOOST_CHECK_THROW(Selection::Parse("1:2:3:4"), InvalidArgumentError);
  BOOST_CHECK_THROW(Selection::Parse("1,,2"), InvalidArgumentError);
  BOOST_CHECK_THROW(Selection::Parse("0:5:0"), InvalidArgumentError);
  BOOST_TEST(Selection::Parse("2:8:3").ToString() == "2:8:3");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
