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

#include <string>
#include <string_view>

namespace gulpdb::util {

// `text` with the user information of every "scheme://user[:password]@host"
// in it replaced by "***" ("scheme://***@host"). Text without such a URL is
// returned unchanged.
std::string RedactUrls(std::string_view text);

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
