#include "s3/s3_url.h"

#include <cstdint>

#include "gulpdb/error.h"
#include "util/relative_name.h"
#include "util/url_text.h"
#include "util/utf8.h"

namespace gulpdb::remote {
namespace {

constexpr std::string_view kScheme = "s3://";
constexpr size_t kMaxKeyBytes = 1024;

// Messages show the text with any user information redacted: a URL such as
// "s3://user:secret@bucket" must not print its secret.
[[noreturn]] void Invalid(std::string_view what, std::string_view text, const std::string& why) {
  throw InvalidArgumentError(
      util::RedactUrls(std::string(what) + " '" + std::string(text) + "': " + why));
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// Checks the '/'-separated segments of a prefix or relative name.
void CheckSegments(std::string_view what, std::string_view text) {
  size_t start = 0;
  while (true) {
    const size_t slash = text.find('/', start);
    const std::string_view segment = text.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (segment.empty())
      Invalid(what, text, "empty path segment (leading, trailing or double '/')");
    if (segment == "." || segment == "..") Invalid(what, text, "'.' or '..' path segment");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
}

}  // namespace

bool IsS3Url(std::string_view text) { return util::IsS3Url(text); }

void ValidateBucketName(std::string_view bucket) {
  if (bucket.empty()) Invalid("bucket name", bucket, "empty");
  if (bucket.size() < 3 || bucket.size() > 63) {
    Invalid("bucket name", bucket, "must be 3 to 63 characters long");
  }
  for (char c : bucket) {
    if (!IsLowerAlnum(c) && c != '.' && c != '-') {
      Invalid("bucket name", bucket,
              "only lowercase letters, digits, '.' and '-' are allowed in bucket names");
    }
  }
  if (!IsLowerAlnum(bucket.front()) || !IsLowerAlnum(bucket.back())) {
    Invalid("bucket name", bucket, "must start and end with a lowercase letter or a digit");
  }
  if (bucket.find("..") != std::string_view::npos) {
    Invalid("bucket name", bucket, "two adjacent periods");
  }
  // An IPv4 address (four dot-separated numbers) is not a bucket name.
  int dots = 0;
  bool digits_and_dots = true;
  for (char c : bucket) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      digits_and_dots = false;
    }
  }
  if (digits_and_dots && dots == 3) Invalid("bucket name", bucket, "looks like an IP address");
}

void ValidateKey(std::string_view key) {
  if (key.empty()) Invalid("object key", key, "empty");
  if (key.size() > kMaxKeyBytes) {
    Invalid("object key", key.substr(0, 64),
            "longer than " + std::to_string(kMaxKeyBytes) + " bytes (" +
                std::to_string(key.size()) + ")");
  }
  for (size_t i = 0; i < key.size();) {
    const auto b = static_cast<uint8_t>(key[i]);
    if (b < 0x20 || b == 0x7F) {
      Invalid("object key", key, "control character at byte " + std::to_string(i));
    }
    const size_t n = util::Utf8SequenceLength(key, i);
    if (n == 0) Invalid("object key", key, "invalid UTF-8 at byte " + std::to_string(i));
    i += n;
  }
}

S3Url S3Url::Parse(std::string_view url) {
  // What messages show: never the user information, whatever follows.
  const std::string shown = util::RedactUrl(url);
  if (!IsS3Url(url)) {
    const std::string typo = util::S3UrlTypo(shown);
    Invalid("URL", shown,
            typo.empty() ? "expected s3://bucket[/prefix]" : "not an s3:// URL: " + typo);
  }
  std::string_view rest = url.substr(kScheme.size());
  if (util::S3UserInfoEnd(rest) != std::string_view::npos) {
    Invalid("URL", shown,
            "user information (user:password@) is not part of an s3:// URL; credentials come "
            "from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE or ~/.aws/credentials");
  }
  if (rest.find_first_of("?#") != std::string_view::npos) {
    Invalid("URL", shown, "query strings and fragments are not part of an s3:// URL");
  }
  const size_t slash = rest.find('/');
  S3Url parsed;
  parsed.bucket = std::string(rest.substr(0, slash));
  if (parsed.bucket.empty()) Invalid("URL", shown, "no bucket name after s3://");
  try {
    ValidateBucketName(parsed.bucket);
  } catch (const InvalidArgumentError& e) {
    Invalid("URL", shown, e.what());
  }
  if (slash != std::string_view::npos) {
    std::string_view prefix = rest.substr(slash + 1);
    if (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    if (!prefix.empty()) {
      try {
        CheckSegments("prefix", prefix);
        ValidateKey(prefix);
      } catch (const InvalidArgumentError& e) {
        Invalid("URL", shown, e.what());
      }
    }
    parsed.prefix = std::string(prefix);
  }
  return parsed;
}

std::string S3Url::ToString() const {
  std::string s = std::string(kScheme) + bucket;
  if (!prefix.empty()) s += "/" + prefix;
  return s;
}

std::string S3Url::Key(std::string_view name) const { return JoinKey(prefix, name); }

std::string JoinKey(std::string_view prefix, std::string_view name) {
  // The names joined here come from manifests and indexes: the one rule for
  // such names (util/relative_name.h).
  if (const std::string problem = util::RelativeNameProblem(name); !problem.empty()) {
    Invalid("object name", util::EscapeBytes(name), problem);
  }
  std::string key;
  if (!prefix.empty()) {
    key.reserve(prefix.size() + 1 + name.size());
    key.append(prefix);
    key.push_back('/');
  }
  key.append(name);
  ValidateKey(key);
  return key;
}

std::string UriEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  for (char c : text) {
    const auto b = static_cast<uint8_t>(c);
    const bool unreserved = (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') ||
                            (b >= '0' && b <= '9') || b == '-' || b == '.' || b == '_' ||
                            b == '~' || (keep_slash && b == '/');
    if (unreserved) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xF]);
    }
  }
  return out;
}

std::string UriDecode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    const bool complete = i + 2 < text.size();
    const int hi = complete ? hex(text[i + 1]) : -1;
    const int lo = complete ? hex(text[i + 2]) : -1;
    if (hi < 0 || lo < 0)
      Invalid("percent-encoded text", text, "bad escape at " + std::to_string(i));
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

}  // namespace gulpdb::remote
