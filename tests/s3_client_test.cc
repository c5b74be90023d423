// S3Client against a real S3 server (s3rver): every operation, byte-exact
// round trips, multipart uploads read back with ranged GETs, concurrent
// batches, connection reuse, and the errors of absent objects, bad ranges
// and unknown keys.
#include "s3/s3_client.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "s3/s3_url.h"
#include "support/remote_fixture.h"
#include "support/test_util.h"
#include "tests/harness/s3_server.h"

namespace gulpdb::test {
namespace {

using remote::AccessDeniedError;
using remote::ObjectInfo;
using remote::RangeNotSatisfiableError;
using remote::RangeRead;
using remote::S3Client;

// One s3rver for the whole suite (started on first use).
S3rverServer& Server() {
  static std::unique_ptr<S3rverServer> server = std::make_unique<S3rverServer>();
  return *server;
}

remote::S3Config Config() {
  return TestConfig(Server().endpoint(), S3rverServer::kAccessKey, S3rverServer::kSecretKey);
}

std::unique_ptr<S3Client> NewClient() {
  return std::make_unique<S3Client>(Config(), Server().bucket());
}

using test::Contains;

}  // namespace

// Where two byte strings first differ (the shorter one's size if one is a
// prefix of the other).
size_t FirstDifference(const std::string& a, const std::string& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return i;
  }
  return n;
}

BOOST_AUTO_TEST_SUITE(s3_client_test)

BOOST_AUTO_TEST_CASE(put_then_get_returns_the_same_bytes) {
  auto client = NewClient();
  const std::string p = UniquePrefix("roundtrip");
  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{1} << 20}) {
    const std::string key = p + "obj" + std::to_string(size);
    const std::string data = RandomBytes(size, size + 1);
    const std::string etag = client->Put(key, data);
    BOOST_TEST(!etag.empty());
    ObjectInfo info;
    const std::string back = client->Get(key, &info);
    BOOST_TEST(back.size() == data.size());
    BOOST_TEST((back == data), "bytes differ for size " << size);
    BOOST_TEST(info.size == size);
    BOOST_TEST(info.etag == etag);
  }
}

BOOST_AUTO_TEST_CASE(put_replaces_an_existing_object) {
  auto client = NewClient();
  const std::string key = UniquePrefix("replace") + "obj";
  client->Put(key, "first version, longer");
  client->Put(key, "second");
  BOOST_TEST(client->Get(key) == "second");
}

BOOST_AUTO_TEST_CASE(head_reports_size_etag_and_last_modified) {
  auto client = NewClient();
  const std::string key = UniquePrefix("head") + "obj";
  const std::string etag = client->Put(key, RandomBytes(12345, 7));
  const ObjectInfo info = client->Head(key);
  BOOST_TEST(info.size == 12345u);
  BOOST_TEST(info.etag == etag);
  BOOST_TEST(!info.last_modified.empty());
  BOOST_TEST(client->HeadIfExists(key).has_value());
  BOOST_TEST(!client->HeadIfExists(key + "-absent").has_value());
}

BOOST_AUTO_TEST_CASE(absent_object_is_not_found_naming_url_object_and_status) {
  auto client = NewClient();
  const std::string key = UniquePrefix("absent") + "nothing here";
  try {
    client->Get(key);
    BOOST_FAIL("Get of an absent object succeeded");
  } catch (const NotFoundError& e) {
    const std::string m = e.what();
    BOOST_TEST_MESSAGE(m);
    BOOST_TEST(Contains(m, "GET s3://" + Server().bucket() + "/" + key));
    BOOST_TEST(Contains(m, client->ObjectUrl(key)));
    BOOST_TEST(Contains(m, "HTTP 404 NoSuchKey"));
    BOOST_TEST(Contains(m, "(1 attempt)"));
  }
  BOOST_CHECK_THROW(client->Head(key), NotFoundError);
  std::string buf(10, '\0');
  BOOST_CHECK_THROW(GetRange(*client, key, 0, 10, buf.data()), NotFoundError);
}

BOOST_AUTO_TEST_CASE(get_range_returns_exactly_the_asked_bytes) {
  auto client = NewClient();
  const std::string key = UniquePrefix("range") + "obj";
  const std::string data = RandomBytes(100000, 3);
  client->Put(key, data);
  for (auto [off, len] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, 100000}, {0, 2}, {1, 1}, {99999, 1}, {12345, 54321}, {50000, 50000}}) {
    BOOST_TEST((GetRange(*client, key, off, len) == data.substr(off, len)),
               "range " << off << "+" << len);
  }
  BOOST_TEST(GetRange(*client, key, 500, 0).empty());
}

