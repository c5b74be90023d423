#include "engine/query/meta_value.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {
namespace {

// Exponents with more digits than this are kept as text: the arithmetic below
// stays inside int64 for any exponent under 10^17 and any text under 2^62 bytes.
constexpr size_t kMaxExponentDigits = 17;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Trim(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && IsSpace(text[begin])) ++begin;
  while (end > begin && IsSpace(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

// True when the string token is already in the form Python's json.dumps
// writes: printable ASCII and no escapes (the common case, kept as it is).
bool PlainString(std::string_view token) {
  for (size_t i = 1; i + 1 < token.size(); ++i) {
    const auto b = static_cast<uint8_t>(token[i]);
    if (b < 0x20 || b > 0x7e || b == '\\') return false;
  }
  return true;
}

// A valid JSON number token (checked by the caller) by its exact decimal
// value: [-]<digits without leading or trailing zeros>e<exponent>, or "0".
std::string CanonicalNumber(std::string_view t) {
  size_t i = 0;
  const bool negative = !t.empty() && t[0] == '-';
  if (negative) ++i;
  std::string digits;
  int64_t fraction_digits = 0;
  while (i < t.size() && IsDigit(t[i])) digits.push_back(t[i++]);
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && IsDigit(t[i])) {
      digits.push_back(t[i++]);
      ++fraction_digits;
    }
  }
  int64_t exponent = 0;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    bool exponent_negative = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) exponent_negative = t[i++] == '-';
    while (i < t.size() && t[i] == '0') ++i;
    const size_t first = i;
    while (i < t.size() && IsDigit(t[i])) ++i;
    if (i - first > kMaxExponentDigits) return "#" + std::string(t);  // by text (documented)
    for (size_t k = first; k < i; ++k) exponent = exponent * 10 + (t[k] - '0');
    if (exponent_negative) exponent = -exponent;
  }
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return "0";  // every zero, -0.0 included
  const size_t last = digits.find_last_not_of('0');
  exponent += static_cast<int64_t>(digits.size() - 1 - last) - fraction_digits;
  std::string out = negative ? "-" : "";
  out.append(digits, first, last - first + 1);
  out += 'e';
  out += std::to_string(exponent);
  return out;
}

// The canonical form of the value at (*pos) of `t`, text that NormalizeJson
// produced (valid, canonical strings, no duplicate keys), appended to `out`.
void CanonicalFromNormalized(std::string_view t, size_t* pos, std::string* out) {
  size_t& i = *pos;
  while (i < t.size() && IsSpace(t[i])) ++i;
  if (i >= t.size()) throw InvalidArgumentError("canonical json: unexpected end");
  const char c = t[i];
  if (c == '"') {
    const size_t begin = i++;
    while (i < t.size() && t[i] != '"') i += t[i] == '\\' ? size_t{2} : size_t{1};
    ++i;
    out->append(t.substr(begin, i - begin));
    return;
  }
  if (c == '[' || c == '{') {
    const bool object = c == '{';
    ++i;
    std::vector<std::pair<std::string, std::string>> members;  // (key token, value); arrays: key ""
    for (;;) {
      while (i < t.size() && IsSpace(t[i])) ++i;
      if (i < t.size() && t[i] == (object ? '}' : ']')) {
        ++i;
        break;
      }
      std::string key, value;
      if (object) {
        CanonicalFromNormalized(t, &i, &key);
        while (i < t.size() && (IsSpace(t[i]) || t[i] == ':')) ++i;
      }
      CanonicalFromNormalized(t, &i, &value);
      members.emplace_back(std::move(key), std::move(value));
      while (i < t.size() && IsSpace(t[i])) ++i;
      if (i < t.size() && t[i] == ',') ++i;
    }
    if (object) std::sort(members.begin(), members.end());
    out->push_back(object ? '{' : '[');
    for (size_t k = 0; k < members.size(); ++k) {
      if (k != 0) out->push_back(',');
      if (object) {
        out->append(members[k].first);
        out->push_back(':');
      }
      out->append(members[k].second);
    }
    out->push_back(object ? '}' : ']');
    return;
  }
  const size_t begin = i;
  while (i < t.size() && t[i] != ',' && t[i] != ']' && t[i] != '}' && !IsSpace(t[i])) ++i;
  const std::string_view token = t.substr(begin, i - begin);
  if (c == '-' ? (token.size() > 1 && IsDigit(token[1])) : IsDigit(c)) {
    out->append(CanonicalNumber(token));
  } else {
    out->append(token);  // true, false, null, NaN, Infinity, -Infinity
  }
}

