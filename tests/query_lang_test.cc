// The query language (engine/query: expr.h, query_eval.h, query_plan.h,
// query_exec.h, value_order.h; docs/query.md): the order of values against
// hand-sorted lists, the grammar against hand-written parses and errors
// (each naming its byte, with a caret), the meaning of every operator
// against a table of videos and hand-computed answers, the same answers
// with and without meta indexes, through a partitioned snapshot, and from
// an index of the first key form before and after it is rebuilt; a random
// differential test of the index against the scan; ranges that read only
// the entries they need.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/dataset_view.h"
#include "engine/partition/partitions.h"
#include "engine/query/expr.h"
#include "engine/query/index_reader.h"
#include "engine/query/meta_value.h"
#include "engine/query/query_exec.h"
#include "engine/query/value_order.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/query.h"
#include "index/partition_root.h"
#include "index/query_keys.h"
#include "support/test_util.h"

namespace gulpdb {
namespace {

using engine::OrderedMetaValue;
using test::FakeJpeg;
using test::TempDir;

std::string Describe(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : ",") + id;
  return "[" + out + "]";
}

// The videos of the meaning table: id -> (frames, first meta entry).
struct TableVideo {
  std::string id;
  int frames;
  std::string meta_data;
};
const std::vector<TableVideo>& Table() {
  static const std::vector<TableVideo> videos = {
      {"v1", 2,
       R"([{"label": "cat", "n": 3, "s": "3", "f": true, "z": null, "l": [1, 2], "id": "x"}])"},
      {"v2", 4, R"([{"label": "dog", "n": 3.0, "s": "abc", "f": false}, {"label": "cat"}])"},
      {"v3", 1, R"([{"label": "\u00e9", "n": -1.5, "s": "\u0000", "z": 1}])"},
      {"v4", 3, R"([{"n": NaN, "s": 3, "label": "d"}])"},
      {"v5", 5, R"([{"n": 1e400, "label": "Cat", "s": "30"}])"},
      {"v6", 1, R"([{"n": 1e100000000000000000000, "s": "3.0"}])"},
      {"v7", 2, R"([{}])"},
      {"v8", 1, R"([])"},
      {"v9", 6, R"([{"n": -Infinity, "label": "cat", "s": "3", "l": [1.0, 2]}])"},
  };
  return videos;
}

std::unique_ptr<Dataset> TableDataset(const std::string& dir,
                                      const std::vector<std::string>& keys) {
  auto ds = Dataset::Create(dir);
  {
    auto w = ds->NewWriter();
    uint32_t seed = 1;
    for (const TableVideo& v : Table()) {
      std::vector<std::string> frames;
      for (int i = 0; i < v.frames; ++i) frames.push_back(FakeJpeg(40, seed++));
      w->AppendEntry(v.id, test::Views(frames), v.meta_data);
    }
    w->Commit();
  }
  for (const std::string& k : keys) BOOST_REQUIRE(ds->CreateMetaIndex(k));
  return ds;
}

// (expression, the ids it selects), worked out by hand from Table().
const std::vector<std::pair<std::string, std::vector<std::string>>>& Answers() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> answers = {
      {"n = 3", {"v1", "v2"}},                     // 3.0 is 3
      {"s = 3", {"v1", "v4", "v9"}},               // "3" is the text of 3
      {"s = '3'", {"v1", "v9"}},                   // a string only matches strings
      {"s = 3.0", {"v4", "v6"}},                   // 3 is 3.0; "3.0" the text as written
      {"n != 3", {"v3", "v4", "v5", "v6", "v9"}},  // numbers other than 3, NaN too
      {"s != '3'", {"v2", "v3", "v5", "v6"}},      // strings other than "3"
      {"not n = 3", {"v3", "v4", "v5", "v6", "v7", "v8", "v9"}},
      {"n > 0", {"v1", "v2", "v5"}},  // NaN and text numbers: in no range
      {"n >= 3", {"v1", "v2", "v5"}},
      {"n < 0", {"v3", "v9"}},
      {"n <= -1.5", {"v3", "v9"}},
      {"n < -Infinity", {}},
      {"n <= -Infinity", {"v9"}},
      {"n > 1e399", {"v5"}},
      {"n < 1e401 and n > 1e399", {"v5"}},
      {"not n > 0", {"v3", "v4", "v6", "v7", "v8", "v9"}},
      {"has z", {"v1", "v3"}},  // null counts
      {"z = null", {"v1"}},
      {"z = 'null'", {}},
      {"label >= 'c' and label < 'd'", {"v1", "v9"}},  // bytewise: "Cat" < "c", "d" not < "d"
      {"label > 'z'", {"v3"}},                         // é is 0xc3 0xa9
      {"label < 'a'", {"v5"}},
      {"label = 'CAT'", {}},
      {"label in ('cat', 'dog')", {"v1", "v2", "v9"}},  // the first meta entry only
      {"label in ()", {}},
      {"not label in ()", {"v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"}},
      {"f = true", {"v1"}},
      {"f != true", {"v2"}},
      {"f = 'true'", {}},
      {"l = [1, 2]", {"v1", "v9"}},  // 1.0 is 1
      {"l != [1, 2]", {}},
      {"s > '2' and s < '4'", {"v1", "v5", "v6", "v9"}},  // "3", "30", "3.0"
      {"s = '\\u0000'", {"v3"}},
      {"s < ''", {}},
      {"s >= ''", {"v1", "v2", "v3", "v5", "v6", "v9"}},
      {"frames >= 4", {"v2", "v5", "v9"}},
      {"frames = 1 or frames = 6", {"v3", "v6", "v8", "v9"}},
      {"chunk = 0", {"v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"}},
      {"chunk > 0", {}},
      {"id in ('v1', 'v3', 'v10')", {"v1", "v3"}},
      {"id > 'v5'", {"v6", "v7", "v8", "v9"}},
      {"id <= 'v2'", {"v1", "v2"}},
      {"id = 'x'", {}},  // the built-in id wins
      {"meta.id = 'x'", {"v1"}},
      {"`id` = 'x'", {"v1"}},
      {"meta[\"id\"] = 'x'", {"v1"}},
      {"has meta.id", {"v1"}},
      {"has id", {"v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"}},
      {"n = 1e100000000000000000000", {"v6"}},
      {"n = 10e99999999999999999999", {}},  // kept as text: only the same text
      {"n = NaN", {"v4"}},
      {"(label = 'cat' or s = 3) and not n < 0", {"v1", "v4"}},
      {"label = 'cat' or label = 'dog' and n = 3", {"v1", "v2", "v9"}},  // and binds tighter
      {"(label = 'cat' or label = 'dog') and n = 3", {"v1", "v2"}},
      {"NOT label = 'cat' AND has label", {"v2", "v3", "v4", "v5"}},
      {"not not has f", {"v1", "v2"}},
  };
  return answers;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

engine::QueryRun Run(const Dataset& ds, std::string_view expression) {
  engine::IndexReader reader(engine::IndexOf(ds));
  return engine::RunQuery(reader, engine::ParseQueryExpr(expression));
}

BOOST_AUTO_TEST_SUITE(query_lang_test)

BOOST_AUTO_TEST_CASE(values_order_numbers_by_value_strings_by_bytes_and_types_apart) {
  // Strictly ascending, each group one type.
  const std::vector<std::string> ascending = {
      "null", "false", "true",
      // numbers, exact: no rounding to double
      "-Infinity", "-1e400", "-12345678901234567890123", "-10", "-2", "-1.51", "-1.5", "-1", "-0.5",
      "-1e-400", "0", "1e-400", "0.1", "0.10000000000000001", "0.5", "1", "1.5", "1.51", "2", "10",
      "12345678901234567890123", "12345678901234567890124", "1e400", "Infinity",
      // strings by UTF-8 bytes
      R"("")", R"("\u0000")", R"("\u0000\u0000")", R"("\u0001")", R"(" ")", R"("A")", R"("Z")",
      R"("a")", R"("a\u0000")", R"("ab")", R"("b")", R"("\u00e9")", R"("\ud7ff")", R"("\ud800")",
      R"("\udfff")", R"("\ue000")", R"("\ud83d\ude00")", R"("\udbff\udfff")"};
  for (size_t i = 0; i + 1 < ascending.size(); ++i) {
    BOOST_TEST_CONTEXT(ascending[i] << " < " << ascending[i + 1]) {
      const bool less = OrderedMetaValue(ascending[i]) < OrderedMetaValue(ascending[i + 1]);
      BOOST_TEST(less);
    }
  }
  // Equal values, one form; the same equality as the canonical form's.
  const std::vector<std::vector<std::string>> equal = {
      {"1", "1.0", "1e0", "10E-1", "0.1e1"},
      {"0", "-0", "0.0", "-0.0e5"},
      {"-1.5", "-15e-1", "-1.50"},
      {R"("é")", R"("\u00e9")"},
      {R"("\ud83d\ude00")", "\"\xf0\x9f\x98\x80\""},
      {"[1, {\"a\": 2, \"b\": []}]", "[1.0,{\"b\":[],\"a\":2e0}]"},
      {"NaN"},
      {"1e100000000000000000000"},
  };
  for (const auto& group : equal) {
    for (const std::string& v : group) {
      BOOST_TEST_CONTEXT(v << " = " << group[0]) {
        BOOST_TEST(OrderedMetaValue(v) == OrderedMetaValue(group[0]));
        BOOST_TEST(engine::CanonicalMetaValue(v) == engine::CanonicalMetaValue(group[0]));
        BOOST_TEST(OrderedMetaValue(" \n" + v + "\t") == OrderedMetaValue(v));
      }
    }
  }
  BOOST_TEST(OrderedMetaValue("1e100000000000000000000") !=
             OrderedMetaValue("10e99999999999999999999"));
  BOOST_TEST(OrderedMetaValue("\"1\"") != OrderedMetaValue("1"));
  BOOST_TEST(OrderedMetaValue("true") != OrderedMetaValue("1"));
  BOOST_TEST(!engine::InOrderedRange(OrderedMetaValue("NaN")));
  BOOST_TEST(!engine::InOrderedRange(OrderedMetaValue("1e100000000000000000000")));
  BOOST_TEST(engine::InOrderedRange(OrderedMetaValue("-Infinity")));
  const bool lists_first = OrderedMetaValue("[1]") < OrderedMetaValue("{}");
  BOOST_TEST(lists_first);
  BOOST_TEST(engine::OrderedInteger(16) == OrderedMetaValue("16"));
  BOOST_TEST(engine::OrderedInteger(0) == OrderedMetaValue("0"));
  BOOST_TEST(engine::OrderedInteger(1000) == OrderedMetaValue("1e3"));
  BOOST_TEST(engine::OrderedString(std::string("a\0b", 3)) == OrderedMetaValue(R"("a\u0000b")"));
  for (const std::string bad : {"", "01", "[1,", "'a'", "\"\\q\"", "1 2", "nan"}) {
    BOOST_CHECK_THROW(OrderedMetaValue(bad), InvalidArgumentError);
  }
}

BOOST_AUTO_TEST_CASE(the_parser_reads_the_grammar_and_prints_it_back) {
  // (text, how it prints): precedence, keywords in any case, quoted keys,
  // escapes, values as JSON.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"frames >= 16 and label in ('a', 'b')", "frames >= 16 and label in (\"a\", \"b\")"},
      {"a = 1 or b = 2 and not c = 3", "a = 1 or b = 2 and not c = 3"},
      {"(a = 1 or b = 2) and c = 3", "(a = 1 or b = 2) and c = 3"},
      {"NOT (a=1 OR b=2)", "not (a = 1 or b = 2)"},
      {"not not has x", "not not has x"},
      {"((((a=1))))", "a = 1"},
      {"a=1 and (b=2 and c=3)", "a = 1 and b = 2 and c = 3"},
      {"meta.id = 'x'", "meta[\"id\"] = \"x\""},
      {"meta.frames > 2", "meta[\"frames\"] > 2"},
      {"`label name` = 1", "meta[\"label name\"] = 1"},
      {"`a``b` = 1", "meta[\"a`b\"] = 1"},
      {"meta['a.b'] <= 'z'", "meta[\"a.b\"] <= \"z\""},
      {"meta = 1", "meta[\"meta\"] = 1"},
      {"x = 'it\\'s'", "x = \"it's\""},
      {"x = \"say \\\"hi\\\"\"", "x = \"say \\\"hi\\\"\""},
      {"x = '\\u00e9' or x = '\xc3\xa9'", "x = \"\\u00e9\" or x = \"\\u00e9\""},
      {"x = 'tab\there'", "x = \"tab\\there\""},
      {"x in ()", "x in ()"},
      {"x in (1, -2.5e3, true, null, NaN, -Infinity, [1, 2], {\"a\": 1})",
       "x in (1, -2.5e3, true, null, NaN, -Infinity, [1, 2], {\"a\": 1})"},
      {"x != 'a'", "x != \"a\""},
      {"_a9 < 0", "_a9 < 0"},
      {"NaN = 1", "NaN = 1"},  // a key: NaN is a value only where a value stands
      {"id = 3 and chunk != 0 and frames < Infinity",
       "id = 3 and chunk != 0 and frames < Infinity"},
  };
  for (const auto& [text, printed] : cases) {
    BOOST_TEST_CONTEXT(text) {
      const Query q = Query::Parse(text);
      BOOST_TEST(q.ToString() == printed);
      BOOST_TEST(Query::Parse(q.ToString()).ToString() == printed);
    }
  }
  const engine::QueryExpr e = engine::ParseQueryExpr("a = 1 or b = 2 and c = 3");
  BOOST_TEST(static_cast<int>(e.kind) == static_cast<int>(engine::QueryExpr::Kind::kOr));
  BOOST_TEST(e.children.size() == 2u);
  BOOST_TEST(static_cast<int>(e.children[1].kind) ==
             static_cast<int>(engine::QueryExpr::Kind::kAnd));
  BOOST_TEST(Query::Parse("meta.x = 1 and y = 2 or has meta.x").MetaKeys() ==
                 (std::vector<std::string>{"x", "y"}),
             boost::test_tools::per_element());
  BOOST_TEST(Query::Parse("id = 'a' and frames > 1").MetaKeys().empty());
  BOOST_TEST(Query().MatchesEverything());
  BOOST_TEST(Query::AllOf({}).MatchesEverything());
  BOOST_TEST(
      Query::AllOf({Query::Parse("a = 1"), Query(), Query::Parse("b = 2 or c = 3")}).ToString() ==
      "a = 1 and (b = 2 or c = 3)");
}