BOOST_AUTO_TEST_CASE(range_past_the_end_of_the_object_is_range_not_satisfiable) {
  auto client = NewClient();
  const std::string key = UniquePrefix("pastend") + "obj";
  client->Put(key, RandomBytes(1000, 4));
  // Partly inside: the server clamps the range; the client must not accept it.
  try {
    GetRange(*client, key, 900, 200);
    BOOST_FAIL("a range past the end succeeded");
  } catch (const RangeNotSatisfiableError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(Contains(e.what(), "1000 bytes long"));
  }
  // Wholly outside.
  BOOST_CHECK_THROW(GetRange(*client, key, 1000, 1), RangeNotSatisfiableError);
  BOOST_CHECK_THROW(GetRange(*client, key, 5000, 10), RangeNotSatisfiableError);
}

BOOST_AUTO_TEST_CASE(a_server_answering_a_one_byte_range_with_the_whole_object_is_not_believed) {
  // s3rver 3.7.1 answers "Range: bytes=0-0" with 206 and the whole object
  // (Content-Range: bytes 0-9/10). Those bytes must never land in the
  // caller's one-byte buffer, nor be returned as the range.
  auto client = NewClient();
  const std::string key = UniquePrefix("zerozero") + "obj";
  client->Put(key, "0123456789");
  std::string out(1, '\0');
  try {
    GetRange(*client, key, 0, 1, out.data());
    BOOST_TEST(out == "0");  // a server that gets it right
  } catch (const IoError& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(Contains(e.what(),
                        "the server sent bytes 0-9 (Content-Range 'bytes 0-9/10') for "
                        "bytes 0-0"));
  }
}

BOOST_AUTO_TEST_CASE(get_refuses_objects_larger_than_max_size) {
  auto client = NewClient();
  const std::string key = UniquePrefix("maxsize") + "obj";
  client->Put(key, RandomBytes(5000, 5));
  BOOST_TEST(client->Get(key, nullptr, 5000).size() == 5000u);
  try {
    client->Get(key, nullptr, 4999);
    BOOST_FAIL("an object over max_size was returned");
  } catch (const IoError& e) {
    BOOST_TEST(Contains(e.what(), "larger than the 4999 bytes"));
  }
}

BOOST_AUTO_TEST_CASE(get_to_file_streams_the_object_and_removes_the_file_on_failure) {
  auto client = NewClient();
  TempDir dir;
  const std::string key = UniquePrefix("tofile") + "obj";
  const std::string data = RandomBytes(3 << 20, 6);
  client->Put(key, data);
  const ObjectInfo info = client->GetToFile(key, dir / "out");
  BOOST_TEST(info.size == data.size());
  BOOST_TEST((ReadFile(dir / "out") == data));

  BOOST_CHECK_THROW(client->GetToFile(key + "-absent", dir / "missing"), NotFoundError);
  BOOST_TEST(::access((dir / "missing").c_str(), F_OK) != 0);
}

BOOST_AUTO_TEST_CASE(put_file_uploads_exactly_the_region) {
  auto client = NewClient();
  TempDir dir;
  const std::string data = RandomBytes(200000, 8);
  WriteFile(dir / "chunk", data);
  const std::string p = UniquePrefix("region");
  client->PutFile(p + "middle", dir / "chunk", 1000, 150000);
  BOOST_TEST((client->Get(p + "middle") == data.substr(1000, 150000)));
  client->UploadFile(p + "whole", dir / "chunk");
  BOOST_TEST((client->Get(p + "whole") == data));
  client->PutFile(p + "empty", dir / "chunk", 5, 0);
  BOOST_TEST(client->Get(p + "empty").empty());
  // A region beyond the file is refused before any request.
  BOOST_CHECK_THROW(client->PutFile(p + "bad", dir / "chunk", 100000, 100001),
                    InvalidArgumentError);
  BOOST_CHECK_THROW(client->PutFile(p + "bad", dir / "no such file", 0, 1), NotFoundError);
  BOOST_TEST(!client->HeadIfExists(p + "bad").has_value());
}

