// URLs in text that people read: secrets taken out, typos named.
//
// RedactUrls is the one redaction of gulpdb's messages: every message that
// may show an endpoint or a URL passes through it where it is made (the S3
// client's errors, URL and endpoint parsing) and again where it leaves the
// process (the command's main, the Python exception translator), so that a
// password given as "https://user:secret@host" is never printed.
//
// Thread safety: pure functions.
#ifndef GULPDB_UTIL_URL_TEXT_H_
#define GULPDB_UTIL_URL_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace gulpdb::util {

// `text` with the user information of every "scheme://user[:password]@host"
// in it replaced by "***" ("scheme://***@host"). Text without such a URL is
// returned unchanged. An s3:// URL (also "S3://", "s3a://", "s3n://", and
// "s3:/" or "s3:" mistyped) runs to the end of its word (whitespace or a
// quote) and its user information is found by S3UserInfoEnd: a secret key
// may hold '/'.
std::string RedactUrls(std::string_view text);

// One URL (all of `url`, not running text) with its user information
// replaced by "***": as RedactUrls, and for an s3 URL mistyped with one
// slash or none ("s3:/KEY:SECRET@bucket") too. What the URL parser shows of
// the URL it was given, before it looks at anything else.
std::string RedactUrl(std::string_view url);

// In an s3:// URL, the user information: `rest` is the text after "//";
// returns the offset of the '@' that ends the user information, or npos
// when there is none. Everything from "//" to the last '@' before the
// first '/' after it is user information (AWS secret keys hold '/'; a
// secret may hold '@' and ':' too), unless the text before the first '/'
// can be a bucket name and holds no '@': then the URL is
// "s3://bucket/prefix" and an '@' is the prefix's (S3 keys may hold it).
// Where several '@' could end it, the last one followed by something that
// can be a bucket name does: a redaction hides too much, never too little.
size_t S3UserInfoEnd(std::string_view rest);

// True if `text` starts with "s3://": the one rule for "this names an
// object store" (gulpdb::IsRemoteUrl, remote::IsS3Url; remote::S3Url::Parse
// then decides whether it is valid).
bool IsS3Url(std::string_view text);

// For text that is not an "s3://" URL but looks like a mistyped one, what is
// wrong and the URL it probably means, as one clause ("the scheme is
// lowercase: s3://bucket/prefix"); "" for anything else, "s3://..." itself
// included. Recognised: "S3://" (any case), "s3:/" and "s3:" without the two
// slashes, and Hadoop's "s3a://" and "s3n://".
std::string S3UrlTypo(std::string_view text);

// True when `host` (a name, an IPv4 address or a bracketed IPv6 address, as
// in an endpoint URL) is this machine: "localhost", 127.0.0.0/8, [::1].
bool IsLoopbackHost(std::string_view host);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_URL_TEXT_H_