BOOST_AUTO_TEST_CASE(a_bad_query_names_the_byte_and_shows_a_caret_under_it) {
  struct Bad {
    std::string text;
    size_t byte;
    std::string says;
  };
  const std::vector<Bad> cases = {
      {"", 0, "the query is empty"},
      {"   ", 3, "the query is empty"},
      {"frames >= and x", 10, "expected a value"},
      {"label = cat", 8, "quote a string value"},
      {"a = 1 and", 9, "expected a key"},
      {"(a = 1", 6, "expected ')'"},
      {"a = 1)", 5, "expected 'and', 'or' or the end"},
      {"a = 1 b = 2", 6, "expected 'and', 'or' or the end"},
      {"a == 1", 2, "'==' is written '='"},
      {"a <> 1", 2, "'<>' is written '!='"},
      {"a ~ 1", 2, "expected an operator"},
      {"a", 1, "expected an operator"},
      {"a = 'x", 4, "unterminated string"},
      {"a = 01", 5, "a number runs into"},
      {"a = 1.", 6, "expected a digit after '.'"},
      {"a = .5", 4, "expected a value"},
      {"a = +1", 4, "expected a value"},
      {"a = TRUE", 4, "write true"},
      {"a = 1abc", 5, "a number runs into"},
      {"a.b = 1", 1, "must be quoted"},
      {"and = 1", 0, "is a keyword"},
      {"True = 1", 0, "is a keyword"},
      {"x != null", 5, "'!= null' never holds"},
      {"x > true", 4, "compares numbers or strings"},
      {"x >= [1]", 5, "compares numbers or strings"},
      {"x > NaN", 4, "in no range"},
      {"x < 1e100000000000000000000", 4, "in no range"},
      {"frames = 'a'", 9, "frames is a number"},
      {"chunk in (1, 'a')", 13, "chunk is a number"},
      {"id < 3", 5, "id is a string"},
      {"id != true", 6, "id is a string"},
      {"a not in (1)", 2, "write 'not KEY in (...)'"},
      {"a in 1", 5, "expected '(' after 'in'"},
      {"a in (1 2)", 8, "expected ',' or ')'"},
      {"a in (1,)", 8, "expected a value"},
      {"x = 'a\\qb'", 6, "invalid escape"},
      {"x = 'a\\u12'", 10, "invalid \\u escape"},
      {"x = \xff", 4, "not valid UTF-8"},
      {"`` = 1", 0, "empty `key`"},
      {"`abc = 1", 0, "unterminated `key`"},
      {"meta. = 1", 5, "expected a name after 'meta.'"},
      {"meta[x] = 1", 5, "expected a quoted key"},
      {"meta['\\ud800'] = 1", 5, "lone surrogate"},
      {"has", 3, "expected a key"},
      {"has 'x'", 4, "expected a key"},
      {"x = [1,", 7, "a JSON list or object"},
      // A NUL after a backslash in a JSON value: named, not copied (it cut the message).
      {std::string("x = [\"\\\0\"]", 11), 6, "a backslash before byte 0x00"},
      {"not", 3, "expected a key"},
  };
  for (const Bad& b : cases) {
    BOOST_TEST_CONTEXT("'" << test::Printable(b.text) << "'") {
      try {
        Query::Parse(b.text);
        BOOST_ERROR("parsed");
      } catch (const QuerySyntaxError& e) {
        const std::string m = e.what();
        BOOST_TEST(test::Contains(m, "byte " + std::to_string(b.byte) + ": "), m);
        BOOST_TEST(test::Contains(m, b.says), m);
        // The last line is the caret under the byte (the text is ASCII and
        // short here but for one invalid byte shown as \xff).
        const std::string caret = m.substr(m.rfind('\n') + 1);
        const size_t shown_before = b.text.find('\xff') < b.byte ? 3 : 0;
        BOOST_TEST(caret == std::string(2 + b.byte + shown_before, ' ') + "^", m);
      }
    }
  }
  // Hostile nesting is refused, not a stack overflow.
  const std::string deep = std::string(500, '(') + "a = 1" + std::string(500, ')');
  BOOST_CHECK_EXCEPTION(Query::Parse(deep), QuerySyntaxError, [](const QuerySyntaxError& e) {
    return test::Contains(e.what(), "nested more than 100 levels");
  });
  std::string nots;
  for (int i = 0; i < 500; ++i) nots += "not ";
  BOOST_CHECK_THROW(Query::Parse(nots + "a = 1"), QuerySyntaxError);
  // A long query shows a window around the byte.
  const std::string long_text = "a = 1 and " + std::string(300, 'b') + " = 2 and ) ";
  try {
    Query::Parse(long_text);
    BOOST_ERROR("parsed");
  } catch (const QuerySyntaxError& e) {
    const std::string m = e.what();
    BOOST_TEST(test::Contains(m, "byte 319"), m);
    BOOST_TEST(test::Contains(m, "  ..."), m);
    BOOST_TEST(m.size() < 400u, m);
  }
  // It is an InvalidArgumentError (Python: ValueError).
  BOOST_CHECK_THROW(Query::Parse("x >"), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(where_arguments_keep_their_old_meaning_when_they_are_not_queries) {
  // (argument, how it reads): a query, or KEY=VALUE as ParseMetaCondition.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"label=pattern testsrc", "label in (\"pattern testsrc\")"},
      {"label=cat", "label in (\"cat\")"},
      {"label=3", "label = 3"},             // a query: 3 or "3", as before
      {"label=\"3\"", "label = \"3\""},     // a query: only "3", as before
      {"flag=TRUE", "flag in (\"TRUE\")"},  // TRUE is not a value: the string, as before
      {"x=01", "x in (\"01\")"},
      {"x=[1, 2]", "x = [1, 2]"},
      {"x=1,2", "x in (\"1,2\")"},
      {"a.b=x", "meta[\"a.b\"] in (\"x\")"},
      {"label=", "label in (\"\")"},
      {"label==x", "label in (\"=x\")"},
      {"name=O'Brien", "name in (\"O'Brien\")"},
  };
  for (const auto& [argument, reads] : cases) {
    BOOST_TEST_CONTEXT(argument) { BOOST_TEST(Query::ParseWhere(argument).ToString() == reads); }
  }
  // Text that is neither stays an error naming the byte.
  BOOST_CHECK_THROW(Query::ParseWhere("label = cat"), QuerySyntaxError);
  BOOST_CHECK_THROW(Query::ParseWhere("label name=x"), QuerySyntaxError);  // quote such keys
  BOOST_CHECK_THROW(Query::ParseWhere("=cat"), QuerySyntaxError);
  BOOST_CHECK_THROW(Query::ParseWhere("frames >= 3 and label=cat"), QuerySyntaxError);
}

BOOST_AUTO_TEST_CASE(every_operator_means_what_the_table_says_with_and_without_indexes) {
  TempDir tmp;
  const std::vector<std::string> keys = {"label", "n", "s", "f", "z", "l", "id"};
  auto plain = TableDataset(tmp / "plain", {});
  auto indexed = TableDataset(tmp / "indexed", keys);
  for (const auto& [expression, expected] : Answers()) {
    BOOST_TEST_CONTEXT(expression) {
      const std::vector<std::string> want = Sorted(expected);
      BOOST_TEST(Describe(Sorted(plain->Select(expression))) == Describe(want));
      BOOST_TEST(Describe(Sorted(indexed->Select(expression))) == Describe(want));
      // In (chunk, insertion) order, as Ids().
      const std::vector<std::string> got = indexed->Select(expression);
      std::vector<std::string> in_order;
      for (const std::string& id : indexed->Ids()) {
        if (std::find(got.begin(), got.end(), id) != got.end()) in_order.push_back(id);
      }
      BOOST_TEST(got == in_order, boost::test_tools::per_element());
    }
  }
  // The index answered what it can: no record read for an indexed range.
  BOOST_TEST(Run(*indexed, "n > 0").records == 0u);
  BOOST_TEST(Run(*indexed, "n > 0").plan == "meta[2 ranges]");
  BOOST_TEST(Run(*plain, "n > 0").plan == "scan");
  BOOST_TEST(Run(*indexed, "label = 'cat' and frames > 3").plan == "and(meta[1 ranges])?");
  BOOST_TEST(Run(*indexed, "not label = 'cat'").plan == "scan");
  BOOST_TEST(Run(*indexed, "label = 'x' or frames > 1").plan == "scan");
  BOOST_TEST(Run(*indexed, "label = 'x' or n < 0").plan == "or(meta[1 ranges], meta[2 ranges])");
  BOOST_TEST(Run(*indexed, "id in ('v1', 'v2')").plan == "ids[2]");
  BOOST_TEST(Run(*indexed, "id >= 'v5'").plan == "id range");
  const CheckReport report = Check(indexed->dir());
  for (const CheckProblem& p : report.problems) BOOST_ERROR(p.where + ": " + p.what);
}

// Random metas of every type on a few keys, and random expressions over
// them: the answer with every key indexed equals the answer by scan.
std::string RandomValue(std::mt19937& rng) {
  static const std::vector<std::string> values = {"0",
                                                  "1",
                                                  "1.0",
                                                  "-1",
                                                  "2.5",
                                                  "10",
                                                  "1e3",
                                                  "-0.5",
                                                  "0.1",
                                                  "0.10000000000000001",
                                                  "123456789012345678901234567890",
                                                  "NaN",
                                                  "Infinity",
                                                  "-Infinity",
                                                  "1e100000000000000000000",
                                                  "\"\"",
                                                  "\"a\"",
                                                  "\"b\"",
                                                  "\"ab\"",
                                                  "\"1\"",
                                                  "\"1.0\"",
                                                  "\"true\"",
                                                  "\"\\u00e9\"",
                                                  "\"\\ud800\"",
                                                  "\"\\u0000x\"",
                                                  "true",
                                                  "false",
                                                  "null",
                                                  "[1, 2]",
                                                  "[]",
                                                  "{\"a\": 1}",
                                                  "\"" + std::string(450, 'q') + "\"",
                                                  "\"" + std::string(449, 'q') + "r\"",
                                                  "1" + std::string(420, '7')};
  return values[rng() % values.size()];
}

std::string RandomLiteral(std::mt19937& rng, bool ordered) {
  static const std::vector<std::string> any = {"0",
                                               "1",
                                               "1.0",
                                               "-1",
                                               "2.5",
                                               "1e3",
                                               "0.1",
                                               "NaN",
                                               "'a'",
                                               "'b'",
                                               "''",
                                               "'1'",
                                               "'true'",
                                               "true",
                                               "false",
                                               "null",
                                               "[1, 2]",
                                               "{\"a\": 1}",
                                               "'\\u00e9'",
                                               "-Infinity",
                                               "Infinity",
                                               "'" + std::string(450, 'q') + "'",
                                               "1" + std::string(420, '7')};
  static const std::vector<std::string> orderable = {"0",
                                                     "1",
                                                     "-1",
                                                     "2.5",
                                                     "1e3",
                                                     "0.1",
                                                     "0.10000000000000001",
                                                     "'a'",
                                                     "'ab'",
                                                     "''",
                                                     "'1'",
                                                     "'\\u00e9'",
                                                     "-Infinity",
                                                     "Infinity",
                                                     "'" + std::string(450, 'q') + "'",
                                                     "'" + std::string(449, 'q') + "r'",
                                                     "1" + std::string(420, '7')};
  const auto& from = ordered ? orderable : any;
  return from[rng() % from.size()];
}

std::string RandomExpression(std::mt19937& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 2 ? 4 : 7));
  const std::string key = "k" + std::to_string(rng() % 3);
  switch (kind) {
    case 0: {
      static const char* const ops[] = {"<", "<=", ">", ">="};
      return key + " " + ops[rng() % 4] + " " + RandomLiteral(rng, true);
    }
    case 1: {
      std::string lit = RandomLiteral(rng, false);
      if (lit == "null") lit = "1";
      return key + (rng() % 2 ? " = " : " != ") + lit;
    }
    case 2: {
      std::string list;
      const size_t n = rng() % 4;
      for (size_t i = 0; i < n; ++i) list += (i ? ", " : "") + RandomLiteral(rng, false);
      return key + " in (" + list + ")";
    }
    case 3:
      return "has " + key;
    case 4:
      return "not " + RandomExpression(rng, depth + 1);
    case 5:
      return "(" + RandomExpression(rng, depth + 1) + " and " + RandomExpression(rng, depth + 1) +
             ")";
    default:
      return "(" + RandomExpression(rng, depth + 1) + " or " + RandomExpression(rng, depth + 1) +
             ")";
  }
}

