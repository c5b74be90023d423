// Progress reporting on stderr: a redrawn bar with rate and ETA when stderr is
// a terminal, a plain line every few seconds when it is not, nothing when quiet.
// Not thread-safe: call from the thread that drives the work.
#ifndef GULPDB_CLI_PROGRESS_H_
#define GULPDB_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace gulpdb::cli {

class Progress {
 public:
  Progress(std::string label, uint64_t total, bool quiet);
  ~Progress();
  void Advance(uint64_t n = 1);
  // Sets the amount done (for callers that count themselves).
  void Update(uint64_t done) { Advance(done > done_ ? done - done_ : 0); }
  void Finish();

 private:
  void Draw(bool final);

  std::string label_;
  uint64_t total_;
  uint64_t done_ = 0;
  bool quiet_;
  bool tty_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_PROGRESS_H_
