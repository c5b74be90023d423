#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <optional>
#include <set>
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
  const StoredFrames read = ds->ReadJpegs("0");
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

BOOST_AUTO_TEST_CASE(a_new_dataset_takes_only_its_settings_from_the_ingest_options) {
  IngestOptions o;
  o.dir = "/d";
  o.index_dir = "/i";
  o.codec = Codec::kH264;
  o.videos_per_chunk = 7;
  o.bytes_per_chunk = 1 << 20;
  o.checksums = false;
  o.batch = 3;
  const CreateOptions c = NewDatasetOptions(o);
  BOOST_TEST(c.index_dir == "/i");
  BOOST_TEST(static_cast<int>(c.codec) == static_cast<int>(Codec::kH264));
  BOOST_TEST(c.videos_per_chunk == 7u);
  BOOST_TEST(c.bytes_per_chunk == uint64_t{1} << 20);
  BOOST_TEST(!c.checksums);
  const CreateOptions defaults = NewDatasetOptions(IngestOptions{});
  const CreateOptions created{};
  BOOST_TEST(defaults.index_dir.empty());
  BOOST_TEST(defaults.videos_per_chunk == IngestOptions{}.videos_per_chunk);
  BOOST_TEST(defaults.checksums == created.checksums);
}

BOOST_AUTO_TEST_CASE(sources_and_directories_together_are_refused) {
  IngestOptions o = Quiet("/nonexistent/ds");
  o.frames_dir = test::FixturesDir() + "/frames_src";
  o.sources = {FrameFolder("0", "circle")};
  BOOST_TEST(!ValidateIngestOptions(o).empty());
  BOOST_CHECK_THROW(Ingest(o), InvalidArgumentError);
  BOOST_CHECK_THROW(ListSources(o), InvalidArgumentError);
}

// ---- label lists --------------------------------------------------------------

// A frames-dir listing of the fixtures with `list_text` as its label list;
// warnings are collected in `*warnings`.
IngestOptions WithList(const TempDir& tmp, const std::string& list_text,
                       std::vector<std::string>* warnings) {
  IngestOptions o = Quiet(tmp / "ds");
  o.frames_dir = test::FixturesDir() + "/frames_src";
  o.labels = tmp / "list";
  test::WriteFile(o.labels, list_text);
  o.on_warning = [warnings](const std::string& w) { warnings->push_back(w); };
  return o;
}

// The message of the InvalidArgumentError that `fn` throws, or "" (with a
// test error) when it throws none.
template <typename Fn>
std::string InvalidArgumentMessage(const Fn& fn) {
  try {
    fn();
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  BOOST_ERROR("no InvalidArgumentError");
  return "";
}

using test::Contains;

BOOST_AUTO_TEST_CASE(a_json_object_is_refused_as_a_label_list_before_the_dataset_is_created) {
  TempDir tmp;
  std::vector<std::string> warnings;
  IngestOptions o = WithList(tmp, "\n  {\"0\": \"circle\"}", &warnings);
  const std::string message = InvalidArgumentMessage([&] { ListSources(o); });
  BOOST_TEST(Contains(message, "line 2, column 3"), message);
  BOOST_TEST(Contains(message, "not an object"), message);
  InvalidArgumentMessage([&] { Ingest(o); });
  BOOST_TEST(!std::filesystem::exists(o.dir));
}

BOOST_AUTO_TEST_CASE(a_json_list_without_the_label_key_is_refused_naming_the_keys_it_has) {
  TempDir tmp;
  std::vector<std::string> warnings;
  IngestOptions o = WithList(
      tmp, R"([{"id": "0", "template": "circle"}, {"id": "1", "template": "square"}])", &warnings);
  const std::string message = InvalidArgumentMessage([&] { Ingest(o); });
  BOOST_TEST(Contains(message, "no entry has the label key \"label\""), message);
  BOOST_TEST(Contains(message, "\"template\""), message);
  BOOST_TEST(!std::filesystem::exists(o.dir));
  o.label_name = "template";
  const std::vector<SourceSpec> sources = ListSources(o);
  BOOST_REQUIRE_EQUAL(sources.size(), 2u);
  BOOST_TEST(*sources[1].label == "square");
  BOOST_TEST(warnings.empty());
}

BOOST_AUTO_TEST_CASE(entries_without_a_label_are_unlabeled_with_one_warning_naming_them) {
  TempDir tmp;
  std::vector<std::string> warnings;
  IngestOptions o = WithList(tmp,
                             R"([{"id": "0", "label": "circle"}, {"id": "1"}, {"id": 2},
                                 {"id": "3", "label": null}, {"id": "4"}, {"id": "5"}])",
                             &warnings);
  const std::vector<SourceSpec> sources = ListSources(o);
  BOOST_REQUIRE_EQUAL(sources.size(), 6u);
  BOOST_TEST(!sources[1].label.has_value());
  BOOST_TEST(!sources[3].label.has_value());  // null: unlabeled on purpose, not missing
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(Contains(warnings[0], "4 of 6 entries have no \"label\""), warnings[0]);
  BOOST_TEST(Contains(warnings[0], R"(ids "1", 2, "4" and 1 more)"), warnings[0]);

  // The same for a CSV list.
  warnings.clear();
  test::WriteFile(o.labels, "0;circle\n1\n2;square\n");
  BOOST_TEST(ListSources(o).size() == 3u);
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(Contains(warnings[0], "1 of 3 entries have no \";label\""), warnings[0]);
}

