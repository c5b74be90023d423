// S3Client through tests/harness/s3_proxy.py: every request's SigV4
// signature and payload hash checked independently (botocore), and faults
// injected on command — resets, dropped and truncated bodies, stalls,
// delays, 503 SlowDown, 500s, wrong ranges, corrupted uploads — to show
// that transient failures are retried into exact bytes, persistent ones give
// the documented error within a bounded time, and a server that comes back
// is used again by the same client.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "s3/s3_client.h"
#include "support/remote_fixture.h"
#include "support/test_util.h"
#include "tests/harness/s3_server.h"
#include "util/sha256.h"

namespace gulpdb::test {
namespace {

using remote::AccessDeniedError;
using remote::RangeRead;
using remote::S3Client;
using Clock = std::chrono::steady_clock;

S3rverServer& Upstream() {
  static std::unique_ptr<S3rverServer> server = std::make_unique<S3rverServer>();
  return *server;
}

// The proxy in front of Upstream(), its rules and counters cleared.
S3ProxyServer& Proxy() {
  static std::unique_ptr<S3ProxyServer> proxy = std::make_unique<S3ProxyServer>(Upstream().port());
  proxy->Reset();
  return *proxy;
}

remote::S3Config ProxyConfig() {
  return TestConfig(Proxy().endpoint(), S3ProxyServer::kAccessKey, S3ProxyServer::kSecretKey);
}

std::unique_ptr<S3Client> ProxyClient(const remote::S3Config& config = ProxyConfig()) {
  return std::make_unique<S3Client>(config, Upstream().bucket());
}

using test::Contains;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(s3_faults_test)

BOOST_AUTO_TEST_CASE(every_operation_passes_an_independent_signature_check) {
  S3ProxyServer& proxy = Proxy();
  remote::S3Config config = ProxyConfig();
  config.credentials.session_token = "FwoGZXIvYXdzEJr//////////token+with/signs=";
  auto client = ProxyClient(config);
  TempDir dir;
  const std::string p = UniquePrefix("signed");
  const std::string data = RandomBytes(11u << 20, 31);
  WriteFile(dir / "file", data);

  client->Put(p + "mem", "in memory");
  client->PutFile(p + "region", dir / "file", 7, 100000);
  remote::UploadOptions parts;
  parts.part_size = 5u << 20;
  parts.multipart_threshold = 1;
  client->UploadFile(p + "multi part", dir / "file", parts);
  const std::vector<std::string> odd = {"sp ace", "pl+us",       "eq=&?",
                                        "pct%20", "uni\xc3\xa9", "a~b*c'd(e)"};
  for (const std::string& n : odd) client->Put(p + "odd/" + n, n);

  BOOST_TEST(client->Get(p + "mem") == "in memory");
  BOOST_TEST(client->Head(p + "region").size == 100000u);
  BOOST_TEST((GetRange(*client, p + "multi part", 5u << 20, 1000) == data.substr(5u << 20, 1000)));
  std::vector<std::string> buffers(10, std::string(1000, '\0'));
  std::vector<RangeRead> reads;
  for (size_t i = 0; i < buffers.size(); ++i) {
    reads.push_back({p + "multi part", i * 1000000, 1000, buffers[i].data()});
  }
  client->GetRanges(reads);
  BOOST_TEST((buffers[9] == data.substr(9000000, 1000)));
  for (const std::string& n : odd) BOOST_TEST(client->Get(p + "odd/" + n) == n);

  remote::ListOptions paged;
  paged.page_size = 2;  // continuation tokens ('/', '+', '=') in the signed query
  BOOST_TEST(client->List(p, paged).objects.size() == 3 + odd.size());
  remote::ListOptions rolled;
  rolled.delimiter = "/";
  BOOST_TEST(client->List(p, rolled).common_prefixes.size() == 1u);
  client->DeleteMany({p + "mem", p + "region"});
  BOOST_TEST(!client->HeadIfExists(p + "mem").has_value());

  const ProxyStats stats = proxy.Stats();
  BOOST_TEST_MESSAGE("signed requests checked: " << stats.requests);
  BOOST_TEST(stats.requests >= 30u);
  BOOST_TEST(stats.signature_failures == 0u);
  BOOST_TEST(client->stats().retries == 0u);
}

BOOST_AUTO_TEST_CASE(a_wrong_secret_key_is_access_denied_naming_the_bucket) {
  S3ProxyServer& proxy = Proxy();
  remote::S3Config config = ProxyConfig();
  config.credentials.secret_access_key = "not-the-secret";
  config.credentials.source = "profile 'ci' in /home/ci/.aws/credentials";
  auto client = ProxyClient(config);
  for (int op = 0; op < 3; ++op) {
    try {
      if (op == 0) client->Get("any");
      if (op == 1) client->Put("any", "x");
      if (op == 2) client->List("");
      BOOST_FAIL("a wrong secret key was accepted");
    } catch (const AccessDeniedError& e) {
      const std::string m = e.what();
      BOOST_TEST_MESSAGE(m);
      BOOST_TEST(Contains(m, "access denied to bucket '" + Upstream().bucket() + "'"));
      BOOST_TEST(Contains(m, "HTTP 403 SignatureDoesNotMatch"));
      BOOST_TEST(Contains(m, "key id GULPTEST from profile 'ci' in /home/ci/.aws/credentials"));
      BOOST_TEST(Contains(m, "(1 attempt)"));
    }
  }
  BOOST_TEST(proxy.Stats().signature_failures == 3u);
}

BOOST_AUTO_TEST_CASE(a_wrong_access_key_is_access_denied) {
  remote::S3Config config = ProxyConfig();
  config.credentials.access_key_id = "AKIAWRONG";
  auto client = ProxyClient(config);
  try {
    client->Head("any");
    BOOST_FAIL("a wrong access key was accepted");
  } catch (const AccessDeniedError& e) {
    // HEAD answers carry no body, so no S3 error code: the status says it.
    BOOST_TEST(Contains(e.what(), "access denied to bucket"));
    BOOST_TEST(Contains(e.what(), "HTTP 403"));
  }
  try {
    client->Get("any");
    BOOST_FAIL("a wrong access key was accepted");
  } catch (const AccessDeniedError& e) {
    BOOST_TEST(Contains(e.what(), "InvalidAccessKeyId"));
  }
}

BOOST_AUTO_TEST_CASE(transient_503s_are_retried_and_the_bytes_are_exact) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  const std::string key = UniquePrefix("slowdown") + "obj";
  const std::string data = RandomBytes(100000, 32);
  client->Put(key, data);
  proxy.AddFault(R"({"kind": "slowdown", "count": 2})");
  BOOST_TEST((GetRange(*client, key, 1000, 5000) == data.substr(1000, 5000)));
  BOOST_TEST(client->stats().retries == 2u);
  BOOST_TEST(proxy.Stats().faults_injected == 2u);
}

BOOST_AUTO_TEST_CASE(broken_connections_and_bodies_are_retried) {
  auto client = ProxyClient();
  const std::string key = UniquePrefix("broken") + "obj";
  const std::string data = RandomBytes(300000, 33);
  client->Put(key, data);
  for (const char* kind : {"drop_body", "truncate", "reset", "refuse", "error500"}) {
    S3ProxyServer& proxy = Proxy();
    // A new client: its first request opens a connection (curl itself
    // resends a request whose reused connection died, which would hide the
    // fault from the client's retry counter).
    auto reader = ProxyClient();
    proxy.AddFault(std::string(R"({"kind": ")") + kind + R"(", "count": 1})");
    BOOST_TEST((reader->Get(key) == data), kind);
    BOOST_TEST((GetRange(*reader, key, 7, 250000) == data.substr(7, 250000)), kind);
    BOOST_TEST(proxy.Stats().faults_injected == 1u, kind);
    BOOST_TEST(reader->stats().retries == 1u, kind);
  }
}

BOOST_AUTO_TEST_CASE(a_batch_under_random_faults_returns_exact_bytes) {
  S3ProxyServer& proxy = Proxy();
  remote::S3Config config = ProxyConfig();
  config.max_attempts = 10;  // a range failing 10 times in a row: < 1e-8 at these rates
  auto client = ProxyClient(config);
  const std::string p = UniquePrefix("randombatch");
  std::vector<std::string> objects;
  for (size_t i = 0; i < 3; ++i) {
    objects.push_back(RandomBytes(400000, 40 + i));
    client->Put(p + std::to_string(i), objects.back());
  }
  proxy.AddFault(R"({"kind": "slowdown", "fraction": 0.05, "seed": 1, "method": "GET"})");
  proxy.AddFault(R"({"kind": "drop_body", "fraction": 0.05, "seed": 2, "method": "GET"})");
  proxy.AddFault(R"({"kind": "truncate", "fraction": 0.05, "seed": 3, "method": "GET"})");
  proxy.AddFault(R"({"kind": "reset", "fraction": 0.03, "seed": 4, "method": "GET"})");
  std::mt19937 rng(5);
  std::vector<std::string> buffers(400);
  std::vector<RangeRead> reads;
  std::vector<std::string> expected;
  for (std::string& b : buffers) {
    const size_t obj = rng() % objects.size();
    const size_t len = 1 + rng() % 30000;
    const size_t off = rng() % (objects[obj].size() - len);
    b.assign(len, '\0');
    reads.push_back({p + std::to_string(obj), off, len, b.data()});
    expected.push_back(objects[obj].substr(off, len));
  }
  client->GetRanges(reads);
  for (size_t i = 0; i < buffers.size(); ++i) BOOST_TEST((buffers[i] == expected[i]), i);
  const ProxyStats stats = proxy.Stats();
  BOOST_TEST_MESSAGE("faults injected: " << stats.faults_injected
                                         << ", client retries: " << client->stats().retries);
  BOOST_TEST(stats.faults_injected > 10u);
  BOOST_TEST(client->stats().retries > 10u);
}

BOOST_AUTO_TEST_CASE(persistent_503s_give_the_documented_error_in_bounded_time) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  const std::string key = UniquePrefix("persistent") + "obj";
  client->Put(key, "data");
  proxy.AddFault(R"({"kind": "slowdown", "count": 1000})");
  const auto start = Clock::now();
  try {
    client->Get(key);
    BOOST_FAIL("persistent 503s gave a success");
  } catch (const IoError& e) {
    const std::string m = e.what();
    BOOST_TEST_MESSAGE(m);
    BOOST_TEST(Contains(m, "GET s3://" + Upstream().bucket() + "/" + key));
    BOOST_TEST(Contains(m, client->ObjectUrl(key)));
    BOOST_TEST(Contains(m, "HTTP 503 SlowDown: Please reduce your request rate."));
    BOOST_TEST(Contains(m, "(4 attempts)"));
  }
  BOOST_TEST(SecondsSince(start) < 3.0);
  BOOST_TEST(proxy.Stats().faults_injected == 4u);
  proxy.ClearFaults();
  BOOST_TEST(client->Get(key) == "data");  // the same client, once the server recovers
}

BOOST_AUTO_TEST_CASE(persistently_dropped_bodies_give_an_io_error) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  const std::string key = UniquePrefix("drops") + "obj";
  const std::string data = RandomBytes(200000, 34);
  client->Put(key, data);
  proxy.AddFault(R"({"kind": "truncate", "count": 1000})");
  try {
    GetRange(*client, key, 0, 100000);
    BOOST_FAIL("truncated bodies gave a success");
  } catch (const IoError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(Contains(e.what(), "(4 attempts)"));
    BOOST_TEST(Contains(e.what(), "partial file"));
  }
}

