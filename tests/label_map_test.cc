// label2idx.json and the label/idx members of GulpIO meta, as merge reads
// and rewrites them: only the idx values change, every other byte stays.
#include "engine/core/label_map.h"

#include <boost/test/unit_test.hpp>

#include "gulpdb/error.h"
#include "support/test_util.h"

namespace gulpdb::engine {
namespace {

BOOST_AUTO_TEST_SUITE(label_map_test)

BOOST_AUTO_TEST_CASE(rewrite_changes_only_the_idx_of_mapped_labels) {
  const std::string meta =
      R"([{"id": "a", "idx": 0, "label": "cat", "x": {"idx": 0, "label": "cat"}}, )"
      R"({"label": "dog", "idx": 1, "n": 1.50E+3}, {"label": "eel"}, [1], "s", )"
      R"({"label": "caf\u00e9", "idx": 4}])";
  const std::optional<std::string> out =
      RewriteMetaIdx(meta, {{"cat", 12}, {"dog", 1}, {"eel", 3}, {"caf\xc3\xa9", 0}});
  BOOST_REQUIRE(out.has_value());
  BOOST_TEST(*out == R"([{"id": "a", "idx": 12, "label": "cat", "x": {"idx": 0, "label": "cat"}}, )"
                     R"({"label": "dog", "idx": 1, "n": 1.50E+3}, {"label": "eel"}, [1], "s", )"
                     R"({"label": "caf\u00e9", "idx": 0}])");
  // Nothing to change: no copy.
  BOOST_TEST(!RewriteMetaIdx(meta, {{"dog", 1}, {"ant", 5}}).has_value());
  BOOST_TEST(!RewriteMetaIdx("[{}]", {{"dog", 1}}).has_value());
  BOOST_CHECK_THROW(RewriteMetaIdx("{\"label\": \"x\"}", {}), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(meta_labels_reports_label_and_index) {
  const std::vector<MetaLabel> labels =
      MetaLabels(R"([{"label": "cat", "idx": 2}, {"label": 3, "idx": 1}, {"label": "dog"}, )"
                 R"({"label": "eel", "idx": "7"}, {"label": "fox", "idx": -1}, {"idx": 9}])");
  BOOST_REQUIRE_EQUAL(labels.size(), 4u);
  BOOST_TEST(labels[0].label == "cat");
  BOOST_TEST(*labels[0].idx == 2);
  BOOST_TEST(labels[0].idx_ok);
  BOOST_TEST(labels[1].label == "dog");
  BOOST_TEST(!labels[1].idx.has_value());
  BOOST_TEST(labels[2].label == "eel");
  BOOST_TEST(!labels[2].idx_ok);
  BOOST_TEST(!labels[3].idx_ok);
}

BOOST_AUTO_TEST_CASE(label2idx_round_trips_and_damage_is_named) {
  test::TempDir tmp;
  const std::string path = tmp / "label2idx.json";
  BOOST_TEST(ReadLabel2Idx(path).empty());  // no file: no labels
  const LabelEntries entries = {{"zebra", 0}, {"caf\xc3\xa9", 1}, {"a \"b\"", 10}};
  WriteLabel2Idx(path, entries);
  BOOST_TEST(test::ReadFile(path) == R"({"zebra": 0, "caf\u00e9": 1, "a \"b\"": 10})");
  BOOST_TEST((ReadLabel2Idx(path) == entries));
  for (const char* bad :
       {"[1]", "{\"a\": -1}", "{\"a\": 1.5}", "{\"a\": \"1\"}", "{\"a\": 1", "{\"a\": 1} x"}) {
    test::WriteFile(path, bad);
    try {
      ReadLabel2Idx(path);
      BOOST_ERROR("accepted " << bad);
    } catch (const CorruptionError& e) {
      BOOST_TEST(std::string(e.what()).find(path) != std::string::npos, e.what());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::engine
