#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "support/test_util.h"

namespace gulpdb::ingest {
namespace {

using test::TempDir;

SourceSpec FrameFolder(const std::string& id, const std::string& label) {
  SourceSpec s;
  s.kind = SourceKind::kFrameFolder;
  s.id = id;
  s.label = label;
  s.path = test::FixturesDir() + "/frames_src/" + id;
  return s;
}

IngestOptions Quiet(const std::string& dir) {
  IngestOptions o;
  o.dir = dir;
  o.keep_jpeg = true;
  o.num_workers = 2;
  o.batch = 2;
  o.on_problem = [](const SourceProblem& p) {
    BOOST_ERROR("unexpected problem with '" << p.id << "': " << p.message);
  };
  o.on_note = [](const std::string&) {};
  return o;
}

BOOST_AUTO_TEST_SUITE(ingest_lib_test)

BOOST_AUTO_TEST_CASE(explicit_sources_with_a_fixed_label_map_write_no_label2idx) {
  TempDir tmp;
  const std::string dir = tmp / "shard";
  IngestOptions o = Quiet(dir);
  o.sources = {FrameFolder("2", "square"), FrameFolder("0", "circle"),
               FrameFolder("12", "triangle")};
  o.label_map = LabelMap{{"circle", 7}, {"square", 3}, {"triangle", 11}, {"unused", 0}};
  o.write_label_map = false;
  size_t last_done = 0, total = 0;
  o.on_progress = [&](const IngestProgress& p) {
    last_done = p.done;
    total = p.total;
  };
  const IngestReport r = Ingest(o);
  BOOST_TEST(r.listed == 3u);
  BOOST_TEST(r.added == 3u);
  BOOST_TEST(r.bad == 0u);
  BOOST_TEST(last_done == 3u);
  BOOST_TEST(total == 3u);

  auto ds = Dataset::Open(dir);
  BOOST_TEST(ds->Ids() == (std::vector<std::string>{"2", "0", "12"}),
             boost::test_tools::per_element());
  BOOST_TEST(ds->Get("2").meta_data == R"([{"id": "2", "label": "square", "idx": 3}])");
  BOOST_TEST(ds->Get("0").meta_data == R"([{"id": "0", "label": "circle", "idx": 7}])");
  BOOST_TEST(ds->Get("12").meta_data == R"([{"id": "12", "label": "triangle", "idx": 11}])");
  // Frames stored byte for byte, in file order.
  const std::vector<std::string> frames = test::FixtureFrames("0");
  const JpegFrames read = ds->ReadJpegs("0");
  BOOST_REQUIRE_EQUAL(read.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) BOOST_TEST(read[i] == frames[i]);
  BOOST_TEST(!std::filesystem::exists(dir + "/label2idx.json"));

  // Resume: a second run with the same sources skips every id.
  const IngestReport again = Ingest(o);
  BOOST_TEST(again.added == 0u);
  BOOST_TEST(again.present == 3u);
}

BOOST_AUTO_TEST_CASE(a_label_missing_from_the_fixed_map_is_refused_before_anything_is_created) {
  TempDir tmp;
  const std::string dir = tmp / "shard";
  IngestOptions o = Quiet(dir);
  o.sources = {FrameFolder("0", "circle"), FrameFolder("2", "square")};
  o.label_map = LabelMap{{"circle", 0}};
  try {
    Ingest(o);
    BOOST_ERROR("an unknown label was accepted");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(std::string(e.what()).find("'square'") != std::string::npos, e.what());
  }
  BOOST_TEST(!std::filesystem::exists(dir));
}

BOOST_AUTO_TEST_CASE(list_sources_and_compute_label_map_match_a_directory_ingest) {
  TempDir tmp;
  const std::string fixtures = test::FixturesDir() + "/frames_src";
  IngestOptions listing = Quiet(tmp / "unused");
  listing.frames_dir = fixtures;
  listing.labels = fixtures + "/labels.csv";
  const std::vector<SourceSpec> sources = ListSources(listing);
  BOOST_REQUIRE_EQUAL(sources.size(), 22u);
  BOOST_TEST(sources[0].id == "0");
  BOOST_TEST(sources[0].path == fixtures + "/0");
  BOOST_TEST((sources[0].kind == SourceKind::kFrameFolder));
  BOOST_TEST(*sources[12].label == "triangle");

  // An existing label2idx.json keeps its indices; new labels follow, sorted.
  const std::string dir = tmp / "ds";
  std::filesystem::create_directory(dir);
  test::WriteFile(dir + "/label2idx.json", R"({"square": 4})");
  const LabelMap map = ComputeLabelMap(dir, sources);
  BOOST_TEST(map == (LabelMap{{"square", 4}, {"circle", 5}, {"triangle", 6}}));

  // A partition of the list, ingested with that map, gets the same indices
  // as an ingest of the whole directory would.
  IngestOptions part = Quiet(dir);
  part.sources.assign(sources.begin() + 10, sources.begin() + 14);
  part.label_map = map;
  BOOST_TEST(Ingest(part).added == 4u);
  auto ds = Dataset::Open(dir);
  BOOST_TEST(ds->Get("13").meta_data == R"([{"id": "13", "label": "triangle", "idx": 6}])");
  BOOST_TEST(test::ReadFile(dir + "/label2idx.json") ==
             R"({"square": 4, "circle": 5, "triangle": 6})");
}

BOOST_AUTO_TEST_CASE(sources_and_directories_together_are_refused) {
  IngestOptions o = Quiet("/nonexistent/ds");
  o.frames_dir = test::FixturesDir() + "/frames_src";
  o.sources = {FrameFolder("0", "circle")};
  BOOST_TEST(!ValidateIngestOptions(o).empty());
  BOOST_CHECK_THROW(Ingest(o), InvalidArgumentError);
  BOOST_CHECK_THROW(ListSources(o), InvalidArgumentError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::ingest
