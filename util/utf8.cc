#include "util/utf8.h"

namespace gulpdb::util {

Utf8Step DecodeUtf8(std::string_view text, size_t pos, uint32_t* code_point, size_t* length) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(pos);
  if (b0 < 0x80) {
    *code_point = b0;
    *length = 1;
    return Utf8Step::kOk;
  }
  size_t n = 0;
  uint8_t lo = 0x80;
  uint8_t hi = 0xbf;
  uint32_t value = 0;
  if (b0 < 0xc2) {
    return Utf8Step::kInvalid;  // a continuation byte, or an overlong 2-byte lead
  } else if (b0 < 0xe0) {
    n = 2;
    value = b0 & 0x1fu;
  } else if (b0 < 0xf0) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;  // overlong
    if (b0 == 0xed) hi = 0x9f;  // surrogates
    value = b0 & 0x0fu;
  } else if (b0 < 0xf5) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;  // overlong
    if (b0 == 0xf4) hi = 0x8f;  // above U+10FFFF
    value = b0 & 0x07u;
  } else {
    return Utf8Step::kInvalid;
  }
  for (size_t k = 1; k < n; ++k) {
    if (pos + k >= text.size()) return Utf8Step::kTruncated;
    const uint8_t b = byte(pos + k);
    if (b < lo || b > hi) return Utf8Step::kInvalid;
    lo = 0x80;
    hi = 0xbf;
    value = (value << 6) | (b & 0x3fu);
  }
  *code_point = value;
  *length = n;
  return Utf8Step::kOk;
}

size_t Utf8SequenceLength(std::string_view text, size_t pos) {
  uint32_t code_point = 0;
  size_t length = 0;
  return DecodeUtf8(text, pos, &code_point, &length) == Utf8Step::kOk ? length : 0;
}

size_t FindInvalidUtf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = Utf8SequenceLength(text, pos);
    if (n == 0) return pos;
    pos += n;
  }
  return std::string_view::npos;
}

void AppendUtf8(uint32_t code_point, std::string* out) {
  const uint32_t cp = code_point;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

}  // namespace gulpdb::util
