#include "util/url_text.h"

#include <cstdint>

namespace gulpdb::util {
namespace {

bool IsSchemeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.';
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (Lower(text[i]) != prefix[i]) return false;
  }
  return true;
}

// The "s3" URL schemes whose user information follows the s3:// rule
// below: "s3" in any case, and Hadoop's "s3a" and "s3n" (mistyped URLs are
// shown in messages too). `scheme` is the text before "://" or ":".
bool IsS3Scheme(std::string_view scheme) {
  return scheme.size() >= 2 && scheme.size() <= 3 && Lower(scheme[0]) == 's' && scheme[1] == '3' &&
         (scheme.size() == 2 || Lower(scheme[2]) == 'a' || Lower(scheme[2]) == 'n');
}

// Could `text` be a bucket name (3-63 of a-z, 0-9, '.', '-')? The full
// rules are remote::ValidateBucketName's; this only tells a bucket from a
// key id and secret, which hold capitals, ':' or '+'.
bool LooksLikeBucket(std::string_view text) {
  if (text.size() < 3 || text.size() > 63) return false;
  for (char c : text) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  }
  return true;
}

// Characters that end a URL in running text whatever its scheme.
bool EndsUrl(char c) {
  switch (c) {
    case ' ':
    case '\t':
    case '\r':
    case '\n':
    case '\'':
    case '"':
    case '<':
    case '>':
    case '`':
      return true;
    default:
      return false;
  }
}

// Characters that end the authority part of a URL in running text (but for
// an s3 URL's: see S3UserInfoEnd).
bool EndsAuthority(char c) {
  return EndsUrl(c) || c == '/' || c == '?' || c == '#' || c == '(' || c == ')';
}

}  // namespace

size_t S3UserInfoEnd(std::string_view rest) {
  const size_t first_at = rest.find('@');
  if (first_at == std::string_view::npos) return std::string_view::npos;
  const size_t first_slash = rest.find('/');
  if (first_slash < first_at && LooksLikeBucket(rest.substr(0, first_slash))) {
    return std::string_view::npos;  // "bucket/prefix@...": S3 keys may hold '@'
  }
  // The bucket is what follows the user information up to the next '/':
  // the last '@' so followed by something that can be a bucket ends it
  // (generously: a secret may hold '@', '/' and ':'), else the last '@'
  // before the first '/' after the first '@'.
  size_t end = std::string_view::npos;
  for (size_t at = rest.find('@'); at != std::string_view::npos; at = rest.find('@', at + 1)) {
    const size_t slash = rest.find('/', at);
    const std::string_view bucket = rest.substr(
        at + 1, slash == std::string_view::npos ? std::string_view::npos : slash - at - 1);
    if (LooksLikeBucket(bucket)) end = at;
  }
  if (end != std::string_view::npos) return end;
  return rest.rfind('@', rest.find('/', first_at));
}

std::string RedactUrls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  for (size_t colon = text.find(':'); colon != std::string_view::npos;
       colon = text.find(':', colon + 1)) {
    size_t scheme = colon;
    while (scheme > 0 && IsSchemeChar(text[scheme - 1])) --scheme;
    if (scheme == colon || scheme < copied) continue;
    size_t start = colon + 1;
    size_t end = start;
    size_t at = std::string_view::npos;
    if (IsS3Scheme(text.substr(scheme, colon - scheme))) {
      // "s3://", or mistyped with one slash or none. A secret key may hold
      // '/' (AWS's often do): the URL runs to the end of the word, and the
      // s3:// rule finds its user information.
      while (start < text.size() && text[start] == '/') ++start;
      end = start;
      while (end < text.size() && !EndsUrl(text[end])) ++end;
      at = S3UserInfoEnd(text.substr(start, end - start));
    } else if (text.substr(colon, 3) == "://") {
      start = colon + 3;
      end = start;
      while (end < text.size() && !EndsAuthority(text[end])) ++end;
      at = text.substr(start, end - start).rfind('@');
    }
    if (at == std::string_view::npos) continue;
    out.append(text.substr(copied, start - copied));
    out.append("***");
    copied = start + at;  // from the '@' on
    colon = copied;
  }
  out.append(text.substr(copied));
  return out;
}

std::string RedactUrl(std::string_view url) {
  // A mistyped s3 URL ("s3:/", "s3:", "S3://", "s3a://") is shown too.
  const size_t colon = url.find(':');
  if (colon != std::string_view::npos && IsS3Scheme(url.substr(0, colon))) {
    size_t start = colon + 1;
    while (start < url.size() && url[start] == '/') ++start;
    const size_t at = S3UserInfoEnd(url.substr(start));
    if (at == std::string_view::npos) return std::string(url);
    return std::string(url.substr(0, start)) + "***" + std::string(url.substr(start + at));
  }
  return RedactUrls(url);
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
