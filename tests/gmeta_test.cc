#include "engine/gulpio/gmeta.h"

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "support/test_util.h"
#include "util/crc32c.h"

namespace gulpdb::engine {
namespace {

const char* const kFixtureDirs[] = {"gulpio1_csv_jpeg", "gulpio2_csv_jpeg", "gulpio2_json_videos",
                                    "gulpio2_edge_cases"};

std::vector<GmetaEntry> ReadAll(const std::string& path,
                                GmetaReadOptions options = GmetaReadOptions()) {
  std::vector<GmetaEntry> entries;
  ReadGmeta(
      path, [&](GmetaEntry&& e) { entries.push_back(std::move(e)); }, options);
  return entries;
}

bool SameEntries(const std::vector<GmetaEntry>& a, const std::vector<GmetaEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].frame_info != b[i].frame_info ||
        a[i].meta_data != b[i].meta_data || a[i].offset != b[i].offset) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> GmetaFilesIn(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    if (file.path().extension() == ".gmeta") files.push_back(file.path().string());
  }
  return files;
}

std::vector<std::string> AllFixtureGmetaFiles() {
  std::vector<std::string> files;
  for (const char* dir : kFixtureDirs) {
    for (std::string& f : GmetaFilesIn(test::FixturesDir() + "/" + dir)) files.push_back(f);
  }
  return files;
}

// A deliberately independent, tolerant reader for the fixtures' manifest.json
// (pretty-printed by Python, with NaN inside meta_data): it only finds the
// extent of each value and keeps strings and scalars as raw text.
struct JsonNode {
  std::string_view raw;
  std::vector<std::pair<std::string_view, JsonNode>> members;  // keys as raw quoted tokens
  std::vector<JsonNode> items;

  const JsonNode& at(const std::string& key) const {
    for (const auto& m : members) {
      if (m.first == "\"" + key + "\"") return m.second;
    }
    throw std::runtime_error("manifest: no key " + key);
  }
};

class ManifestParser {
 public:
  explicit ManifestParser(std::string_view text) : text_(text) {}

  JsonNode Parse() {
    JsonNode node = Value();
    Space();
    if (pos_ != text_.size()) throw std::runtime_error("manifest: trailing text");
    return node;
  }

 private:
  void Space() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_]) != nullptr) ++pos_;
  }
  void Expect(char c) {
    if (text_.at(pos_) != c) throw std::runtime_error(std::string("manifest: expected ") + c);
    ++pos_;
  }
  std::string_view StringToken() {
    const size_t start = pos_;
    Expect('"');
    while (text_.at(pos_) != '"') pos_ += text_[pos_] == '\\' ? 2u : 1u;
    ++pos_;
    return text_.substr(start, pos_ - start);
  }
  JsonNode Value() {
    Space();
    JsonNode node;
    const size_t start = pos_;
    const char c = text_.at(pos_);
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      Space();
      if (text_.at(pos_) == close) {
        ++pos_;
      } else {
        for (;;) {
          Space();
          if (c == '{') {
            const std::string_view key = StringToken();
            Space();
            Expect(':');
            node.members.emplace_back(key, Value());
          } else {
            node.items.push_back(Value());
          }
          Space();
          if (text_.at(pos_) == ',') {
            ++pos_;
            continue;
          }
          Expect(close);
          break;
        }
      }
    } else if (c == '"') {
      StringToken();
    } else {
      while (pos_ < text_.size() && std::strchr(",]} \t\r\n", text_[pos_]) == nullptr) ++pos_;
    }
    node.raw = text_.substr(start, pos_ - start);
    return node;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string Printable(std::string_view bytes) { return test::Printable(bytes.substr(0, 300)); }

