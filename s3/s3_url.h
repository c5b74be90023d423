// Names of things in an object store: "s3://bucket/prefix" URLs, object keys
// and the percent-encoding SigV4 expects in request paths and queries.
//
// A dataset lives under a prefix of a bucket; its objects are named by
// joining the prefix and a relative name with "/" (JoinKey). Bucket names
// follow S3's current rules (3-63 characters of a-z, 0-9, '.', '-', starting
// and ending with a letter or digit, not an IP address); keys are 1-1024 bytes
// of UTF-8 without control characters. Everything here throws
// InvalidArgumentError naming the offending text and what is wrong with it,
// before any request is made.
//
// Thread safety: pure functions and plain value types.
#ifndef GULPDB_S3_S3_URL_H_
#define GULPDB_S3_S3_URL_H_

#include <string>
#include <string_view>

namespace gulpdb::remote {

// A parsed "s3://bucket[/prefix]" URL. The prefix has no leading or trailing
// '/' and no empty, "." or ".." segments; it is "" for the bucket's root.
struct S3Url {
  std::string bucket;
  std::string prefix;

  // Throws InvalidArgumentError for anything but "s3://" + a valid bucket
  // name + an optional "/prefix" (a trailing '/' is accepted and dropped).
  static S3Url Parse(std::string_view url);

  // "s3://bucket" or "s3://bucket/prefix".
  std::string ToString() const;
  // The key of `name` under this URL's prefix: JoinKey(prefix, name).
  std::string Key(std::string_view name) const;
};

// True if `text` starts with "s3://" (then S3Url::Parse decides if it is valid).
bool IsS3Url(std::string_view text);

// "prefix/name", or "name" when `prefix` is empty. `name` may hold '/'
// (a sub-path); it must be a relative name (util/relative_name.h: non-empty,
// not starting or ending with '/', no empty, "." or ".." segments, no NUL,
// backslash or control character). The result is checked with ValidateKey.
std::string JoinKey(std::string_view prefix, std::string_view name);

// Throws InvalidArgumentError unless `bucket` is a valid bucket name.
void ValidateBucketName(std::string_view bucket);
// Throws InvalidArgumentError unless `key` is a valid object key.
void ValidateKey(std::string_view key);

// Percent-encodes every byte but the unreserved characters A-Z a-z 0-9 - . _ ~
// (and '/' when `keep_slash`), with uppercase hex digits: the form SigV4's
// canonical request uses, so a URL built from it is already canonical.
std::string UriEncode(std::string_view text, bool keep_slash);
// Decodes %XX escapes (and nothing else: '+' stays '+'). Throws
// InvalidArgumentError on a malformed escape.
std::string UriDecode(std::string_view text);

}  // namespace gulpdb::remote

#endif  // GULPDB_S3_S3_URL_H_