BOOST_AUTO_TEST_CASE(multipart_upload_of_40_mb_reads_back_byte_exact_with_ranged_gets) {
  auto client = NewClient();
  TempDir dir;
  const size_t size = 40u << 20;
  const std::string data = RandomBytes(size, 9);
  WriteFile(dir / "big", data);
  const std::string key = UniquePrefix("multipart") + "big";
  const auto before = client->stats();
  remote::UploadOptions options;
  options.part_size = 5u << 20;
  client->UploadFile(key, dir / "big", options);
  const auto after = client->stats();
  // create + 8 parts + complete + HEAD check
  BOOST_TEST(after.requests - before.requests == 11u);
  BOOST_TEST(client->Head(key).size == size);

  // Read it back in 1 MiB ranges, all in one concurrent batch.
  std::string back(size, '\0');
  std::vector<RangeRead> reads;
  for (size_t off = 0; off < size; off += 1u << 20) {
    reads.push_back({key, off, std::min<size_t>(1u << 20, size - off), back.data() + off});
  }
  client->GetRanges(reads);
  BOOST_TEST((back == data));
  // And a few ranges across part boundaries.
  for (uint64_t off : {uint64_t{5u << 20} - 10, uint64_t{35u << 20} - 3, uint64_t{size} - 100}) {
    BOOST_TEST((GetRange(*client, key, off, 100) == data.substr(off, 100)));
  }
}

