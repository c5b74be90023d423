#include "engine/json/json_text.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "gulpdb/error.h"
#include "gulpdb/json.h"
#include "util/utf8.h"

namespace gulpdb::engine {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// How a byte inside a string is treated. The order matters: classes up to
// kDel need no attention while validating, classes up to kPlain none while
// re-emitting.
enum CharClass : uint8_t {
  kPlain = 0,  // printable ASCII other than '"' and '\\': copied as is
  kDel,        // 0x7f: valid input, but Python writes it as \u007f
  kQuote,
  kBackslash,
  kControl,  // 0x00..0x1f: must be escaped in JSON
  kHigh,     // 0x80..0xff: part of a UTF-8 sequence
};

constexpr std::array<uint8_t, 256> MakeClassTable() {
  std::array<uint8_t, 256> table{};
  for (int c = 0; c < 256; ++c) {
    uint8_t cls = kPlain;
    if (c < 0x20) {
      cls = kControl;
    } else if (c == '"') {
      cls = kQuote;
    } else if (c == '\\') {
      cls = kBackslash;
    } else if (c == 0x7f) {
      cls = kDel;
    } else if (c >= 0x80) {
      cls = kHigh;
    }
    table[static_cast<size_t>(c)] = cls;
  }
  return table;
}
constexpr std::array<uint8_t, 256> kClass = MakeClassTable();

inline uint8_t Byte(char c) { return static_cast<uint8_t>(c); }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Names a byte for an error message: 'x' when printable, else 0xNN.
std::string DescribeByte(char c) {
  const uint8_t b = Byte(c);
  if (b >= 0x21 && b <= 0x7e) return std::string("'") + c + "'";
  std::string s = "0x";
  s += kHexDigits[b >> 4];
  s += kHexDigits[b & 0xf];
  return s;
}

// "invalid escape \q in a string". A byte that is not printable is named,
// not copied: a NUL would cut the message where it is read as a C string.
std::string InvalidEscape(char e) {
  const uint8_t b = Byte(e);
  if (b >= 0x21 && b <= 0x7e) return "invalid escape \\" + std::string(1, e) + " in a string";
  return "invalid escape: a backslash before byte " + DescribeByte(e) + " in a string";
}

void AppendEscapedUnit(uint32_t unit, std::string* out) {
  char buf[6] = {'\\', 'u'};
  for (int i = 0; i < 4; ++i) buf[2 + i] = kHexDigits[(unit >> (12 - 4 * i)) & 0xf];
  out->append(buf, sizeof(buf));
}

// Appends one UTF-16 code unit the way Python's ensure_ascii encoder writes it.
void AppendPythonUnit(uint32_t unit, std::string* out) {
  switch (unit) {
    case '"':
      out->append("\\\"");
      return;
    case '\\':
      out->append("\\\\");
      return;
    case '\n':
      out->append("\\n");
      return;
    case '\r':
      out->append("\\r");
      return;
    case '\t':
      out->append("\\t");
      return;
    case '\b':
      out->append("\\b");
      return;
    case '\f':
      out->append("\\f");
      return;
    default:
      break;
  }
  if (unit >= 0x20 && unit <= 0x7e) {
    out->push_back(static_cast<char>(unit));
  } else {
    AppendEscapedUnit(unit, out);
  }
}

// Appends a code point above 0x7f as Python does: \uXXXX, or a surrogate pair.
void AppendPythonCodePoint(uint32_t cp, std::string* out) {
  if (cp >= 0x10000) {
    cp -= 0x10000;
    AppendEscapedUnit(0xd800 + (cp >> 10), out);
    AppendEscapedUnit(0xdc00 + (cp & 0x3ff), out);
  } else {
    AppendEscapedUnit(cp, out);
  }
}

using Step = util::Utf8Step;
using util::AppendUtf8;
using util::DecodeUtf8;

std::string InvalidUtf8Message(std::string_view text, size_t pos) {
  return "invalid UTF-8 sequence starting with byte " + DescribeByte(text[pos]);
}

// Reads the four hex digits of a \u escape whose backslash is at text[pos].
// On kInvalid, *bad is the offset of the offending character.
Step ParseUnicodeEscape(std::string_view text, size_t pos, uint32_t* unit, size_t* bad) {
  uint32_t value = 0;
  for (size_t k = 2; k < 6; ++k) {
    if (pos + k >= text.size()) return Step::kTruncated;
    const int h = HexValue(text[pos + k]);
    if (h < 0) {
      *bad = pos + k;
      return Step::kInvalid;
    }
    value = (value << 4) | static_cast<uint32_t>(h);
  }
  *unit = value;
  return Step::kOk;
}

// The members of each open object while ValueScanner emits: where each key
// and value stand in the emitted text, innermost object last, so that a
// repeated key can be merged as Python merges it when the object closes.
class OpenObjects {
 public:
  void Reset() { open_ = 0; }
  // An object opened; its member list is reused from an earlier one.
  void Open() {
    if (open_ == objects_.size()) objects_.emplace_back();
    objects_[open_].clear();
    ++open_;
  }
  void Close() { --open_; }
  // The innermost object's next key, quoted, at [key_begin, key_end) ...
  void AddKey(size_t key_begin, size_t key_end) {
    objects_[open_ - 1].push_back(Member{key_begin, key_end, 0});
  }
  // ... and its value, after ": ", ending at value_end.
  void EndValue(size_t value_end) { objects_[open_ - 1].back().value_end = value_end; }