// Expects reading `text` (stored in a file) to fail with CorruptionError at
// byte `offset`, naming `fragment`.
void ExpectCorrupt(const std::string& text, size_t offset, const std::string& fragment,
                   GmetaReadOptions options = GmetaReadOptions()) {
  test::TempDir tmp;
  const std::string path = tmp / "meta_0.gmeta";
  test::WriteFile(path, text);
  BOOST_TEST_INFO("input: " << Printable(text));
  try {
    ReadAll(path, options);
    BOOST_ERROR("accepted a corrupt file");
  } catch (const CorruptionError& e) {
    const std::string message = e.what();
    BOOST_TEST_INFO("message: " << message);
    BOOST_TEST(message.rfind("read gmeta " + path + ": byte " + std::to_string(offset) + ": ", 0) ==
               0u);
    BOOST_TEST(message.find(fragment) != std::string::npos);
  }
}

// An entry with `frame_info` and `meta_data` text put in verbatim.
std::string OneEntry(const std::string& frame_info, const std::string& meta_data = "[{}]") {
  return "{\"a\": {\"frame_info\": " + frame_info + ", \"meta_data\": " + meta_data + "}}";
}

BOOST_AUTO_TEST_SUITE(gmeta_test)

BOOST_AUTO_TEST_CASE(every_fixture_gmeta_matches_its_manifest) {
  const size_t expected_videos[] = {22, 22, 4, 12};
  for (size_t d = 0; d < std::size(kFixtureDirs); ++d) {
    const std::string dir = test::FixturesDir() + "/" + kFixtureDirs[d];
    const std::string manifest_text = test::ReadFile(dir + "/manifest.json");
    const JsonNode manifest = ManifestParser(manifest_text).Parse();
    const JsonNode& chunks = manifest.at("chunks");
    const JsonNode& items = manifest.at("items");
    BOOST_TEST(chunks.items.size() == GmetaFilesIn(dir).size());
    size_t videos = 0;
    for (const JsonNode& chunk : chunks.items) {
      const std::string meta_file(chunk.at("meta_file").raw.substr(1));
      const std::string path = dir + "/" + meta_file.substr(0, meta_file.size() - 1);
      BOOST_TEST_INFO(path);
      const std::string bytes = test::ReadFile(path);
      const std::vector<GmetaEntry> entries = ReadAll(path);
      const std::vector<JsonNode>& ids = chunk.at("ids_in_order").items;
      BOOST_TEST_REQUIRE(entries.size() == ids.size());
      for (size_t i = 0; i < entries.size(); ++i) {
        const GmetaEntry& e = entries[i];
        // The manifest holds ids as Python's json.dump escaped them.
        BOOST_TEST(PythonJsonString(e.id) == ids[i].raw);
        BOOST_TEST(
            bytes.compare(e.offset, ids[i].raw.size() + 3, std::string(ids[i].raw) + ": {") == 0);
        const JsonNode* item = nullptr;
        for (const JsonNode& it : items.items) {
          if (it.at("id").raw == ids[i].raw && it.at("chunk_id").raw == chunk.at("chunk_id").raw) {
            item = &it;
          }
        }
        BOOST_TEST_REQUIRE(item != nullptr);
        const std::vector<JsonNode>& frames = item->at("frame_info").items;
        BOOST_TEST_REQUIRE(e.frame_info.size() == frames.size());
        for (size_t f = 0; f < frames.size(); ++f) {
          BOOST_TEST_REQUIRE(frames[f].items.size() == 3u);
          BOOST_TEST(e.frame_info[f].offset == std::stoull(std::string(frames[f].items[0].raw)));
          BOOST_TEST(e.frame_info[f].pad == std::stoull(std::string(frames[f].items[1].raw)));
          BOOST_TEST(e.frame_info[f].length == std::stoull(std::string(frames[f].items[2].raw)));
        }
        // Pretty-printed by Python there, compact here: the same value.
        BOOST_TEST(NormalizeJson(item->at("meta_data").raw) == e.meta_data);
        ++videos;
      }
    }
    BOOST_TEST(videos == expected_videos[d]);
  }
}