BOOST_AUTO_TEST_CASE(small_files_upload_in_one_put_large_ones_in_parts) {
  auto client = NewClient();
  TempDir dir;
  const std::string data = RandomBytes(6u << 20, 10);
  WriteFile(dir / "f", data);
  const std::string p = UniquePrefix("threshold");
  remote::UploadOptions single;
  single.multipart_threshold = 8u << 20;
  auto before = client->stats().requests;
  client->UploadFile(p + "single", dir / "f", single);
  BOOST_TEST(client->stats().requests - before == 1u);
  remote::UploadOptions parts;
  parts.multipart_threshold = 1u << 20;
  parts.part_size = 5u << 20;
  before = client->stats().requests;
  client->UploadFile(p + "parts", dir / "f", parts);
  BOOST_TEST(client->stats().requests - before == 5u);  // create, 2 parts, complete, HEAD
  BOOST_TEST((client->Get(p + "single") == data));
  BOOST_TEST((client->Get(p + "parts") == data));
  // Part sizes under S3's minimum are refused.
  remote::UploadOptions tiny;
  tiny.part_size = 1u << 20;
  BOOST_CHECK_THROW(client->MultipartUpload(p + "tiny", dir / "f", 0, data.size(), tiny),
                    InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(a_batch_of_ranges_fills_every_buffer) {
  auto client = NewClient();
  const std::string p = UniquePrefix("batch");
  std::vector<std::string> objects;
  for (size_t i = 0; i < 4; ++i) {
    objects.push_back(RandomBytes(300000 + i * 1000, 20 + i));
    client->Put(p + std::to_string(i), objects.back());
  }
  std::mt19937 rng(11);
  std::vector<RangeRead> reads;
  std::vector<std::string> expected;
  std::vector<std::string> buffers(300);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const size_t obj = rng() % objects.size();
    const size_t len = 1 + rng() % 20000;
    const size_t off = rng() % (objects[obj].size() - len);
    buffers[i].assign(len, '\0');
    reads.push_back({p + std::to_string(obj), off, len, buffers[i].data()});
    expected.push_back(objects[obj].substr(off, len));
  }
  client->GetRanges(reads);
  for (size_t i = 0; i < buffers.size(); ++i) {
    BOOST_TEST((buffers[i] == expected[i]), "range " << i);
  }
}

BOOST_AUTO_TEST_CASE(a_batch_with_a_missing_object_throws_not_found) {
  auto client = NewClient();
  const std::string p = UniquePrefix("batchmiss");
  client->Put(p + "here", RandomBytes(1000, 12));
  std::vector<std::string> buffers(20, std::string(100, '\0'));
  std::vector<RangeRead> reads;
  for (size_t i = 0; i < buffers.size(); ++i) {
    reads.push_back({p + (i == 13 ? "gone" : "here"), i * 10, 100, buffers[i].data()});
  }
  try {
    client->GetRanges(reads);
    BOOST_FAIL("a batch with a missing object succeeded");
  } catch (const NotFoundError& e) {
    BOOST_TEST(Contains(e.what(), p + "gone"));
  }
}

BOOST_AUTO_TEST_CASE(connections_are_reused_across_1000_small_range_gets) {
  auto client = NewClient();
  const std::string key = UniquePrefix("reuse") + "obj";
  const std::string data = RandomBytes(1 << 20, 13);
  client->Put(key, data);

  // One at a time: one connection for all of them (two if the server closed
  // an idle one meanwhile).
  auto before = client->stats();
  std::string buf(4096, '\0');
  for (int i = 0; i < 1000; ++i) {
    const uint64_t off = static_cast<uint64_t>(i) * 1000;
    GetRange(*client, key, off, buf.size(), buf.data());
    if (i % 100 == 0) BOOST_TEST((buf == data.substr(off, buf.size())));
  }
  auto after = client->stats();
  const uint64_t sequential = after.connections - before.connections;
  BOOST_TEST_MESSAGE("1000 sequential range GETs opened " << sequential << " connection(s)");
  BOOST_TEST(sequential <= 2u);
  BOOST_TEST(after.requests - before.requests == 1000u);

  // As one batch over max_connections (8) connections.
  std::vector<std::string> buffers(1000, std::string(4096, '\0'));
  std::vector<RangeRead> reads;
  for (size_t i = 0; i < buffers.size(); ++i)
    reads.push_back({key, i * 1000, 4096, buffers[i].data()});
  before = client->stats();
  client->GetRanges(reads);
  after = client->stats();
  const uint64_t batched = after.connections - before.connections;
  BOOST_TEST_MESSAGE("1000 range GETs in one batch opened " << batched << " connection(s)");
  BOOST_TEST(batched <= 8u);
  BOOST_TEST((buffers[999] == data.substr(999000, 4096)));
}

BOOST_AUTO_TEST_CASE(one_client_serves_many_threads_at_once) {
  auto client = NewClient();
  const std::string p = UniquePrefix("threads");
  const std::string shared = RandomBytes(500000, 15);
  client->Put(p + "shared", shared);
  std::mutex mutex;
  std::vector<std::string> wrong;  // what came back wrong, and where
  std::vector<std::string> errors(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const auto report = [&](const std::string& what) {
        std::lock_guard<std::mutex> lock(mutex);
        wrong.push_back("thread " + std::to_string(t) + ": " + what);
      };
      try {
        std::mt19937 rng(static_cast<unsigned>(t));
        const std::string own = RandomBytes(20000 + t, 100 + t);
        for (int i = 0; i < 30; ++i) {
          const size_t off = rng() % 400000;
          const std::string range = GetRange(*client, p + "shared", off, 5000);
          if (range != shared.substr(off, 5000)) {
            report("GetRange at " + std::to_string(off) + " gave " + std::to_string(range.size()) +
                   " bytes, first difference at " +
                   std::to_string(FirstDifference(range, shared.substr(off, 5000))));
          }
          client->Put(p + "own" + std::to_string(t), own);
          const std::string got = client->Get(p + "own" + std::to_string(t));
          if (got != own) {
            report("Get after Put gave " + std::to_string(got.size()) + " of " +
                   std::to_string(own.size()) + " bytes, first difference at " +
                   std::to_string(FirstDifference(got, own)));
          }
          std::vector<std::string> bufs(4, std::string(1000, '\0'));
          std::vector<RangeRead> reads;
          for (size_t k = 0; k < bufs.size(); ++k) {
            reads.push_back({p + "shared", off + k * 1000, 1000, bufs[k].data()});
          }
          client->GetRanges(reads);
          for (size_t k = 0; k < bufs.size(); ++k) {
            if (bufs[k] != shared.substr(off + k * 1000, 1000)) {
              report("GetRanges range " + std::to_string(k) + " at " +
                     std::to_string(off + k * 1000) + ", first difference at " +
                     std::to_string(FirstDifference(bufs[k], shared.substr(off + k * 1000, 1000))));
            }
          }
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) BOOST_TEST(e.empty(), e);
  for (const std::string& w : wrong) BOOST_TEST_MESSAGE(w);
  BOOST_TEST_MESSAGE("requests " << client->stats().requests << ", retries "
                                 << client->stats().retries);
  BOOST_TEST(wrong.empty(), wrong.size()
                                << " wrong reads; the first: " << (wrong.empty() ? "" : wrong[0]));
}

BOOST_AUTO_TEST_CASE(delete_removes_objects_and_ignores_absent_ones) {
  auto client = NewClient();
  const std::string p = UniquePrefix("delete");
  client->Put(p + "a", "a");
  client->Put(p + "b", "b");
  client->Put(p + "c", "c");
  client->Delete(p + "a");
  BOOST_TEST(!client->HeadIfExists(p + "a").has_value());
  client->Delete(p + "a");  // again: not an error
  client->DeleteMany({p + "b", p + "c", p + "never"});
  BOOST_TEST(client->List(p).objects.empty());
}

BOOST_AUTO_TEST_CASE(list_follows_continuation_tokens_and_rolls_up_prefixes) {
  auto client = NewClient();
  const std::string p = UniquePrefix("list");
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back(p + "obj" + std::to_string(i));
  keys.push_back(p + "sub/x");
  keys.push_back(p + "sub/y");
  for (const std::string& k : keys) client->Put(k, k);
  std::sort(keys.begin(), keys.end());

  remote::ListOptions paged;
  paged.page_size = 3;
  const auto before = client->stats().requests;
  const remote::ListResult all = client->List(p, paged);
  BOOST_TEST(client->stats().requests - before == 4u);  // 12 keys, 3 per page
  std::vector<std::string> listed;
  for (const auto& o : all.objects) listed.push_back(o.key);
  BOOST_TEST(listed == keys, boost::test_tools::per_element());
  BOOST_TEST(all.objects[0].info.size == keys[0].size());
  BOOST_TEST(!all.objects[0].info.etag.empty());

  remote::ListOptions rolled;
  rolled.delimiter = "/";
  const remote::ListResult top = client->List(p, rolled);
  BOOST_TEST(top.objects.size() == 10u);
  BOOST_TEST(top.common_prefixes == std::vector<std::string>{p + "sub/"},
             boost::test_tools::per_element());
  BOOST_TEST(client->List(p + "nothing").objects.empty());
}

BOOST_AUTO_TEST_CASE(keys_with_special_characters_round_trip) {
  auto client = NewClient();
  const std::string p = UniquePrefix("special");
  const std::vector<std::string> names = {
      "a b",         "plus+sign",        "eq=amp&q?",    "pct%41",   "tilde~x",
      "caf\xc3\xa9", "semi;colon,comma", "star*(paren)", "quote'\"", "dir/sub dir/f"};
  for (const std::string& n : names) {
    const std::string key = p + n;
    client->Put(key, n);
    BOOST_TEST(client->Get(key) == n, "key " << key);
    BOOST_TEST(GetRange(*client, key, 1, 1) == n.substr(1, 1));
  }
  std::vector<std::string> listed;
  for (const auto& o : client->List(p).objects) listed.push_back(o.key.substr(p.size()));
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  BOOST_TEST(listed == sorted, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(unknown_access_key_is_access_denied_naming_the_bucket) {
  remote::S3Config c = Config();
  c.credentials.access_key_id = "NOSUCHKEY";
  c.credentials.secret_access_key = "whatever";
  S3Client client(c, Server().bucket());
  try {
    client.Get("any");
    BOOST_FAIL("an unknown access key was accepted");
  } catch (const AccessDeniedError& e) {
    const std::string m = e.what();
    BOOST_TEST_MESSAGE(m);
    BOOST_TEST(Contains(m, "access denied to bucket '" + Server().bucket() + "'"));
    BOOST_TEST(Contains(m, "InvalidAccessKeyId"));
    BOOST_TEST(Contains(m, "(1 attempt)"));  // never retried
  }
}

BOOST_AUTO_TEST_CASE(anonymous_requests_are_unsigned) {
  auto signed_client = NewClient();
  const std::string key = UniquePrefix("anon") + "obj";
  signed_client->Put(key, "public");
  remote::S3Config c = Config();
  c.credentials = remote::Credentials();
  S3Client anonymous(c, Server().bucket());
  BOOST_TEST(anonymous.Get(key) == "public");
}

BOOST_AUTO_TEST_CASE(a_client_inherited_through_fork_works_in_parent_and_child) {
  auto client = NewClient();
  const std::string key = UniquePrefix("fork") + "obj";
  const std::string data = RandomBytes(50000, 14);
  client->Put(key, data);
  BOOST_TEST((GetRange(*client, key, 10, 100) == data.substr(10, 100)));  // a kept connection
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    int rc = 1;
    try {
      rc = GetRange(*client, key, 20, 100) == data.substr(20, 100) ? 0 : 2;
    } catch (...) {
      rc = 3;
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST((GetRange(*client, key, 30, 100) == data.substr(30, 100)));
}

BOOST_AUTO_TEST_CASE(bad_keys_and_ranges_are_refused_before_any_request) {
  auto client = NewClient();
  const auto before = client->stats().attempts;
  BOOST_CHECK_THROW(client->Get(""), InvalidArgumentError);
  BOOST_CHECK_THROW(client->Put(std::string("a\nb"), "x"), InvalidArgumentError);
  BOOST_CHECK_THROW(GetRange(*client, "k", UINT64_MAX, 2), InvalidArgumentError);
  BOOST_CHECK_THROW(client->GetRanges({{"k", 0, 10, nullptr}}), InvalidArgumentError);
  BOOST_TEST(client->stats().attempts == before);
  BOOST_CHECK_THROW(S3Client(Config(), "Not_A_Bucket"), InvalidArgumentError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb::test