  // Python's json.loads keeps the last value of a repeated key at the place
  // where the key first appeared: rewrites the innermost object's body in
  // *out (the text emitted so far) accordingly.
  void MergeDuplicateKeys(std::string* out) {
    std::vector<Member>& members = objects_[open_ - 1];
    const size_t n = members.size();
    if (n < 2) return;
    auto key = [out](const Member& m) {
      return std::string_view(*out).substr(m.key_begin, m.key_end - m.key_begin);
    };
    // Canonical text is a one-to-one form of the decoded key, so comparing
    // it compares the keys. Objects are small in practice: pairwise first.
    bool duplicates = false;
    if (n <= 16) {
      for (size_t i = 1; i < n && !duplicates; ++i) {
        for (size_t j = 0; j < i && !duplicates; ++j) {
          duplicates = key(members[i]) == key(members[j]);
        }
      }
      if (!duplicates) return;
    }
    // Sorted by key, equal keys in document order.
    order_.resize(n);
    for (size_t i = 0; i < n; ++i) order_[i] = i;
    std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
      const int c = key(members[a]).compare(key(members[b]));
      return c < 0 || (c == 0 && a < b);
    });
    // winner[i]: for the first occurrence i of a key, the index of its last
    // occurrence; n for the later occurrences, which are dropped.
    std::vector<size_t> winner(n, n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && key(members[order_[j + 1]]) == key(members[order_[i]])) ++j;
      winner[order_[i]] = order_[j];
      duplicates = duplicates || j > i;
      i = j + 1;
    }
    if (!duplicates) return;
    std::string body;
    for (size_t i = 0; i < n; ++i) {
      if (winner[i] == n) continue;
      if (!body.empty()) body.append(", ");
      const Member& last = members[winner[i]];
      body.append(key(members[i]));
      body.append(": ");
      body.append(*out, last.key_end + 2, last.value_end - last.key_end - 2);
    }
    out->resize(members.front().key_begin);
    out->append(body);
  }

 private:
  struct Member {
    size_t key_begin;  // offsets into the emitted text: the quoted key ...
    size_t key_end;
    size_t value_end;  // ... and, after ": ", its value
  };

  std::vector<std::vector<Member>> objects_;
  size_t open_ = 0;
  std::vector<size_t> order_;
};

// Validates one JSON value, and when kEmit re-emits it in Python's form into
// *out. Iterative, so hostile nesting costs a bit per level, not stack frames.
template <bool kEmit>
class ValueScanner {
 public:
  ValueScanner(std::string_view text, bool input_complete, std::string* out)
      : text_(text), input_complete_(input_complete), out_(out) {}

  JsonScanResult Scan(size_t pos) {
    pos_ = pos;
    depth_ = 0;
    objects_.Reset();
    result_ = JsonScanResult{};
    if (Run()) {
      result_.status = JsonScanStatus::kOk;
      result_.pos = pos_;
    }
    return std::move(result_);
  }