BOOST_AUTO_TEST_CASE(a_list_of_ids_alone_names_unlabeled_videos_without_a_warning) {
  TempDir tmp;
  std::vector<std::string> warnings;
  IngestOptions o = WithList(tmp, R"([{"id": "0"}, {"id": 1}])", &warnings);
  const std::vector<SourceSpec> sources = ListSources(o);
  BOOST_REQUIRE_EQUAL(sources.size(), 2u);
  BOOST_TEST(sources[1].id_json == "1");
  BOOST_TEST(!sources[0].label.has_value());
  BOOST_TEST(warnings.empty());
}

BOOST_AUTO_TEST_CASE(json_is_told_from_csv_by_content_after_a_byte_order_mark) {
  TempDir tmp;
  std::vector<std::string> warnings;
  IngestOptions o =
      WithList(tmp, "\xEF\xBB\xBF \r\n\t[{\"id\": \"0\", \"label\": \"circle\"}]", &warnings);
  std::vector<SourceSpec> sources = ListSources(o);
  BOOST_REQUIRE_EQUAL(sources.size(), 1u);
  BOOST_TEST(sources[0].id == "0");
  BOOST_TEST(*sources[0].label == "circle");
  test::WriteFile(o.labels,
                  "\xEF\xBB\xBF"
                  "0;circle\n");
  sources = ListSources(o);
  BOOST_REQUIRE_EQUAL(sources.size(), 1u);
  BOOST_TEST(sources[0].id == "0");  // the mark is not part of the first id
}

BOOST_AUTO_TEST_CASE(a_json_syntax_error_names_the_file_line_and_column) {
  TempDir tmp;
  std::vector<std::string> warnings;
  IngestOptions o = WithList(tmp, "[\n  {\"id\": \"\xC3\xA9\" \"label\": \"x\"}\n]", &warnings);
  const std::string message = InvalidArgumentMessage([&] { ListSources(o); });
  // Column 14 (byte 15): columns count characters, and "é" is two bytes.
  BOOST_TEST(Contains(message, "read " + o.labels + ": line 2, column 14: "), message);
}

BOOST_AUTO_TEST_CASE(an_empty_label_list_is_refused) {
  TempDir tmp;
  std::vector<std::string> warnings;
  for (const char* text : {"[]", " [ ] ", "", "\n\r\n"}) {
    IngestOptions o = WithList(tmp, text, &warnings);
    const std::string message = InvalidArgumentMessage([&] { Ingest(o); });
    BOOST_TEST(Contains(message, "names no videos"), message);
    BOOST_TEST(!std::filesystem::exists(o.dir));
  }
}

