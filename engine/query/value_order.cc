#include "engine/query/value_order.h"

#include "engine/json/json_text.h"
#include "engine/query/meta_value.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view Trim(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && IsSpace(text[begin])) ++begin;
  while (end > begin && IsSpace(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

// The string's bytes with 0x00 written as 0x00 0xff, then 0x00 0x01: no
// encoded string is a prefix of another, and the order of the bytes is kept.
void AppendOrderedText(std::string_view text, std::string* out) {
  out->reserve(out->size() + text.size() + 2);
  for (const char c : text) {
    out->push_back(c);
    if (c == '\0') out->push_back('\xff');
  }
  out->push_back('\0');
  out->push_back('\x01');
}

// A number in canonical form (meta_value.h): "0", "#<text>" or
// "[-]<digits>e<exponent>", digits without leading or trailing zeros.
std::string OrderedNumber(const std::string& canonical) {
  std::string out;
  if (canonical == "0") return std::string(1, static_cast<char>(kOrderZero));
  if (canonical[0] == '#') {
    out.push_back(static_cast<char>(kOrderNumberText));
    out.append(canonical, 1, std::string::npos);
    out.push_back('\0');
    return out;
  }
  const bool negative = canonical[0] == '-';
  const size_t e = canonical.find('e');
  const size_t first = negative ? 1 : 0;
  const std::string_view digits(canonical.data() + first, e - first);
  const int64_t exponent = std::stoll(canonical.substr(e + 1));
  // The power of ten of the first digit: the number is 0.d1d2... * 10^(lead + 1).
  // |exponent| < 10^17 + the text's length, so this stays inside int64.
  const int64_t lead = exponent + static_cast<int64_t>(digits.size()) - 1;
  std::string body;
  body.reserve(8 + digits.size() + 1);
  const uint64_t biased = static_cast<uint64_t>(lead) ^ (uint64_t{1} << 63);
  for (int shift = 56; shift >= 0; shift -= 8) {
    body.push_back(static_cast<char>((biased >> shift) & 0xff));
  }
  body.append(digits);
  body.push_back('\0');  // below every digit: 1.5 before 1.51
  out.push_back(static_cast<char>(negative ? kOrderNegative : kOrderPositive));
  if (negative) {
    for (char& c : body) c = static_cast<char>(0xff - static_cast<uint8_t>(c));
  }
  out += body;
  return out;
}

}  // namespace

std::string OrderedMetaValue(std::string_view json) {
  const std::string_view token = Trim(json);
  if (token.empty()) throw InvalidArgumentError("parse json: byte 0: no value");
  switch (token[0]) {
    case '"': {
      std::string text;
      const JsonScanResult r = ScanJsonString(token, 0, &text, /*lone_surrogates=*/true);
      if (r.status != JsonScanStatus::kOk || r.pos != token.size()) {
        CanonicalMetaValue(json);  // throws the JSON reader's message
        throw InvalidArgumentError("parse json: byte 0: not a string");
      }
      return OrderedString(text);
    }
    case '[':
    case '{': {
      std::string out(1, static_cast<char>(token[0] == '[' ? kOrderList : kOrderObject));
      out += CanonicalMetaValue(token);  // ASCII without NUL (escaped as Python escapes)
      out.push_back('\0');
      return out;
    }
    default:
      break;
  }
  const std::string canonical = CanonicalMetaValue(token);  // validates
  if (canonical == "null") return std::string(1, static_cast<char>(kOrderNull));
  if (canonical == "true") return std::string(1, static_cast<char>(kOrderTrue));
  if (canonical == "false") return std::string(1, static_cast<char>(kOrderFalse));
  if (canonical == "NaN") return std::string(1, static_cast<char>(kOrderNaN));
  if (canonical == "Infinity") return std::string(1, static_cast<char>(kOrderInfinity));
  if (canonical == "-Infinity") return std::string(1, static_cast<char>(kOrderMinusInfinity));
  return OrderedNumber(canonical);
}

std::string OrderedString(std::string_view text) {
  std::string out(1, static_cast<char>(kOrderString));
  AppendOrderedText(text, &out);
  return out;
}

std::string OrderedInteger(uint64_t n) {
  if (n == 0) return std::string(1, static_cast<char>(kOrderZero));
  std::string digits = std::to_string(n);
  size_t zeros = 0;
  while (digits[digits.size() - 1 - zeros] == '0') ++zeros;
  digits.resize(digits.size() - zeros);
  return OrderedNumber(digits + "e" + std::to_string(zeros));
}

ValueType OrderedType(std::string_view ordered) {
  const uint8_t tag = ordered.empty() ? 0 : static_cast<uint8_t>(ordered[0]);
  if (tag == kOrderNull) return ValueType::kNull;
  if (tag == kOrderFalse || tag == kOrderTrue) return ValueType::kBoolean;
  if (tag >= kOrderMinusInfinity && tag <= kOrderNumberText) return ValueType::kNumber;
  if (tag == kOrderString) return ValueType::kString;
  if (tag == kOrderList) return ValueType::kList;
  return ValueType::kObject;
}

bool InOrderedRange(std::string_view ordered) {
  uint8_t from = 0, to = 0;
  if (!RangeTags(ordered, &from, &to)) return false;
  const auto tag = static_cast<uint8_t>(ordered[0]);
  return tag >= from && tag < to;
}

bool RangeTags(std::string_view ordered, uint8_t* from, uint8_t* to) {
  switch (OrderedType(ordered)) {
    case ValueType::kNumber:
      *from = kOrderMinusInfinity;
      *to = kOrderNaN;
      return true;
    case ValueType::kString:
      *from = kOrderString;
      *to = kOrderString + 1;
      return true;
    default:
      return false;
  }
}

void TypeTags(std::string_view ordered, uint8_t* from, uint8_t* to) {
  switch (OrderedType(ordered)) {
    case ValueType::kNull:
      *from = kOrderNull;
      *to = kOrderNull + 1;
      return;
    case ValueType::kBoolean:
      *from = kOrderFalse;
      *to = kOrderTrue + 1;
      return;
    case ValueType::kNumber:
      *from = kOrderMinusInfinity;
      *to = kOrderNumberText + 1;
      return;
    case ValueType::kString:
      *from = kOrderString;
      *to = kOrderString + 1;
      return;
    case ValueType::kList:
      *from = kOrderList;
      *to = kOrderList + 1;
      return;
    case ValueType::kObject:
      *from = kOrderObject;
      *to = kOrderObject + 1;
      return;
  }
}

}  // namespace gulpdb::engine
