// The parser of the query language: recursive descent over the text (whose
// tokens and values query_text.h reads), one function per rule of the
// grammar in expr.h, each failure a QuerySyntaxError at the byte where the
// text stopped making sense; and the printer.
#include "engine/query/expr.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "engine/json/json_text.h"
#include "engine/query/query_text.h"
#include "engine/query/value_order.h"
#include "gulpdb/error.h"
#include "util/utf8.h"

namespace gulpdb::engine {
namespace {

const char* BuiltinName(Builtin b) {
  switch (b) {
    case Builtin::kId:
      return "id";
    case Builtin::kFrames:
      return "frames";
    case Builtin::kChunk:
      return "chunk";
    case Builtin::kNone:
      break;
  }
  return "";
}

const char* OpText(QueryOp op) {
  switch (op) {
    case QueryOp::kEq:
      return "=";
    case QueryOp::kNe:
      return "!=";
    case QueryOp::kLt:
      return "<";
    case QueryOp::kLe:
      return "<=";
    case QueryOp::kGt:
      return ">";
    case QueryOp::kGe:
      return ">=";
    case QueryOp::kIn:
      return "in";
    case QueryOp::kHas:
      return "has";
  }
  return "";
}
class Parser : public QueryText {
 public:
  explicit Parser(std::string_view text) : QueryText(text) {}

  QueryExpr Parse() {
    if (const size_t bad = util::FindInvalidUtf8(t_); bad != std::string_view::npos) {
      Fail(bad, "the query is not valid UTF-8");
    }
    Skip();
    if (i_ >= t_.size()) Fail(i_, "the query is empty");
    QueryExpr e = Or(0);
    Skip();
    if (i_ < t_.size()) {
      Fail(i_, std::string("expected 'and', 'or' or the end of the query, found ") + Found());
    }
    return e;
  }

 private:
  void Deeper(int depth) const {
    if (depth >= kMaxQueryDepth) {
      Fail(i_, "nested more than " + std::to_string(kMaxQueryDepth) + " levels deep");
    }
  }

  QueryExpr Or(int depth) {
    std::vector<QueryExpr> parts;
    parts.push_back(And(depth));
    while (TakeKeyword("or")) parts.push_back(And(depth));
    return Join(QueryExpr::Kind::kOr, std::move(parts));
  }

  QueryExpr And(int depth) {
    std::vector<QueryExpr> parts;
    parts.push_back(Not(depth));
    while (TakeKeyword("and")) parts.push_back(Not(depth));
    return Join(QueryExpr::Kind::kAnd, std::move(parts));
  }

  static QueryExpr Join(QueryExpr::Kind kind, std::vector<QueryExpr> parts) {
    if (parts.size() == 1) return std::move(parts[0]);
    QueryExpr e;
    e.kind = kind;
    for (QueryExpr& p : parts) {
      if (p.kind == kind) {  // (a and b) and c: one list
        for (QueryExpr& c : p.children) e.children.push_back(std::move(c));
      } else {
        e.children.push_back(std::move(p));
      }
    }
    return e;
  }

  QueryExpr Not(int depth) {
    Deeper(depth);
    Skip();
    if (TakeKeyword("not")) {
      QueryExpr e;
      e.kind = QueryExpr::Kind::kNot;
      e.children.push_back(Not(depth + 1));
      return e;
    }
    if (i_ < t_.size() && t_[i_] == '(') {
      ++i_;
      QueryExpr e = Or(depth + 1);
      Skip();
      if (i_ >= t_.size() || t_[i_] != ')') {
        Fail(i_, std::string("expected ')', 'and' or 'or', found ") + Found());
      }
      ++i_;
      return e;
    }
    if (TakeKeyword("has")) {
      QueryExpr e;
      e.kind = QueryExpr::Kind::kTerm;
      e.op = QueryOp::kHas;
      e.field = Field();
      return e;
    }
    return Term();
  }