BOOST_AUTO_TEST_CASE(edge_case_fixture_decodes_as_expected) {
  const std::string dir = test::FixturesDir() + "/gulpio2_edge_cases";
  const std::vector<GmetaEntry> chunk0 = ReadAll(dir + "/meta_0.gmeta");
  const std::vector<std::string> ids = {
      "42",           "unicode_\xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80",
      "nested_meta",  "dup",
      "gray",         "one_pixel",
      "empty_frames", "appended_later"};
  BOOST_TEST_REQUIRE(chunk0.size() == ids.size());
  for (size_t i = 0; i < ids.size(); ++i) BOOST_TEST(chunk0[i].id == ids[i]);
  BOOST_TEST(chunk0[0].offset == 1u);
  BOOST_TEST((chunk0[0].frame_info == std::vector<FrameInfo>{{0, 1, 744}}));
  BOOST_TEST((chunk0[3].frame_info ==
              std::vector<FrameInfo>{{2232, 1, 744}, {2976, 1, 744}, {5124, 0, 744}}));
  BOOST_TEST(chunk0[3].meta_data.rfind("[{\"which\": \"first append\"}, {\"which\": ", 0) == 0u);
  BOOST_TEST(chunk0[5].meta_data == "[{}]");
  BOOST_TEST(chunk0[6].frame_info.empty());
  const std::string& nested = chunk0[2].meta_data;
  for (const char* token :
       {"\"nan\": NaN", "\"inf\": Infinity", "\"neg_inf\": -Infinity",
        "\"big_int\": 18446744073709551617", "\"exp\": 1e-300", "\"c\": \"\\u00fc\""}) {
    BOOST_TEST(nested.find(token) != std::string::npos);
  }
  const std::vector<GmetaEntry> chunk1 = ReadAll(dir + "/meta_1.gmeta");
  BOOST_TEST_REQUIRE(chunk1.size() == 4u);
  for (uint32_t pad = 0; pad < 4; ++pad) {
    BOOST_TEST(chunk1[pad].id == "pad" + std::to_string(pad));
    BOOST_TEST_REQUIRE(chunk1[pad].frame_info.size() == 1u);
    BOOST_TEST(chunk1[pad].frame_info[0].pad == pad);
  }
}

BOOST_AUTO_TEST_CASE(writer_reproduces_every_fixture_byte_for_byte) {
  test::TempDir tmp;
  size_t files = 0;
  for (const std::string& path : AllFixtureGmetaFiles()) {
    BOOST_TEST_INFO(path);
    const std::string out = tmp / "meta_out.gmeta";
    GmetaWriter writer(out);
    for (const GmetaEntry& e : ReadAll(path)) writer.Add(e.id, e.frame_info, e.meta_data);
    writer.Commit();
    BOOST_TEST(test::ReadFile(out) == test::ReadFile(path));
    ++files;
  }
  BOOST_TEST(files == 27u);
}

// The content fingerprint a reader and a writer report is the CRC-32C of the
// file's bytes, whatever the block size (the importer records it, export
// re-records it; docs/format/index_format.md "Source stamps").
BOOST_AUTO_TEST_CASE(reader_and_writer_report_the_crc32c_of_the_whole_file) {
  test::TempDir tmp;
  for (const std::string& path : AllFixtureGmetaFiles()) {
    BOOST_TEST_INFO(path);
    const std::string bytes = test::ReadFile(path);
    const uint32_t crc = util::Crc32c(bytes.data(), bytes.size());
    for (size_t block : {size_t{1}, size_t{7}, size_t{1} << 20}) {
      std::vector<GmetaEntry> entries;
      const GmetaContent read = ReadGmeta(
          path, [&](GmetaEntry&& e) { entries.push_back(std::move(e)); }, GmetaReadOptions{block});
      BOOST_TEST(read.size == bytes.size());
      BOOST_TEST(read.crc32c == crc);
      if (block != 1) continue;
      GmetaWriter writer(tmp / "out.gmeta");
      for (const GmetaEntry& e : entries) writer.Add(e.id, e.frame_info, e.meta_data);
      writer.Commit();
      BOOST_TEST(writer.content().size == bytes.size());
      BOOST_TEST(writer.content().crc32c == crc);
    }
  }
  GmetaWriter empty(tmp / "empty.gmeta");
  empty.Commit();
  BOOST_TEST(empty.content().size == 2u);  // "{}"
  BOOST_TEST(empty.content().crc32c == util::Crc32c("{}", 2));
}

