// s3:// URLs, object keys and SigV4 percent-encoding: what is accepted, what
// is refused and with which message.
#include "s3/s3_url.h"

#include <boost/test/unit_test.hpp>
#include <string>

#include "gulpdb/error.h"
#include "support/test_util.h"

namespace gulpdb::test {

using remote::JoinKey;
using remote::S3Url;
using remote::UriDecode;
using remote::UriEncode;

namespace {

// The message of the InvalidArgumentError that `fn` throws ("" if none).
template <typename Fn>
std::string ErrorOf(Fn fn) {
  try {
    fn();
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  return "";
}

using test::Contains;

}  // namespace

BOOST_AUTO_TEST_SUITE(s3_url_test)

BOOST_AUTO_TEST_CASE(parses_bucket_and_prefix) {
  S3Url u = S3Url::Parse("s3://my-bucket/datasets/ssv2");
  BOOST_TEST(u.bucket == "my-bucket");
  BOOST_TEST(u.prefix == "datasets/ssv2");
  BOOST_TEST(u.ToString() == "s3://my-bucket/datasets/ssv2");
  BOOST_TEST(u.Key("data_0.gulp") == "datasets/ssv2/data_0.gulp");

  u = S3Url::Parse("s3://my.bucket.01/datasets/ssv2/");  // a trailing '/' is dropped
  BOOST_TEST(u.bucket == "my.bucket.01");
  BOOST_TEST(u.prefix == "datasets/ssv2");

  for (const char* root : {"s3://bucket", "s3://bucket/"}) {
    u = S3Url::Parse(root);
    BOOST_TEST(u.bucket == "bucket");
    BOOST_TEST(u.prefix == "");
    BOOST_TEST(u.Key("manifest.json") == "manifest.json");
    BOOST_TEST(u.ToString() == "s3://bucket");
  }
  BOOST_TEST(remote::IsS3Url("s3://x"));
  BOOST_TEST(!remote::IsS3Url("/data/s3://x"));
}

BOOST_AUTO_TEST_CASE(bad_urls_are_refused_saying_what_is_wrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"http://bucket/prefix", "expected s3://bucket[/prefix]"},
      {"S3://bucket", "the scheme is lowercase: s3://bucket"},
      {"s3:/bucket/p", "s3:// (two slashes): s3://bucket/p"},
      {"s3://user:topsecret@bucket/p", "user information"},
      {"s3://", "no bucket name"},
      {"s3:///prefix", "no bucket name"},
      {"s3://ab", "3 to 63 characters"},
      {"s3://My_Bucket/x", "only lowercase letters, digits"},
      {"s3://-bucket", "start and end with a lowercase letter or a digit"},
      {"s3://bucket-", "start and end with a lowercase letter or a digit"},
      {"s3://a..b", "two adjacent periods"},
      {"s3://192.168.1.1/x", "IP address"},
      {"s3://bucket/a//b", "empty path segment"},
      {"s3://bucket//a", "empty path segment"},
      {"s3://bucket/a/../b", "'.' or '..' path segment"},
      {"s3://bucket/./b", "'.' or '..' path segment"},
      {"s3://bucket/a?versionId=3", "query strings and fragments"},
      {"s3://bucket/a#frag", "query strings and fragments"},
      {"s3://bucket/a\tb", "control character"},
  };
  for (const auto& [url, why] : cases) {
    const std::string m = ErrorOf([&] { S3Url::Parse(url); });
    if (Contains(url, "topsecret")) {  // user information is never shown
      BOOST_TEST(Contains(m, "URL 's3://***@bucket/p'"), url << " -> " << m);
      BOOST_TEST(!Contains(m, "topsecret"), url << " -> " << m);
    } else {
      BOOST_TEST(Contains(m, std::string("URL '") + url + "'"), url << " -> " << m);
    }
    BOOST_TEST(Contains(m, why), url << " -> " << m);
  }
  BOOST_TEST(Contains(ErrorOf([] { S3Url::Parse("s3://" + std::string(64, 'a')); }),
                      "3 to 63 characters"));
}