  QueryField Field() {
    Skip();
    const size_t at = i_;
    QueryField f;
    if (at >= t_.size()) Fail(at, "expected a key, found the end of the query");
    if (t_[at] == '`') {
      f.key = Backticked();
      return f;
    }
    if (!IsNameStart(t_[at])) {
      Fail(at, "expected a key (a name, meta[\"key\"] or `key`), found " + Found());
    }
    while (i_ < t_.size() && IsNameChar(t_[i_])) ++i_;
    const std::string_view name = t_.substr(at, i_ - at);
    if (name == "meta" && i_ < t_.size() && (t_[i_] == '.' || t_[i_] == '[')) {
      if (t_[i_] == '.') {
        const size_t start = ++i_;
        if (i_ >= t_.size() || !IsNameStart(t_[i_])) {
          Fail(i_, "expected a name after 'meta.', found " + Found());
        }
        while (i_ < t_.size() && IsNameChar(t_[i_])) ++i_;
        f.key = std::string(t_.substr(start, i_ - start));
        NoDot();
        return f;
      }
      ++i_;
      Skip();
      if (i_ >= t_.size() || (t_[i_] != '"' && t_[i_] != '\'')) {
        Fail(i_, "expected a quoted key after 'meta[', found " + Found());
      }
      const size_t key_at = i_;
      const QueryValue key = ReadString();
      std::string decoded;
      ScanJsonString(key.json, 0, &decoded, /*lone_surrogates=*/true);
      if (util::FindInvalidUtf8(decoded) != std::string::npos) {
        Fail(key_at, "a key must be valid UTF-8 (it has a lone surrogate)");
      }
      f.key = decoded;
      Skip();
      if (i_ >= t_.size() || t_[i_] != ']') Fail(i_, "expected ']', found " + Found());
      ++i_;
      return f;
    }
    if (IsQueryKeyword(name)) {
      Fail(at, "'" + std::string(name) + "' is a keyword: write meta." + std::string(name) +
                   " or `" + std::string(name) + "` for a meta key of that name");
    }
    NoDot();
    if (name == "id") {
      f.builtin = Builtin::kId;
    } else if (name == "frames") {
      f.builtin = Builtin::kFrames;
    } else if (name == "chunk") {
      f.builtin = Builtin::kChunk;
    } else {
      f.key = std::string(name);
    }
    return f;
  }

  // Dotted names are kept for later (nested keys): a key with a dot is quoted.
  void NoDot() {
    if (i_ < t_.size() && t_[i_] == '.') {
      Fail(i_,
           "a key with a dot must be quoted (meta[\"a.b\"] or `a.b`); nested keys are not "
           "reached");
    }
  }

  // `key`: `` inside stands for one backtick.
  std::string Backticked() {
    const size_t at = i_++;
    std::string key;
    for (;;) {
      if (i_ >= t_.size()) Fail(at, "unterminated `key`");
      if (t_[i_] == '`') {
        if (i_ + 1 < t_.size() && t_[i_ + 1] == '`') {
          key.push_back('`');
          i_ += 2;
          continue;
        }
        ++i_;
        break;
      }
      key.push_back(t_[i_++]);
    }
    if (key.empty()) Fail(at, "an empty `key`: write meta[\"\"] for the empty key");
    return key;
  }

  QueryExpr Term() {
    QueryExpr e;
    e.kind = QueryExpr::Kind::kTerm;
    e.field = Field();
    if (TakeKeyword("in")) {
      e.op = QueryOp::kIn;
      e.text_too = true;
      Skip();
      if (i_ >= t_.size() || t_[i_] != '(') Fail(i_, "expected '(' after 'in', found " + Found());
      ++i_;
      Skip();
      if (i_ < t_.size() && t_[i_] == ')') {
        ++i_;
        return e;  // in (): nothing
      }
      for (;;) {
        QueryValue v = TermValue(e);
        e.values.push_back(std::move(v.json));
        e.texts.push_back(std::move(v.text));
        Skip();
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < t_.size() && t_[i_] == ')') {
          ++i_;
          return e;
        }
        Fail(i_, "expected ',' or ')' in the list of values, found " + Found());
      }
    }
    if (AtKeyword("not")) {
      Fail(i_, "write 'not KEY in (...)' for 'KEY not in (...)'");
    }
    e.op = Op();
    QueryValue v = TermValue(e);
    e.values.push_back(std::move(v.json));
    e.texts.push_back(std::move(v.text));
    e.text_too = e.op == QueryOp::kEq;
    Check(e, v.pos);
    return e;
  }