BOOST_AUTO_TEST_CASE(any_block_size_gives_the_same_entries) {
  for (const std::string& path : AllFixtureGmetaFiles()) {
    BOOST_TEST_INFO(path);
    const std::vector<GmetaEntry> expected = ReadAll(path);
    for (size_t block : {1u, 2u, 3u, 7u, 16u, 61u, 256u}) {
      BOOST_TEST_INFO("block " << block);
      BOOST_TEST(SameEntries(ReadAll(path, GmetaReadOptions{block}), expected));
    }
  }
}

BOOST_AUTO_TEST_CASE(streams_entries_much_larger_than_a_block) {
  test::TempDir tmp;
  const std::string path = tmp / "big.gmeta";
  std::vector<GmetaEntry> written;
  {
    GmetaWriter writer(path);
    for (int i = 0; i < 40; ++i) {
      GmetaEntry e;
      e.id = "video_" + std::to_string(i) + (i % 3 == 0 ? "_\xc3\xa9" : "");
      for (uint32_t f = 0; f < static_cast<uint32_t>(i * 7); ++f) {
        e.frame_info.push_back(FrameInfo{
            uint64_t{f} * 4000 + uint64_t{0xffffffff} * static_cast<uint64_t>(i % 2), f % 4, 4000});
      }
      // Every fifth entry carries ~300 KB of meta data.
      const std::string filler(i % 5 == 0 ? 300000 : 10, 'x');
      e.meta_data = "[{\"label\": \"l" + std::to_string(i) + "\", \"blob\": \"" + filler + "\"}]";
      writer.Add(e.id, e.frame_info, e.meta_data);
      written.push_back(std::move(e));
    }
    writer.Commit();
  }
  for (size_t block : {size_t{4096}, size_t{65536}, size_t{1} << 20}) {
    const std::vector<GmetaEntry> entries = ReadAll(path, GmetaReadOptions{block});
    BOOST_TEST_REQUIRE(entries.size() == written.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      BOOST_TEST(entries[i].id == written[i].id);
      BOOST_TEST(entries[i].frame_info == written[i].frame_info);
      BOOST_TEST(entries[i].meta_data == written[i].meta_data);
    }
  }
}

BOOST_AUTO_TEST_CASE(truncation_at_every_byte_is_corruption) {
  test::TempDir tmp;
  const std::string path = tmp / "cut.gmeta";
  size_t cuts = 0;
  for (const std::string& source : AllFixtureGmetaFiles()) {
    const std::string bytes = test::ReadFile(source);
    for (size_t n = 0; n < bytes.size(); ++n) {
      test::WriteFile(path, std::string_view(bytes).substr(0, n));
      try {
        ReadAll(path, GmetaReadOptions{n % 2 == 0 ? size_t{1} << 20 : 7});
        BOOST_ERROR(source << " cut at " << n << " was accepted");
      } catch (const CorruptionError& e) {
        const std::string expected = "read gmeta " + path + ": byte " + std::to_string(n) + ": ";
        if (std::string(e.what()).rfind(expected, 0) != 0) {
          BOOST_ERROR(source << " cut at " << n << ": " << e.what());
        }
      }
      ++cuts;
    }
  }
  BOOST_TEST(cuts > 7000u);
}

