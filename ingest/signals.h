// Signals during an ingest: SIGINT and SIGTERM are caught while a StopSignals
// lives, so that the pipeline can stop its workers, kill their children and
// commit what was appended; a second signal acts as usual (SA_RESETHAND) and
// kills the process at once. The handler only stores the signal number in a
// lock-free atomic. One StopSignals at a time per process.
#ifndef GULPDB_INGEST_SIGNALS_H_
#define GULPDB_INGEST_SIGNALS_H_

#include <signal.h>

namespace gulpdb::ingest {

// Catches SIGINT and SIGTERM while it lives and restores the previous
// handlers.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received since construction, or 0.
  static int Received();

 private:
  struct sigaction old_int_, old_term_;
};

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_SIGNALS_H_