  QueryOp Op() {
    Skip();
    const std::string_view rest = t_.substr(i_);
    auto take = [&](size_t n, QueryOp op) {
      i_ += n;
      return op;
    };
    if (rest.substr(0, 2) == "==") Fail(i_, "'==' is written '='");
    if (rest.substr(0, 2) == "!=") return take(2, QueryOp::kNe);
    if (rest.substr(0, 2) == "<=") return take(2, QueryOp::kLe);
    if (rest.substr(0, 2) == ">=") return take(2, QueryOp::kGe);
    if (rest.substr(0, 2) == "<>") Fail(i_, "'<>' is written '!='");
    if (rest.substr(0, 1) == "=") return take(1, QueryOp::kEq);
    if (rest.substr(0, 1) == "<") return take(1, QueryOp::kLt);
    if (rest.substr(0, 1) == ">") return take(1, QueryOp::kGt);
    Fail(i_, "expected an operator (= != < <= > >=), 'in' or the end of a term, found " + Found());
  }

  // A value of term `e`, checked against a built-in field's type.
  QueryValue TermValue(const QueryExpr& e) {
    QueryValue v = ReadValue();
    const ValueType type = OrderedType(OrderedMetaValue(v.json));
    const bool equality = e.op == QueryOp::kEq || e.op == QueryOp::kIn;
    if (e.field.builtin == Builtin::kId && !equality && type != ValueType::kString) {
      Fail(v.pos, "id is a string: compare it with a string");
    }
    if ((e.field.builtin == Builtin::kFrames || e.field.builtin == Builtin::kChunk) &&
        type != ValueType::kNumber) {
      Fail(v.pos,
           std::string(BuiltinName(e.field.builtin)) + " is a number: compare it with a number");
    }
    return v;
  }

  // What a comparison can never satisfy is refused rather than answered
  // with nothing.
  void Check(const QueryExpr& e, size_t value_at) const {
    const std::string ordered = OrderedMetaValue(e.values[0]);
    const ValueType type = OrderedType(ordered);
    if (e.op == QueryOp::kNe && type == ValueType::kNull) {
      Fail(value_at,
           "'!= null' never holds (only null is of null's type): write 'has KEY and "
           "not KEY = null'");
    }
    if (e.op == QueryOp::kLt || e.op == QueryOp::kLe || e.op == QueryOp::kGt ||
        e.op == QueryOp::kGe) {
      if (type != ValueType::kNumber && type != ValueType::kString) {
        Fail(value_at,
             std::string("'") + OpText(e.op) + "' compares numbers or strings, not this value");
      }
      if (!InOrderedRange(ordered)) {
        Fail(value_at,
             "NaN, and a number whose exponent has more than 17 digits, are in no "
             "range: they only equal themselves");
      }
    }
  }
};

void PrintValue(const std::string& json, std::string* out) { out->append(json); }

bool BareName(const std::string& key) {
  if (key.empty() || !IsNameStart(key[0])) return false;
  if (!std::all_of(key.begin(), key.end(), IsNameChar)) return false;
  return !IsQueryKeyword(key) && key != "id" && key != "frames" && key != "chunk" && key != "meta";
}

void PrintField(const QueryField& f, std::string* out) {
  if (f.builtin != Builtin::kNone) {
    out->append(BuiltinName(f.builtin));
  } else if (BareName(f.key)) {
    out->append(f.key);
  } else {
    out->append("meta[" + PythonJsonString(f.key) + "]");
  }
}

void Print(const QueryExpr& e, int parent, std::string* out) {
  // Precedence: or 1, and 2, not 3 (terms bind tightest).
  switch (e.kind) {
    case QueryExpr::Kind::kAll:
      out->append("(has id)");  // every video has an id
      return;
    case QueryExpr::Kind::kAnd:
    case QueryExpr::Kind::kOr: {
      const int mine = e.kind == QueryExpr::Kind::kAnd ? 2 : 1;
      if (mine < parent) out->push_back('(');
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i != 0) out->append(mine == 2 ? " and " : " or ");
        Print(e.children[i], mine + 1, out);
      }
      if (mine < parent) out->push_back(')');
      return;
    }
    case QueryExpr::Kind::kNot:
      out->append("not ");
      Print(e.children[0], 3, out);
      return;
    case QueryExpr::Kind::kTerm:
      break;
  }
  if (e.op == QueryOp::kHas) {
    out->append("has ");
    PrintField(e.field, out);
    return;
  }
  PrintField(e.field, out);
  if (e.op == QueryOp::kIn || (e.op == QueryOp::kEq && e.values.size() != 1)) {
    out->append(" in (");
    for (size_t i = 0; i < e.values.size(); ++i) {
      if (i != 0) out->append(", ");
      PrintValue(e.values[i], out);
    }
    out->push_back(')');
    return;
  }
  out->push_back(' ');
  out->append(OpText(e.op));
  out->push_back(' ');
  PrintValue(e.values[0], out);
}