BOOST_AUTO_TEST_CASE(rejects_malformed_files_with_offset_and_reason) {
  struct Case {
    std::string text;
    std::string at;  // the offset is where this first occurs; empty: the end of the file
    std::string fragment;
    size_t skip = 0;  // added to the offset of `at`
  };
  const std::string ok = "{\"frame_info\": [[0, 1, 744]], \"meta_data\": [{}]}";
  const std::vector<Case> cases = {
      {"", "", "empty file"},
      {"  \n", "", "unexpected end of file"},
      {"[]", "[", "expected '{'"},
      {"\xef\xbb\xbf{}", "\xef", "byte order mark"},
      {"{} x", "x", "after the end of the JSON object"},
      {"{}{}", "{}{", "after the end of the JSON object", 2},
      {"{\"a\": " + ok + "} garbage", "garbage", "after the end of the JSON object"},
      {"{\"a\": " + ok + ",}", ",}", "expected an id", 1},
      {"{\"a\": " + ok + " \"b\": " + ok + "}", "\"b\"", "expected ',' or '}' after an entry"},
      {"{1: " + ok + "}", "1", "expected an id"},
      {"{\"a\" " + ok + "}", "{\"frame", "expected ':' after the id"},
      {"{\"a\": [1]}", "[", "expected an object"},
      {"{\"a\": null}", "null", "expected an object"},
      {OneEntry("[[-1, 0, 4]]"), "-1", "frame_info[0] offset is negative"},
      {OneEntry("[[0, 0, 4], [0, -1, 4]]"), "-1", "frame_info[1] pad is negative"},
      {OneEntry("[[0, 0, -4]]"), "-4", "length is negative"},
      {OneEntry("[[0, 0, -Infinity]]"), "-I", "length is negative"},
      {OneEntry("[[18446744073709551616, 0, 4]]"), "184", "offset is too big"},
      {OneEntry("[[99999999999999999999999, 0, 4]]"), "999", "offset is too big"},
      {OneEntry("[[0, 4294967296, 4]]"), "429", "pad is too big"},
      {OneEntry("[[0, 0, 4294967296]]"), "429", "length is too big"},
      {OneEntry("[[0.5, 0, 4]]"), "0.5", "offset must be an integer"},
      {OneEntry("[[1e3, 0, 4]]"), "1e3", "offset must be an integer"},
      {OneEntry("[[0, 0, 4.0]]"), "4.0", "length must be an integer"},
      {OneEntry("[[NaN, 0, 4]]"), "NaN", "must be a non-negative integer"},
      {OneEntry("[[\"0\", 0, 4]]"), "\"0\"", "must be a non-negative integer"},
      {OneEntry("[[null, 0, 4]]"), "null", "must be a non-negative integer"},
      {OneEntry("[[00, 0, 4]]"), "00", "leading zeros"},
      {OneEntry("[[0, 0]]"), "]]", "frame_info[0] has 2 numbers"},
      {OneEntry("[[0]]"), "]]", "frame_info[0] has 1 number"},
      {OneEntry("[[]]"), "]]", "must be a non-negative integer"},
      {OneEntry("[[0, 0, 4, 5]]"), ", 5", "has more than 3 numbers"},
      {OneEntry("[[0 0 4]]"), "0 4]", "expected ','"},
      {OneEntry("[0]"), "0]", "frame_info[0] must be a list"},
      {OneEntry("[[0, 0, 4] [0, 0, 4]]"), "[0, 0, 4]]", "expected ',' or ']' in frame_info"},
      {OneEntry("[[0, 0, 4],]"), ",]", "frame_info[1] must be a list", 1},
      {OneEntry("5"), "5", "frame_info must be a list"},
      {OneEntry("null"), "null", "frame_info must be a list"},
      {OneEntry("{}"), "{}", "frame_info must be a list"},
      {OneEntry("[]", "{}"), "{}", "meta_data must be a list"},
      {OneEntry("[]", "\"x\""), "\"x\"", "meta_data must be a list"},
      {OneEntry("[]", "[1,]"), "]}}", "meta_data: expected a JSON value"},
      {OneEntry("[]", "[01]"), "01", "meta_data: leading zeros"},
      {OneEntry("[]", "[nan]"), "nan", "meta_data: invalid literal"},
      {OneEntry("[]", "[\"\xc0\x80\"]"), "\xc0", "meta_data: invalid UTF-8"},
      {OneEntry("[]", "[\"a\tb\"]"), "\t", "meta_data: control character 0x09"},
      {OneEntry("[]", "[\"\\x\"]"), "\\x", "meta_data: invalid escape"},
      {OneEntry("[]", std::string(1001, '[') + std::string(1001, ']')), "[[[",
       "meta_data: nesting deeper than 1000", 1000},
      {"{\"a\": {\"meta_data\": []}}", "\"a\"", "entry \"a\": no \"frame_info\""},
      {"{\"a\": {\"frame_info\": []}}", "\"a\"", "entry \"a\": no \"meta_data\""},
      {"{\"a\": {}}", "\"a\"", "no \"frame_info\""},
      {"{\"a\": {\"frame_info\": [], \"meta_data\": [], \"extra\": 1}}", "\"extra\"",
       "unknown key \"extra\""},
      {"{\"a\": {\"frame_info\": [], \"frame_info\": [], \"meta_data\": []}}",
       "\"frame_info\": [], \"m", "duplicate key \"frame_info\""},
      {"{\"a\": {\"frame_info\": [], \"meta_data\": [], \"meta_data\": []}}", "\"meta_data\": []}",
       "duplicate key \"meta_data\""},
      {"{\"a\": {\"frame_info\": [] \"meta_data\": []}}", "\"meta", "expected ',' or '}'"},
      {"{\"a\": {\"frame_info\" [], \"meta_data\": []}}", "[], \"meta", "expected ':' after a key"},
      {"{\"a\": {frame_info: [], \"meta_data\": []}}", "frame_info", "expected a key"},
      {"{\"a\\q\": " + ok + "}", "\\q", "id: invalid escape \\q"},
      {"{\"\\ud800\": " + ok + "}", "\\ud800", "id: lone surrogate \\ud800"},
      {"{\"x\\udc00y\": " + ok + "}", "\\udc00", "id: lone surrogate \\udc00"},
      {"{\"\xff\": " + ok + "}", "\xff", "id: invalid UTF-8"},
      {"{\"a\nb\": " + ok + "}", "\n", "id: control character 0x0a"},
      {"{\"a\": {\"frame\\u005finfo\": [], \"meta_data\": [], \"\\u00e9\": 1}}", "\"\\u00e9",
       "unknown key \"\\u00e9\""},
  };
  for (const Case& c : cases) {
    const size_t found = c.at.empty() ? c.text.size() : c.text.find(c.at);
    BOOST_TEST_INFO("case with fragment " << c.fragment);
    BOOST_TEST_REQUIRE(found != std::string::npos);
    const size_t offset = found + c.skip;
    ExpectCorrupt(c.text, offset, c.fragment);
    ExpectCorrupt(c.text, offset, c.fragment, GmetaReadOptions{3});
  }
}

