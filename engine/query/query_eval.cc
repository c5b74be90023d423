#include "engine/query/query_eval.h"

#include <algorithm>
#include <utility>

#include "engine/json/json_text.h"
#include "engine/query/meta_value.h"
#include "engine/query/value_order.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {

std::vector<std::string> EqualitySet(const QueryExpr& term) {
  std::vector<std::string> set;
  for (size_t i = 0; i < term.values.size(); ++i) {
    std::string ordered = OrderedMetaValue(term.values[i]);
    const bool is_string = OrderedType(ordered) == ValueType::kString;
    set.push_back(std::move(ordered));
    if (term.text_too && !is_string && i < term.texts.size()) {
      set.push_back(OrderedString(term.texts[i]));
    }
  }
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  return set;
}

QueryProgram::QueryProgram(const QueryExpr& expr) {
  nodes_.emplace_back();  // the root's place
  const uint32_t root = Compile(expr);
  nodes_[0] = nodes_[root];
}

uint32_t QueryProgram::Compile(const QueryExpr& expr) {
  Node n;
  n.kind = expr.kind;
  for (const QueryExpr& child : expr.children) n.children.push_back(Compile(child));
  if (expr.kind == QueryExpr::Kind::kTerm) {
    n.builtin = expr.field.builtin;
    n.op = expr.op;
    if (n.builtin == Builtin::kNone) {
      const auto at = std::find(keys_.begin(), keys_.end(), expr.field.key);
      n.slot = static_cast<uint32_t>(at - keys_.begin());
      if (at == keys_.end()) {
        keys_.push_back(expr.field.key);
        quoted_keys_.push_back(PythonJsonString(expr.field.key));
      }
    }
    switch (expr.op) {
      case QueryOp::kEq:
      case QueryOp::kIn:
        n.set = EqualitySet(expr);
        break;
      case QueryOp::kHas:
        break;
      case QueryOp::kNe:
        n.bound = OrderedMetaValue(expr.values.at(0));
        TypeTags(n.bound, &n.from, &n.to);
        break;
      default:  // a range: the parser let only numbers and strings through
        n.bound = OrderedMetaValue(expr.values.at(0));
        if (!RangeTags(n.bound, &n.from, &n.to) || !InOrderedRange(n.bound)) {
          n.from = n.to = 0;  // matches nothing
        }
        break;
    }
  }
  nodes_.push_back(std::move(n));
  return static_cast<uint32_t>(nodes_.size() - 1);
}

const std::string* QueryProgram::Value(const Node& n, const VideoFacts& video,
                                       Scratch* scratch) const {
  std::optional<std::string>& slot =
      scratch->ordered[n.builtin == Builtin::kNone ? n.slot
                                                   : keys_.size() + static_cast<size_t>(n.builtin)];
  if (slot) return &*slot;
  switch (n.builtin) {
    case Builtin::kId:
      slot = OrderedString(video.id);
      break;
    case Builtin::kFrames:
      slot = OrderedInteger(video.frames);
      break;
    case Builtin::kChunk:
      slot = OrderedInteger(video.chunk);
      break;
    case Builtin::kNone: {
      const std::string_view text = scratch->values[n.slot];
      if (text.empty()) return nullptr;  // the meta lacks the key
      slot = OrderedMetaValue(text);
      break;
    }
  }
  return &*slot;
}

bool QueryProgram::Eval(uint32_t index, const VideoFacts& video, Scratch* scratch) const {
  const Node& n = nodes_[index];
  switch (n.kind) {
    case QueryExpr::Kind::kAll:
      return true;
    case QueryExpr::Kind::kAnd:
      for (uint32_t c : n.children) {
        if (!Eval(c, video, scratch)) return false;
      }
      return true;
    case QueryExpr::Kind::kOr:
      for (uint32_t c : n.children) {
        if (Eval(c, video, scratch)) return true;
      }
      return false;
    case QueryExpr::Kind::kNot:
      return !Eval(n.children[0], video, scratch);
    case QueryExpr::Kind::kTerm:
      break;
  }
  const std::string* value = Value(n, video, scratch);
  if (value == nullptr) return false;
  if (n.op == QueryOp::kHas) return true;
  if (n.op == QueryOp::kEq || n.op == QueryOp::kIn) {
    return std::binary_search(n.set.begin(), n.set.end(), *value);
  }
  const auto tag = static_cast<uint8_t>((*value)[0]);
  if (tag < n.from || tag >= n.to) return false;
  switch (n.op) {
    case QueryOp::kNe:
      return *value != n.bound;
    case QueryOp::kLt:
      return *value < n.bound;
    case QueryOp::kLe:
      return *value <= n.bound;
    case QueryOp::kGt:
      return *value > n.bound;
    case QueryOp::kGe:
      return *value >= n.bound;
    default:
      return false;
  }
}

bool QueryProgram::Matches(const VideoFacts& video, Scratch* scratch, std::string* error) const {
  error->clear();
  scratch->ordered.assign(keys_.size() + 4, std::nullopt);
  if (!quoted_keys_.empty() &&
      !FindFirstEntryValues(video.meta_data, quoted_keys_, &scratch->values, error)) {
    return false;
  }
  return Eval(0, video, scratch);
}

}  // namespace gulpdb::engine