 private:
  enum class State { kValue, kKey, kAfterValue };

  bool Fail(size_t at, std::string message) {
    result_.status = JsonScanStatus::kInvalid;
    result_.pos = at;
    result_.error = std::move(message);
    return false;
  }
  bool Truncated() {
    result_.status = JsonScanStatus::kTruncated;
    result_.pos = text_.size();
    return false;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Cur() const { return text_[pos_]; }

  void Emit(char c) {
    if constexpr (kEmit) out_->push_back(c);
  }
  void Emit(std::string_view s) {
    if constexpr (kEmit) out_->append(s.data(), s.size());
  }

  void SkipSpace() {
    while (pos_ < text_.size() && IsJsonSpace(text_[pos_])) ++pos_;
  }

  bool Run() {
    State state = State::kValue;
    for (;;) {
      switch (state) {
        case State::kValue:
          if (AtEnd()) return Truncated();
          switch (Cur()) {
            case '{':
            case '[': {
              const bool is_object = Cur() == '{';
              if (!Push(is_object)) return false;
              Emit(Cur());
              ++pos_;
              SkipSpace();
              if (AtEnd()) return Truncated();
              if (Cur() == (is_object ? '}' : ']')) {
                Emit(Cur());
                ++pos_;
                Pop();
                state = State::kAfterValue;
              } else {
                state = is_object ? State::kKey : State::kValue;
              }
              break;
            }
            case '"':
              if (!ScanString()) return false;
              state = State::kAfterValue;
              break;
            case 't':
              if (!ScanLiteral("true")) return false;
              state = State::kAfterValue;
              break;
            case 'f':
              if (!ScanLiteral("false")) return false;
              state = State::kAfterValue;
              break;
            case 'n':
              if (!ScanLiteral("null")) return false;
              state = State::kAfterValue;
              break;
            case 'N':
              if (!ScanLiteral("NaN")) return false;
              state = State::kAfterValue;
              break;
            case 'I':
              if (!ScanLiteral("Infinity")) return false;
              state = State::kAfterValue;
              break;
            default:
              if (Cur() != '-' && !IsDigit(Cur())) {
                return Fail(pos_, "expected a JSON value, found " + DescribeByte(Cur()));
              }
              if (!ScanNumber()) return false;
              state = State::kAfterValue;
              break;
          }
          break;

        case State::kKey: {
          if (AtEnd()) return Truncated();
          if (Cur() != '"') {
            return Fail(pos_, "expected a string key, found " + DescribeByte(Cur()));
          }
          size_t key_begin = 0;
          if constexpr (kEmit) key_begin = out_->size();
          if (!ScanString()) return false;
          if constexpr (kEmit) objects_.AddKey(key_begin, out_->size());
          SkipSpace();
          if (AtEnd()) return Truncated();
          if (Cur() != ':') {
            return Fail(pos_, "expected ':' after an object key, found " + DescribeByte(Cur()));
          }
          ++pos_;
          Emit(": ");
          SkipSpace();
          state = State::kValue;
          break;
        }

        case State::kAfterValue: {
          if (depth_ == 0) return true;
          const bool in_object = TopIsObject();
          if constexpr (kEmit) {
            if (in_object) objects_.EndValue(out_->size());
          }
          SkipSpace();
          if (AtEnd()) return Truncated();
          const char c = Cur();
          if (c == ',') {
            ++pos_;
            Emit(", ");
            SkipSpace();
            state = in_object ? State::kKey : State::kValue;
          } else if (c == (in_object ? '}' : ']')) {
            if constexpr (kEmit) {
              if (in_object) objects_.MergeDuplicateKeys(out_);
            }
            Emit(c);
            ++pos_;
            Pop();
          } else {
            return Fail(pos_,
                        std::string(in_object ? "expected ',' or '}' after an object member"
                                              : "expected ',' or ']' after an array element") +
                            ", found " + DescribeByte(c));
          }
          break;
        }
      }
    }
  }

  bool Push(bool is_object) {
    if (depth_ >= kMaxJsonDepth) {
      return Fail(pos_, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    const auto d = static_cast<size_t>(depth_);
    const uint64_t bit = uint64_t{1} << (d % 64);
    if (is_object) {
      kinds_[d / 64] |= bit;
      if constexpr (kEmit) objects_.Open();
    } else {
      kinds_[d / 64] &= ~bit;
    }
    ++depth_;
    return true;
  }

  void Pop() {
    if constexpr (kEmit) {
      if (TopIsObject()) objects_.Close();
    }
    --depth_;
  }

  bool TopIsObject() const {
    const auto d = static_cast<size_t>(depth_ - 1);
    return ((kinds_[d / 64] >> (d % 64)) & 1u) != 0;
  }

  bool ScanLiteral(std::string_view word) {
    for (size_t k = 0; k < word.size(); ++k) {
      if (pos_ + k >= text_.size()) return Truncated();
      if (text_[pos_ + k] != word[k]) {
        return Fail(pos_, "invalid literal (expected " + std::string(word) + ")");
      }
    }
    Emit(word);
    pos_ += word.size();
    return true;
  }

  // Python's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? or -Infinity.
  // Kept verbatim: its value is never computed.
  bool ScanNumber() {
    const size_t start = pos_;
    if (Cur() == '-') {
      ++pos_;
      if (AtEnd()) return Truncated();
      if (Cur() == 'I') {
        Emit('-');
        return ScanLiteral("Infinity");
      }
    }
    if (!ScanDigits("expected a digit")) return false;
    const size_t int_begin = text_[start] == '-' ? start + 1 : start;
    if (text_[int_begin] == '0' && pos_ - int_begin > 1) {
      return Fail(start, "leading zeros are not allowed in a number");
    }
    if (AtEnd()) return EndNumber(start);
    if (Cur() == '.') {
      ++pos_;
      if (!ScanDigits("expected a digit after the decimal point")) return false;
      if (AtEnd()) return EndNumber(start);
    }
    if (Cur() == 'e' || Cur() == 'E') {
      ++pos_;
      if (AtEnd()) return Truncated();
      if (Cur() == '+' || Cur() == '-') ++pos_;
      if (!ScanDigits("expected a digit in the exponent")) return false;
      if (AtEnd()) return EndNumber(start);
    }
    Emit(text_.substr(start, pos_ - start));
    return true;
  }

  // A number that runs into the end of the text is complete only when the
  // text is all there is.
  bool EndNumber(size_t start) {
    if (!input_complete_) return Truncated();
    Emit(text_.substr(start, pos_ - start));
    return true;
  }

  // One or more digits.
  bool ScanDigits(const char* what) {
    if (AtEnd()) return Truncated();
    if (!IsDigit(Cur())) return Fail(pos_, std::string(what) + ", found " + DescribeByte(Cur()));
    do {
      ++pos_;
    } while (pos_ < text_.size() && IsDigit(text_[pos_]));
    return true;
  }

  bool ScanString() {
    Emit('"');
    ++pos_;
    const char* data = text_.data();
    const size_t size = text_.size();
    for (;;) {
      // The common case: a run of bytes that need nothing.
      const size_t run_begin = pos_;
      if constexpr (kEmit) {
        while (pos_ < size && kClass[Byte(data[pos_])] == kPlain) ++pos_;
        out_->append(data + run_begin, pos_ - run_begin);
      } else {
        while (pos_ < size && kClass[Byte(data[pos_])] <= kDel) ++pos_;
      }
      if (pos_ >= size) return Truncated();
      switch (kClass[Byte(data[pos_])]) {
        case kQuote:
          Emit('"');
          ++pos_;
          return true;
        case kBackslash:
          if (!ScanEscape()) return false;
          break;
        case kControl:
          return Fail(pos_, "control character " + DescribeByte(data[pos_]) +
                                " in a string (must be escaped)");
        case kDel:  // only reached when emitting
          Emit("\\u007f");
          ++pos_;
          break;
        default: {  // kHigh
          uint32_t cp = 0;
          size_t len = 0;
          switch (DecodeUtf8(text_, pos_, &cp, &len)) {
            case Step::kTruncated:
              return Truncated();
            case Step::kInvalid:
              return Fail(pos_, InvalidUtf8Message(text_, pos_));
            case Step::kOk:
              break;
          }
          if constexpr (kEmit) AppendPythonCodePoint(cp, out_);
          pos_ += len;
          break;
        }
      }
    }
  }

  // At a backslash inside a string.
  bool ScanEscape() {
    if (pos_ + 1 >= text_.size()) return Truncated();
    const char e = text_[pos_ + 1];
    switch (e) {
      case '"':
        Emit("\\\"");
        break;
      case '\\':
        Emit("\\\\");
        break;
      case '/':
        Emit('/');
        break;  // Python never escapes '/'
      case 'b':
        Emit("\\b");
        break;
      case 'f':
        Emit("\\f");
        break;
      case 'n':
        Emit("\\n");
        break;
      case 'r':
        Emit("\\r");
        break;
      case 't':
        Emit("\\t");
        break;
      case 'u': {
        uint32_t unit = 0;
        size_t bad = 0;
        switch (ParseUnicodeEscape(text_, pos_, &unit, &bad)) {
          case Step::kTruncated:
            return Truncated();
          case Step::kInvalid:
            return Fail(bad, "invalid \\u escape: expected 4 hex digits, found " +
                                 DescribeByte(text_[bad]));
          case Step::kOk:
            break;
        }
        // Surrogates, paired or not, stay escaped (lowercase), which is what
        // Python's decode-then-encode round trip gives.
        if constexpr (kEmit) AppendPythonUnit(unit, out_);
        pos_ += 6;
        return true;
      }
      default:
        return Fail(pos_, InvalidEscape(e));
    }
    pos_ += 2;
    return true;
  }

  std::string_view text_;
  bool input_complete_;
  std::string* out_;
  size_t pos_ = 0;
  int depth_ = 0;
  // Bit d set: the container at depth d is an object (else an array).
  uint64_t kinds_[(kMaxJsonDepth + 63) / 64] = {};
  OpenObjects objects_;  // emit mode only
  JsonScanResult result_;
};

[[noreturn]] void ThrowInvalid(const char* operation, size_t pos, const std::string& what) {
  throw InvalidArgumentError(std::string(operation) + ": byte " + std::to_string(pos) + ": " +
                             what);
}

}  // namespace

JsonScanResult ScanJsonValue(std::string_view text, size_t pos, bool input_complete) {
  ValueScanner<false> scanner(text, input_complete, nullptr);
  return scanner.Scan(pos);
}

std::string NormalizeJson(std::string_view text) {
  constexpr const char* kOperation = "parse json";
  if (text.substr(0, 3) == "\xef\xbb\xbf") {
    ThrowInvalid(kOperation, 0, "a UTF-8 byte order mark is not allowed");
  }
  std::string out;
  out.reserve(text.size());
  ValueScanner<true> scanner(text, /*input_complete=*/true, &out);
  const JsonScanResult result = scanner.Scan(SkipJsonSpace(text, 0));
  switch (result.status) {
    case JsonScanStatus::kTruncated:
      ThrowInvalid(kOperation, text.size(), "unexpected end of input");
    case JsonScanStatus::kInvalid:
      ThrowInvalid(kOperation, result.pos, result.error);
    case JsonScanStatus::kOk:
      break;
  }
  const size_t end = SkipJsonSpace(text, result.pos);
  if (end != text.size()) {
    ThrowInvalid(kOperation, end,
                 "unexpected " + DescribeByte(text[end]) + " after the JSON value");
  }
  return out;
}

void AppendPythonJsonString(std::string_view utf8, std::string* out) {
  const size_t old_size = out->size();
  out->push_back('"');
  const char* data = utf8.data();
  size_t pos = 0;
  while (pos < utf8.size()) {
    const size_t run_begin = pos;
    while (pos < utf8.size() && kClass[Byte(data[pos])] == kPlain) ++pos;
    out->append(data + run_begin, pos - run_begin);
    if (pos >= utf8.size()) break;
    const uint8_t b = Byte(data[pos]);
    if (b < 0x80) {
      AppendPythonUnit(b, out);
      ++pos;
      continue;
    }
    uint32_t cp = 0;
    size_t len = 0;
    if (DecodeUtf8(utf8, pos, &cp, &len) != Step::kOk) {
      out->resize(old_size);
      ThrowInvalid("encode json string", pos, InvalidUtf8Message(utf8, pos));
    }
    AppendPythonCodePoint(cp, out);
    pos += len;
  }
  out->push_back('"');
}

std::string PrintableBytes(std::string_view bytes, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max_bytes; ++i) {
    const uint8_t b = Byte(bytes[i]);
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out += static_cast<char>(b);
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    }
  }
  if (bytes.size() > max_bytes) out += "...";
  return out;
}

