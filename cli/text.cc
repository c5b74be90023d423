#include "cli/text.h"

#include <cstdint>

#include "gulpdb/json.h"
#include "util/utf8.h"

namespace gulpdb::cli {
namespace {

// Appends `prefix` and `value` as `digits` lowercase hex digits ("\\u" + 001f).
void AppendHex(const char* prefix, unsigned value, int digits, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  *out += prefix;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) *out += kHex[(value >> shift) & 0xF];
}

// The escaping of EscapeForDisplay; `quotes` also escapes '"' and '\\'.
std::string Escape(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    const size_t n = util::Utf8SequenceLength(text, i);
    if (n == 0) {
      AppendHex("\\x", c, 2, &out);
      ++i;
      continue;
    }
    switch (c) {
      case '"':
        out += quotes ? "\\\"" : "\"";
        break;
      case '\\':
        out += quotes ? "\\\\" : "\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          AppendHex("\\u", c, 4, &out);
        } else if (c == 0xC2 && static_cast<uint8_t>(text[i + 1]) <= 0x9F) {  // C1 control
          AppendHex("\\u", static_cast<uint8_t>(text[i + 1]), 4, &out);
        } else {
          out.append(text.substr(i, n));
        }
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string EscapeForDisplay(std::string_view text) { return Escape(text, /*quotes=*/true); }

std::string EscapeControls(std::string_view text) { return Escape(text, /*quotes=*/false); }

std::string JsonPathString(std::string_view path) {
  std::string out = "\"";
  size_t run = 0;  // start of the current run of valid UTF-8
  auto flush = [&](size_t end) {
    const std::string quoted = PythonJsonString(path.substr(run, end - run));
    out.append(quoted, 1, quoted.size() - 2);
  };
  for (size_t i = 0; i < path.size();) {
    const size_t n = util::Utf8SequenceLength(path, i);
    if (n != 0) {
      i += n;
      continue;
    }
    flush(i);
    AppendHex("\\udc", static_cast<uint8_t>(path[i]), 2, &out);
    run = ++i;
  }
  flush(path.size());
  return out + "\"";
}

std::string ListForDisplay(const std::vector<std::string>& items, size_t shown) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < shown; ++i) {
    if (i != 0) out += ", ";
    out += "'" + EscapeForDisplay(items[i]) + "'";
  }
  if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
  return out;
}

}  // namespace gulpdb::cli
