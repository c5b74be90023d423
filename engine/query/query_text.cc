#include "engine/query/query_text.h"

#include <algorithm>
#include <vector>

#include "engine/json/json_text.h"
#include "engine/query/expr.h"
#include "gulpdb/error.h"
#include "util/utf8.h"

namespace gulpdb::engine {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

bool IsQueryKeyword(std::string_view word) {
  static const char* const kKeywords[] = {"and", "or", "not", "in", "has", "true", "false", "null"};
  const std::string lower = Lower(word);
  return std::any_of(std::begin(kKeywords), std::end(kKeywords),
                     [&](const char* k) { return lower == k; });
}

void QueryText::Fail(size_t at, const std::string& what) const {
  // Control bytes (a NUL from the JSON reader's "invalid escape \<NUL>")
  // would cut or garble the message: shown as \xNN.
  std::string shown;
  for (const char c : what) {
    const auto b = static_cast<uint8_t>(c);
    if (b < 0x20 || b == 0x7f) {
      shown += PrintableBytes(std::string_view(&c, 1), 1);
    } else {
      shown.push_back(c);
    }
  }
  throw QuerySyntaxError("parse query: byte " + std::to_string(at) + ": " + shown + "\n" +
                         CaretLines(t_, at));
}

void QueryText::Skip() {
  while (i_ < t_.size() && IsSpace(t_[i_])) ++i_;
}

// What stands at i_, for messages: a word, a symbol or "the end".
std::string QueryText::Found() const {
  if (i_ >= t_.size()) return "the end of the query";
  size_t end = i_;
  if (IsNameChar(t_[i_])) {
    while (end < t_.size() && IsNameChar(t_[end])) ++end;
  } else {
    end = i_ + std::max<size_t>(1, util::Utf8SequenceLength(t_, i_));
  }
  return "'" + PrintableBytes(t_.substr(i_, std::min<size_t>(end - i_, 40)), 40) + "'";
}

// The keyword `word` (any case) at i_, not followed by a name character.
bool QueryText::AtKeyword(std::string_view word) const {
  if (i_ + word.size() > t_.size()) return false;
  if (Lower(t_.substr(i_, word.size())) != word) return false;
  return i_ + word.size() == t_.size() || !IsNameChar(t_[i_ + word.size()]);
}
bool QueryText::TakeKeyword(std::string_view word) {
  Skip();
  if (!AtKeyword(word)) return false;
  i_ += word.size();
  return true;
}

QueryValue QueryText::ReadValue() {
  Skip();
  QueryValue v;
  v.pos = i_;
  if (i_ >= t_.size()) Fail(i_, "expected a value, found the end of the query");
  const char c = t_[i_];
  if (c == '"' || c == '\'') return ReadString();
  if (c == '[' || c == '{') {
    const JsonScanResult r = ScanJsonValue(t_, i_, /*input_complete=*/true);
    if (r.status != JsonScanStatus::kOk) {
      Fail(r.status == JsonScanStatus::kInvalid ? r.pos : t_.size(),
           "a JSON list or object: " +
               (r.status == JsonScanStatus::kInvalid ? r.error : std::string("unterminated")));
    }
    v.text = std::string(t_.substr(i_, r.pos - i_));
    v.json = NormalizeJson(v.text);
    i_ = r.pos;
    return v;
  }
  if (c == '-' || IsDigit(c)) {
    if (t_.substr(i_, 9) == "-Infinity" && !NameCharAt(i_ + 9)) {
      i_ += 9;
      v.json = v.text = "-Infinity";
      return v;
    }
    return ReadNumber();
  }
  if (IsNameStart(c)) {
    size_t end = i_;
    while (end < t_.size() && IsNameChar(t_[end])) ++end;
    const std::string_view word = t_.substr(i_, end - i_);
    // Values are spelt as JSON (and Python's json) spells them: `TRUE` is
    // not one, so `--where flag=TRUE` keeps meaning the string.
    if (word == "true" || word == "false" || word == "null" || word == "NaN" ||
        word == "Infinity") {
      v.json = v.text = std::string(word);
    } else {
      const std::string lower = Lower(word);
      const bool literal = lower == "true" || lower == "false" || lower == "null";
      Fail(i_, "expected a value (a string in quotes, a number, true, false or null), found " +
                   Found() +
                   (literal                ? ": write " + lower
                    : IsQueryKeyword(word) ? std::string()
                                           : std::string(": quote a string value")));
    }
    i_ = end;
    return v;
  }
  Fail(i_,
       "expected a value (a string in quotes, a number, true, false or null), found " + Found());
}

bool QueryText::NameCharAt(size_t at) const {
  return at < t_.size() && (IsNameChar(t_[at]) || t_[at] == '.');
}

// A number as JSON writes it (so that `x=01` or `x=.5` are not numbers,
// and keep their meaning as --where strings).
QueryValue QueryText::ReadNumber() {
  QueryValue v;
  v.pos = i_;
  size_t j = i_;
  if (t_[j] == '-') ++j;
  if (j >= t_.size() || !IsDigit(t_[j])) Fail(j, "expected a digit, found " + FoundAt(j));
  if (t_[j] == '0') {
    ++j;
  } else {
    while (j < t_.size() && IsDigit(t_[j])) ++j;
  }
  if (j < t_.size() && t_[j] == '.') {
    ++j;
    if (j >= t_.size() || !IsDigit(t_[j])) Fail(j, "expected a digit after '.'");
    while (j < t_.size() && IsDigit(t_[j])) ++j;
  }
  if (j < t_.size() && (t_[j] == 'e' || t_[j] == 'E')) {
    ++j;
    if (j < t_.size() && (t_[j] == '+' || t_[j] == '-')) ++j;
    if (j >= t_.size() || !IsDigit(t_[j])) Fail(j, "expected a digit in the exponent");
    while (j < t_.size() && IsDigit(t_[j])) ++j;
  }
  if (NameCharAt(j)) Fail(j, "a number runs into " + FoundAt(j) + ": quote a string value");
  v.text = std::string(t_.substr(i_, j - i_));
  v.json = v.text;
  i_ = j;
  return v;
}

std::string QueryText::FoundAt(size_t at) const {
  QueryText there(t_);
  there.i_ = at;
  return there.Found();
}

// A string in '...' or "...": JSON's escapes, plus \' ; written into a
// JSON string token that the JSON reader then checks and normalises.
QueryValue QueryText::ReadString() {
  QueryValue v;
  v.pos = i_;
  const char quote = t_[i_++];
  std::string token = "\"";
  std::vector<size_t> origin = {v.pos};  // query offset of each token byte
  auto put = [&](std::string_view s, size_t from) {
    token.append(s);
    origin.insert(origin.end(), s.size(), from);
  };
  for (;;) {
    if (i_ >= t_.size()) Fail(v.pos, "unterminated string");
    const char c = t_[i_];
    if (c == quote) {
      ++i_;
      break;
    }
    if (c == '\\') {
      if (i_ + 1 >= t_.size()) Fail(v.pos, "unterminated string");
      const char e = t_[i_ + 1];
      if (e == '\'') {
        put("'", i_);
      } else {
        put(t_.substr(i_, 2), i_);  // the JSON reader judges the escape
      }
      i_ += 2;
      continue;
    }
    if (c == '"') {
      put("\\\"", i_);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      const auto b = static_cast<unsigned char>(c);
      put(std::string("\\u00") + kHex[b >> 4] + kHex[b & 15], i_);
    } else {
      put(t_.substr(i_, 1), i_);
    }
    ++i_;
  }
  put("\"", i_ - 1);
  try {
    v.json = NormalizeJson(token);
  } catch (const InvalidArgumentError& e) {
    // "parse json: byte N: what": point at the query's byte.
    const std::string message = e.what();
    size_t at = v.pos;
    std::string what = message;
    const std::string prefix = "parse json: byte ";
    if (message.compare(0, prefix.size(), prefix) == 0) {
      const size_t colon = message.find(": ", prefix.size());
      if (colon != std::string::npos) {
        const size_t n = std::stoul(message.substr(prefix.size(), colon - prefix.size()));
        at = origin[std::min(n, origin.size() - 1)];
        what = message.substr(colon + 2);
      }
    }
    Fail(at, "in a string: " + what);
  }
  return v;  // (a string has no other text to match)
}

}  // namespace gulpdb::engine