BOOST_AUTO_TEST_CASE(random_corruption_is_read_or_rejected_never_crashes) {
  // Byte flips, insertions, deletions and cuts of the fixture files: each
  // result either reads (and then re-reads identically with tiny blocks) or
  // throws CorruptionError; nothing else.
  std::vector<std::string> sources;
  for (const std::string& path : AllFixtureGmetaFiles()) sources.push_back(test::ReadFile(path));
  std::string alphabet = "[]{}\",:\\ u0123456789-.eENaInfity\x7f\x80\xc3\xff";
  alphabet += '\0';
  test::TempDir tmp;
  const std::string path = tmp / "fuzz.gmeta";
  std::mt19937 rng(7);
  size_t accepted = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string text = sources[rng() % sources.size()];
    test::MutateText(&text, alphabet, rng);
    test::WriteFile(path, text);
    try {
      const std::vector<GmetaEntry> entries = ReadAll(path);
      BOOST_TEST(SameEntries(ReadAll(path, GmetaReadOptions{5}), entries));
      ++accepted;
    } catch (const CorruptionError& e) {
      BOOST_TEST(std::string(e.what()).rfind("read gmeta " + path + ": byte ", 0) == 0u);
    }
  }
  BOOST_TEST(accepted > 0u);
}

BOOST_AUTO_TEST_CASE(accepts_any_json_layout_python_would) {
  test::TempDir tmp;
  const std::string path = tmp / "meta_0.gmeta";
  test::WriteFile(path, "{}");
  BOOST_TEST(ReadAll(path).empty());
  test::WriteFile(path, " \n{ \t}\r\n");
  BOOST_TEST(ReadAll(path).empty());
  // Pretty-printed, keys in the other order, an escaped key name, a trailing
  // newline, extreme values.
  test::WriteFile(path,
                  "{\n  \"v1\" : {\n    \"meta_data\" : [ {\"k\": NaN} ],\n"
                  "    \"frame_info\" : [ [ 18446744073709551615 , 4294967295 , 4294967295 ] ,"
                  "[0,0,0] ]\n  },\n  \"v2\":{\"frame\\u005finfo\":[],\"meta_data\":[]}\n}\n");
  const std::vector<GmetaEntry> entries = ReadAll(path, GmetaReadOptions{5});
  BOOST_TEST_REQUIRE(entries.size() == 2u);
  BOOST_TEST(entries[0].id == "v1");
  BOOST_TEST(entries[0].offset == 4u);
  BOOST_TEST(entries[0].meta_data == "[ {\"k\": NaN} ]");  // verbatim
  BOOST_TEST(
      (entries[0].frame_info ==
       std::vector<FrameInfo>{{18446744073709551615ull, 4294967295u, 4294967295u}, {0, 0, 0}}));
  BOOST_TEST(entries[1].id == "v2");
  BOOST_TEST(entries[1].frame_info.empty());
  BOOST_TEST(entries[1].meta_data == "[]");
  // A repeated id is reported once per occurrence.
  test::WriteFile(path,
                  "{\"a\": {\"frame_info\": [], \"meta_data\": [1]}, "
                  "\"a\": {\"frame_info\": [], \"meta_data\": [2]}}");
  const std::vector<GmetaEntry> twice = ReadAll(path);
  BOOST_TEST_REQUIRE(twice.size() == 2u);
  BOOST_TEST(twice[1].meta_data == "[2]");
}

