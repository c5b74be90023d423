// The test servers themselves (tests/support/s3_server.h): they start
// listening within the bound, stop refusing connections afterwards, and die
// with the process that started them even when it is killed.
#include "support/s3_server.h"

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

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

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb::test