BOOST_AUTO_TEST_CASE(a_stalled_response_is_abandoned_after_the_stall_timeout) {
  S3ProxyServer& proxy = Proxy();
  remote::S3Config config = ProxyConfig();
  config.stall_timeout_ms = 1000;
  config.max_attempts = 2;
  auto client = ProxyClient(config);
  const std::string key = UniquePrefix("stall") + "obj";
  client->Put(key, RandomBytes(100000, 35));
  proxy.AddFault(R"({"kind": "stall", "delay_ms": 10000, "count": 10})");
  const auto start = Clock::now();
  try {
    client->Get(key);
    BOOST_FAIL("a stalled response gave a success");
  } catch (const IoError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(Contains(e.what(), "stalled: no byte moved for"));
    BOOST_TEST(Contains(e.what(), "(2 attempts)"));
  }
  const double seconds = SecondsSince(start);
  BOOST_TEST_MESSAGE("gave up after " << seconds << " s");
  BOOST_TEST(seconds < 6.0);  // curl's own low-speed check took 14 s here
}

BOOST_AUTO_TEST_CASE(the_request_deadline_bounds_all_attempts) {
  S3ProxyServer& proxy = Proxy();
  remote::S3Config config = ProxyConfig();
  config.request_timeout_ms = 1500;
  config.max_attempts = 10;
  auto client = ProxyClient(config);
  const std::string key = UniquePrefix("deadline") + "obj";
  client->Put(key, "data");
  proxy.AddFault(R"({"kind": "delay", "delay_ms": 4000, "count": 100})");
  const auto start = Clock::now();
  try {
    client->Get(key);
    BOOST_FAIL("a hanging server gave a success");
  } catch (const IoError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(Contains(e.what(), "request deadline of 1500 ms reached"));
  }
  const double seconds = SecondsSince(start);
  BOOST_TEST(seconds >= 1.4);
  BOOST_TEST(seconds < 3.0);
}