BOOST_AUTO_TEST_CASE(the_index_and_the_scan_agree_on_random_queries) {
  TempDir tmp;
  std::mt19937 rng(20240611);
  auto plain = Dataset::Create(tmp / "plain");
  auto indexed = Dataset::Create(tmp / "indexed");
  for (const std::string k : {"k0", "k1", "k2"}) BOOST_REQUIRE(indexed->CreateMetaIndex(k));
  for (auto* ds : {plain.get(), indexed.get()}) {
    std::mt19937 same(7);
    auto w = ds->NewWriter();
    for (int i = 0; i < 300; ++i) {
      std::string entry;
      for (int k = 0; k < 3; ++k) {
        if (same() % 4 == 0) continue;  // the key is missing
        entry += std::string(entry.empty() ? "" : ", ") + "\"k" + std::to_string(k) +
                 "\": " + RandomValue(same);
      }
      const std::vector<std::string> f = {FakeJpeg(30, static_cast<uint32_t>(i))};
      w->Append("v" + std::to_string(i), test::Views(f), "{" + entry + "}");
    }
    w->Commit();
  }
  size_t indexed_plans = 0;
  for (int round = 0; round < 400; ++round) {
    const std::string expression = RandomExpression(rng, 0);
    BOOST_TEST_CONTEXT(expression) {
      std::vector<std::string> want;
      try {
        want = plain->Select(expression);
      } catch (const QuerySyntaxError&) {
        continue;  // e.g. `!= null` or a range on NaN: refused for both
      }
      BOOST_TEST(indexed->Select(expression) == want, boost::test_tools::per_element());
      if (Run(*indexed, expression).plan != "scan") ++indexed_plans;
    }
  }
  BOOST_TEST(indexed_plans > 100u);  // the index was used, not just the scan
  BOOST_TEST(Check(indexed->dir()).healthy());
}