BOOST_AUTO_TEST_CASE(reader_iterates_and_reports_missing_files) {
  GmetaReader reader(test::FixturesDir() + "/gulpio2_edge_cases/meta_1.gmeta");
  GmetaEntry entry;
  size_t count = 0;
  while (reader.Next(&entry)) ++count;
  BOOST_TEST(count == 4u);
  BOOST_TEST(!reader.Next(&entry));  // stays at the end
  BOOST_CHECK_THROW(GmetaReader(test::FixturesDir() + "/no_such.gmeta"), NotFoundError);
}

BOOST_AUTO_TEST_CASE(writer_commit_replaces_atomically_and_leaves_no_temp_file) {
  test::TempDir tmp;
  const std::string path = tmp / "meta_0.gmeta";
  test::WriteFile(path, "old");
  {
    GmetaWriter writer(path);
    writer.Add("b\xc3\xa9", {{0, 1, 8}, {8, 0, 4}}, "[{\"x\": NaN}]");
    writer.Add("c", {}, "[]");
    BOOST_TEST(std::filesystem::exists(writer.temp_path()));
    BOOST_TEST(std::filesystem::path(writer.temp_path()).parent_path() ==
               std::filesystem::path(path).parent_path());
    BOOST_TEST(test::ReadFile(path) == "old");  // untouched until Commit
    writer.Commit();
    BOOST_TEST(!std::filesystem::exists(writer.temp_path()));
    BOOST_TEST(writer.entry_count() == 2u);
    BOOST_CHECK_THROW(writer.Add("d", {}, "[]"), InvalidArgumentError);
    BOOST_CHECK_THROW(writer.Commit(), InvalidArgumentError);
  }
  BOOST_TEST(test::ReadFile(path) ==
             "{\"b\\u00e9\": {\"frame_info\": [[0, 1, 8], [8, 0, 4]], \"meta_data\": [{\"x\": "
             "NaN}]}, \"c\": {\"frame_info\": [], \"meta_data\": []}}");
  std::vector<std::string> names;
  for (const auto& f : std::filesystem::directory_iterator(tmp.path())) {
    names.push_back(f.path().filename().string());
  }
  BOOST_TEST(names == std::vector<std::string>{"meta_0.gmeta"});
}

