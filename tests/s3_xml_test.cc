// S3's XML responses as the client parses them (errors, listings, multipart
// results), hostile documents, the retry policy's decisions, and the payload
// hashes against FIPS 180-2's known answers.
#include "s3/s3_xml.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <random>
#include <set>
#include <string>

#include "gulpdb/error.h"
#include "s3/retry_policy.h"
#include "support/test_util.h"
#include "util/sha256.h"

namespace gulpdb::test {

namespace xml = remote::xml;

BOOST_AUTO_TEST_SUITE(s3_xml_test)

BOOST_AUTO_TEST_CASE(error_documents_give_code_message_and_request_id) {
  const std::string doc =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
      "<Message>The specified key does not exist.</Message><Key>a &amp; b</Key>"
      "<RequestId>4442587FB7D0A2F9</RequestId></Error>";
  xml::ErrorBody e;
  BOOST_TEST(xml::ParseError(doc, &e));
  BOOST_TEST(e.code == "NoSuchKey");
  BOOST_TEST(e.message == "The specified key does not exist.");
  BOOST_TEST(e.request_id == "4442587FB7D0A2F9");
  BOOST_TEST(!xml::ParseError("", &e));
  BOOST_TEST(!xml::ParseError("<html>Bad Gateway</html>", &e));
  BOOST_TEST(!xml::ParseError("<Error><Code>X</Code>", &e));  // cut short
}

BOOST_AUTO_TEST_CASE(a_listing_page_gives_objects_prefixes_and_the_next_token) {
  const std::string doc =
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"
      "<Prefix>p%2F</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
      "<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
      "<Contents><Key>p/a%20b</Key><LastModified>2024-01-02T03:04:05.000Z</LastModified>"
      "<ETag>&quot;0cc175b9c0f1b6a831c399e269772661&quot;</ETag><Size>1</Size>"
      "<StorageClass>STANDARD</StorageClass></Contents>"
      "<Contents><Key>p/c%2Bd</Key><Size>12345678901</Size><ETag>\"e\"</ETag></Contents>"
      "<CommonPrefixes><Prefix>p/sub%2F</Prefix></CommonPrefixes>"
      "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
      "</ListBucketResult>";
  xml::ListPage page;
  std::string error;
  BOOST_REQUIRE_MESSAGE(xml::ParseListObjectsV2(doc, &page, &error), error);
  BOOST_TEST(page.truncated);
  BOOST_TEST(page.next_continuation_token == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  BOOST_REQUIRE(page.objects.size() == 2u);
  BOOST_TEST(page.objects[0].key == "p/a b");
  BOOST_TEST(page.objects[0].info.etag == "\"0cc175b9c0f1b6a831c399e269772661\"");
  BOOST_TEST(page.objects[0].info.size == 1u);
  BOOST_TEST(page.objects[0].info.last_modified == "2024-01-02T03:04:05.000Z");
  BOOST_TEST(page.objects[1].key == "p/c+d");
  BOOST_TEST(page.objects[1].info.size == 12345678901u);
  BOOST_REQUIRE(page.common_prefixes.size() == 1u);
  BOOST_TEST(page.common_prefixes[0] == "p/sub/");
}

BOOST_AUTO_TEST_CASE(keys_are_decoded_only_when_the_server_says_it_encoded_them) {
  // s3rver ignores encoding-type=url and sends keys as they are.
  const std::string doc =
      "<ListBucketResult><IsTruncated>false</IsTruncated>"
      "<Contents><Key>100%25 literal</Key><Size>0</Size></Contents></ListBucketResult>";
  xml::ListPage page;
  std::string error;
  BOOST_REQUIRE(xml::ParseListObjectsV2(doc, &page, &error));
  BOOST_TEST(page.objects.at(0).key == "100%25 literal");
  BOOST_TEST(!page.truncated);
}

BOOST_AUTO_TEST_CASE(malformed_listings_are_errors_not_partial_results) {
  const std::pair<std::string, std::string> cases[] = {
      {"<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents>", "malformed XML"},
      {"<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents></ListBucketResult>",
       "no IsTruncated"},
      {"<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>", "IsTruncated"},
      {"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a</Key><Size>-1</Size>"
       "</Contents></ListBucketResult>",
       "Size is '-1'"},
      {"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Size>1</Size></Contents>"
       "</ListBucketResult>",
       "without Key"},
      {"<Error><Code>AccessDenied</Code></Error>", "not a ListBucketResult"},
      {"<ListBucketResult><IsTruncated>false</IsTruncated><EncodingType>url</EncodingType>"
       "<Contents><Key>bad%zz</Key><Size>1</Size></Contents></ListBucketResult>",
       "bad escape"},
  };
  for (const auto& [doc, why] : cases) {
    xml::ListPage page;
    std::string error;
    BOOST_TEST(!xml::ParseListObjectsV2(doc, &page, &error), doc);
    BOOST_TEST(error.find(why) != std::string::npos, doc << " -> " << error);
  }
}

BOOST_AUTO_TEST_CASE(documents_with_a_doctype_or_deep_nesting_are_refused) {
  // The "billion laughs": entity expansion must never happen.
  const std::string laughs =
      "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
      "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
      "<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">]>"
      "<Error><Code>&lol3;</Code></Error>";
  std::vector<xml::Element> elements;
  std::string error;
  BOOST_TEST(!xml::ParseElements(laughs, &elements, &error));
  BOOST_TEST(error.find("DOCTYPE") != std::string::npos, error);
  xml::ErrorBody e;
  BOOST_TEST(!xml::ParseError(laughs, &e));

  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  for (int i = 0; i < 100; ++i) deep += "</a>";
  BOOST_TEST(!xml::ParseElements(deep, &elements, &error));
  BOOST_TEST(error.find("nested deeper") != std::string::npos, error);
}

BOOST_AUTO_TEST_CASE(multipart_documents) {
  std::string id, error;
  BOOST_TEST(xml::ParseInitiateMultipartUpload(
      "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
      "<UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>",
      &id, &error));
  BOOST_TEST(id == "VXBsb2FkIElE");
  BOOST_TEST(!xml::ParseInitiateMultipartUpload("<InitiateMultipartUploadResult/>", &id, &error));

  std::string etag;
  xml::ErrorBody eb;
  BOOST_TEST(xml::ParseCompleteMultipartUpload(
      "<CompleteMultipartUploadResult><ETag>\"abc-2\"</ETag></CompleteMultipartUploadResult>",
      &etag, &eb, &error));
  BOOST_TEST(etag == "\"abc-2\"");
  // S3 may answer 200 and still report a failure in the body.
  BOOST_TEST(!xml::ParseCompleteMultipartUpload(
      "<Error><Code>InternalError</Code><Message>try again</Message></Error>", &etag, &eb, &error));
  BOOST_TEST(eb.code == "InternalError");
  BOOST_TEST(error == "InternalError: try again");

  BOOST_TEST(xml::CompleteMultipartUploadBody({"\"e1\"", "\"e&2\""}) ==
             "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
             "<Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag></Part>"
             "<Part><PartNumber>2</PartNumber><ETag>&quot;e&amp;2&quot;</ETag></Part>"
             "</CompleteMultipartUpload>");
}

BOOST_AUTO_TEST_CASE(backoff_is_exponential_with_full_jitter_and_capped) {
  remote::RetryPolicy p;
  p.backoff_base_ms = 100;
  p.backoff_max_ms = 1000;
  std::mt19937_64 rng(1);
  for (uint32_t failed = 1; failed <= 40; ++failed) {
    const uint64_t ceiling = std::min<uint64_t>(1000, uint64_t{100} << std::min(failed - 1, 30u));
    std::set<uint32_t> seen;
    for (int i = 0; i < 200; ++i) {
      const uint32_t d = remote::BackoffDelayMs(p, failed, rng);
      BOOST_TEST(d <= ceiling);
      seen.insert(d);
    }
    BOOST_TEST(seen.size() > 50u);                       // spread, not a constant
    if (failed >= 4) BOOST_TEST(*seen.rbegin() > 500u);  // reaches towards the cap
  }
  p.backoff_base_ms = 0;
  BOOST_TEST(remote::BackoffDelayMs(p, 3, rng) == 0u);
}

BOOST_AUTO_TEST_CASE(what_is_retried) {
  for (long s : {500L, 502L, 503L, 504L, 408L, 429L})
    BOOST_TEST(remote::IsRetryableHttpError(s, ""));
  BOOST_TEST(remote::IsRetryableHttpError(503, "SlowDown"));
  BOOST_TEST(remote::IsRetryableHttpError(400, "RequestTimeout"));
  BOOST_TEST(remote::IsRetryableHttpError(400, "XAmzContentSHA256Mismatch"));
  for (long s : {301L, 400L, 403L, 404L, 405L, 409L, 412L, 416L, 501L}) {
    BOOST_TEST(!remote::IsRetryableHttpError(s, ""), s);
  }
  BOOST_TEST(remote::IsCredentialsError(403, "SignatureDoesNotMatch"));
  BOOST_TEST(remote::IsCredentialsError(403, ""));
  BOOST_TEST(remote::IsCredentialsError(400, "ExpiredToken"));
  BOOST_TEST(!remote::IsCredentialsError(400, "InvalidArgument"));
  BOOST_TEST(!remote::IsCredentialsError(404, "NoSuchBucket"));
}

BOOST_AUTO_TEST_CASE(payload_hashes_match_the_published_vectors) {
  // FIPS 180-2, appendix B.1 and B.2, and the empty message.
  BOOST_TEST(util::Sha256Hex("abc") ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(util::Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  BOOST_TEST(util::Sha256Hex("") == util::kEmptySha256);
  BOOST_TEST(util::kEmptySha256 ==
             "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

  // A region of a file hashes as those bytes; a file too short is an error.
  TempDir dir;
  const std::string million_a(1000000, 'a');  // FIPS 180-2 B.3
  WriteFile(dir / "f", "xyz" + million_a + "tail");
  const int fd = ::open((dir / "f").c_str(), O_RDONLY | O_CLOEXEC);
  BOOST_REQUIRE(fd >= 0);
  BOOST_TEST(util::Sha256HexOfFile(fd, dir / "f", 3, 1000000) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  BOOST_TEST(util::Sha256HexOfFile(fd, dir / "f", 0, 3) == util::Sha256Hex("xyz"));
  BOOST_CHECK_THROW(util::Sha256HexOfFile(fd, dir / "f", 1000000, 100), IoError);
  ::close(fd);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb::test
