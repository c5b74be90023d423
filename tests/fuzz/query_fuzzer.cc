// Fuzz target: the query language (engine/query: expr.h, query_eval.h,
// query_plan.h, value_order.h) on one video.
//
// Input: a query, then (after the first newline, if any) the text of the
// video's first meta entry; the last byte's low bit picks the key form of
// the meta indexes. Properties checked:
//   - parsing returns or throws QuerySyntaxError, nothing else, and the
//     message ends with a caret line;
//   - a parsed query prints as text that parses, and both select the video
//     alike (the printer and the parser agree on meaning);
//   - the evaluator answers or reports a meta that is not JSON, never crashes;
//   - the plan over meta indexes of every key the query names (and the
//     video's id) is sound for this video: a video that satisfies the query
//     is among the plan's candidates, and a candidate the plan vouches for
//     (exact, not to verify) satisfies it. The candidates are found from the
//     index entry keys the video would have, so this checks the ordered key
//     encoding against the evaluator's order too.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json/json_text.h"
#include "engine/query/expr.h"
#include "engine/query/index_handles.h"
#include "engine/query/meta_value.h"
#include "engine/query/query_eval.h"
#include "engine/query/query_plan.h"
#include "gulpdb/error.h"
#include "index/query_keys.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr const char* kTarget = "query";

using gulpdb::engine::QueryPlan;

// What the plan makes of this one video: not a candidate (nullopt), or a
// candidate and whether it must be checked.
struct Video {
  std::string id;
  std::vector<std::string> keys;  // its meta index entry keys
};

bool InRange(std::string_view key, const gulpdb::engine::IndexRange& r) {
  return key >= r.from && (r.to.empty() || key < r.to);
}

std::optional<bool> Candidate(const QueryPlan& p, const Video& v) {
  switch (p.kind) {
    case QueryPlan::Kind::kScan:
      return true;  // never asked of a planned node
    case QueryPlan::Kind::kMeta: {
      std::optional<bool> verify;
      for (const std::string& key : v.keys) {
        for (const gulpdb::engine::IndexRange& r : p.ranges) {
          if (InRange(key, r)) verify = verify.value_or(true) && r.verify;
        }
      }
      return verify;
    }
    case QueryPlan::Kind::kIds:
      for (const std::string& id : p.ids) {
        if (id == v.id) return false;
      }
      return std::nullopt;
    case QueryPlan::Kind::kIdRange:
      if (v.id >= p.id_from && (p.id_to.empty() || v.id < p.id_to)) return false;
      return std::nullopt;
    case QueryPlan::Kind::kOr: {
      std::optional<bool> verify;
      for (const QueryPlan& c : p.children) {
        if (const std::optional<bool> in = Candidate(c, v)) verify = verify.value_or(true) && *in;
      }
      return verify;
    }
    case QueryPlan::Kind::kAnd: {
      bool verify = !p.exact;
      for (const QueryPlan& c : p.children) {
        const std::optional<bool> in = Candidate(c, v);
        if (!in) return std::nullopt;
        verify = verify || *in;
      }
      return verify;
    }
  }
  return true;
}

bool Matches(const gulpdb::engine::QueryExpr& expr, const gulpdb::engine::VideoFacts& facts,
             bool* bad_meta) {
  const gulpdb::engine::QueryProgram program(expr);
  gulpdb::engine::QueryProgram::Scratch scratch;
  std::string error;
  const bool match = program.Matches(facts, &scratch, &error);
  *bad_meta = !error.empty();
  return match;
}

}  // namespace

extern "C" int GULPDB_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  namespace engine = gulpdb::engine;
  namespace index = gulpdb::index;
  const std::string_view input = gulpdb::fuzz::AsText(data, size);
  const size_t newline = input.find('\n');
  const std::string_view text = input.substr(0, newline);
  const std::string entry =
      newline == std::string_view::npos ? "{}" : std::string(input.substr(newline + 1));
  const index::MetaKeyForm form = !input.empty() && (input.back() & 1) != 0
                                      ? index::MetaKeyForm::kCanonical
                                      : index::MetaKeyForm::kOrdered;

  engine::QueryExpr expr;
  try {
    expr = engine::ParseQueryExpr(text);
  } catch (const gulpdb::QuerySyntaxError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(kTarget, m.size() >= 1 && m.back() == '^', "no caret line: " + m);
    return 0;
  }
  const std::string meta_data = "[" + entry + "]";
  engine::VideoFacts facts;
  facts.id = "video";
  facts.frames = 16;
  facts.chunk = 3;
  facts.meta_data = meta_data;
  bool bad_meta = false;
  const bool match = Matches(expr, facts, &bad_meta);

  // Printed and parsed again: the same meaning.
  const std::string printed = engine::PrintQueryExpr(expr);
  engine::QueryExpr again;
  try {
    again = engine::ParseQueryExpr(printed);
  } catch (const gulpdb::QuerySyntaxError& e) {
    gulpdb::fuzz::Fail(kTarget, "the printed query does not parse: " + printed + ": " + e.what());
  }
  bool bad_again = false;
  FUZZ_CHECK(kTarget, Matches(again, facts, &bad_again) == match && bad_again == bad_meta,
             "printed as " + printed + ", it selects otherwise");
  if (bad_meta) return 0;

  // A meta index of every key the query names.
  std::map<std::string, index::MetaFieldValue> fields;
  uint32_t number = 0;
  for (const std::string& key : engine::QueryMetaKeys(expr)) fields[key] = {number++, form};
  Video video;
  video.id = std::string(facts.id);
  for (const auto& [key, field] : fields) {
    std::vector<std::string_view> values;
    std::string error;
    const std::vector<std::string> quoted = {engine::PythonJsonString(key)};
    FUZZ_CHECK(kTarget, engine::FindFirstEntryValues(meta_data, quoted, &values, &error), error);
    if (values[0].empty()) continue;
    video.keys.push_back(index::MetaEntryKey(
        field.number, field.form, engine::MetaKeyValue(field.form, values[0]), facts.chunk, 7));
  }
  const QueryPlan plan = engine::PlanQuery(expr, fields);
  if (plan.kind == QueryPlan::Kind::kScan) return 0;
  const std::optional<bool> candidate = Candidate(plan, video);
  FUZZ_CHECK(kTarget, !match || candidate.has_value(),
             "a matching video is not among the candidates of " + engine::DescribePlan(plan) +
                 " for " + printed);
  FUZZ_CHECK(kTarget, !candidate.has_value() || *candidate || match,
             "the plan " + engine::DescribePlan(plan) +
                 " vouches for a video that does not match " + printed);
  return 0;
}