BOOST_AUTO_TEST_CASE(other_bytes_than_asked_are_never_returned) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  const std::string key = UniquePrefix("wrongbytes") + "obj";
  const std::string data = RandomBytes(5000, 36);
  client->Put(key, data);
  std::string buf(100, '\0');

  proxy.AddFault(R"({"kind": "shift_range", "count": 1000})");
  try {
    GetRange(*client, key, 10, 100, buf.data());
    BOOST_FAIL("a shifted range was accepted");
  } catch (const IoError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(Contains(e.what(), "the server sent bytes 11-110"));
    BOOST_TEST(Contains(e.what(), "for bytes 10-109"));
  }
  proxy.Reset();
  proxy.AddFault(R"({"kind": "ignore_range", "count": 1000})");
  try {
    GetRange(*client, key, 10, 100, buf.data());
    BOOST_FAIL("a whole object was accepted for a range");
  } catch (const IoError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(Contains(e.what(), "ignored the Range header"));
    BOOST_TEST(Contains(e.what(), "(1 attempt)"));
  }
  // ... unless the range is the whole object.
  BOOST_TEST((GetRange(*client, key, 0, 5000) == data));
  // One transient wrong answer is retried.
  proxy.Reset();
  proxy.AddFault(R"({"kind": "shift_range", "count": 1})");
  BOOST_TEST((GetRange(*client, key, 10, 100) == data.substr(10, 100)));
}

