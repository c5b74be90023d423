// Crash tests' helper: runs code in a forked child and SIGKILLs it at the
// point it chooses (crash_test, h264_dataset_test).
#ifndef GULPDB_TESTS_SUPPORT_RUN_AND_KILL_H_
#define GULPDB_TESTS_SUPPORT_RUN_AND_KILL_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <functional>

namespace gulpdb::test {

// Runs `child` in a forked process. The child calls its argument when it has
// reached the point to crash at (with its objects alive); the parent then
// SIGKILLs it. A child that throws or returns without reaching it fails the
// test.
inline void RunAndKill(const std::function<void(const std::function<void()>&)>& child) {
  int fds[2];
  BOOST_REQUIRE_EQUAL(::pipe(fds), 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    const auto ready = [&] {
      const char c = 'r';
      if (::write(fds[1], &c, 1) != 1) ::_exit(4);
      for (;;) ::pause();
    };
    try {
      child(ready);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(5);  // the child returned without reaching its crash point
  }
  ::close(fds[1]);
  char c = 0;
  const ssize_t n = ::read(fds[0], &c, 1);
  ::close(fds[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_REQUIRE_MESSAGE(n == 1, "the child failed before it was ready");
  BOOST_TEST(WIFSIGNALED(status));
}

}  // namespace gulpdb::test

#endif  // GULPDB_TESTS_SUPPORT_RUN_AND_KILL_H_