BOOST_AUTO_TEST_CASE(a_secret_with_slashes_at_signs_or_colons_is_never_shown) {
  // AWS secret keys hold '/'; other stores' secrets may hold '@', ':' or an
  // escaped '/'. Each URL is refused for its user information, showing the
  // bucket and prefix and no byte of the secret.
  // Built of pieces that no message holds otherwise.
  const char* secrets[] = {"Qz/Xw",       "Qz/Xw/V7/Kp", "Qz@Xw",    "Qz:Xw/V7", "Qz/Xw@V7",
                           "qz@xw/v7@kp", "Qz%2FXw",     "Qz?Xw#V7", "Qz/Xw'V7", "Qz/Xw+V7/Kp"};
  for (const char* secret : secrets) {
    for (const std::string& rest : {std::string("bucket/p"), std::string("bucket")}) {
      const std::string url = std::string("s3://AKIDKEY:") + secret + "@" + rest;
      const std::string m = ErrorOf([&] { S3Url::Parse(url); });
      BOOST_TEST(Contains(m, "URL 's3://***@" + rest + "'"), url << " -> " << m);
      BOOST_TEST(Contains(m, "user information"), url << " -> " << m);
      BOOST_TEST(!Contains(m, "AKIDKEY"), url << " -> " << m);
      for (const char* piece : {"Qz", "Xw", "V7", "Kp", "qz", "xw", "v7", "kp"}) {
        BOOST_TEST(!Contains(m, piece), url << " -> " << m);
      }
    }
  }
  // Mistyped schemes are shown redacted too, with the URL meant.
  for (const char* url : {"S3://AKIDKEY:Qz/Xw@bucket/p", "s3:/AKIDKEY:Qz/Xw@bucket/p",
                          "s3:AKIDKEY:Qz/Xw@bucket/p", "s3a://AKIDKEY:Qz/Xw@bucket/p"}) {
    const std::string m = ErrorOf([&] { S3Url::Parse(url); });
    BOOST_TEST(Contains(m, "s3://***@bucket/p"), url << " -> " << m);
    BOOST_TEST(!Contains(m, "Qz"), url << " -> " << m);
    BOOST_TEST(!Contains(m, "Xw"), url << " -> " << m);
    BOOST_TEST(!Contains(m, "AKIDKEY"), url << " -> " << m);
  }
}

BOOST_AUTO_TEST_CASE(an_at_sign_in_the_prefix_is_part_of_the_key) {
  // S3 keys may hold '@': after a bucket name it is no user information.
  const S3Url u = S3Url::Parse("s3://bucket/runs@2024/a@b");
  BOOST_TEST(u.bucket == "bucket");
  BOOST_TEST(u.prefix == "runs@2024/a@b");
}

BOOST_AUTO_TEST_CASE(join_key_checks_the_name) {
  BOOST_TEST(JoinKey("p", "a/b.gulp") == "p/a/b.gulp");
  BOOST_TEST(JoinKey("", "a") == "a");
  BOOST_TEST(Contains(ErrorOf([] { JoinKey("p", ""); }), "empty"));
  // The rule of util/relative_name.h, the one for names from manifests and indexes.
  BOOST_TEST(Contains(ErrorOf([] { JoinKey("p", "/abs"); }), "an absolute path"));
  BOOST_TEST(Contains(ErrorOf([] { JoinKey("p", "a/"); }), "an empty segment"));
  BOOST_TEST(Contains(ErrorOf([] { JoinKey("p", "../x"); }), "a '..' segment"));
  BOOST_TEST(Contains(ErrorOf([] { JoinKey("p", "a\\b"); }), "a backslash"));
  BOOST_TEST(Contains(ErrorOf([] { JoinKey(std::string(1000, 'p'), std::string(30, 'n')); }),
                      "longer than 1024 bytes"));
}

BOOST_AUTO_TEST_CASE(keys_must_be_utf8_without_control_characters) {
  remote::ValidateKey("caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x8e\xa5 ok");
  BOOST_TEST(
      Contains(ErrorOf([] { remote::ValidateKey("a\x01"); }), "control character at byte 1"));
  BOOST_TEST(Contains(ErrorOf([] { remote::ValidateKey("a\x7f"); }), "control character"));
  BOOST_TEST(Contains(ErrorOf([] { remote::ValidateKey("bad\xff"); }), "invalid UTF-8 at byte 3"));
  BOOST_TEST(
      Contains(ErrorOf([] { remote::ValidateKey("\xc0\xaf"); }), "invalid UTF-8"));  // overlong
  BOOST_TEST(Contains(ErrorOf([] { remote::ValidateKey("\xed\xa0\x80"); }),
                      "invalid UTF-8"));  // surrogate
  BOOST_TEST(Contains(ErrorOf([] { remote::ValidateKey("\xe2\x82"); }), "invalid UTF-8"));  // cut
  BOOST_TEST(Contains(ErrorOf([] { remote::ValidateKey(""); }), "empty"));
}

BOOST_AUTO_TEST_CASE(uri_encoding_is_sigv4s) {
  // Known answers from the SigV4 rules: unreserved characters stay, every
  // other byte becomes %XX with uppercase hex, '/' only kept in paths.
  BOOST_TEST(UriEncode("AZaz09-._~", false) == "AZaz09-._~");
  BOOST_TEST(UriEncode("a b+c=d&e/f", false) == "a%20b%2Bc%3Dd%26e%2Ff");
  BOOST_TEST(UriEncode("a b+c=d&e/f", true) == "a%20b%2Bc%3Dd%26e/f");
  BOOST_TEST(UriEncode("caf\xc3\xa9*", false) == "caf%C3%A9%2A");
  BOOST_TEST(UriDecode("a%20b%2Bc%2fd+e") == "a b+c/d+e");
  BOOST_TEST(UriDecode(UriEncode("x\x01y\xff%", false)) == "x\x01y\xff%");
  BOOST_TEST(Contains(ErrorOf([] { UriDecode("100%"); }), "bad escape at 3"));
  BOOST_TEST(Contains(ErrorOf([] { UriDecode("%4"); }), "bad escape"));
  BOOST_TEST(Contains(ErrorOf([] { UriDecode("%zz"); }), "bad escape"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb::test