BOOST_AUTO_TEST_CASE(a_corrupted_upload_is_refused_by_its_payload_hash_and_sent_again) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  const std::string key = UniquePrefix("corrupt") + "obj";
  const std::string data = RandomBytes(100000, 37);
  proxy.AddFault(R"({"kind": "corrupt_request", "count": 1, "method": "PUT"})");
  client->Put(key, data);
  BOOST_TEST(proxy.Stats().signature_failures == 1u);  // XAmzContentSHA256Mismatch
  BOOST_TEST(client->stats().retries == 1u);
  BOOST_TEST((client->Get(key) == data));
}

BOOST_AUTO_TEST_CASE(bytes_a_store_kept_damaged_are_found_by_their_etag_and_sent_again) {
  // The store (s3rver) checks neither the payload hash nor Content-MD5:
  // the proxy flips a byte after its own checks, as a hop after them would.
  // The ETag it answers is the MD5 of what it stored, not of what was sent.
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  TempDir dir;
  const std::string p = UniquePrefix("stored-damaged");
  const std::string data = RandomBytes(100000, 41);
  WriteFile(dir / "f", data);
  const std::string md5 = "\"" + util::DigestsOf(data).md5_hex + "\"";
  // A plain PUT, a conditional one of a new key, and one replacing an
  // object by its ETag: each stored damaged once, then replaced by the
  // retry (conditional on the damaged object's ETag), never left damaged.
  proxy.AddFault(R"({"kind": "corrupt_stored", "count": 1, "method": "PUT"})");
  BOOST_TEST(client->Put(p + "plain", data) == md5);
  BOOST_TEST((client->Get(p + "plain") == data));
  remote::WriteOptions absent;
  absent.if_absent = true;
  absent.metadata["gulpdb-push"] = "one";
  proxy.AddFault(R"({"kind": "corrupt_stored", "count": 1, "method": "PUT"})");
  BOOST_TEST(client->PutFile(p + "new", dir / "f", 0, data.size(), absent) == md5);
  BOOST_TEST((client->Get(p + "new") == data));
  remote::WriteOptions replace;
  replace.if_match = client->Put(p + "old", "old bytes");
  proxy.AddFault(R"({"kind": "corrupt_stored", "count": 1, "method": "PUT"})");
  BOOST_TEST(client->Put(p + "old", data, replace) == md5);
  BOOST_TEST((client->Get(p + "old") == data));
  BOOST_TEST(proxy.Stats().faults_injected == 3u);
  // Every PUT with a body carried Content-MD5, and the proxy (checking it
  // as S3 does) accepted it.
  const std::string log = proxy.Log();
  BOOST_TEST(Contains(log, R"("content_md5": ")" + util::DigestsOf(data).md5_base64 + "\""));
  BOOST_TEST(!std::regex_search(log, std::regex(R"(\{"method": "PUT"[^}]*"content_md5": null)")),
             log);
  // A store that keeps damaging them: an IoError naming the object, never a
  // success.
  proxy.AddFault(R"({"kind": "corrupt_stored", "count": 100, "method": "PUT"})");
  try {
    client->Put(p + "always", data);
    BOOST_FAIL("a PUT stored damaged bytes reported success");
  } catch (const IoError& e) {
    BOOST_TEST(Contains(e.what(), p + "always"), e.what());
    BOOST_TEST(Contains(e.what(), "not the MD5"), e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_multipart_part_a_store_kept_damaged_is_sent_again) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  TempDir dir;
  const std::string data = RandomBytes((11u << 20) + 777, 42);
  WriteFile(dir / "f", data);
  const std::string key = UniquePrefix("multi-damaged") + "obj";
  proxy.AddFault(
      R"({"kind": "corrupt_stored", "count": 1, "method": "PUT", "path": "partNumber=2"})");
  remote::UploadOptions parts;
  parts.part_size = 5u << 20;
  client->MultipartUpload(key, dir / "f", 0, data.size(), parts);
  BOOST_TEST(proxy.Stats().faults_injected == 1u);
  BOOST_TEST((client->Get(key) == data));
}