BOOST_AUTO_TEST_CASE(a_range_reads_only_its_entries_and_an_and_narrows_by_the_smallest_part) {
  TempDir tmp;
  auto ds = Dataset::Create(tmp / "d");
  {
    auto w = ds->NewWriter();
    for (int i = 0; i < 2000; ++i) {
      const std::vector<std::string> f = {FakeJpeg(30, static_cast<uint32_t>(i))};
      w->Append("v" + std::to_string(i), test::Views(f),
                "{\"duration\": " + std::to_string(i) + ".5, \"label\": \"l" +
                    std::to_string(i % 10) + "\", \"other\": " + std::to_string(i % 2) + "}");
    }
    w->Commit();
  }
  BOOST_REQUIRE(ds->CreateMetaIndex("duration"));
  BOOST_REQUIRE(ds->CreateMetaIndex("label"));
  engine::QueryRun r = Run(*ds, "duration >= 1980");
  BOOST_TEST(r.ids.size() == 20u);
  BOOST_TEST(r.entries == 20u);
  BOOST_TEST(r.records == 0u);
  r = Run(*ds, "duration >= 1000 and duration < 1010.5");  // one merged range
  BOOST_TEST(r.ids.size() == 10u);
  BOOST_TEST(r.entries == 10u);
  r = Run(*ds, "duration < 20 and other = 1");  // unindexed part: per candidate
  BOOST_TEST(r.ids.size() == 10u);
  BOOST_TEST(r.records == 20u);
  r = Run(*ds, "label = 'l3' and duration < 100");  // both indexed and small: intersected
  BOOST_TEST(r.ids.size() == 10u);
  BOOST_TEST(r.records == 0u);
  r = Run(*ds, "label = 'l3' and duration > 10");  // not 16 times larger: intersected
  BOOST_TEST(r.ids.size() == 199u);
  BOOST_TEST(r.records == 0u);
  r = Run(*ds, "duration < 5 and label = 'l3'");  // 40 times larger: checked per candidate
  BOOST_TEST(r.ids == std::vector<std::string>{"v3"}, boost::test_tools::per_element());
  BOOST_TEST(r.records == 5u);
  r = Run(*ds, "label in ('l1', 'l2') or duration < 5");
  BOOST_TEST(r.ids.size() == 403u);
  BOOST_TEST(r.records == 0u);
  BOOST_TEST(ds->Select("duration > 1e400").empty());
  BOOST_TEST(ds->Select("duration >= -Infinity").size() == 2000u);
}

