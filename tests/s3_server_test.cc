// The test servers themselves (tests/harness/s3_server.h): they start
// listening within the bound, stop refusing connections afterwards, and die
// with the process that started them even when it is killed; and the
// patched s3rver answers conditional requests as S3 does (If-None-Match: *
// and If-Match on PUT and CompleteMultipartUpload, checked atomically with
// the write; If-Match on GET and HEAD), directly and through the proxy,
// unless told to ignore the conditions of writes.
#include "tests/harness/s3_server.h"

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "s3/s3_client.h"
#include "support/remote_fixture.h"
#include "support/test_util.h"

namespace gulpdb::test {
namespace {

bool Accepts(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// True once `pid` has exited (gone, or a zombie nobody reaped yet).
bool Dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

using remote::PreconditionFailedError;
using remote::RangeRead;
using remote::S3Client;
using remote::WriteOptions;

S3rverServer& Server() {
  static std::unique_ptr<S3rverServer> server = std::make_unique<S3rverServer>();
  return *server;
}

S3ProxyServer& Proxy() {
  static std::unique_ptr<S3ProxyServer> proxy = std::make_unique<S3ProxyServer>(Server().port());
  return *proxy;
}

std::unique_ptr<S3Client> DirectClient() {
  return std::make_unique<S3Client>(
      TestConfig(Server().endpoint(), S3rverServer::kAccessKey, S3rverServer::kSecretKey),
      Server().bucket());
}

std::unique_ptr<S3Client> ProxyClient() {
  return std::make_unique<S3Client>(
      TestConfig(Proxy().endpoint(), S3ProxyServer::kAccessKey, S3ProxyServer::kSecretKey),
      Server().bucket());
}

WriteOptions IfAbsent() {
  WriteOptions w;
  w.if_absent = true;
  return w;
}

WriteOptions IfMatch(const std::string& etag) {
  WriteOptions w;
  w.if_match = etag;
  return w;
}

// The compare-and-swap of conditional PUTs, through `client`.
void CheckConditionalPuts(S3Client& client, const std::string& prefix) {
  const std::string key = prefix + "object";
  const std::string etag1 = client.Put(key, "first", IfAbsent());
  BOOST_TEST(!etag1.empty());
  try {
    client.Put(key, "second", IfAbsent());
    BOOST_FAIL("If-None-Match: * replaced an object");
  } catch (const PreconditionFailedError& e) {
    BOOST_TEST(Contains(e.what(), "412"), e.what());
    BOOST_TEST(e.key() == key);
  }
  BOOST_CHECK_THROW(client.Put(key, "third", IfMatch("\"0123456789abcdef0123456789abcdef\"")),
                    PreconditionFailedError);
  BOOST_TEST(client.Get(key) == "first");
  const std::string etag2 = client.Put(key, "fourth", IfMatch(etag1));
  BOOST_TEST(etag2 != etag1);
  BOOST_TEST(client.Get(key) == "fourth");
  // The old ETag no longer matches; a missing object matches no ETag.
  BOOST_CHECK_THROW(client.Put(key, "fifth", IfMatch(etag1)), PreconditionFailedError);
  BOOST_CHECK_THROW(client.Put(prefix + "absent", "x", IfMatch(etag2)), PreconditionFailedError);
  BOOST_TEST(!client.HeadIfExists(prefix + "absent").has_value());
  BOOST_TEST(client.Get(key) == "fourth");

  // Reads conditional on the ETag.
  std::string out(3, '\0');
  client.GetRanges({RangeRead{key, 1, 3, out.data(), etag2}});
  BOOST_TEST(out == "our");
  try {
    client.GetRanges({RangeRead{key, 1, 3, out.data(), etag1}});
    BOOST_FAIL("a GET with a stale If-Match was served");
  } catch (const PreconditionFailedError& e) {
    BOOST_TEST(e.key() == key);
  }
  BOOST_TEST(client.Head(key, etag2).etag == etag2);
  BOOST_CHECK_THROW(client.Head(key, etag1), PreconditionFailedError);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(s3_server_test)

BOOST_AUTO_TEST_CASE(servers_listen_and_stop_listening) {
  S3rverServer s3rver;
  BOOST_TEST(Accepts(s3rver.port()));
  S3ProxyServer proxy(s3rver.port());
  BOOST_TEST(Accepts(proxy.port()));
  BOOST_TEST(proxy.Stats().requests == 0u);
  proxy.Stop();
  BOOST_TEST(!Accepts(proxy.port()));
  s3rver.Stop();
  BOOST_TEST(!Accepts(s3rver.port()));
  s3rver.Start();
  BOOST_TEST(Accepts(s3rver.port()));
}

BOOST_AUTO_TEST_CASE(servers_die_with_a_killed_test_process) {
  int pipe_fds[2];
  BOOST_REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    // A test process that starts both servers, reports their pids, and is
    // then killed without any chance to stop them.
    ::close(pipe_fds[0]);
    try {
      auto* s3rver = new S3rverServer();  // never destroyed: the process is killed
      auto* proxy = new S3ProxyServer(s3rver->port());
      const std::string report = std::to_string(s3rver->pid()) + " " +
                                 std::to_string(proxy->pid()) + " " + s3rver->directory() + " " +
                                 proxy->directory() + "\n";
      if (::write(pipe_fds[1], report.data(), report.size()) < 0) ::_exit(2);
    } catch (...) {
      ::_exit(1);
    }
    while (true) ::pause();
  }
  ::close(pipe_fds[1]);
  std::string pids;
  char buf[64];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) {
    pids.append(buf, static_cast<size_t>(n));
    if (pids.find('\n') != std::string::npos) break;
  }
  ::close(pipe_fds[0]);
  pid_t s3rver_pid = 0, proxy_pid = 0;
  char s3rver_dir[4096], proxy_dir[4096];
  BOOST_REQUIRE(std::sscanf(pids.c_str(), "%d %d %4095s %4095s", &s3rver_pid, &proxy_pid,
                            s3rver_dir, proxy_dir) == 4);
  BOOST_TEST(!Dead(s3rver_pid));
  BOOST_TEST(!Dead(proxy_pid));

  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((!Dead(s3rver_pid) || !Dead(proxy_pid)) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_TEST(Dead(s3rver_pid));
  BOOST_TEST(Dead(proxy_pid));
  // The killed process left its temporary directories behind.
  for (const char* dir : {s3rver_dir, proxy_dir}) {
    const auto remove = [](const char* p, const struct stat*, int, struct FTW*) {
      return ::remove(p);
    };
    BOOST_TEST(::nftw(dir, remove, 16, FTW_DEPTH | FTW_PHYS) == 0);
  }
}

BOOST_AUTO_TEST_CASE(conditional_puts_and_reads_behave_as_on_s3) {
  CheckConditionalPuts(*DirectClient(), UniquePrefix("cond"));
}

BOOST_AUTO_TEST_CASE(the_proxy_forwards_conditions_and_their_answers) {
  Proxy().Reset();
  CheckConditionalPuts(*ProxyClient(), UniquePrefix("cond-proxy"));
  BOOST_TEST(Proxy().Stats().signature_failures == 0u);
  BOOST_TEST(Contains(Proxy().Log(), "412"));
}

BOOST_AUTO_TEST_CASE(concurrent_creates_of_one_key_let_exactly_one_win) {
  auto client = DirectClient();
  const std::string key = UniquePrefix("race") + "claimed";
  constexpr int kWriters = 8;
  std::atomic<int> won{-1};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      try {
        client->Put(key, "writer " + std::to_string(i), IfAbsent());
        int expected = -1;
        won.compare_exchange_strong(expected, i);
        if (expected != -1) won = 100;  // a second winner
      } catch (const PreconditionFailedError&) {
        ++refused;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  BOOST_REQUIRE(won.load() >= 0);
  BOOST_REQUIRE(won.load() < kWriters);
  BOOST_TEST(refused.load() == kWriters - 1);
  BOOST_TEST(client->Get(key) == "writer " + std::to_string(won.load()));
}

BOOST_AUTO_TEST_CASE(multipart_completion_is_conditional_and_metadata_is_kept) {
  auto client = DirectClient();
  const std::string prefix = UniquePrefix("mp");
  TempDir tmp;
  const std::string path = tmp / "big";
  const std::string bytes = RandomBytes(uint64_t{6} << 20, 5);
  WriteFile(path, bytes);
  remote::UploadOptions upload;
  upload.multipart_threshold = uint64_t{1} << 20;
  upload.part_size = uint64_t{5} << 20;
  upload.write.if_absent = true;
  upload.write.metadata = {{"gulpdb-dataset", "abc-123"}, {"gulpdb-push", "p1"}};
  const std::string key = prefix + "big";
  const std::string etag = client->UploadFile(key, path, 0, bytes.size(), upload);
  const remote::ObjectInfo head = client->Head(key);
  BOOST_TEST(head.etag == etag);
  BOOST_TEST(head.metadata.at("gulpdb-dataset") == "abc-123");
  BOOST_TEST(head.metadata.at("gulpdb-push") == "p1");
  // A second creation of the key is refused at completion; the object stays.
  upload.write.metadata["gulpdb-push"] = "p2";
  BOOST_CHECK_THROW(client->UploadFile(key, path, 0, bytes.size() - 1, upload),
                    PreconditionFailedError);
  BOOST_TEST(client->Head(key).size == bytes.size());
  // Replacing it needs its ETag.
  upload.write.if_absent = false;
  upload.write.if_match = "\"00000000000000000000000000000000-2\"";
  BOOST_CHECK_THROW(client->UploadFile(key, path, 0, bytes.size() - 1, upload),
                    PreconditionFailedError);
  upload.write.if_match = etag;
  client->UploadFile(key, path, 0, bytes.size() - 1, upload);
  BOOST_TEST(client->Head(key).size == bytes.size() - 1);
  BOOST_TEST(client->Head(key).metadata.at("gulpdb-push") == "p2");
}

BOOST_AUTO_TEST_CASE(a_conditional_write_whose_answer_was_lost_is_recognised_by_its_metadata) {
  Proxy().Reset();
  auto client = ProxyClient();
  const std::string key = UniquePrefix("lost") + "object";
  WriteOptions write = IfAbsent();
  write.metadata = {{"gulpdb-push", "unique-1"}};
  // The server stores the first attempt; its answer never arrives; the retry
  // finds the key taken, by this very write.
  Proxy().AddFault(R"({"kind": "lose_answer", "count": 1, "method": "PUT"})");
  const std::string etag = client->Put(key, "payload", write);
  BOOST_TEST(Proxy().Stats().faults_injected == 1u);
  BOOST_TEST(etag == client->Head(key).etag);
  // Another write (other metadata) is still refused.
  write.metadata = {{"gulpdb-push", "unique-2"}};
  Proxy().AddFault(R"({"kind": "lose_answer", "count": 1, "method": "PUT"})");
  BOOST_CHECK_THROW(client->Put(key, "payload", write), PreconditionFailedError);
}

BOOST_AUTO_TEST_CASE(a_server_told_to_ignore_write_conditions_overwrites) {
  S3rverServer careless("gulpdb-careless", S3rverServer::Conditions::kIgnoredOnWrites);
  S3Client client(
      TestConfig(careless.endpoint(), S3rverServer::kAccessKey, S3rverServer::kSecretKey),
      careless.bucket());
  const std::string etag = client.Put("k", "first", IfAbsent());
  client.Put("k", "second", IfAbsent());
  BOOST_TEST(client.Get("k") == "second");
  client.Put("k", "third", IfMatch("\"0123456789abcdef0123456789abcdef\""));
  BOOST_TEST(client.Get("k") == "third");
  // Reads stay conditional.
  BOOST_CHECK_THROW(client.Head("k", etag), PreconditionFailedError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb::test