void CollectKeys(const QueryExpr& e, std::vector<std::string>* keys) {
  if (e.kind == QueryExpr::Kind::kTerm) {
    if (e.field.builtin == Builtin::kNone &&
        std::find(keys->begin(), keys->end(), e.field.key) == keys->end()) {
      keys->push_back(e.field.key);
    }
    return;
  }
  for (const QueryExpr& c : e.children) CollectKeys(c, keys);
}

}  // namespace

QueryExpr ParseQueryExpr(std::string_view text) { return Parser(text).Parse(); }

QueryExpr ConditionsExpr(const std::vector<MetaCondition>& conditions,
                         const std::string& operation) {
  std::vector<QueryExpr> parts;
  for (const MetaCondition& c : conditions) {
    QueryExpr e;
    e.kind = QueryExpr::Kind::kTerm;
    e.op = QueryOp::kIn;
    e.field.key = c.key;
    if (util::FindInvalidUtf8(c.key) != std::string::npos) {
      throw InvalidArgumentError(operation + ": the key '" + PrintableBytes(c.key, 40) +
                                 "' is not valid UTF-8");
    }
    for (const std::string& value : c.values) {
      try {
        e.values.push_back(NormalizeJson(value));
      } catch (const InvalidArgumentError& err) {
        throw InvalidArgumentError(operation + ": the value for key '" + c.key + "' is not JSON (" +
                                   err.what() + "): " + PrintableBytes(value, 60));
      }
    }
    parts.push_back(std::move(e));
  }
  return AndOf(std::move(parts));
}

QueryExpr AndOf(std::vector<QueryExpr> parts) {
  std::vector<QueryExpr> kept;
  for (QueryExpr& p : parts) {
    if (p.kind == QueryExpr::Kind::kAll) continue;
    if (p.kind == QueryExpr::Kind::kAnd) {
      for (QueryExpr& c : p.children) kept.push_back(std::move(c));
    } else {
      kept.push_back(std::move(p));
    }
  }
  if (kept.empty()) return QueryExpr();
  if (kept.size() == 1) return std::move(kept[0]);
  QueryExpr e;
  e.kind = QueryExpr::Kind::kAnd;
  e.children = std::move(kept);
  return e;
}

std::string PrintQueryExpr(const QueryExpr& expr) {
  std::string out;
  Print(expr, 0, &out);
  return out;
}

std::vector<std::string> QueryMetaKeys(const QueryExpr& expr) {
  std::vector<std::string> keys;
  CollectKeys(expr, &keys);
  return keys;
}

std::string CaretLines(std::string_view text, size_t pos) {
  constexpr size_t kWindow = 60;  // bytes shown on each side of the caret
  pos = std::min(pos, text.size());
  size_t begin = pos > kWindow ? pos - kWindow : 0;
  size_t end = std::min(text.size(), pos + kWindow);
  // Whole UTF-8 sequences only.
  while (begin > 0 && begin < text.size() && (static_cast<uint8_t>(text[begin]) & 0xc0) == 0x80) {
    --begin;
  }
  while (end < text.size() && (static_cast<uint8_t>(text[end]) & 0xc0) == 0x80) ++end;
  std::string line = begin > 0 ? "..." : "";
  size_t column = line.size();
  for (size_t i = begin; i < end;) {
    const size_t n = std::max<size_t>(1, util::Utf8SequenceLength(text, i));
    std::string shown;
    const auto b = static_cast<uint8_t>(text[i]);
    if (b < 0x20 || b == 0x7f || util::Utf8SequenceLength(text, i) == 0) {
      shown = PrintableBytes(text.substr(i, 1), 1);
      if (b == '\t') shown = "\\t";
      if (b == '\n') shown = "\\n";
      if (b == '\r') shown = "\\r";
    } else {
      shown = std::string(text.substr(i, n));
    }
    if (i < pos) column += n == 1 ? shown.size() : 1;
    line += shown;
    i += n;
  }
  if (end < text.size()) line += "...";
  return "  " + line + "\n  " + std::string(column, ' ') + "^";
}

}  // namespace gulpdb::engine