// ---- sources and settings -------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_missing_video_file_is_not_found_not_corruption) {
  TempDir tmp;
  IngestOptions o = Quiet(tmp / "ds");
  SourceSpec video;
  video.kind = SourceKind::kVideo;
  video.id = "gone";
  video.path = tmp / "gone.mp4";
  o.sources = {video};
  o.strict = true;
  try {
    Ingest(o);
    BOOST_ERROR("a missing video was ingested");
  } catch (const NotFoundError& e) {
    BOOST_TEST(Contains(e.what(), "gone.mp4: No such file"), e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_new_dataset_gets_the_index_dir_and_chunk_settings_asked_for) {
  TempDir tmp;
  IngestOptions o = Quiet(tmp / "ds");
  o.index_dir = tmp / "index";
  o.sources = {FrameFolder("0", "circle"), FrameFolder("1", "circle")};
  o.bytes_per_chunk = 1;  // every video gets a chunk of its own
  o.checksums = false;
  BOOST_TEST(Ingest(o).added == 2u);
  BOOST_TEST(!Dataset::Exists(o.dir));
  BOOST_TEST(Dataset::Exists(o.dir, o.index_dir));
  OpenOptions open;
  open.index_dir = o.index_dir;
  const DatasetStats stats = Dataset::Open(o.dir, open)->Stats();
  BOOST_TEST(stats.chunks == 2u);
  BOOST_TEST(stats.bytes_per_chunk == 1u);
  BOOST_TEST(!stats.checksums);
}

// ---- the option table shared by gulpdb ingest and distributed ingest -----------------

BOOST_AUTO_TEST_CASE(the_option_table_prints_the_defaults_of_ingest_options_itself) {
  const IngestOptions defaults;
  std::set<std::string> names;
  for (const IngestOptionInfo& info : IngestCommandOptions()) {
    BOOST_TEST(names.insert(info.name).second, info.name);
    BOOST_TEST(!info.help.empty(), info.name);
    const std::optional<std::string> text = IngestOptionText(defaults, info.name);
    if (info.kind == OptionKind::kSwitch) {
      BOOST_TEST(info.default_text.empty(), info.name);
      BOOST_TEST(*text == "false", info.name);  // a switch is off unless given
    } else {
      BOOST_TEST(info.default_text == text.value_or(""), info.name);
    }
  }
  for (const char* name : {"videos-dir",
                           "frames-dir",
                           "images-dir",
                           "image-list",
                           "labels",
                           "label-name",
                           "frame-rate",
                           "frame-size",
                           "quality",
                           "keep-jpeg",
                           "num-workers",
                           "shuffle",
                           "seed",
                           "batch",
                           "on-duplicate",
                           "strict",
                           "quiet",
                           "videos-per-chunk",
                           "bytes-per-chunk",
                           "no-checksums"}) {
    BOOST_TEST(names.count(name) == 1u, name);
  }
  BOOST_TEST(IngestOptionText(defaults, "frame_rate").value() == "8");
  BOOST_TEST(IngestOptionText(defaults, "quality").value() == "90");
  BOOST_TEST(!IngestOptionText(defaults, "seed").has_value());
}

BOOST_AUTO_TEST_CASE(set_ingest_option_reads_text_by_the_command_line_rules) {
  IngestOptions o;
  SetIngestOption(&o, "frame_rate", "2.5");
  SetIngestOption(&o, "quality", "70");
  SetIngestOption(&o, "seed", "18446744073709551615");
  SetIngestOption(&o, "on-duplicate", "replace");
  SetIngestOption(&o, "no-checksums", "true");
  SetIngestOption(&o, "keep_jpeg", "1");
  BOOST_TEST(o.frame_rate == 2.5);
  BOOST_TEST(o.quality == 70);
  BOOST_TEST(o.seed.value() == 18446744073709551615u);
  BOOST_TEST((o.on_duplicate == OnDuplicate::kReplace));
  BOOST_TEST(!o.checksums);
  BOOST_TEST(o.keep_jpeg);
  const auto refused = [](const char* name, const char* text, const std::string& message) {
    IngestOptions before;
    try {
      SetIngestOption(&before, name, text);
      BOOST_ERROR(name << "=" << text << " was taken");
    } catch (const InvalidArgumentError& e) {
      BOOST_TEST(e.what() == message);
    }
    BOOST_TEST(before.quality == 90);  // unchanged
  };
  refused("quality", "0", "--quality must be a whole number from 1 to 100, not '0'");
  refused("quality", "90.0", "--quality must be a whole number from 1 to 100, not '90.0'");
  refused("frame-rate", "nan", "--frame-rate must be a number from 0 to 1000, not 'nan'");
  refused("seed", "-1", "--seed must be a whole number >= 0, not '-1'");
  refused("on_duplicate", "keep", "--on-duplicate must be error, skip or replace, not 'keep'");
  refused("labels", "", "--labels is an empty string");
  refused("shuffle", "yes", "--shuffle is a switch: true or false, not 'yes'");
  refused("frame-rates", "8", "ingest option 'frame-rates': no such option");
  // ValidateIngestOptions applies the same ranges to options set in C++.
  IngestOptions bad;
  bad.dir = "x";
  bad.frames_dir = "y";
  bad.quality = 101;
  BOOST_TEST(ValidateIngestOptions(bad) ==
             "--quality must be a whole number from 1 to 100, not '101'");
}

BOOST_AUTO_TEST_CASE(options_an_ingest_would_not_use_are_named_as_gulpdb_ingest_warns) {
  TempDir tmp;
  IngestOptions o;
  o.dir = tmp / "new";
  o.frames_dir = tmp.path();
  BOOST_TEST(IgnoredIngestOptions(o, {"quality", "frame-size", "batch"}).empty());
  std::vector<std::string> w =
      IgnoredIngestOptions(o, {"seed", "label_name", "frame-rate", "videos-per-chunk"});
  BOOST_TEST(w.size() == 3u);
  BOOST_TEST(w[0] == "--seed is ignored without --shuffle");
  BOOST_TEST(w[1] == "--label-name is ignored without --labels");
  BOOST_TEST(w[2] == "--frame-rate is ignored: it applies to --videos-dir only");
  // An existing dataset keeps its settings: those given otherwise are named.
  CreateOptions create;
  create.videos_per_chunk = 7;
  Dataset::Create(o.dir, create);
  o.videos_per_chunk = 3;
  o.checksums = false;
  w = IgnoredIngestOptions(o, {"videos-per-chunk", "no-checksums", "bytes-per-chunk"});
  BOOST_TEST(w.size() == 2u);
  BOOST_TEST(w[0] == "--videos-per-chunk 3 is ignored: " + o.dir +
                         " is an existing dataset with 7 videos per chunk");
  BOOST_TEST(w[1] == "--no-checksums is ignored: " + o.dir +
                         " is an existing dataset with a checksum per frame");
}

BOOST_AUTO_TEST_CASE(a_source_that_is_not_utf8_is_named_escaped_and_its_label_is_no_label) {
  SourceSpec bad = FrameFolder("1", "circle");
  bad.id = "caf\xe9";
  bad.path = "/src/caf\xe9";
  const std::optional<SourceProblem> problem = UnstorableSource(bad);
  BOOST_REQUIRE(problem.has_value());
  BOOST_TEST(problem->id == "caf\\xe9");
  BOOST_TEST(Contains(problem->message, "the id (/src/caf\\xe9) is not valid UTF-8"),
             problem->message);
  BOOST_TEST(!UnstorableSource(FrameFolder("1", "circle")).has_value());
  SourceSpec bad_label = FrameFolder("2",
                                     "squ\xff"
                                     "are");
  BOOST_TEST(UnstorableSource(bad_label).has_value());
  // The label map of a distributed plan leaves such a label out, as Ingest does.
  TempDir tmp;
  const LabelMap map = ComputeLabelMap(tmp.path(), {FrameFolder("0", "circle"), bad_label});
  BOOST_TEST(map.size() == 1u);
  BOOST_TEST(map.count("circle") == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::ingest
