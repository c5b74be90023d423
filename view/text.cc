#include "view/text.h"

#include "gulpdb/error.h"
#include "gulpdb/json.h"
#include "util/markup.h"
#include "util/utf8.h"

namespace gulpdb::view {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// `text` with every byte that does not start a valid UTF-8 sequence
// replaced by U+FFFD.
std::string ValidUtf8(std::string_view text) {
  if (util::FindInvalidUtf8(text) == std::string_view::npos) return std::string(text);
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = util::Utf8SequenceLength(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace

std::string JsonString(std::string_view text) { return PythonJsonString(ValidUtf8(text)); }

std::string HtmlEscape(std::string_view text) { return util::EscapeMarkup(ValidUtf8(text)); }

std::string Shorten(std::string_view text, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++chars) {
    if (chars == max_chars) return std::string(text.substr(0, i)) + "\xe2\x80\xa6";  // U+2026
    const size_t n = util::Utf8SequenceLength(text, i);
    i += n == 0 ? 1 : n;
  }
  return std::string(text);
}

std::string PercentEncode(std::string_view bytes) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size());
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '-' ||
        b == '_' || b == '.' || b == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 0x0f];
    }
  }
  return out;
}

namespace {

std::string Base64With(std::string_view bytes, const char* alphabet, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  uint32_t bits = 0;
  int count = 0;
  for (const char c : bytes) {
    bits = (bits << 8) | static_cast<uint8_t>(c);
    count += 8;
    while (count >= 6) {
      count -= 6;
      out += alphabet[(bits >> count) & 0x3f];
    }
  }
  if (count > 0) out += alphabet[(bits << (6 - count)) & 0x3f];
  while (pad && out.size() % 4 != 0) out += '=';
  return out;
}

}  // namespace

std::string Base64(std::string_view bytes) {
  return Base64With(bytes, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                    true);
}

std::string Base64Url(std::string_view bytes) {
  return Base64With(bytes, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                    false);
}

std::optional<uint64_t> ParseCount(std::string_view text, uint64_t max) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (max - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace gulpdb::view