BOOST_AUTO_TEST_CASE(a_multipart_upload_survives_faults_on_parts_and_completion) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  TempDir dir;
  const std::string data = RandomBytes((11u << 20) + 12345, 38);
  WriteFile(dir / "f", data);
  const std::string key = UniquePrefix("multifault") + "obj";
  proxy.AddFault(R"({"kind": "reset", "count": 2, "method": "PUT", "path": "partNumber="})");
  proxy.AddFault(R"({"kind": "error500", "count": 1, "method": "POST", "path": "uploadId="})");
  remote::UploadOptions parts;
  parts.part_size = 5u << 20;
  client->MultipartUpload(key, dir / "f", 0, data.size(), parts);
  BOOST_TEST(proxy.Stats().faults_injected == 3u);
  BOOST_TEST(client->stats().retries == 3u);
  BOOST_TEST((client->Get(key) == data));
}

BOOST_AUTO_TEST_CASE(a_failed_multipart_upload_is_aborted_and_stores_nothing) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  TempDir dir;
  WriteFile(dir / "f", RandomBytes(6u << 20, 39));
  const std::string key = UniquePrefix("multiabort") + "obj";
  proxy.AddFault(
      R"({"kind": "status", "status": 403, "code": "AccessDenied", "method": "POST", "path": "uploadId="})");
  remote::UploadOptions parts;
  parts.part_size = 5u << 20;
  BOOST_CHECK_THROW(client->MultipartUpload(key, dir / "f", 0, 6u << 20, parts), AccessDeniedError);
  BOOST_TEST(Contains(proxy.Log(), R"("method": "DELETE", "path": "/)"));
  BOOST_TEST(!client->HeadIfExists(key).has_value());
}

BOOST_AUTO_TEST_CASE(a_download_to_a_file_resumes_where_it_broke) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  TempDir dir;
  const size_t size = 3000000;
  const std::string data = RandomBytes(size, 40);
  const std::string key = UniquePrefix("resume") + "obj";
  client->Put(key, data);
  proxy.AddFault(R"({"kind": "truncate", "count": 1, "method": "GET"})");
  const remote::ObjectInfo info = client->GetToFile(key, dir / "out");
  BOOST_TEST(info.size == size);
  BOOST_TEST((ReadFile(dir / "out") == data));
  // The truncated answer delivered all but a third of the body: the retry
  // asked for the rest only.
  const std::string log = proxy.Log();
  BOOST_TEST(Contains(log, "\"range\": \"bytes=" + std::to_string(size - size / 3) + "-\""), log);
}

