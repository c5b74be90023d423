// Child processes of an ingest (ffmpeg): started with posix_spawn, without a
// shell, stdin on /dev/null (or, when asked, a stream the parent writes) and
// stdout/stderr piped back, in their own
// process group so that a Ctrl-C on the terminal reaches gulpdb only, which
// then stops every child it started (ChildSet). A ChildProcess that is not
// waited for is killed (SIGKILL) and reaped by its destructor, on every path.
#ifndef GULPDB_INGEST_CHILD_PROCESS_H_
#define GULPDB_INGEST_CHILD_PROCESS_H_

#include <sys/types.h>

#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "util/file_io.h"

namespace gulpdb::ingest {

// A failure that ends the whole ingest, not just one source (ffmpeg cannot be
// started at all). Carries the gulpdb::Error to rethrow.
struct FatalError {
  std::exception_ptr error;
};

// The live children of an ingest, so that an interrupt can stop them all.
// Thread-safe.
class ChildSet {
 public:
  // Returns false when the set is closed: the caller must stop `pid` itself.
  bool Add(pid_t pid);
  // Called before the child is reaped, so a pid is never signalled after it
  // could have been reused.
  void Remove(pid_t pid);
  void CloseAndKillAll();

 private:
  std::mutex mu_;
  std::set<pid_t> pids_;
  bool closed_ = false;
};

// Where a child's standard input comes from.
enum class ChildStdin {
  kNull,    // /dev/null
  kStream,  // WriteIn(): a Unix stream socket, so that writing to a child
            // that has gone away is an error (EPIPE), never a SIGPIPE
};

// A child process with stdin on /dev/null (or a stream the parent writes)
// and stdout and stderr piped back, with default signal dispositions. Throws
// FatalError when the program cannot be started (NotFoundError inside for a
// program not on PATH). Not copyable; not thread-safe, except that one thread
// may write stdin (WriteIn, CloseIn) while another reads out() and err(),
// and Kill() may be called from any thread until Wait().
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, ChildSet* set,
               ChildStdin in = ChildStdin::kNull);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  int out() const { return out_.get(); }
  int err() const { return err_.get(); }
  void CloseOut() { out_ = util::UniqueFd(); }
  void CloseErr() { err_ = util::UniqueFd(); }

  // Writes all of `bytes` to the child's stdin (ChildStdin::kStream only),
  // blocking while the child does not read. Returns false when the child
  // closed its stdin or ended (nothing more can be written); throws IoError
  // for another failure.
  bool WriteIn(const void* bytes, size_t size);
  // Ends the child's stdin (end of input).
  void CloseIn() { in_ = util::UniqueFd(); }

  // Sends SIGKILL, without reaping: its pipes then end, and Wait() or the
  // destructor reaps it.
  void Kill();

  // Closes the pipes and waits for the child to exit; returns its wait status.
  int Wait();

 private:
  int Reap();

  pid_t pid_ = -1;
  ChildSet* set_;
  util::UniqueFd in_, out_, err_;
};

// "exited with status N", "was killed by signal N", ...
std::string DescribeStatus(int status);

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_CHILD_PROCESS_H_
