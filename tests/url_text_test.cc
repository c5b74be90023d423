// util/url_text.h: URLs in messages without their secrets, and mistyped
// s3:// URLs named.
#include "util/url_text.h"

#include <boost/test/unit_test.hpp>
#include <string>

namespace gulpdb::util {
namespace {

BOOST_AUTO_TEST_SUITE(url_text_test)

BOOST_AUTO_TEST_CASE(user_information_of_every_url_is_redacted) {
  BOOST_TEST(RedactUrls("endpoint 'http://user:secret@host:9000': bad") ==
             "endpoint 'http://***@host:9000': bad");
  BOOST_TEST(RedactUrls("https://AKIA:s3cr%40t@s3.example.com/bucket/key") ==
             "https://***@s3.example.com/bucket/key");
  BOOST_TEST(RedactUrls("s3://u:p@bucket/prefix and http://a:b@c/d") ==
             "s3://***@bucket/prefix and http://***@c/d");
  BOOST_TEST(RedactUrls("http://only-user@host") == "http://***@host");
  // A password holding '@' is redacted whole.
  BOOST_TEST(RedactUrls("http://u:p@ss@host/x") == "http://***@host/x");
  // Nothing to redact: unchanged.
  for (const std::string& text :
       {std::string("GET s3://b/k (http://127.0.0.1:9/b/k): HTTP 500"),
        std::string("id 'a@b' in s3://b/p"), std::string("://@x"), std::string(""),
        std::string("http://host/path@x"), std::string("host:9000 a@b"), std::string("s3: x@y"),
        std::string("xs3:a@bucket")}) {
    BOOST_TEST(RedactUrls(text) == text);
  }
}

BOOST_AUTO_TEST_CASE(an_s3_urls_user_information_may_hold_slashes_and_at_signs) {
  // In an s3:// URL everything from "//" to the last '@' before the first
  // '/' after it is user information (AWS secret keys hold '/').
  BOOST_TEST(RedactUrls("URL 's3://KEY:SE/CRET@bucket/prefix': bad") ==
             "URL 's3://***@bucket/prefix': bad");
  BOOST_TEST(RedactUrls("s3://KEY:S/E/C@bucket") == "s3://***@bucket");
  BOOST_TEST(RedactUrls("s3://KEY:SE@CR/ET@bucket/p x") == "s3://***@bucket/p x");
  BOOST_TEST(RedactUrls("s3://KEY:a@b/c@bucket/p") == "s3://***@bucket/p");
  BOOST_TEST(RedactUrls("s3://KEY:SE%2FCRET@bucket/p") == "s3://***@bucket/p");
  BOOST_TEST(RedactUrls("(S3://KEY:SE/CRET@bucket/p) and s3a://K:S/T@b-1/x") ==
             "(S3://***@bucket/p) and s3a://***@b-1/x");
  BOOST_TEST(RedactUrls("s3://KEY:SE/CR?ET#X@bucket/p") == "s3://***@bucket/p");
  // Mistyped with one slash or none, in running text too.
  BOOST_TEST(RedactUrls("to 's3:/KEY:SE/CRET@bucket/p': bad") == "to 's3:/***@bucket/p': bad");
  BOOST_TEST(RedactUrls("not s3:KEY:SE/CRET@bucket") == "not s3:***@bucket");
  // A bucket, then a prefix holding '@': nothing to redact.
  for (const char* text : {"s3://bucket/runs@2024/x", "s3://my.bucket-1/a@b"}) {
    BOOST_TEST(RedactUrls(text) == text, text);
  }
  // One URL: mistyped schemes too.
  BOOST_TEST(RedactUrl("s3:/KEY:SE/CRET@bucket/p") == "s3:/***@bucket/p");
  BOOST_TEST(RedactUrl("s3:KEY:SE/CRET@bucket") == "s3:***@bucket");
  BOOST_TEST(RedactUrl("S3://KEY:SE'CR/ET@bucket") == "S3://***@bucket");
  BOOST_TEST(RedactUrl("http://u:p@host/x") == "http://***@host/x");
  BOOST_TEST(RedactUrl("/data/ds@2") == "/data/ds@2");
  BOOST_TEST(RedactUrl("s3://bucket/runs@2024") == "s3://bucket/runs@2024");
}

BOOST_AUTO_TEST_CASE(mistyped_s3_urls_are_named_with_the_url_meant) {
  BOOST_TEST(S3UrlTypo("S3://bucket/p") == "the scheme is lowercase: s3://bucket/p");
  BOOST_TEST(S3UrlTypo("s3:/bucket/p") ==
             "an S3 URL starts with s3:// (two slashes): s3://bucket/p");
  BOOST_TEST(S3UrlTypo("s3:bucket") == "an S3 URL starts with s3:// (two slashes): s3://bucket");
  BOOST_TEST(S3UrlTypo("s3a://bucket/p") == "gulpdb reads s3:// URLs (not s3a://): s3://bucket/p");
  for (const char* text : {"s3://bucket/p", "/data/s3/x", "s3", "s3:", "data", "", "s3x://b"}) {
    BOOST_TEST(S3UrlTypo(text) == "", text);
  }
}

BOOST_AUTO_TEST_CASE(loopback_hosts_are_told_apart) {
  for (const char* host :
       {"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "[::1]", "minio.localhost"}) {
    BOOST_TEST(IsLoopbackHost(host), host);
  }
  for (const char* host : {"10.0.0.1", "s3.amazonaws.com", "127.0.0.1.evil.com", "127.0.0",
                           "1270.0.0.1", "[::2]", "localhost.example.com", ""}) {
    BOOST_TEST(!IsLoopbackHost(host), host);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::util