BOOST_AUTO_TEST_CASE(a_download_whose_object_changed_before_resuming_fails_and_leaves_no_file) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  TempDir dir;
  const std::string key = UniquePrefix("changed") + "obj";
  client->Put(key, RandomBytes(500000, 44));
  // The first answer is cut short; the resumed request (If-Match on the
  // ETag) is told the object is no longer that one.
  proxy.AddFault(R"({"kind": "truncate", "count": 1, "method": "GET"})");
  proxy.AddFault(
      R"({"kind": "status", "status": 412, "code": "PreconditionFailed", "method": "GET"})");
  try {
    client->GetToFile(key, dir / "out");
    BOOST_FAIL("a download spliced from two versions succeeded");
  } catch (const IoError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(Contains(e.what(), "HTTP 412 PreconditionFailed"));
    BOOST_TEST(Contains(e.what(), "the object changed while it was being downloaded"));
  }
  BOOST_TEST(::access((dir / "out").c_str(), F_OK) != 0);
}

BOOST_AUTO_TEST_CASE(connection_refused_then_the_server_restarted_and_the_same_client_works) {
  S3rverServer server;
  auto client = std::make_unique<S3Client>(
      TestConfig(server.endpoint(), S3rverServer::kAccessKey, S3rverServer::kSecretKey),
      server.bucket());
  const std::string data = RandomBytes(70000, 41);
  client->Put("k", data);
  BOOST_TEST((GetRange(*client, "k", 5, 500) == data.substr(5, 500)));

  server.Stop();
  const auto start = Clock::now();
  try {
    client->Get("k");
    BOOST_FAIL("a stopped server gave a success");
  } catch (const IoError& e) {
    const std::string m = e.what();
    BOOST_TEST_MESSAGE(m);
    BOOST_TEST(Contains(m, "GET s3://" + server.bucket() + "/k (" + server.endpoint()));
    BOOST_TEST(Contains(m, "Couldn't connect to server"));
    BOOST_TEST(Contains(m, "(4 attempts)"));
  }
  BOOST_TEST(SecondsSince(start) < 3.0);

  server.Start();
  BOOST_TEST((GetRange(*client, "k", 5, 500) == data.substr(5, 500)));
  BOOST_TEST((client->Get("k") == data));
}

BOOST_AUTO_TEST_CASE(https_works_with_the_right_ca_and_refuses_an_unknown_certificate) {
  S3ProxyServer tls_proxy(Upstream().port(), {}, /*tls=*/true);
  BOOST_TEST(tls_proxy.endpoint().substr(0, 8) == "https://");
  remote::S3Config config =
      TestConfig(tls_proxy.endpoint(), S3ProxyServer::kAccessKey, S3ProxyServer::kSecretKey);
  config.ca_bundle = TlsCaFile();
  auto client = ProxyClient(config);
  const std::string key = UniquePrefix("tls") + "obj";
  const std::string data = RandomBytes(300000, 43);
  client->Put(key, data);
  BOOST_TEST((client->Get(key) == data));
  BOOST_TEST((GetRange(*client, key, 100, 1000) == data.substr(100, 1000)));
  BOOST_TEST(tls_proxy.Stats().signature_failures == 0u);

  // The system's CAs do not know the test certificate: no request is made.
  config.ca_bundle.clear();
  auto untrusting = ProxyClient(config);
  try {
    untrusting->Get(key);
    BOOST_FAIL("an unknown certificate was trusted");
  } catch (const IoError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(Contains(e.what(), "certificate"));
    BOOST_TEST(Contains(e.what(), "(1 attempt)"));
  }
}

BOOST_AUTO_TEST_CASE(the_proxy_sees_1000_range_gets_over_reused_connections) {
  S3ProxyServer& proxy = Proxy();
  auto client = ProxyClient();
  const std::string key = UniquePrefix("proxyreuse") + "obj";
  const std::string data = RandomBytes(1 << 20, 42);
  client->Put(key, data);
  proxy.Reset();
  std::vector<std::string> buffers(1000, std::string(1024, '\0'));
  std::vector<RangeRead> reads;
  for (size_t i = 0; i < buffers.size(); ++i)
    reads.push_back({key, i * 1000, 1024, buffers[i].data()});
  client->GetRanges(reads);
  BOOST_TEST((buffers[500] == data.substr(500000, 1024)));
  const ProxyStats stats = proxy.Stats();
  BOOST_TEST_MESSAGE("1000 range GETs through the proxy: " << stats.connections
                                                           << " connection(s) seen by the server");
  BOOST_TEST(stats.requests == 1000u);
  BOOST_TEST(stats.connections <= 8u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb::test