std::string PythonJsonString(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size() + 2);
  AppendPythonJsonString(utf8, &out);
  return out;
}

JsonScanResult ScanJsonString(std::string_view text, size_t pos, std::string* utf8,
                              bool lone_surrogates) {
  JsonScanResult result;
  auto fail = [&result](size_t at, std::string message) {
    result.status = JsonScanStatus::kInvalid;
    result.pos = at;
    result.error = std::move(message);
    return std::move(result);
  };
  auto truncated = [&result, &text]() {
    result.status = JsonScanStatus::kTruncated;
    result.pos = text.size();
    return std::move(result);
  };
  utf8->clear();
  if (pos >= text.size()) return truncated();
  if (text[pos] != '"') return fail(pos, "expected a string, found " + DescribeByte(text[pos]));
  ++pos;
  const char* data = text.data();
  for (;;) {
    const size_t run_begin = pos;
    while (pos < text.size() && kClass[Byte(data[pos])] <= kDel) ++pos;
    utf8->append(data + run_begin, pos - run_begin);
    if (pos >= text.size()) return truncated();
    switch (kClass[Byte(data[pos])]) {
      case kQuote:
        result.pos = pos + 1;
        return result;
      case kControl:
        return fail(
            pos, "control character " + DescribeByte(data[pos]) + " in a string (must be escaped)");
      case kBackslash: {
        if (pos + 1 >= text.size()) return truncated();
        const char e = data[pos + 1];
        char plain = 0;
        switch (e) {
          case '"':
            plain = '"';
            break;
          case '\\':
            plain = '\\';
            break;
          case '/':
            plain = '/';
            break;
          case 'b':
            plain = '\b';
            break;
          case 'f':
            plain = '\f';
            break;
          case 'n':
            plain = '\n';
            break;
          case 'r':
            plain = '\r';
            break;
          case 't':
            plain = '\t';
            break;
          case 'u':
            break;
          default: {
            return fail(pos, InvalidEscape(e));
          }
        }
        if (e != 'u') {
          utf8->push_back(plain);
          pos += 2;
          break;
        }
        uint32_t unit = 0;
        size_t bad = 0;
        switch (ParseUnicodeEscape(text, pos, &unit, &bad)) {
          case Step::kTruncated:
            return truncated();
          case Step::kInvalid:
            return fail(
                bad, "invalid \\u escape: expected 4 hex digits, found " + DescribeByte(data[bad]));
          case Step::kOk:
            break;
        }
        const std::string escape(text.substr(pos, 6));
        if (unit >= 0xdc00 && unit <= 0xdfff && !lone_surrogates) {
          return fail(pos, "lone surrogate " + escape +
                               " (a low surrogate without a high one cannot be UTF-8)");
        }
        if (unit >= 0xd800 && unit <= 0xdbff) {
          // Must be followed by \u and a low surrogate (else a lone one).
          const size_t next = pos + 6;
          const std::string lone =
              "lone surrogate " + escape + " (not followed by a low surrogate, cannot be UTF-8)";
          if (next >= text.size()) return truncated();
          bool paired = data[next] == '\\';
          if (paired) {
            if (next + 1 >= text.size()) return truncated();
            paired = data[next + 1] == 'u';
          }
          uint32_t low = 0;
          if (paired) {
            switch (ParseUnicodeEscape(text, next, &low, &bad)) {
              case Step::kTruncated:
                return truncated();
              case Step::kInvalid:
                return fail(bad, "invalid \\u escape: expected 4 hex digits, found " +
                                     DescribeByte(data[bad]));
              case Step::kOk:
                break;
            }
            paired = low >= 0xdc00 && low <= 0xdfff;
          }
          if (paired) {
            unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
            pos += 6;
          } else if (!lone_surrogates) {
            return fail(pos, lone);
          }
        }
        AppendUtf8(unit, utf8);  // a lone surrogate (when allowed): its WTF-8 bytes
        pos += 6;
        break;
      }
      default: {  // kHigh
        uint32_t cp = 0;
        size_t len = 0;
        switch (DecodeUtf8(text, pos, &cp, &len)) {
          case Step::kTruncated:
            return truncated();
          case Step::kInvalid:
            return fail(pos, InvalidUtf8Message(text, pos));
          case Step::kOk:
            break;
        }
        utf8->append(data + pos, len);
        pos += len;
        break;
      }
    }
  }
}

