// Counts of meta values: Dataset::CountMetaValues from a meta index and
// MetaValueTally from the records (query.h), which must agree, with the
// equality of Select (1 and 1.0 are one value).
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/query.h"
#include "tests/support/test_util.h"

namespace gulpdb {
namespace {

using test::TempDir;

std::string Long(char c) { return std::string(450, c); }  // stored hashed in the index

// label: cat x3 (one written "cat", two "c\u0061t"), 1 and 1.0 (one value), a
// long text x2 and another long text of the same length x1, none x1.
struct Fixture {
  TempDir tmp;
  Fixture() {
    auto ds = Dataset::Create(tmp.path());
    auto w = ds->NewWriter();
    const std::string frame = test::FakeJpeg(16, 1);
    const auto add = [&](const std::string& id, const std::string& meta) {
      w->Append(id, {frame}, meta);
    };
    add("v0", R"({"label": "cat"})");
    add("v1", R"({"label": 1})");
    add("v2", R"({"label": "c\u0061t"})");
    add("v3", R"({"label": 1.0})");
    add("v4", "{\"label\": \"" + Long('a') + "\"}");
    add("v5", R"({"other": 2})");
    add("v6", "{\"label\": \"" + Long('b') + "\"}");
    add("v7", R"({"label": "c\u0061t"})");
    add("v8", "{\"label\": \"" + Long('a') + "\"}");
    w->Commit();
  }
};

// (text, count) pairs, for comparing.
std::vector<std::pair<std::string, uint64_t>> Pairs(const std::vector<MetaValueCount>& counts) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const MetaValueCount& c : counts) out.emplace_back(c.text, c.count);
  return out;
}

BOOST_AUTO_TEST_SUITE(meta_counts_test)

BOOST_AUTO_TEST_CASE(without_a_meta_index_there_is_no_index_count) {
  Fixture f;
  auto ds = Dataset::Open(f.tmp.path());
  BOOST_TEST(!ds->CountMetaValues("label").has_value());
}

BOOST_AUTO_TEST_CASE(the_index_and_the_records_count_the_same_values) {
  Fixture f;
  {
    OpenOptions rw;
    rw.read_only = false;
    BOOST_REQUIRE(Dataset::Open(f.tmp.path(), rw)->CreateMetaIndex("label"));
  }
  auto ds = Dataset::Open(f.tmp.path());
  const std::optional<std::vector<MetaValueCount>> indexed = ds->CountMetaValues("label");
  BOOST_REQUIRE(indexed.has_value());
  MetaValueTally tally("label", 100);
  ds->ForEach([&](const VideoInfo& v) {
    tally.Add(v.id, v.meta_data);
    return true;
  });
  const std::vector<std::pair<std::string, uint64_t>> want = {
      {"cat", 3}, {"1", 2}, {Long('a'), 2}, {Long('b'), 1}};
  const auto from_index = Pairs(*indexed);
  const auto from_records = Pairs(tally.Values());
  // Most frequent first; among equal counts the order may differ.
  BOOST_TEST((from_index.front() == want.front()));
  BOOST_TEST((from_records.front() == want.front()));
  BOOST_TEST(std::is_permutation(from_index.begin(), from_index.end(), want.begin(), want.end()));
  BOOST_TEST(
      std::is_permutation(from_records.begin(), from_records.end(), want.begin(), want.end()));
  BOOST_TEST(tally.missing() == 1u);
  BOOST_TEST(tally.videos() == 9u);
  // The JSON text is the first video's: "cat", then 1 (not 1.0).
  BOOST_TEST(tally.Values()[0].value == R"("cat")");
  for (const MetaValueCount& c : tally.Values()) {
    if (c.text == "1") BOOST_TEST(c.value == "1");
  }
}

BOOST_AUTO_TEST_CASE(a_tally_keeps_at_most_its_bound_of_values) {
  MetaValueTally tally("label", 2);
  tally.Add("a", R"([{"label": "x"}])");
  tally.Add("b", R"([{"label": "y"}])");
  tally.Add("c", R"([{"label": "z"}])");
  tally.Add("d", R"([{"label": "x"}])");
  tally.Add("e", R"([{"label": ["z", 1]}])");
  tally.Add("f", R"([])");
  BOOST_TEST(
      (Pairs(tally.Values()) == std::vector<std::pair<std::string, uint64_t>>{{"x", 2}, {"y", 1}}));
  BOOST_TEST(tally.others() == 2u);
  BOOST_TEST(tally.missing() == 1u);
  BOOST_CHECK_THROW(tally.Add("g", "not json"), CorruptionError);
  BOOST_CHECK_THROW(MetaValueTally("\xff", 1), InvalidArgumentError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