BOOST_AUTO_TEST_CASE(writer_destroyed_without_commit_leaves_old_file) {
  test::TempDir tmp;
  const std::string path = tmp / "meta_0.gmeta";
  test::WriteFile(path, "{\"old\": {\"frame_info\": [], \"meta_data\": []}}");
  std::string temp;
  {
    GmetaWriter writer(path);
    temp = writer.temp_path();
    // More than the write buffer, so bytes really reached the temporary file.
    const std::string meta = "[\"" + std::string(3 << 20, 'z') + "\"]";
    writer.Add("new", {{0, 0, 4}}, meta);
    writer.Add("new2", {{4, 0, 4}}, meta);
    BOOST_TEST(std::filesystem::file_size(temp) > 0u);
  }
  BOOST_TEST(!std::filesystem::exists(temp));
  BOOST_TEST(test::ReadFile(path) == "{\"old\": {\"frame_info\": [], \"meta_data\": []}}");
  size_t files = 0;
  for (const auto& f : std::filesystem::directory_iterator(tmp.path()))
    files += f.exists() ? 1u : 0u;
  BOOST_TEST(files == 1u);
  // Without any entry, Commit writes Python's empty object.
  {
    GmetaWriter writer(path);
    writer.Commit();
  }
  BOOST_TEST(test::ReadFile(path) == "{}");
}

BOOST_AUTO_TEST_CASE(writer_rejects_bad_arguments_without_damage) {
  test::TempDir tmp;
  const std::string path = tmp / "meta_0.gmeta";
  GmetaWriter writer(path);
  BOOST_CHECK_THROW(writer.Add("bad\xff", {}, "[]"), InvalidArgumentError);
  for (const char* meta : {"", "{}", "1", "[1,", "[1] ", " [1]", "[1][2]", "[nan]", "[\"\x80\"]"}) {
    BOOST_TEST_INFO(meta);
    BOOST_CHECK_THROW(writer.Add("id", {}, meta), InvalidArgumentError);
  }
  writer.Add("ok", {{0, 3, 8}}, "[{\"big\": 18446744073709551617, \"n\": -Infinity}]");
  writer.Commit();
  BOOST_TEST(test::ReadFile(path) ==
             "{\"ok\": {\"frame_info\": [[0, 3, 8]], \"meta_data\": [{\"big\": "
             "18446744073709551617, \"n\": -Infinity}]}}");
  BOOST_CHECK_THROW(GmetaWriter(tmp / "no_such_dir/meta_0.gmeta"), NotFoundError);
}

BOOST_AUTO_TEST_CASE(writer_and_reader_round_trip_awkward_ids) {
  test::TempDir tmp;
  const std::string path = tmp / "meta_0.gmeta";
  const std::vector<std::string> ids = {"",     std::string("nul\0in", 6), "tab\tq\"b\\s/",
                                        "\x7f", "\xf4\x8f\xbf\xbf",        "\xe2\x80\xa8",
                                        "42"};
  {
    GmetaWriter writer(path);
    for (const std::string& id : ids) writer.Add(id, {{1, 2, 3}}, "[]");
    writer.Commit();
  }
  const std::vector<GmetaEntry> entries = ReadAll(path);
  BOOST_TEST_REQUIRE(entries.size() == ids.size());
  for (size_t i = 0; i < ids.size(); ++i) BOOST_TEST(entries[i].id == ids[i]);
  const std::string text = test::ReadFile(path);
  BOOST_TEST(NormalizeJson(text) == text);
  BOOST_TEST(text.find("\"nul\\u0000in\"") != std::string::npos);
  BOOST_TEST(text.find("\"\\u007f\"") != std::string::npos);
  BOOST_TEST(text.find("\"\\udbff\\udfff\"") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::engine
