// The public face of the query language (include/gulpdb/query.h): Query
// over the parsed expression (expr.h), and the command line's KEY=VALUE
// conditions (ParseMetaCondition), which --where arguments fall back to.
#include "gulpdb/query.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/json/json_text.h"
#include "engine/query/expr.h"
#include "engine/query/meta_value.h"
#include "gulpdb/error.h"

namespace gulpdb {

namespace {

// Where a --where argument's key ends: before a space, quote, bracket,
// parenthesis, comma or operator character.
size_t BareKeyEnd(std::string_view text) {
  static constexpr std::string_view kStops = " \t\r\n\"'`()[],=<>!";
  size_t i = 0;
  while (i < text.size() && kStops.find(text[i]) == std::string_view::npos) ++i;
  return i;
}

}  // namespace

Query::Query() : rep_(std::make_shared<Rep>()) {}

Query::Query(std::shared_ptr<const Rep> rep) : rep_(std::move(rep)) {}

Query Query::Parse(std::string_view expression) {
  auto rep = std::make_shared<Rep>();
  rep->expr = engine::ParseQueryExpr(expression);
  return Query(std::move(rep));
}

Query Query::ParseWhere(std::string_view argument) {
  try {
    return Parse(argument);
  } catch (const QuerySyntaxError&) {
    const size_t end = BareKeyEnd(argument);
    if (end == 0 || end >= argument.size() || argument[end] != '=') throw;
    return FromConditions({ParseMetaCondition(argument)});
  }
}

Query Query::FromConditions(const std::vector<MetaCondition>& conditions) {
  auto rep = std::make_shared<Rep>();
  rep->expr = engine::ConditionsExpr(conditions, "select");
  return Query(std::move(rep));
}

Query Query::AllOf(const std::vector<Query>& queries) {
  std::vector<engine::QueryExpr> parts;
  parts.reserve(queries.size());
  for (const Query& q : queries) parts.push_back(q.rep().expr);
  auto rep = std::make_shared<Rep>();
  rep->expr = engine::AndOf(std::move(parts));
  return Query(std::move(rep));
}

bool Query::MatchesEverything() const { return rep_->expr.kind == engine::QueryExpr::Kind::kAll; }

std::string Query::ToString() const { return engine::PrintQueryExpr(rep_->expr); }

std::vector<std::string> Query::MetaKeys() const { return engine::QueryMetaKeys(rep_->expr); }

MetaCondition ParseMetaCondition(std::string_view term) {
  const size_t eq = term.find('=');
  if (eq == std::string_view::npos) {
    throw InvalidArgumentError("meta condition '" + engine::PrintableBytes(term, 60) +
                               "': expected KEY=VALUE");
  }
  MetaCondition c;
  c.key = std::string(term.substr(0, eq));
  const std::string_view value = term.substr(eq + 1);
  std::string as_string;
  try {
    as_string = engine::PythonJsonString(value);
  } catch (const InvalidArgumentError&) {
    throw InvalidArgumentError("meta condition '" + engine::PrintableBytes(term, 60) +
                               "': the value is not valid UTF-8");
  }
  try {
    const std::string canonical = engine::CanonicalMetaValue(value);
    c.values.emplace_back(value);
    if (canonical.empty() || canonical[0] != '"') c.values.push_back(as_string);
  } catch (const InvalidArgumentError&) {
    c.values.push_back(as_string);  // not JSON: the text itself
  }
  return c;
}

}  // namespace gulpdb