std::string DecodeJsonString(std::string_view quoted_token) {
  constexpr const char* kOperation = "decode json string";
  std::string utf8;
  const JsonScanResult result = ScanJsonString(quoted_token, 0, &utf8);
  switch (result.status) {
    case JsonScanStatus::kTruncated:
      ThrowInvalid(kOperation, quoted_token.size(),
                   "unexpected end of input (unterminated string)");
    case JsonScanStatus::kInvalid:
      ThrowInvalid(kOperation, result.pos, result.error);
    case JsonScanStatus::kOk:
      break;
  }
  if (result.pos != quoted_token.size()) {
    ThrowInvalid(kOperation, result.pos, "unexpected characters after the closing quote");
  }
  return utf8;
}

std::vector<JsonMember> JsonObjectMembers(std::string_view text, size_t pos, bool lone_surrogates) {
  const auto skip_space = [&](size_t at) {
    while (at < text.size() &&
           (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) {
      ++at;
    }
    return at;
  };
  std::vector<JsonMember> members;
  pos = skip_space(pos + 1);  // past '{'
  while (text[pos] != '}') {
    JsonMember m;
    m.key_pos = pos;
    const JsonScanResult key = ScanJsonString(text, pos, &m.key, lone_surrogates);
    if (key.status == JsonScanStatus::kOk) {
      pos = key.pos;
    } else {
      m.key.clear();
      pos = ScanJsonValue(text, pos, true).pos;
    }
    pos = skip_space(skip_space(pos) + 1);  // past ':'
    m.value_pos = pos;
    m.value_end = ScanJsonValue(text, pos, true).pos;
    pos = skip_space(m.value_end);
    members.push_back(std::move(m));
    if (text[pos] == ',') pos = skip_space(pos + 1);
  }
  return members;
}

size_t SkipJsonSpace(std::string_view text, size_t pos) {
  while (pos < text.size() && IsJsonSpace(text[pos])) ++pos;
  return pos;
}

}  // namespace gulpdb::engine