[[noreturn]] void ThrowScan(const JsonScanResult& r, size_t offset, size_t size) {
  const size_t at = r.status == JsonScanStatus::kInvalid ? offset + r.pos : offset + size;
  throw InvalidArgumentError(
      "parse json: byte " + std::to_string(at) + ": " +
      (r.status == JsonScanStatus::kInvalid ? r.error : "unexpected end of input"));
}

}  // namespace

std::string CanonicalMetaValue(std::string_view json) {
  const std::string_view token = Trim(json);
  const size_t offset = static_cast<size_t>(token.data() - json.data());
  if (token.empty()) throw InvalidArgumentError("parse json: byte 0: no value");
  const char c = token[0];
  if (c == '[' || c == '{') {
    const std::string normalized = NormalizeJson(token);
    std::string out;
    size_t pos = 0;
    CanonicalFromNormalized(normalized, &pos, &out);
    return out;
  }
  const JsonScanResult r = ScanJsonValue(token, 0, /*input_complete=*/true);
  if (r.status != JsonScanStatus::kOk) ThrowScan(r, offset, token.size());
  if (r.pos != token.size()) {
    throw InvalidArgumentError("parse json: byte " + std::to_string(offset + r.pos) +
                               ": unexpected text after the JSON value");
  }
  if (c == '"') return PlainString(token) ? std::string(token) : NormalizeJson(token);
  if (c == '-' ? (token.size() > 1 && IsDigit(token[1])) : IsDigit(c)) {
    return CanonicalNumber(token);
  }
  return std::string(token);
}

bool FindFirstEntryValues(std::string_view meta_data, const std::vector<std::string>& quoted_keys,
                          std::vector<std::string_view>* values, std::string* error) {
  values->assign(quoted_keys.size(), std::string_view());
  const std::string_view t = meta_data;
  size_t i = 0;
  const auto skip = [&] {
    while (i < t.size() && IsSpace(t[i])) ++i;
  };
  const auto fail = [&](const std::string& what) {
    *error = "meta_data byte " + std::to_string(i) + ": " + what;
    return false;
  };
  skip();
  if (i >= t.size() || t[i] != '[') return fail("not a JSON list");
  ++i;
  skip();
  if (i < t.size() && t[i] == ']') return true;  // no entry: no keys
  if (i >= t.size()) return fail("unexpected end");
  if (t[i] != '{') {
    // An entry that is not an object has no keys; it must still be JSON.
    const JsonScanResult r = ScanJsonValue(t, i, true);
    return r.status == JsonScanStatus::kOk ? true : fail(r.error);
  }
  ++i;
  skip();
  if (i < t.size() && t[i] == '}') return true;
  for (;;) {
    skip();
    if (i >= t.size() || t[i] != '"') return fail("expected a member name");
    const JsonScanResult key = ScanJsonValue(t, i, true);
    if (key.status != JsonScanStatus::kOk) return fail("bad member name: " + key.error);
    std::string_view key_token = t.substr(i, key.pos - i);
    std::string canonical_key;
    if (!PlainString(key_token)) {
      try {
        canonical_key = NormalizeJson(key_token);
      } catch (const InvalidArgumentError& e) {
        return fail(e.what());
      }
      key_token = canonical_key;
    }
    i = key.pos;
    skip();
    if (i >= t.size() || t[i] != ':') return fail("expected ':'");
    ++i;
    skip();
    const JsonScanResult value = ScanJsonValue(t, i, true);
    if (value.status != JsonScanStatus::kOk) return fail("bad value: " + value.error);
    for (size_t k = 0; k < quoted_keys.size(); ++k) {
      if (key_token == quoted_keys[k]) (*values)[k] = t.substr(i, value.pos - i);  // last one wins
    }
    i = value.pos;
    skip();
    if (i < t.size() && t[i] == ',') {
      ++i;
      continue;
    }
    if (i < t.size() && t[i] == '}') return true;
    return fail("expected ',' or '}'");
  }
}

}  // namespace gulpdb::engine
