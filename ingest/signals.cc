#include "ingest/signals.h"

#include <atomic>
#include <cstring>

namespace gulpdb::ingest {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void OnStopSignal(int sig) { g_signal.store(sig); }

}  // namespace

StopSignals::StopSignals() {
  g_signal.store(0);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnStopSignal;
  sa.sa_flags = static_cast<int>(SA_RESETHAND | SA_RESTART);
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int_);
  ::sigaction(SIGTERM, &sa, &old_term_);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
}

int StopSignals::Received() { return g_signal.load(); }

}  // namespace gulpdb::ingest
