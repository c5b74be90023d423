#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace gulpdb::cli {

Progress::Progress(std::string label, uint64_t total, bool quiet)
    : label_(std::move(label)),
      total_(total),
      quiet_(quiet),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { Finish(); }

void Progress::Advance(uint64_t n) {
  done_ += n;
  const auto now = std::chrono::steady_clock::now();
  const auto interval = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  if (now - last_draw_ >= interval) {
    last_draw_ = now;
    Draw(false);
  }
}

void Progress::Finish() {
  if (finished_) return;
  finished_ = true;
  Draw(true);
}

void Progress::Draw(bool final) {
  if (quiet_) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
  const double eta = rate > 0 && total_ > done_ ? static_cast<double>(total_ - done_) / rate : 0.0;
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled =
        total_ == 0
            ? kWidth
            : static_cast<int>(kWidth * static_cast<double>(done_) / static_cast<double>(total_));
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s [%s] %llu/%llu  %.1f/s  ETA %.0fs ", label_.c_str(), bar.c_str(),
                 static_cast<unsigned long long>(done_), static_cast<unsigned long long>(total_),
                 rate, eta);
    if (final) std::fputc('\n', stderr);
  } else {
    std::fprintf(stderr, "%s: %llu/%llu (%.1f/s, ETA %.0fs)\n", label_.c_str(),
                 static_cast<unsigned long long>(done_), static_cast<unsigned long long>(total_),
                 rate, eta);
  }
  std::fflush(stderr);
}

}  // namespace gulpdb::cli