BOOST_AUTO_TEST_CASE(an_index_of_the_first_key_form_answers_equality_and_is_rebuilt) {
  TempDir tmp;
  auto ds = TableDataset(tmp / "d", {});
  {
    test::ScopedEnv env;
    env.Set("GULPDB_TEST_META_KEY_FORM", "canonical");
    BOOST_REQUIRE(ds->CreateMetaIndex("label"));
    BOOST_REQUIRE(ds->CreateMetaIndex("n"));
  }
  BOOST_TEST(ds->MetaIndexDetails().size() == 2u);
  for (const MetaIndexInfo& i : ds->MetaIndexDetails()) BOOST_TEST(!i.ordered);
  // The bytes the first form wrote: a 4-byte field number, and keys of
  // field | 0 | length | canonical value | chunk | sequence.
  engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
  {
    const engine::QueryDbHandles dbs = impl.query.Load();
    index::Txn txn = impl.env->BeginRead();
    std::string_view field;
    BOOST_REQUIRE(txn.Get(dbs.meta_fields, "label", &field));
    BOOST_TEST(field.size() == 4u);
    const uint32_t number = index::DecodeMetaField(field).number;
    const VideoInfo v1 = ds->Get("v1");
    std::string key = index::MetaFieldPrefix(number);
    key += std::string("\0\0\x05\"cat\"", 8);
    for (int shift = 24; shift >= 0; shift -= 8)
      key.push_back(static_cast<char>(v1.chunk >> shift));
    for (int shift = 56; shift >= 0; shift -= 8) key.push_back(static_cast<char>(v1.seq >> shift));
    std::string_view id;
    BOOST_REQUIRE(txn.Get(dbs.meta_index, key, &id));
    BOOST_TEST(id == "v1");
  }
  // Equality from the index, ranges by a scan: the same answers.
  BOOST_TEST(Run(*ds, "label = 'cat'").plan == "meta[1 ranges]");
  BOOST_TEST(Run(*ds, "n > 0").plan == "scan");
  for (const auto& [expression, expected] : Answers()) {
    BOOST_TEST_CONTEXT(expression) {
      BOOST_TEST(Describe(Sorted(ds->Select(expression))) == Describe(Sorted(expected)));
    }
  }
  // Writers keep the first form's entries right.
  {
    auto w = ds->NewWriter();
    const std::vector<std::string> f = {FakeJpeg(30, 99)};
    w->Append("w1", test::Views(f), "{\"label\": \"cat\", \"n\": 7}");
    w->Remove("v2");
    w->Commit();
  }
  BOOST_TEST(Check(ds->dir()).healthy());
  BOOST_TEST(Sorted(ds->Select("label = 'cat'")) == (std::vector<std::string>{"v1", "v9", "w1"}),
             boost::test_tools::per_element());
  // Rebuilt in the ordered form, in place: ranges use it.
  BOOST_TEST(ds->CreateMetaIndex("n"));
  BOOST_TEST(!ds->CreateMetaIndex("n"));
  const std::vector<MetaIndexInfo> details = ds->MetaIndexDetails();
  BOOST_TEST(details[0].key == "label");
  BOOST_TEST(!details[0].ordered);
  BOOST_TEST(details[1].ordered);
  BOOST_TEST(Run(*ds, "n > 0").plan == "meta[2 ranges]");
  BOOST_TEST(Sorted(ds->Select("n > 0")) == (std::vector<std::string>{"v1", "v5", "w1"}),
             boost::test_tools::per_element());
  BOOST_TEST(Check(ds->dir()).healthy());
  ds.reset();
  // Another process's view: reopened, the same.
  auto again = Dataset::Open(tmp / "d");
  BOOST_TEST(Sorted(again->Select("n > 0")) == (std::vector<std::string>{"v1", "v5", "w1"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_unknown_key_form_is_refused_as_corruption_not_misread) {
  BOOST_TEST(
      index::DecodeMetaField(index::EncodeMetaField({7, index::MetaKeyForm::kOrdered})).number ==
      7u);
  BOOST_TEST(index::EncodeMetaField({7, index::MetaKeyForm::kCanonical}).size() == 4u);
  BOOST_CHECK_THROW(index::DecodeMetaField(std::string("\0\0\0\x07\x09", 5)), CorruptionError);
  BOOST_CHECK_THROW(index::DecodeMetaField("abc"), CorruptionError);
}

BOOST_AUTO_TEST_CASE(partitioned_snapshots_answer_the_same_in_either_key_form) {
  TempDir tmp;
  auto ds = TableDataset(tmp / "d", {"label", "s"});
  {
    test::ScopedEnv env;
    env.Set("GULPDB_TEST_META_KEY_FORM", "canonical");
    BOOST_REQUIRE(ds->CreateMetaIndex("n"));
  }
  engine::PartitionOptions options;
  options.target_bytes = 16 * 4096;
  const engine::BuildResult built = engine::BuildPartitions(*ds, nullptr, options, tmp / "parts");
  // Through the root's bytes: the ordered fields are listed apart.
  const index::PartitionRoot root = index::DecodePartitionRoot(built.root_bytes, "root");
  std::map<std::string, index::MetaKeyForm> forms;
  for (const index::MetaFieldEntry& f : root.meta_fields) forms[f.name] = f.form;
  BOOST_TEST((forms["label"] == index::MetaKeyForm::kOrdered));
  BOOST_TEST((forms["s"] == index::MetaKeyForm::kOrdered));
  BOOST_TEST((forms["n"] == index::MetaKeyForm::kCanonical));
  auto index = std::make_shared<engine::PartitionedIndex>(
      root, engine::DirectoryFetch(tmp / "parts"), tmp / "parts");
  auto snapshot = engine::OpenOnIndexSource(tmp / "d", OpenOptions{}, index, nullptr);
  for (const auto& [expression, expected] : Answers()) {
    BOOST_TEST_CONTEXT(expression) {
      BOOST_TEST(snapshot->Select(expression) == ds->Select(expression),
                 boost::test_tools::per_element());
      BOOST_TEST(Describe(Sorted(snapshot->Select(expression))) == Describe(Sorted(expected)));
    }
  }
  BOOST_TEST(Run(*snapshot, "s > '2'").plan == "meta[2 ranges]");
  BOOST_TEST(Run(*snapshot, "n > 0").plan == "scan");
  BOOST_TEST(Run(*snapshot, "n = 3").plan == "meta[2 ranges]");
  BOOST_TEST(snapshot->MetaIndexDetails().size() == 3u);
  // A root of the first form only keeps the bytes older versions wrote: no
  // ordered list at all.
  index::PartitionRoot old = root;
  old.meta_fields.erase(std::remove_if(old.meta_fields.begin(), old.meta_fields.end(),
                                       [](const index::MetaFieldEntry& f) {
                                         return f.form == index::MetaKeyForm::kOrdered;
                                       }),
                        old.meta_fields.end());
  const index::PartitionRoot decoded =
      index::DecodePartitionRoot(index::EncodePartitionRoot(old), "old root");
  BOOST_TEST(decoded.meta_fields.size() == 1u);
  BOOST_TEST((decoded.meta_fields[0].form == index::MetaKeyForm::kCanonical));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
