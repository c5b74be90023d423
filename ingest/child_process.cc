#include "ingest/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gulpdb/error.h"
#include "util/sys_error.h"

extern char** environ;

namespace gulpdb::ingest {

using util::UniqueFd;

bool ChildSet::Add(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  pids_.insert(pid);
  return true;
}

void ChildSet::Remove(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  pids_.erase(pid);
}

void ChildSet::CloseAndKillAll() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  for (pid_t pid : pids_) ::kill(pid, SIGKILL);
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, ChildSet* set, ChildStdin in)
    : set_(set) {
  util::UniqueFd in_read;
  if (in == ChildStdin::kStream) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      util::ThrowErrno("create a socket for", argv[0], errno);
    }
    in_read = util::UniqueFd(sv[0]);
    in_ = util::UniqueFd(sv[1]);
    ::shutdown(in_read.get(), SHUT_WR);  // one way: parent to child
    ::shutdown(in_.get(), SHUT_RD);
  }
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) util::ThrowErrno("create a pipe for", argv[0], errno);
  util::UniqueFd out_write(out[1]);
  out_ = util::UniqueFd(out[0]);
  if (::pipe2(err, O_CLOEXEC) != 0) util::ThrowErrno("create a pipe for", argv[0], errno);
  util::UniqueFd err_write(err[1]);
  err_ = util::UniqueFd(err[0]);
  // Let a decoder run up to a frame ahead of the encoder (best effort).
  ::fcntl(out_.get(), F_SETPIPE_SZ, 1 << 20);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (in_read.get() >= 0) {
    posix_spawn_file_actions_adddup2(&actions, in_read.get(), 0);
  } else {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGQUIT, SIGPIPE, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(
      &attr,
      static_cast<short>(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = ::posix_spawnp(&pid_, argv[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    pid_ = -1;
    const std::string message = "run " + argv[0] + ": " + std::strerror(rc) +
                                (rc == ENOENT ? " (is it installed and on PATH?)" : "");
    throw FatalError{rc == ENOENT ? std::make_exception_ptr(NotFoundError(message))
                                  : std::make_exception_ptr(IoError(message))};
  }
  if (!set_->Add(pid_)) ::kill(pid_, SIGKILL);
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0) return;
  set_->Remove(pid_);
  ::kill(pid_, SIGKILL);
  Reap();
}

bool ChildProcess::WriteIn(const void* bytes, size_t size) {
  const char* p = static_cast<const char*>(bytes);
  while (size > 0) {
    if (in_.get() < 0) return false;
    // MSG_NOSIGNAL: a child that went away is EPIPE here, not a SIGPIPE
    // that would end this process.
    const ssize_t n = ::send(in_.get(), p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return false;
    if (n < 0) util::ThrowErrno("write to the input of", "child " + std::to_string(pid_), errno);
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void ChildProcess::Kill() {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
}

int ChildProcess::Wait() {
  CloseIn();
  CloseOut();
  CloseErr();
  set_->Remove(pid_);
  const int status = Reap();
  pid_ = -1;
  return status;
}

int ChildProcess::Reap() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended with wait status " + std::to_string(status);
}

}  // namespace gulpdb::ingest
