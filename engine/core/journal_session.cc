#include "engine/core/journal_session.h"

#include <algorithm>

#include "gulpdb/error.h"
#include "util/test_bug.h"

namespace gulpdb::engine {
namespace {

// The bytes of freed pages the pin may hold before the next journaled commit
// checkpoints: the larger of this and a quarter of the index file
// (docs/reliability.md, "Index size under small commits").
constexpr uint64_t kMinPinBudget = 1 << 20;

}  // namespace

void JournalSession::Open() {
  if (!journal_) journal_ = Journal::Open(path_, /*create=*/true);
}

void JournalSession::PrepareAppend(size_t payload_bytes) {
  if (!current_ && CheckpointIsCurrent()) {
    Pin();
  } else if (!current_ || !journal_->Fits(payload_bytes)) {
    const bool full = current_;  // a current journal without room is full
    Checkpoint();
    if (full) Grow();
  } else if (PinIsFull()) {
    Checkpoint();
  }
}

void JournalSession::Checkpoint() {
  for (auto& [n, f] : chunks_) f->Sync();
  env_.Sync();
  journal_->Checkpoint(env_.ReadMetaPages());
  Pin();
}

void JournalSession::Settle() {
  if (has_records()) Checkpoint();
  current_ = false;
  env_.Unpin();
}

// Pins the snapshot the journal's header holds until the next checkpoint, so
// that LMDB reuses none of its pages, and sets the pin's budget. Also how a
// writer takes over a checkpoint that is still current (the one the last
// writer's close wrote) without the three syncs of another: pinning the
// snapshot now protects its pages as well as pinning it then did, since
// nothing has written to the index since (a write transaction that did not
// commit spilled only pages free in it).
void JournalSession::Pin() {
  if (!util::TestBugEnabled("no-pin")) {
    env_.Pin();
  } else {
    env_.Unpin();
  }
  chunks_.clear();
  current_ = true;
  pin_budget_ = std::max<uint64_t>(kMinPinBudget, env_.used_bytes() / 4);
}

// True when the journal's last checkpoint is the index as it is, durably: no
// record past it, written in this boot, and its copy of the meta pages is the
// data file's, byte for byte. Every commit writes a meta page with a new
// transaction id, so equal pages mean no commit since; the checkpoint synced
// the index before writing its header.
bool JournalSession::CheckpointIsCurrent() const {
  if (!journal_->has_header() || has_records() || journal_->header().boot_id != CurrentBootId()) {
    return false;
  }
  return util::TestBugEnabled("stale-checkpoint") ||
         journal_->header().meta_pages == env_.ReadMetaPages();
}

// True when the pin keeps more freed pages from reuse than its budget.
bool JournalSession::PinIsFull() const {
  return !util::TestBugEnabled("unbounded-pin") && env_.PinnedFreeBytes() > pin_budget_;
}

// After a checkpoint that a full journal forced: doubles the journal (up to
// Journal::kMaxBytes), so that a writer committing many small batches
// checkpoints — writes and syncs its frames a second time, syncs the index
// and a header — once per more commits. A journal that cannot grow (a full
// disk) keeps its size; that costs checkpoints, not correctness.
void JournalSession::Grow() {
  const uint64_t size = journal_->size();
  if (size >= Journal::kMaxBytes) return;
  try {
    journal_->Grow(std::min(2 * size, Journal::kMaxBytes));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kIoError && e.code() != ErrorCode::kResourceExhausted) throw;
  }
}

}  // namespace gulpdb::engine