namespace gulpdb {

std::string PythonJsonString(std::string_view utf8) { return engine::PythonJsonString(utf8); }

std::string FirstMetaEntry(std::string_view meta_data) {
  const auto skip = [&](size_t at) {
    while (at < meta_data.size() && (meta_data[at] == ' ' || meta_data[at] == '\t' ||
                                     meta_data[at] == '\n' || meta_data[at] == '\r')) {
      ++at;
    }
    return at;
  };
  const size_t pos = skip(0);
  const engine::JsonScanResult all = engine::ScanJsonValue(meta_data, pos, true);
  if (all.status != engine::JsonScanStatus::kOk || meta_data[pos] != '[' ||
      skip(all.pos) != meta_data.size()) {
    throw InvalidArgumentError("read meta_data: not a JSON list");
  }
  const size_t first = skip(pos + 1);
  if (meta_data[first] == ']') return "null";
  const size_t end = engine::ScanJsonValue(meta_data, first, true).pos;
  return std::string(meta_data.substr(first, end - first));
}

std::string JsonValueFromArgument(std::string_view text) {
  std::string as_string = engine::PythonJsonString(text);  // throws for bad UTF-8
  try {
    return engine::NormalizeJson(text);
  } catch (const InvalidArgumentError&) {
    return as_string;
  }
}

}  // namespace gulpdb
