#include "util/url_text.h"

#include <cstdint>

namespace gulpdb::util {
namespace {

bool IsSchemeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.';
}

// Characters that end the authority part of a URL in running text.
bool EndsAuthority(char c) {
  switch (c) {
    case '/':
    case '?':
    case '#':
    case ' ':
    case '\t':
    case '\r':
    case '\n':
    case '\'':
    case '"':
    case '<':
    case '>':
    case '(':
    case ')':
    case '`':
      return true;
    default:
      return false;
  }
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (Lower(text[i]) != prefix[i]) return false;
  }
  return true;
}

}  // namespace

std::string RedactUrls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  for (size_t p = text.find("://"); p != std::string_view::npos; p = text.find("://", p + 3)) {
    if (p == 0 || !IsSchemeChar(text[p - 1])) continue;
    const size_t start = p + 3;
    size_t end = start;
    while (end < text.size() && !EndsAuthority(text[end])) ++end;
    const size_t at = text.substr(start, end - start).rfind('@');
    if (at == std::string_view::npos) continue;
    out.append(text.substr(copied, start - copied));
    out.append("***");
    copied = start + at;  // from the '@' on
    p = end > 3 ? end - 3 : p;
  }
  out.append(text.substr(copied));
  return out;
}

bool IsS3Url(std::string_view text) { return text.substr(0, 5) == "s3://"; }

std::string S3UrlTypo(std::string_view text) {
  if (IsS3Url(text)) return "";
  if (StartsWithNoCase(text, "s3://")) {
    return "the scheme is lowercase: s3://" + std::string(text.substr(5));
  }
  for (std::string_view hadoop : {"s3a://", "s3n://"}) {
    if (StartsWithNoCase(text, hadoop)) {
      return "gulpdb reads s3:// URLs (not " + std::string(text.substr(0, 3)) + "://): s3://" +
             std::string(text.substr(6));
    }
  }
  if (StartsWithNoCase(text, "s3:")) {
    std::string_view rest = text.substr(3);
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    if (rest.empty()) return "";
    return "an S3 URL starts with s3:// (two slashes): s3://" + std::string(rest);
  }
  return "";
}

bool IsLoopbackHost(std::string_view host) {
  std::string lower;
  for (char c : host) lower.push_back(Lower(c));
  if (lower == "localhost" || lower == "localhost." || lower == "[::1]" || lower == "::1") {
    return true;
  }
  if (lower.size() > 10 && lower.compare(lower.size() - 10, 10, ".localhost") == 0) return true;
  // 127.0.0.0/8, written as four decimal numbers.
  if (lower.rfind("127.", 0) != 0) return false;
  int parts = 2;  // "127" was the first; this counts the one being read
  int digits = 0;
  for (size_t i = 4; i < lower.size(); ++i) {
    const char c = lower[i];
    if (c == '.') {
      if (digits == 0) return false;
      ++parts;
      digits = 0;
    } else if (c >= '0' && c <= '9' && digits < 3) {
      ++digits;
    } else {
      return false;
    }
  }
  return parts == 4 && digits > 0;
}

}  // namespace gulpdb::util
