#include "engine/json/json_text.h"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/gulpio/gmeta.h"
#include "engine/json/json_writer.h"
#include "gulpdb/error.h"
#include "support/test_util.h"

namespace gulpdb::engine {
namespace {

// Every .gmeta of the interop fixtures, written by GulpIO/GulpIO2 themselves.
std::vector<std::string> FixtureGmetaFiles() {
  std::vector<std::string> files;
  for (const auto& dir : std::filesystem::directory_iterator(test::FixturesDir())) {
    const std::string name = dir.path().filename().string();
    if (name.rfind("gulpio", 0) != 0) continue;
    for (const auto& file : std::filesystem::directory_iterator(dir.path())) {
      if (file.path().extension() == ".gmeta") files.push_back(file.path().string());
    }
  }
  return files;
}

using test::Printable;

// Runs `fn`, which must throw InvalidArgumentError naming `byte` and `fragment`.
template <typename Fn>
void ExpectInvalid(Fn fn, size_t byte, const std::string& fragment, const std::string& input) {
  try {
    fn();
    BOOST_ERROR("accepted invalid input " << Printable(input));
  } catch (const InvalidArgumentError& e) {
    const std::string message = e.what();
    BOOST_TEST_INFO("input " << Printable(input) << " -> " << message);
    BOOST_TEST(message.find(": byte " + std::to_string(byte) + ": ") != std::string::npos);
    BOOST_TEST(message.find(fragment) != std::string::npos);
  }
}

void ExpectNormalizeRejects(const std::string& text, size_t byte, const std::string& fragment) {
  ExpectInvalid([&] { NormalizeJson(text); }, byte, fragment, "normalize: " + text);
}

BOOST_AUTO_TEST_SUITE(json_text_test)

BOOST_AUTO_TEST_CASE(normalize_is_identity_on_python_output) {
  // Each string below is what json.dumps printed for some value.
  const std::vector<std::string> python_output = {
      "[]",
      "{}",
      "[{}]",
      "\"\"",
      "0",
      "-7",
      "null",
      "[true, false, null]",
      "[NaN, Infinity, -Infinity, 18446744073709551617, 1e-300, 1e+300, 0.1]",
      "{\"a\": [1, {\"b\": \"\\u00e9/\"}], \"c\": \"\\ud83d\\ude00x\", \"d\": \"\\ud800\"}",
      "\"\\u0000\\u0001\\u001f\\u007f\"",
      "\"\\\"q\\\" \\\\ /\"",
      "\"\\b\\f\\n\\r\\t\"",
      "\"caf\\u00e9 \\u2713 \\ud83d\\ude00\"",
      "\"\\uffff\\ud800\\udc00\\udbff\\udfff\"",
      "[{\"id\": \"0\", \"label\": \"circle\", \"idx\": 0}]",
  };
  for (const std::string& text : python_output) {
    BOOST_TEST(NormalizeJson(text) == text);
  }
}

BOOST_AUTO_TEST_CASE(normalize_is_identity_on_every_fixture_gmeta_and_meta_data) {
  const std::vector<std::string> files = FixtureGmetaFiles();
  BOOST_TEST_REQUIRE(files.size() >= 27u);
  size_t meta_count = 0;
  for (const std::string& path : files) {
    BOOST_TEST_INFO(path);
    const std::string whole = test::ReadFile(path);
    BOOST_TEST(NormalizeJson(whole) == whole);
    ReadGmeta(path, [&](GmetaEntry&& entry) {
      BOOST_TEST(NormalizeJson(entry.meta_data) == entry.meta_data);
      ++meta_count;
    });
  }
  BOOST_TEST(meta_count >= 60u);
}

BOOST_AUTO_TEST_CASE(normalize_rewrites_to_python_form) {
  struct Case {
    std::string input;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"{\"a\":1}", "{\"a\": 1}"},
      {" \t\r\n[ 1 ,2,\n3 ] \n", "[1, 2, 3]"},
      {"{ }", "{}"},
      {"[ ]", "[]"},
      {"{\"a\" : {\"b\":[ ]} , \"c\":null}", "{\"a\": {\"b\": []}, \"c\": null}"},
      {"\"\\u00E9\"", "\"\\u00e9\""},
      {"\"\xc3\xa9\"", "\"\\u00e9\""},  // raw UTF-8 e-acute
      {"\"\\/\"", "\"/\""},
      {"\"\xf0\x9f\x98\x80\"", "\"\\ud83d\\ude00\""},  // raw astral character
      {"\"\\uD83D\\uDE00\"", "\"\\ud83d\\ude00\""},
      {"\"\\u0041\\u0022\\u005C\\u002f\"", "\"A\\\"\\\\/\""},
      {"\"\\u000A\\u000d\\u0009\\u0008\\u000C\"", "\"\\n\\r\\t\\b\\f\""},
      {"\"\\u001F\\u007F\"", "\"\\u001f\\u007f\""},
      {"\"\x7f\"", "\"\\u007f\""},                   // raw DEL: Python's ensure_ascii escapes it
      {"\"\\uDC00\\uD800\"", "\"\\udc00\\ud800\""},  // lone surrogates survive, lowercased
      {"\"\xe2\x9c\x93\xef\xbf\xbf\xf4\x8f\xbf\xbf\"", "\"\\u2713\\uffff\\udbff\\udfff\""},
      {"[1E5,-0,1.50,1e400]", "[1E5, -0, 1.50, 1e400]"},  // numbers keep their spelling
      {"[NaN,-Infinity,Infinity]", "[NaN, -Infinity, Infinity]"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_INFO(Printable(c.input));
    const std::string out = NormalizeJson(c.input);
    BOOST_TEST(out == c.expected);
    BOOST_TEST(NormalizeJson(out) == out);  // canonical form is a fixed point
  }
}

BOOST_AUTO_TEST_CASE(normalize_merges_duplicate_keys_like_python) {
  // json.dumps(json.loads(s)): the last value wins, at the first key's place.
  BOOST_TEST(NormalizeJson("{\"a\":1,\"b\":2,\"a\":3}") == "{\"a\": 3, \"b\": 2}");
  BOOST_TEST(NormalizeJson("{\"a\":1,\"a\":2,\"a\":3}") == "{\"a\": 3}");
  // Keys equal after decoding are duplicates too.
  BOOST_TEST(NormalizeJson("{\"\\u00e9\":1,\"\xc3\xa9\":2}") == "{\"\\u00e9\": 2}");
  BOOST_TEST(NormalizeJson("[{\"x\":{\"k\":1,\"k\":{\"z\":0,\"z\":[1]}},\"y\":2,\"x\":[3]}]") ==
             "[{\"x\": [3], \"y\": 2}]");
  BOOST_TEST(NormalizeJson("{\"k\":{\"z\":0,\"z\":[1]},\"m\":{\"b\":1,\"a\":2,\"b\":3}}") ==
             "{\"k\": {\"z\": [1]}, \"m\": {\"b\": 3, \"a\": 2}}");
  // Large objects take another path.
  std::string input = "{";
  std::string plain = "{";
  std::string merged = "{";
  for (int i = 0; i < 40; ++i) {
    const std::string member = "\"k" + std::to_string(39 - i) + "\": " + std::to_string(i);
    input += (i > 0 ? "," : "") + member;
    plain += (i > 0 ? ", " : "") + member;
    merged += (i > 0 ? ", " : "") + (i == 5   ? "\"k34\": \"last\""
                                     : i == 7 ? "\"k32\": [7]"
                                              : member);
  }
  BOOST_TEST(NormalizeJson(input + "}") == plain + "}");
  BOOST_TEST(NormalizeJson(input + ",\"k34\":0,\"k32\":[7],\"k34\":\"last\"}") == merged + "}");
}

BOOST_AUTO_TEST_CASE(normalize_rejects_invalid_json_with_offset) {
  ExpectNormalizeRejects("", 0, "unexpected end of input");
  ExpectNormalizeRejects("   ", 3, "unexpected end of input");
  ExpectNormalizeRejects("[1, 2] x", 7, "after the JSON value");
  ExpectNormalizeRejects("{} {}", 3, "after the JSON value");
  ExpectNormalizeRejects("[1,]", 3, "expected a JSON value");
  ExpectNormalizeRejects("{\"a\":1,}", 7, "expected a string key");
  ExpectNormalizeRejects("{\"a\"}", 4, "expected ':'");
  ExpectNormalizeRejects("{\"a\" 1}", 5, "expected ':'");
  ExpectNormalizeRejects("{1: 2}", 1, "expected a string key");
  ExpectNormalizeRejects("[1 2]", 3, "expected ',' or ']'");
  ExpectNormalizeRejects("{\"a\": 1 \"b\": 2}", 8, "expected ',' or '}'");
  ExpectNormalizeRejects("[1", 2, "unexpected end of input");
  ExpectNormalizeRejects("\"abc", 4, "unexpected end of input");
  ExpectNormalizeRejects("01", 0, "leading zeros");
  ExpectNormalizeRejects("-01", 0, "leading zeros");
  ExpectNormalizeRejects("1.", 2, "unexpected end of input");
  ExpectNormalizeRejects("[1.]", 3, "expected a digit after the decimal point");
  ExpectNormalizeRejects("[1e]", 3, "expected a digit in the exponent");
  ExpectNormalizeRejects("[-]", 2, "expected a digit");
  ExpectNormalizeRejects(".5", 0, "expected a JSON value");
  ExpectNormalizeRejects("+1", 0, "expected a JSON value");
  ExpectNormalizeRejects("nan", 0, "invalid literal");
  ExpectNormalizeRejects("-NaN", 1, "expected a digit");
  ExpectNormalizeRejects("Infinit", 7, "unexpected end of input");
  ExpectNormalizeRejects("[Infinite]", 1, "invalid literal");
  ExpectNormalizeRejects("[True]", 1, "expected a JSON value");
  ExpectNormalizeRejects("'a'", 0, "expected a JSON value");
  ExpectNormalizeRejects("[1] // c", 4, "after the JSON value");
  ExpectNormalizeRejects("\"a\nb\"", 2, "control character 0x0a");
  ExpectNormalizeRejects(std::string("\"a\0b\"", 5), 2, "control character 0x00");
  ExpectNormalizeRejects("\"\\q\"", 1, "invalid escape \\q");
  ExpectNormalizeRejects("\"\\x41\"", 1, "invalid escape \\x");
  // A control byte after the backslash is named: copied, a NUL cut the message.
  ExpectNormalizeRejects(std::string("\"\\\0\"", 4), 1, "a backslash before byte 0x00 in a");
  ExpectNormalizeRejects("\"\\\n\"", 1, "a backslash before byte 0x0a in a string");
  ExpectNormalizeRejects("\"\\u12G4\"", 5, "expected 4 hex digits");
  ExpectNormalizeRejects("\"\\u12\"", 5, "expected 4 hex digits");
  ExpectNormalizeRejects("\xef\xbb\xbf[]", 0, "byte order mark");
}

BOOST_AUTO_TEST_CASE(normalize_rejects_invalid_utf8) {
  const std::vector<std::string> bad = {
      "\x80",              // lone continuation byte
      "\xc0\x80",          // overlong NUL
      "\xc1\xbf",          // overlong
      "\xe0\x80\x80",      // overlong 3-byte
      "\xed\xa0\x80",      // an encoded surrogate (CESU-8)
      "\xf0\x80\x80\x80",  // overlong 4-byte
      "\xf4\x90\x80\x80",  // above U+10FFFF
      "\xf5\x80\x80\x80",  // invalid lead byte
      "\xff",
      "\xc3(",  // missing continuation
  };
  for (const std::string& b : bad) {
    const std::string text = "[\"ok\", \"x" + b + "\"]";
    ExpectNormalizeRejects(text, 9, "invalid UTF-8");
    ExpectInvalid([&] { PythonJsonString("x" + b); }, 1, "invalid UTF-8", b);
    ExpectInvalid([&] { DecodeJsonString("\"x" + b + "\""); }, 2, "invalid UTF-8", b);
  }
  // A sequence cut off by the end of the text is truncated, not accepted.
  ExpectNormalizeRejects("\"\xe2\x9c", 3, "unexpected end of input");
  ExpectInvalid([] { PythonJsonString("\xe2\x9c"); }, 0, "invalid UTF-8", "\xe2\x9c");
}

BOOST_AUTO_TEST_CASE(nesting_limit_is_enforced) {
  const auto nested = [](int depth) {
    return std::string(static_cast<size_t>(depth), '[') +
           std::string(static_cast<size_t>(depth), ']');
  };
  BOOST_TEST(NormalizeJson(nested(kMaxJsonDepth)) == nested(kMaxJsonDepth));
  ExpectNormalizeRejects(nested(kMaxJsonDepth + 1), static_cast<size_t>(kMaxJsonDepth),
                         "nesting deeper than");
  // Objects count the same, and a hostile depth is refused without recursion.
  std::string objects;
  for (int i = 0; i <= kMaxJsonDepth; ++i) objects += "{\"a\":";
  ExpectNormalizeRejects(objects, static_cast<size_t>(kMaxJsonDepth) * 5, "nesting deeper than");
  const std::string million(1000000, '[');
  ExpectNormalizeRejects(million, static_cast<size_t>(kMaxJsonDepth), "nesting deeper than");
  BOOST_TEST((ScanJsonValue(million, 0, false).status == JsonScanStatus::kInvalid));
}

BOOST_AUTO_TEST_CASE(python_json_string_matches_python) {
  struct Case {
    std::string utf8;
    std::string python;  // json.dumps(utf8.decode())
  };
  const std::vector<Case> cases = {
      {"", "\"\""},
      {"plain", "\"plain\""},
      {"\"q\" \\ /", "\"\\\"q\\\" \\\\ /\""},
      {"\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\""},
      {std::string("\x00\x01\x1f\x7f", 4), "\"\\u0000\\u0001\\u001f\\u007f\""},
      {"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "\"caf\\u00e9 \\u2713 \\ud83d\\ude00\""},
      {"\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", "\"\\uffff\\ud800\\udc00\\udbff\\udfff\""},
      {"\xc2\x80\xdf\xbf\xe0\xa0\x80", "\"\\u0080\\u07ff\\u0800\""},
      {"unicode_\xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80", "\"unicode_\\u00e9\\u2713\\ud83d\\ude00\""},
  };
  for (const Case& c : cases) {
    BOOST_TEST(PythonJsonString(c.utf8) == c.python);
    BOOST_TEST(DecodeJsonString(c.python) == c.utf8);
    BOOST_TEST(NormalizeJson(c.python) == c.python);
  }
  std::string out = "prefix";
  AppendPythonJsonString("\xc3\xa9", &out);
  BOOST_TEST(out == "prefix\"\\u00e9\"");
  BOOST_CHECK_THROW(AppendPythonJsonString("ok\xff", &out), InvalidArgumentError);
  BOOST_TEST(out == "prefix\"\\u00e9\"");  // untouched on error
}

BOOST_AUTO_TEST_CASE(every_code_point_round_trips) {
  // All of Unicode but the surrogates, in one string: encoding is
  // ASCII-only, decodes back to the same bytes, and is what NormalizeJson
  // makes of the raw UTF-8.
  std::string utf8;
  for (uint32_t cp = 0; cp <= 0x10ffff; ++cp) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (cp < 0x80) {
      utf8.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      utf8.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      utf8.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      utf8.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      utf8.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      utf8.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      utf8.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      utf8.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      utf8.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      utf8.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  const std::string encoded = PythonJsonString(utf8);
  bool ascii_printable = true;
  for (char c : encoded) ascii_printable = ascii_printable && c >= 0x20 && c <= 0x7e;
  BOOST_TEST(ascii_printable);
  BOOST_TEST(DecodeJsonString(encoded) == utf8);
  std::string raw_token = "\"";
  for (char c : utf8) {
    // NormalizeJson needs a valid token: escape what JSON forbids raw.
    if (c == '"' || c == '\\') {
      raw_token += '\\';
      raw_token += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      raw_token += "\\u00";
      raw_token += "0123456789abcdef"[(c >> 4) & 0xf];
      raw_token += "0123456789abcdef"[c & 0xf];
    } else {
      raw_token += c;
    }
  }
  raw_token += '"';
  BOOST_TEST(NormalizeJson(raw_token) == encoded);
  BOOST_TEST(NormalizeJson(encoded) == encoded);
  // Spot checks against Python's output.
  BOOST_TEST(encoded.substr(0, 7) == "\"\\u0000");
  BOOST_TEST(encoded.find("\\ud83d\\ude00") != std::string::npos);
  BOOST_TEST(encoded.substr(encoded.size() - 13) == "\\udbff\\udfff\"");
}

BOOST_AUTO_TEST_CASE(decode_json_string_combines_pairs_and_unescapes) {
  BOOST_TEST(DecodeJsonString("\"\\ud83d\\ude00\"") == "\xf0\x9f\x98\x80");
  BOOST_TEST(DecodeJsonString("\"\\uD83D\\uDE00\"") == "\xf0\x9f\x98\x80");
  BOOST_TEST(DecodeJsonString("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"") == "\"\\/\b\f\n\r\t");
  BOOST_TEST(DecodeJsonString("\"\\u0000\"") == std::string(1, '\0'));
  BOOST_TEST(DecodeJsonString("\"\xc3\xa9\\u00e9\"") == "\xc3\xa9\xc3\xa9");
  BOOST_TEST(DecodeJsonString("\"\x7f\"") == "\x7f");
  BOOST_TEST(DecodeJsonString("\"42\"") == "42");
}

BOOST_AUTO_TEST_CASE(decode_json_string_rejects_lone_surrogates) {
  ExpectInvalid([] { DecodeJsonString("\"\\ud83d\""); }, 1, "lone surrogate \\ud83d", "hi");
  ExpectInvalid([] { DecodeJsonString("\"ab\\ude00\""); }, 3, "lone surrogate \\ude00", "lo");
  ExpectInvalid([] { DecodeJsonString("\"\\ud83dx\""); }, 1, "lone surrogate", "hi+x");
  ExpectInvalid([] { DecodeJsonString("\"\\ud83d\\n\""); }, 1, "lone surrogate", "hi+\\n");
  ExpectInvalid([] { DecodeJsonString("\"\\ud83d\\u0041\""); }, 1, "lone surrogate", "hi+A");
  ExpectInvalid([] { DecodeJsonString("\"\\ud83d\\ud83d\""); }, 1, "lone surrogate", "hi+hi");
  ExpectInvalid([] { DecodeJsonString("\"\\ud83d\\ude0"); }, 12, "unexpected end", "cut");
}

BOOST_AUTO_TEST_CASE(decode_json_string_rejects_bad_tokens) {
  ExpectInvalid([] { DecodeJsonString(""); }, 0, "unexpected end", "empty");
  ExpectInvalid([] { DecodeJsonString("abc"); }, 0, "expected a string", "abc");
  ExpectInvalid([] { DecodeJsonString("\"abc"); }, 4, "unexpected end", "open");
  ExpectInvalid([] { DecodeJsonString("\"abc\" "); }, 5, "after the closing quote", "trail");
  ExpectInvalid([] { DecodeJsonString("\"a\tb\""); }, 2, "control character 0x09", "tab");
  ExpectInvalid([] { DecodeJsonString("\"\\a\""); }, 1, "invalid escape \\a", "esc");
  ExpectInvalid([] { DecodeJsonString("\"\\u00g0\""); }, 5, "expected 4 hex digits", "hex");
}

BOOST_AUTO_TEST_CASE(scan_reports_truncation_for_every_prefix) {
  const std::string value =
      "[{\"k\": \"\\u00e9\xc3\xa9\xf0\x9f\x98\x80\", \"n\": -12.5e+3}, NaN, -Infinity, true, "
      "false, null, 18446744073709551617, [], {}]";
  const JsonScanResult whole = ScanJsonValue(value + " tail", 0, false);
  BOOST_TEST((whole.status == JsonScanStatus::kOk));
  BOOST_TEST(whole.pos == value.size());
  for (size_t n = 0; n < value.size(); ++n) {
    for (bool complete : {false, true}) {
      const JsonScanResult r = ScanJsonValue(std::string_view(value).substr(0, n), 0, complete);
      BOOST_TEST_INFO("prefix " << n << " complete " << complete);
      BOOST_TEST((r.status == JsonScanStatus::kTruncated));
      BOOST_TEST(r.pos == n);
    }
  }
  // A number at the very end is complete only when the input is.
  BOOST_TEST((ScanJsonValue("123", 0, true).status == JsonScanStatus::kOk));
  BOOST_TEST((ScanJsonValue("123", 0, false).status == JsonScanStatus::kTruncated));
  BOOST_TEST((ScanJsonValue("x123", 1, true).pos == 4u));
  // Strings too, and a string's decoded text is available.
  std::string decoded;
  const std::string token = "\"a\\u00e9\\ud83d\\ude00\"";
  for (size_t n = 0; n < token.size(); ++n) {
    BOOST_TEST(
        (ScanJsonString(token.substr(0, n), 0, &decoded).status == JsonScanStatus::kTruncated));
  }
  const JsonScanResult r = ScanJsonString(token + ": 1", 0, &decoded);
  BOOST_TEST((r.status == JsonScanStatus::kOk));
  BOOST_TEST(r.pos == token.size());
  BOOST_TEST(decoded == "a\xc3\xa9\xf0\x9f\x98\x80");
}

BOOST_AUTO_TEST_CASE(random_mutations_never_crash) {
  // Byte flips, insertions and cuts of real meta_data: each result is either
  // rejected with InvalidArgumentError or normalized to a fixed point.
  std::vector<std::string> seeds;
  for (const std::string& path : FixtureGmetaFiles()) {
    ReadGmeta(path, [&](GmetaEntry&& e) { seeds.push_back(e.meta_data); });
  }
  BOOST_TEST_REQUIRE(!seeds.empty());
  const std::string alphabet =
      "[]{}\",:\\/u0123456789eE+-.NaIfinitytruefalsenull \x7f\x80\xc3\xe2\xf0\xff";
  std::mt19937 rng(20240521);
  size_t accepted = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string text = seeds[rng() % seeds.size()];
    test::MutateText(&text, alphabet, rng);
    try {
      const std::string out = NormalizeJson(text);
      BOOST_TEST(NormalizeJson(out) == out);
      ++accepted;
    } catch (const InvalidArgumentError&) {
    }
    (void)ScanJsonValue(text, 0, false);
  }
  BOOST_TEST(accepted > 0u);
}

BOOST_AUTO_TEST_CASE(object_writer_spaces_as_json_dumps_and_breaks_only_where_asked) {
  std::string out = "x";
  JsonObjectWriter w(&out);
  w.String("s", "caf\xc3\xa9 \"q\"").Number("n", -3).Break().Bool("t", true).Null("z");
  JsonObjectWriter(&w.Break().Key("o")).Number("u", uint64_t{18446744073709551615u}).Close();
  w.Key("raw") += "[1, 2]";
  w.Close();
  BOOST_TEST(out ==
             "x{\"s\": \"caf\\u00e9 \\\"q\\\"\", \"n\": -3,\n \"t\": true, \"z\": null,\n"
             " \"o\": {\"u\": 18446744073709551615}, \"raw\": [1, 2]}");
  BOOST_CHECK_NO_THROW(NormalizeJson(out.substr(1)));

  std::string first;
  JsonObjectWriter(&first).Break().Number("a", 1).Close();
  BOOST_TEST(first == "{\n \"a\": 1}");
  std::string empty;
  JsonObjectWriter(&empty).Close();
  BOOST_TEST(empty == "{}");

  std::string bad;
  JsonObjectWriter b(&bad);
  BOOST_CHECK_THROW(b.String("k", "\xff"), InvalidArgumentError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::engine
