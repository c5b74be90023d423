#include "engine/query/query_plan.h"

#include <algorithm>
#include <set>
#include <utility>

#include "engine/json/json_text.h"
#include "engine/query/meta_value.h"
#include "engine/query/query_eval.h"
#include "engine/query/value_order.h"
#include "util/utf8.h"

namespace gulpdb::engine {
namespace {

using index::MetaFieldValue;
using index::MetaKeyForm;

// The longest id: LMDB's longest key in Debian's build (the writer refuses
// longer ids).
constexpr size_t kMaxIdBytes = 511;

bool IsRange(QueryOp op) {
  return op == QueryOp::kLt || op == QueryOp::kLe || op == QueryOp::kGt || op == QueryOp::kGe;
}

// Keys are compared to a bound made of the field and `ordered`; an ordered
// value longer than any key stores (hashed instead) is cut: no inline value
// is a prefix of it, so the cut bound splits the inline entries the same way.
std::string Bound(uint32_t field, const std::string& ordered) {
  std::string out = index::MetaFieldPrefix(field);
  out.append(ordered, 0, std::min(ordered.size(), index::kMaxInlineValueBytes + 1));
  return out;
}

// The ids `=` / `in` on `id` names: its string values, and the texts of the
// others when text_too. Ids are UTF-8: a string with a lone surrogate names none.
std::vector<std::string> IdsOf(const QueryExpr& term) {
  std::set<std::string> ids;
  for (size_t i = 0; i < term.values.size(); ++i) {
    const std::string& json = term.values[i];
    if (!json.empty() && json[0] == '"') {
      std::string text;
      ScanJsonString(json, 0, &text, /*lone_surrogates=*/true);
      if (util::FindInvalidUtf8(text) == std::string::npos) ids.insert(std::move(text));
    } else if (term.text_too && i < term.texts.size()) {
      ids.insert(term.texts[i]);
    }
  }
  return std::vector<std::string>(ids.begin(), ids.end());
}

QueryPlan PlanId(const QueryExpr& term) {
  QueryPlan p;
  if (term.op == QueryOp::kEq || term.op == QueryOp::kIn) {
    p.kind = QueryPlan::Kind::kIds;
    p.ids = IdsOf(term);
    p.exact = true;
    return p;
  }
  if (!IsRange(term.op)) return p;  // != and has: a scan reads as much
  std::string bound;
  ScanJsonString(term.values.at(0), 0, &bound, /*lone_surrogates=*/true);
  p.kind = QueryPlan::Kind::kIdRange;
  p.exact = true;
  // Ids are LMDB keys (at most kMaxIdBytes): a bound that long has no id
  // after it that starts with it, so the first key past its prefix is the
  // same bound, and short enough to seek to.
  const bool long_bound = bound.size() >= kMaxIdBytes;
  const std::string past =
      long_bound ? PrefixEnd(bound.substr(0, kMaxIdBytes)) : bound + std::string(1, '\0');
  const std::string at = bound.size() > kMaxIdBytes ? past : bound;
  switch (term.op) {
    case QueryOp::kLt:
      p.id_to = at;
      break;
    case QueryOp::kLe:
      p.id_to = past;
      break;
    case QueryOp::kGt:
      p.id_from = past;
      break;
    default:
      p.id_from = at;
      break;
  }
  if (p.id_to.empty() && (term.op == QueryOp::kLt || term.op == QueryOp::kLe)) {
    p.ids.clear();  // id < "": nothing; an empty bound would mean none
    p.kind = QueryPlan::Kind::kIds;
  }
  return p;
}

QueryPlan PlanMetaTerm(const QueryExpr& term, const MetaFieldValue& f) {
  QueryPlan p;
  p.kind = QueryPlan::Kind::kMeta;
  p.exact = true;
  const std::string field_prefix = index::MetaFieldPrefix(f.number);
  if (term.op == QueryOp::kHas) {
    p.ranges.push_back({field_prefix, PrefixEnd(field_prefix), false});
    return p;
  }
  if (term.op == QueryOp::kEq || term.op == QueryOp::kIn) {
    std::set<std::string> values;
    if (f.form == MetaKeyForm::kOrdered) {
      for (std::string& v : EqualitySet(term)) values.insert(std::move(v));
    } else {
      for (size_t i = 0; i < term.values.size(); ++i) {
        values.insert(CanonicalMetaValue(term.values[i]));
        if (term.text_too && term.values[i][0] != '"' && i < term.texts.size()) {
          values.insert(PythonJsonString(term.texts[i]));
        }
      }
    }
    for (const std::string& v : values) {
      const std::string prefix = index::MetaValuePrefix(f.number, f.form, v);
      p.ranges.push_back({prefix, PrefixEnd(prefix), index::MetaValueHashed(v)});
    }
    std::sort(p.ranges.begin(), p.ranges.end(),
              [](const IndexRange& a, const IndexRange& b) { return a.from < b.from; });
    return p;
  }
  if (f.form != MetaKeyForm::kOrdered) return QueryPlan();  // ranges need the ordered form
  const std::string value = OrderedMetaValue(term.values.at(0));
  const bool long_value = index::MetaValueHashed(value);
  const std::string at = Bound(f.number, value);
  const std::string after = long_value ? at : PrefixEnd(at);
  const std::string hashed = index::MetaHashedPrefix(f.number);
  uint8_t lo = 0, hi = 0;
  if (term.op == QueryOp::kNe) {
    TypeTags(value, &lo, &hi);
    p.ranges.push_back({index::MetaTagKey(f.number, lo), at, false});
    p.ranges.push_back({after, index::MetaTagKey(f.number, hi), false});
  } else {
    if (!RangeTags(value, &lo, &hi)) return QueryPlan();
    IndexRange r{index::MetaTagKey(f.number, lo), index::MetaTagKey(f.number, hi), false};
    if (term.op == QueryOp::kGt) r.from = after;
    if (term.op == QueryOp::kGe) r.from = at;
    if (term.op == QueryOp::kLt) r.to = at;
    if (term.op == QueryOp::kLe) r.to = after;
    p.ranges.push_back(std::move(r));
    p.range_field = f.number;
  }
  p.ranges.push_back({hashed, PrefixEnd(hashed), true});
  return p;
}

QueryPlan PlanTerm(const QueryExpr& term, const std::map<std::string, MetaFieldValue>& fields) {
  if (term.field.builtin == Builtin::kId) return PlanId(term);
  if (term.field.builtin != Builtin::kNone) return QueryPlan();
  const auto f = fields.find(term.field.key);
  if (f == fields.end()) return QueryPlan();
  return PlanMetaTerm(term, f->second);
}

// Range terms of one field under one `and`: one range, [max from, min to).
void MergeRanges(std::vector<QueryPlan>* children) {
  std::vector<QueryPlan> out;
  for (QueryPlan& c : *children) {
    QueryPlan* same = nullptr;
    if (c.range_field) {
      for (QueryPlan& o : out) {
        if (o.range_field == c.range_field) same = &o;
      }
    }
    if (same == nullptr) {
      out.push_back(std::move(c));
      continue;
    }
    IndexRange& a = same->ranges[0];
    const IndexRange& b = c.ranges[0];
    a.from = std::max(a.from, b.from);
    a.to = std::min(a.to, b.to);
    if (a.to < a.from) a.to = a.from;  // empty
  }
  *children = std::move(out);
}

QueryPlan Plan(const QueryExpr& e, const std::map<std::string, MetaFieldValue>& fields) {
  switch (e.kind) {
    case QueryExpr::Kind::kAll:
    case QueryExpr::Kind::kNot:
      return QueryPlan();
    case QueryExpr::Kind::kTerm:
      return PlanTerm(e, fields);
    case QueryExpr::Kind::kAnd: {
      QueryPlan p;
      p.kind = QueryPlan::Kind::kAnd;
      p.exact = true;
      for (const QueryExpr& c : e.children) {
        QueryPlan cp = Plan(c, fields);
        if (cp.kind == QueryPlan::Kind::kScan) {
          p.exact = false;
          continue;
        }
        p.exact = p.exact && cp.exact;
        p.children.push_back(std::move(cp));
      }
      MergeRanges(&p.children);
      if (p.children.empty()) return QueryPlan();
      if (p.children.size() == 1 && p.exact) return std::move(p.children[0]);
      return p;
    }
    case QueryExpr::Kind::kOr: {
      QueryPlan p;
      p.kind = QueryPlan::Kind::kOr;
      p.exact = true;
      for (const QueryExpr& c : e.children) {
        QueryPlan cp = Plan(c, fields);
        if (cp.kind == QueryPlan::Kind::kScan) return QueryPlan();
        p.exact = p.exact && cp.exact;
        p.children.push_back(std::move(cp));
      }
      return p;
    }
  }
  return QueryPlan();
}

}  // namespace

std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty() && static_cast<uint8_t>(prefix.back()) == 0xff) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
  return prefix;
}

QueryPlan PlanQuery(const QueryExpr& expr, const std::map<std::string, MetaFieldValue>& fields) {
  return Plan(expr, fields);
}

std::string DescribePlan(const QueryPlan& plan) {
  std::string out;
  switch (plan.kind) {
    case QueryPlan::Kind::kScan:
      return "scan";
    case QueryPlan::Kind::kMeta:
      out = "meta[" + std::to_string(plan.ranges.size()) + " ranges]";
      break;
    case QueryPlan::Kind::kIds:
      out = "ids[" + std::to_string(plan.ids.size()) + "]";
      break;
    case QueryPlan::Kind::kIdRange:
      out = "id range";
      break;
    case QueryPlan::Kind::kAnd:
    case QueryPlan::Kind::kOr:
      out = plan.kind == QueryPlan::Kind::kAnd ? "and(" : "or(";
      for (size_t i = 0; i < plan.children.size(); ++i) {
        out += (i != 0 ? ", " : "") + DescribePlan(plan.children[i]);
      }
      out += ")";
      break;
  }
  return plan.exact ? out : out + "?";
}

}  // namespace gulpdb::engine
