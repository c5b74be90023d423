// Crash torture for the commit protocol (docs/format/index_format.md).
//
// A writer process appends batches to a dataset and is SIGKILLed, over and
// over: at random moments, and at chosen points of the write path (a hook
// that kills the writer the n-th time it passes a point, or that arms a timer
// there which kills it microseconds later, inside the fdatasync, the LMDB
// commit or the chunk registration that follows). After every kill a
// verifier process reopens the dataset and checks that
//   - the visible ids are exactly those of batches 0..m, each batch whole,
//     where m is the last batch the writer reported committed or the one it
//     had in flight (a commit can land before its report reaches the pipe).
//     A reported batch that is missing is LOST; a partial batch or an id of
//     no committed batch is UNCOMMITTED VISIBLE;
//   - every video of the batches the killed writer committed, and of the
//     batch before them (whose chunk the writer's recovery truncated), reads
//     back byte-exact with its checksums verified and its meta as written;
//     anything else is a CORRUPT READ;
//   - every chunk file holds at least its committed length, and the index's
//     totals agree with the ids; every kDeepEvery kills, and at the end,
//     every batch is read again and gulpdb::Check (deep) finds no problem
//     (notes about bytes past committed lengths are fine).
// So a verification costs the batches the killed writer committed, plus one
// stat per chunk, except every kDeepEvery kills.
// Each new writer must recover what the killed one left, and commit. At the
// end one writer runs to completion without a kill, and everything is
// verified again; then no chunk may hold bytes past its committed length and
// no chunk file the index does not know may be left.
//
// Usage:
//   gulpdb_torture [--kills N] [--seed S] [--dir D] [--verbose]
//   quick mode: gulpdb_torture                (40 kills; CTest reliability_torture)
//   long mode:  gulpdb_torture --kills 500    (about a minute in a Debug build on 2 cores,
//                                              3 minutes under ASan+UBSan)
// --seed replays the same plan of kills (where random-time kills land still
// depends on timing). --dir keeps the dataset in D (created if missing; it
// must not hold a dataset yet); without it the dataset lives in a temporary
// directory that is removed at the end unless something failed.
//
// Output: one "name value" line per figure ("batches_lost 0"), then
// "kill_point <stage> <count>" for every stage a kill can land in, and
// "kill_target <target> <kills>" for the targeted kills. Exit status 0 when
// batches_lost, uncommitted_visible, corrupt_reads, check_failures,
// leftover_after_clean_writer, orphans_after_clean_writer and child_failures
// are all 0 and every kill asked for happened; 1 otherwise; 2 for a usage
// error.
//
// Processes: the parent never opens the dataset (an LMDB environment must not
// cross fork()) and stays single-threaded; the writer and the verifier are
// forked children. The writer records the stage it is in on a MAP_SHARED page
// mapped before the fork, so the parent can tell where each kill landed.
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/core/fault_injection.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "tests/reliability/common.h"

namespace gulpdb::reliability {
namespace {

namespace fault = engine::fault;
using Clock = std::chrono::steady_clock;

constexpr int kDefaultKills = 40;
constexpr int kDeepEvery = 10;             // full re-read and deep Check every this many kills
constexpr int64_t kTargetedBatchCap = 12;  // a targeted writer stops here if its point never came
constexpr int64_t kRandomBatchCap = 100000;
constexpr int64_t kFinalBatches = 5;
constexpr auto kHangTimeout = std::chrono::seconds(60);
constexpr int kMaxMessages = 20;  // problem lines one verifier prints

// Writer exit codes (a kill shows as SIGKILL instead).
constexpr int kExitError = 3;     // an exception: the writer could not open, recover or commit
constexpr int kExitReport = 4;    // the report pipe failed
constexpr int kExitRollover = 5;  // a chunk rollover came where videos_per_chunk says it cannot
constexpr int kExitTimer = 6;     // the kill timer could not be armed
constexpr int kExitParent = 7;    // the parent died

int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// ---- Content: everything follows from the (batch, video) numbers ----------

int VideosIn(int64_t batch) { return 2 + static_cast<int>(batch % 3); }
int FramesIn(int64_t batch, int video) { return 1 + static_cast<int>((batch * 7 + video * 3) % 5); }
std::string VideoId(int64_t batch, int video) {
  return "b" + std::to_string(batch) + "_v" + std::to_string(video);
}
std::vector<std::string> VideoFrames(int64_t batch, int video) {
  return MakeFrames(static_cast<uint64_t>(batch) * 8 + static_cast<uint64_t>(video) + 1,
                    FramesIn(batch, video));
}
std::string VideoMeta(int64_t batch, int video) {
  return "{\"batch\": " + std::to_string(batch) + ", \"video\": " + std::to_string(video) + "}";
}

// Parses "b<batch>_v<video>"; false for any other id.
bool ParseId(const std::string& id, int64_t* batch, int* video) {
  const size_t sep = id.find("_v");
  if (id.size() < 4 || id[0] != 'b' || sep == std::string::npos || sep < 2) return false;
  const std::string b = id.substr(1, sep - 1);
  const std::string v = id.substr(sep + 2);
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 12 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(b) || !digits(v)) return false;
  *batch = std::stoll(b);
  *video = std::stoi(v);
  return VideoId(*batch, *video) == id;  // no leading zeros
}

// ---- Where a writer is ------------------------------------------------------

// The writer's stage, in the order one batch passes them; each lasts until
// the next one begins.
enum Stage : int32_t {
  kStStart,            // forked, nothing opened
  kStOpen,             // Dataset::Open
  kStRecover,          // NewWriter: writer lock, reading the dirty chunks
  kStRecoverTruncate,  // recovery truncating a chunk back to its committed length
  kStRecoverSync,      // recovery syncing the truncated chunk, then updating the index
  kStBetweenBatches,   // building the next batch's frames, or reporting a commit
  kStAppend,           // Append before its frames are written (checks, duplicate lookup)
  kStChunkCreate,      // Append creating a new chunk file
  kStChunkCreated,     // the file exists; registering it in the index
  kStChunkRegistered,  // registered, nothing written to it yet
  kStFrameWrite,       // inside the pwrite of a video's frames
  kStFramesWritten,    // between frame writes (one video's frames are in)
  kStBeforeDataSync,   // Commit started
  kStDataSync,         // inside the fdatasync of the chunks the batch wrote
  kStAfterDataSync,    // data durable; building the index transaction
  kStIndexCommit,      // inside the LMDB commit
  kStCommitted,        // the LMDB commit returned; the report is not written yet
  kStageCount
};
const char* const kStageNames[kStageCount] = {
    "start",           "open",           "recover",          "recover_truncate", "recover_sync",
    "between_batches", "append",         "chunk_create",     "chunk_created",    "chunk_registered",
    "frame_write",     "frames_written", "before_data_sync", "data_sync",        "after_data_sync",
    "index_commit",    "committed"};

// Durations the writer measures, from which timed kills draw their delays.
enum Window { kDataSyncWindow, kIndexCommitWindow, kChunkRegisterWindow, kWindowCount };

// The page the writer and the parent share (MAP_SHARED, mapped before fork).
struct Shared {
  std::atomic<int32_t> stage;
  std::atomic<int64_t> batch;  // the batch being built or committed; -1 before the first
  std::atomic<int64_t> window_ns[kWindowCount];  // last measured, 0 if not seen
};
static_assert(std::atomic<int32_t>::is_always_lock_free &&
                  std::atomic<int64_t>::is_always_lock_free,
              "the shared page needs address-free atomics");

// ---- Kill plans ---------------------------------------------------------------

enum class Trigger {
  kPoint,             // a fault::Point
  kDataSyncCall,      // the fdatasync of a chunk in Commit (the kill comes before the call)
  kTornFrameWrite,    // half of a frame write goes through; the kill comes before the rest
  kRecoveryTruncate,  // recovery truncating a dirty chunk
};

struct Target {
  const char* name;
  Trigger trigger;
  fault::Point point;  // for Trigger::kPoint
  bool timed;          // arm a timer at the trigger instead of dying there
  Window window;       // timed: the delay is drawn from 0 to 1.5x this window
  int max_occurrence;  // the kill comes at occurrence 1..max_occurrence
};

constexpr Target kTargets[] = {
    {"chunk_created", Trigger::kPoint, fault::Point::kChunkCreated, false, kDataSyncWindow, 1},
    {"chunk_registered", Trigger::kPoint, fault::Point::kChunkRegistered, false, kDataSyncWindow,
     1},
    {"frames_written", Trigger::kPoint, fault::Point::kFramesWritten, false, kDataSyncWindow, 6},
    {"before_data_sync", Trigger::kPoint, fault::Point::kBeforeDataSync, false, kDataSyncWindow, 2},
    {"data_sync_call", Trigger::kDataSyncCall, fault::Point::kBeforeDataSync, false,
     kDataSyncWindow, 2},
    {"after_data_sync", Trigger::kPoint, fault::Point::kAfterDataSync, false, kDataSyncWindow, 2},
    {"before_index_commit", Trigger::kPoint, fault::Point::kBeforeIndexCommit, false,
     kDataSyncWindow, 2},
    {"after_index_commit", Trigger::kPoint, fault::Point::kAfterIndexCommit, false, kDataSyncWindow,
     2},
    {"torn_frame_write", Trigger::kTornFrameWrite, fault::Point::kFramesWritten, false,
     kDataSyncWindow, 6},
    // Not in the rotation: it follows every torn_frame_write kill, which leaves
    // bytes for the next writer's recovery to truncate.
    {"recovery_truncate", Trigger::kRecoveryTruncate, fault::Point::kChunkCreated, false,
     kDataSyncWindow, 1},
    {"timed_in_data_sync", Trigger::kPoint, fault::Point::kBeforeDataSync, true, kDataSyncWindow,
     2},
    {"timed_in_index_commit", Trigger::kPoint, fault::Point::kBeforeIndexCommit, true,
     kIndexCommitWindow, 2},
    {"timed_in_chunk_registration", Trigger::kPoint, fault::Point::kChunkCreated, true,
     kChunkRegisterWindow, 1},
};
constexpr int kTargetCount = static_cast<int>(sizeof kTargets / sizeof kTargets[0]);
constexpr int kTornWriteTarget = 8;
constexpr int kRecoveryTarget = 9;
static_assert(kTargets[kTornWriteTarget].trigger == Trigger::kTornFrameWrite &&
                  kTargets[kRecoveryTarget].trigger == Trigger::kRecoveryTruncate,
              "the chained targets moved");

struct Plan {
  int target = -1;  // index into kTargets; -1: a random-time kill by the parent, or none
  int occurrence = 0;
  int64_t delay_ns = 0;  // random: the parent's delay after fork; timed: the timer's delay
  bool kill = true;      // false: the final writer, which runs to completion
  int64_t first_batch = 0;
  int64_t max_batches = 0;
};

// ---- The writer (a forked child) --------------------------------------------

enum class Phase { kOpen, kRecover, kAppend, kCommit };

struct WriterContext {
  Shared* shared = nullptr;
  Plan plan;
  const Target* target = nullptr;
  Phase phase = Phase::kOpen;
  int occurrences = 0;
  bool torn = false;  // a torn write went through; the kill comes at its continuation
  int chunks_created = 0;
  Clock::time_point window_start[kWindowCount];
};

void SetStage(WriterContext* c, Stage stage) {
  c->shared->stage.store(stage, std::memory_order_relaxed);
}

[[noreturn]] void KillSelf() {
  ::kill(::getpid(), SIGKILL);
  for (;;) ::pause();
}

// A one-shot timer that delivers SIGKILL to this process after `delay_ns`.
void ArmKillTimer(int64_t delay_ns) {
  struct sigevent event;
  std::memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGKILL;
  timer_t timer;
  struct itimerspec when;
  std::memset(&when, 0, sizeof when);
  delay_ns = std::max<int64_t>(delay_ns, 1);
  when.it_value.tv_sec = static_cast<time_t>(delay_ns / 1000000000);
  when.it_value.tv_nsec = static_cast<long>(delay_ns % 1000000000);
  if (::timer_create(CLOCK_MONOTONIC, &event, &timer) != 0 ||
      ::timer_settime(timer, 0, &when, nullptr) != 0) {
    std::fprintf(stderr, "torture: writer: arming the kill timer: %s\n", std::strerror(errno));
    std::fflush(stderr);
    ::_exit(kExitTimer);
  }
}

// One more occurrence of the target's trigger: kill, or arm the timer, at the chosen one.
void Occurred(WriterContext* c) {
  if (++c->occurrences != c->plan.occurrence) return;
  if (c->target->timed) {
    ArmKillTimer(c->plan.delay_ns);
  } else {
    KillSelf();
  }
}

void OnPoint(fault::Point point, void* context) {
  auto* c = static_cast<WriterContext*>(context);
  const Clock::time_point now = Clock::now();
  const auto open_window = [&](Window w) { c->window_start[w] = now; };
  const auto close_window = [&](Window w) {
    c->shared->window_ns[w].store(Nanos(now - c->window_start[w]), std::memory_order_relaxed);
  };
  switch (point) {
    case fault::Point::kChunkCreated:
      ++c->chunks_created;
      open_window(kChunkRegisterWindow);
      SetStage(c, kStChunkCreated);
      break;
    case fault::Point::kChunkRegistered:
      close_window(kChunkRegisterWindow);
      SetStage(c, kStChunkRegistered);
      break;
    case fault::Point::kFramesWritten:
      SetStage(c, kStFramesWritten);
      break;
    case fault::Point::kBeforeDataSync:
      open_window(kDataSyncWindow);
      SetStage(c, kStBeforeDataSync);
      break;
    case fault::Point::kAfterDataSync:
      close_window(kDataSyncWindow);
      SetStage(c, kStAfterDataSync);
      break;
    case fault::Point::kBeforeIndexCommit:
      open_window(kIndexCommitWindow);
      SetStage(c, kStIndexCommit);
      break;
    case fault::Point::kAfterIndexCommit:
      close_window(kIndexCommitWindow);
      SetStage(c, kStCommitted);
      break;
    case fault::Point::kIndexBuilt:   // Dataset::Create, not a writer's commit
    case fault::Point::kPushPlanned:  // a push, not a writer
    case fault::Point::kPushBeforePublish:
      break;
  }
  if (c->target != nullptr && c->target->trigger == Trigger::kPoint && c->target->point == point) {
    Occurred(c);
  }
}

fault::Injection OnIo(fault::Op op, const std::string& path, uint64_t /*offset*/, size_t size,
                      void* context) {
  auto* c = static_cast<WriterContext*>(context);
  if (path.size() < 5 || path.compare(path.size() - 5, 5, ".gulp") != 0) return {};
  std::optional<Trigger> trigger;
  switch (c->phase) {
    case Phase::kRecover:
      if (op == fault::Op::kTruncate) {
        SetStage(c, kStRecoverTruncate);
        trigger = Trigger::kRecoveryTruncate;
      } else if (op == fault::Op::kSync) {
        SetStage(c, kStRecoverSync);
      }
      break;
    case Phase::kAppend:
      if (op == fault::Op::kWrite) {
        SetStage(c, kStFrameWrite);
        if (c->torn) KillSelf();  // the rest of the torn write
        trigger = Trigger::kTornFrameWrite;
      }
      break;
    case Phase::kCommit:
      if (op == fault::Op::kSync) {
        SetStage(c, kStDataSync);
        trigger = Trigger::kDataSyncCall;
      }
      break;
    case Phase::kOpen:
      break;
  }
  if (c->target == nullptr || trigger != c->target->trigger) return {};
  if (*trigger == Trigger::kTornFrameWrite) {
    if (++c->occurrences != c->plan.occurrence) return {};
    c->torn = true;
    fault::Injection half;
    half.max_bytes = size / 2;
    return half;
  }
  Occurred(c);
  return {};
}

// Installs the writer's hooks for its lifetime (declared after the context,
// before the Dataset and Writer, whose destructors may still do I/O).
class HookGuard {
 public:
  explicit HookGuard(WriterContext* c) {
    fault::SetPointHook(&OnPoint, c);
    fault::SetIoHook(&OnIo, c);
  }
  ~HookGuard() {
    fault::SetPointHook(nullptr, nullptr);
    fault::SetIoHook(nullptr, nullptr);
  }
  HookGuard(const HookGuard&) = delete;
  HookGuard& operator=(const HookGuard&) = delete;
};

bool WriteAll(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Opens the dataset (recovering what the last writer left), then appends and
// commits batches plan.first_batch, ..., reporting each batch number on
// `report_fd` as soon as its Commit returns.
int RunWriter(const std::string& dir, const Plan& plan, Shared* shared, int report_fd) {
  WriterContext c;
  c.shared = shared;
  c.plan = plan;
  if (plan.target >= 0) c.target = &kTargets[plan.target];
  HookGuard hooks(&c);

  SetStage(&c, kStOpen);
  OpenOptions open;
  open.read_only = false;
  open.decode_threads = 1;
  std::unique_ptr<Dataset> ds = Dataset::Open(dir, open);
  SetStage(&c, kStRecover);
  c.phase = Phase::kRecover;
  std::unique_ptr<Writer> writer = ds->NewWriter();
  c.phase = Phase::kAppend;

  // Where chunk rollovers must fall: a new chunk when the last one holds
  // videos_per_chunk videos (or is full, or there is none).
  const uint32_t per_chunk = ds->Stats().videos_per_chunk;
  const std::vector<ChunkInfo> chunks = ds->Chunks();
  bool have_chunk = !chunks.empty();
  bool chunk_full = have_chunk && chunks.back().full;
  uint64_t in_chunk = have_chunk ? chunks.back().appended_videos : 0;

  for (int64_t batch = plan.first_batch; batch < plan.first_batch + plan.max_batches; ++batch) {
    SetStage(&c, kStBetweenBatches);
    shared->batch.store(batch, std::memory_order_relaxed);
    for (int video = 0; video < VideosIn(batch); ++video) {
      const std::vector<std::string> frames = VideoFrames(batch, video);
      const bool rollover = !have_chunk || chunk_full || in_chunk >= per_chunk;
      SetStage(&c, rollover ? kStChunkCreate : kStAppend);
      const int created_before = c.chunks_created;
      writer->Append(VideoId(batch, video), Views(frames), VideoMeta(batch, video));
      if (c.chunks_created - created_before != (rollover ? 1 : 0)) {
        std::fprintf(stderr,
                     "torture: writer: appending '%s' created %d chunks, expected %d "
                     "(videos_per_chunk %u, %" PRIu64 " videos in the last chunk)\n",
                     VideoId(batch, video).c_str(), c.chunks_created - created_before,
                     rollover ? 1 : 0, per_chunk, in_chunk);
        return kExitRollover;
      }
      if (rollover) {
        have_chunk = true;
        chunk_full = false;
        in_chunk = 0;
      }
      ++in_chunk;
    }
    c.phase = Phase::kCommit;
    writer->Commit();
    c.phase = Phase::kAppend;
    if (!WriteAll(report_fd, &batch, sizeof batch)) return kExitReport;
    SetStage(&c, kStBetweenBatches);
  }
  return 0;
}

// What the parent saw of one writer.
struct WriterRun {
  int status = 0;
  bool hung = false;
  std::vector<int64_t> reports;
  int64_t first_report_ns = 0;  // from fork to the first report; 0 if none
  int64_t batch_ns = 0;         // mean time between reports; 0 if fewer than two
};

// Forks a writer for `plan` and waits for it to die: SIGKILLs it after
// plan.delay_ns for a random-time kill, otherwise lets its own hook do that
// (or lets it finish). A writer alive after kHangTimeout is killed and
// reported hung.
WriterRun RunWriterChild(const std::string& dir, const Plan& plan, Shared* shared) {
  shared->stage.store(kStStart);
  shared->batch.store(-1);
  for (auto& w : shared->window_ns) w.store(0);
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const Clock::time_point start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int code = kExitParent;
    if (::getppid() == parent) {
      try {
        code = RunWriter(dir, plan, shared, fds[1]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "torture: writer: %s\n", e.what());
        code = kExitError;
      }
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  ::close(fds[1]);

  WriterRun run;
  const bool random_kill = plan.kill && plan.target < 0;
  const Clock::time_point hang = start + kHangTimeout;
  const Clock::time_point deadline =
      random_kill ? start + std::chrono::nanoseconds(plan.delay_ns) : hang;
  std::vector<Clock::time_point> times;
  std::string pending;
  bool killed = false;
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (!killed && now >= deadline) {
      ::kill(pid, SIGKILL);
      killed = true;
      run.hung = !random_kill;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    struct timespec wait;
    const int64_t left = killed ? Nanos(hang - now) : Nanos(deadline - now);
    wait.tv_sec = static_cast<time_t>(std::max<int64_t>(left, 0) / 1000000000);
    wait.tv_nsec = static_cast<long>(std::max<int64_t>(left, 0) % 1000000000);
    const int ready = ::ppoll(&p, 1, &wait, nullptr);
    if (ready < 0 && errno != EINTR) {
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    if (ready <= 0) {
      if (killed && Clock::now() >= hang) break;  // cannot happen: a killed child closes the pipe
      continue;
    }
    char buf[256];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file: the writer is gone
    pending.append(buf, static_cast<size_t>(n));
    while (pending.size() >= sizeof(int64_t)) {
      int64_t batch;
      std::memcpy(&batch, pending.data(), sizeof batch);
      pending.erase(0, sizeof batch);
      run.reports.push_back(batch);
      times.push_back(Clock::now());
    }
  }
  ::close(fds[0]);
  while (::waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {
  }
  if (!times.empty()) run.first_report_ns = Nanos(times.front() - start);
  if (times.size() >= 2) {
    run.batch_ns = Nanos(times.back() - times.front()) / static_cast<int64_t>(times.size() - 1);
  }
  return run;
}

// ---- The verifier (a forked child) ------------------------------------------

struct VerifyRequest {
  int64_t known_max = -1;  // batches 0..known_max are committed (reported or verified before)
  int64_t in_flight = -1;  // a batch that may or may not have committed; -1: none
  int64_t exact_from = 0;  // read batches exact_from..(last visible) byte for byte
  bool full = false;       // also run a deep gulpdb::Check
};

struct VerifyResult {
  int64_t committed_max = -1;  // the last batch visible (whole)
  int64_t lost = 0;            // batches reported committed, not visible
  int64_t uncommitted = 0;     // partial batches and ids of no committed batch
  int64_t corrupt = 0;         // videos that did not read back exactly
  int64_t check_problems = 0;  // Check's problems, and other inconsistencies
  int64_t leftover_notes = 0;  // chunks holding bytes past their committed length
  int64_t orphan_files = 0;    // data_*.gulp files the index does not know
  int64_t videos = 0;
  int64_t batches_read = 0;
  int64_t frames_read = 0;
};

class Verifier {
 public:
  Verifier(std::string dir, const VerifyRequest& request) : dir_(std::move(dir)), req_(request) {}

  VerifyResult Run() {
    OpenOptions open;
    open.verify_checksums = true;
    open.decode_threads = 1;
    const std::unique_ptr<Dataset> ds = Dataset::Open(dir_, open);
    CheckIds(*ds);
    ReadBatches(*ds);
    CheckDataset(*ds);
    return result_;
  }

 private:
  __attribute__((format(printf, 2, 3))) void Message(const char* format, ...) {
    if (messages_++ >= kMaxMessages) return;
    char line[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(line, sizeof line, format, args);
    va_end(args);
    std::fprintf(stderr, "torture: %s\n", line);
  }

  // The visible ids must be batches 0..m, whole, m = known_max or in_flight.
  void CheckIds(const Dataset& ds) {
    const std::vector<std::string> ids = ds.Ids();
    result_.videos = static_cast<int64_t>(ids.size());
    if (ds.Count() != ids.size()) {
      ++result_.check_problems;
      Message("the index counts %" PRIu64 " videos but lists %zu", ds.Count(), ids.size());
    }
    for (const std::string& id : ids) {
      int64_t batch = 0;
      int video = 0;
      if (!ParseId(id, &batch, &video) || video >= VideosIn(batch)) {
        ++result_.uncommitted;
        Message("UNCOMMITTED VISIBLE: id '%s' belongs to no batch", id.c_str());
        continue;
      }
      if (!batches_[batch].insert(video).second) {
        ++result_.check_problems;
        Message("id '%s' listed twice", id.c_str());
      }
    }
    for (int64_t b = 0; b <= req_.known_max; ++b) {
      auto it = batches_.find(b);
      if (it == batches_.end()) {
        ++result_.lost;
        Message("LOST: batch %" PRId64 " was reported committed and is not visible", b);
      } else if (static_cast<int>(it->second.size()) != VideosIn(b)) {
        ++result_.uncommitted;
        Message("UNCOMMITTED VISIBLE: batch %" PRId64 " is partial: %zu of its %d videos", b,
                it->second.size(), VideosIn(b));
      }
    }
    result_.committed_max = req_.known_max;
    for (const auto& [b, videos] : batches_) {
      if (b <= req_.known_max) continue;
      if (b == req_.in_flight && static_cast<int>(videos.size()) == VideosIn(b)) {
        result_.committed_max = b;  // committed before its report got out
        continue;
      }
      ++result_.uncommitted;
      if (b == req_.in_flight) {
        Message("UNCOMMITTED VISIBLE: in-flight batch %" PRId64 " is partial: %zu of its %d videos",
                b, videos.size(), VideosIn(b));
      } else {
        Message("UNCOMMITTED VISIBLE: batch %" PRId64
                " (%zu videos) was never committed "
                "(last reported %" PRId64 ", in flight %" PRId64 ")",
                b, videos.size(), req_.known_max, req_.in_flight);
      }
    }
  }

  void ReadBatches(const Dataset& ds) {
    for (int64_t b = std::max<int64_t>(0, req_.exact_from); b <= result_.committed_max; ++b) {
      auto it = batches_.find(b);
      if (it == batches_.end()) continue;  // counted as lost
      for (int video : it->second) {
        if (!ReadVideo(ds, b, video)) ++result_.corrupt;
      }
      ++result_.batches_read;
    }
  }

  // Frames byte for byte (with stored checksums verified by the read), meta,
  // frame count and checksums as the writer wrote them.
  bool ReadVideo(const Dataset& ds, int64_t batch, int video) {
    const std::string id = VideoId(batch, video);
    try {
      const std::optional<VideoInfo> info = ds.Find(id);
      if (!info) {
        Message("CORRUPT READ: '%s' is listed but not found", id.c_str());
        return false;
      }
      const std::vector<std::string> want = VideoFrames(batch, video);
      if (info->frames.size() != want.size() || info->checksums.size() != want.size()) {
        Message("CORRUPT READ: '%s' has %zu frames and %zu checksums, expected %zu of each",
                id.c_str(), info->frames.size(), info->checksums.size(), want.size());
        return false;
      }
      const std::string meta = "[" + VideoMeta(batch, video) + "]";
      if (info->meta_data != meta) {
        Message("CORRUPT READ: '%s' has meta %s, expected %s", id.c_str(),
                info->meta_data.substr(0, 200).c_str(), meta.c_str());
        return false;
      }
      const StoredFrames got = ds.ReadJpegs(id);
      if (got.size() != want.size()) {
        Message("CORRUPT READ: '%s' read %zu frames, expected %zu", id.c_str(), got.size(),
                want.size());
        return false;
      }
      for (size_t f = 0; f < want.size(); ++f) {
        if (got[f] != want[f]) {
          Message("CORRUPT READ: '%s' frame %zu (offset %" PRIu64
                  " in chunk %u): %zu bytes "
                  "differ from the %zu written",
                  id.c_str(), f, info->frames[f].offset, info->chunk, got[f].size(),
                  want[f].size());
          return false;
        }
      }
      result_.frames_read += static_cast<int64_t>(want.size());
      return true;
    } catch (const Error& e) {
      Message("CORRUPT READ: '%s': %s", id.c_str(), e.what());
      return false;
    }
  }

  // Chunk files against the index (a file shorter than its committed length
  // lost committed bytes), totals against the ids, and, for a full
  // verification, everything gulpdb::Check looks at.
  void CheckDataset(const Dataset& ds) {
    std::set<std::string> known;
    uint64_t live_videos = 0;
    for (const ChunkInfo& c : ds.Chunks()) {
      known.insert(c.file_name);
      live_videos += c.live_videos;
      const std::filesystem::path path = std::filesystem::path(dir_) / c.file_name;
      std::error_code error;
      const uintmax_t size = std::filesystem::file_size(path, error);
      if (error) {
        ++result_.check_problems;
        Message("%s: %s", c.file_name.c_str(), error.message().c_str());
      } else if (size < c.committed_length) {
        ++result_.check_problems;
        Message("%s: %ju bytes, the index committed %" PRIu64, c.file_name.c_str(), size,
                c.committed_length);
      } else if (size > c.committed_length) {
        ++result_.leftover_notes;
      }
    }
    const uint64_t total = ds.Stats().videos;
    if (live_videos != static_cast<uint64_t>(result_.videos) ||
        total != static_cast<uint64_t>(result_.videos)) {
      ++result_.check_problems;
      Message("%" PRId64 " ids, but the chunks count %" PRIu64
              " live videos and the dataset %" PRIu64,
              result_.videos, live_videos, total);
    }
    // Chunk files the index does not know are left by a writer killed
    // between creating a chunk and registering it; they must be empty.
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name.size() < 10 || name.compare(0, 5, "data_") != 0 ||
          name.compare(name.size() - 5, 5, ".gulp") != 0 || known.count(name) != 0) {
        continue;
      }
      ++result_.orphan_files;
      const uintmax_t size = std::filesystem::file_size(entry.path());
      if (size != 0) {
        ++result_.check_problems;
        Message("%s: not in the index but holds %ju bytes", name.c_str(), size);
      }
    }
    if (!req_.full) return;
    CheckOptions options;
    options.deep = true;
    const CheckReport report = Check(dir_, options);
    for (const CheckProblem& p : report.problems) {
      Message("check: %s: %s", p.where.c_str(), p.what.c_str());
    }
    result_.check_problems += static_cast<int64_t>(report.problems.size());
    if (report.videos != static_cast<uint64_t>(result_.videos)) {
      ++result_.check_problems;
      Message("check saw %" PRIu64 " videos, the ids %" PRId64, report.videos, result_.videos);
    }
  }

  std::string dir_;
  VerifyRequest req_;
  VerifyResult result_;
  std::map<int64_t, std::set<int>> batches_;  // visible videos per batch
  int messages_ = 0;
};

// Runs a Verifier in a forked child; nullopt (after saying why) if it failed.
std::optional<VerifyResult> RunVerifierChild(const std::string& dir, const VerifyRequest& request) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const int status = RunInChild([&] {
    ::close(fds[0]);
    const VerifyResult result = Verifier(dir, request).Run();
    return WriteAll(fds[1], &result, sizeof result) ? 0 : 1;
  });
  ::close(fds[1]);
  VerifyResult result;
  size_t got = 0;
  while (got < sizeof result) {
    const ssize_t n = ::read(fds[0], reinterpret_cast<char*>(&result) + got, sizeof result - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fds[0]);
  if (!ExitedWith(status, 0) || got != sizeof result) {
    std::fprintf(stderr, "torture: the verifier %s\n", DescribeStatus(status).c_str());
    return std::nullopt;
  }
  return result;
}

// ---- The parent ---------------------------------------------------------------

struct Options {
  int kills = kDefaultKills;
  uint64_t seed = 0;
  bool seed_given = false;
  std::string dir;
  bool verbose = false;
};

struct Figures {
  int64_t kills = 0;
  int64_t kills_random = 0;
  int64_t kills_targeted = 0;
  int64_t kills_timed = 0;
  int64_t writers_unkilled = 0;  // finished their batches before the kill came
  int64_t batches_lost = 0;
  int64_t uncommitted_visible = 0;
  int64_t corrupt_reads = 0;
  int64_t check_failures = 0;  // verifications whose checks found problems
  int64_t leftover_after_clean_writer = 0;
  int64_t orphans_after_clean_writer = 0;
  int64_t child_failures = 0;
  int64_t deep_checks = 0;
  int64_t batches_read = 0;
  int64_t frames_read = 0;
  int64_t orphan_chunk_files_max = 0;  // seen by one verification
  int64_t kill_points[kStageCount] = {};
  int64_t kill_targets[kTargetCount] = {};

  bool Healthy() const {
    return batches_lost == 0 && uncommitted_visible == 0 && corrupt_reads == 0 &&
           check_failures == 0 && leftover_after_clean_writer == 0 &&
           orphans_after_clean_writer == 0 && child_failures == 0;
  }
};

// Running estimates of how long a writer takes, for the random delays and the timers.
struct Calibration {
  double first_report_ns = 30e6;
  double batch_ns = 10e6;
  double window_ns[kWindowCount] = {2e6, 4e6, 4e6};

  static void Blend(double* estimate, int64_t sample) {
    if (sample > 0) *estimate = 0.7 * *estimate + 0.3 * static_cast<double>(sample);
  }
  void Update(const WriterRun& run, const Shared& shared) {
    Blend(&first_report_ns, run.first_report_ns);
    Blend(&batch_ns, run.batch_ns);
    for (int w = 0; w < kWindowCount; ++w) Blend(&window_ns[w], shared.window_ns[w].load());
  }
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "gulpdb_torture: %s\nusage: gulpdb_torture [--kills N] [--seed S] [--dir D] "
               "[--verbose]\n",
               why);
  std::exit(2);
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    try {
      if (arg == "--kills") {
        o.kills = std::stoi(value());
        if (o.kills < 0) Usage("--kills must be >= 0");
      } else if (arg == "--seed") {
        o.seed = std::stoull(value());
        o.seed_given = true;
      } else if (arg == "--dir") {
        o.dir = value();
      } else if (arg == "--verbose") {
        o.verbose = true;
      } else {
        Usage(("unknown argument " + arg).c_str());
      }
    } catch (const std::logic_error&) {
      Usage(("bad value for " + arg).c_str());
    }
  }
  if (!o.seed_given) {
    o.seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count()) ^
             (static_cast<uint64_t>(::getpid()) << 32);
  }
  return o;
}

class Torture {
 public:
  Torture(const Options& options, std::string dir, Shared* shared)
      : o_(options), dir_(std::move(dir)), shared_(shared), rng_(options.seed) {}

  // Returns the exit status.
  int Run() {
    const Clock::time_point start = Clock::now();
    per_chunk_ = 3 + static_cast<uint32_t>(rng_() % 6);
    std::printf("seed %" PRIu64 "\ndir %s\nvideos_per_chunk %u\n", o_.seed, dir_.c_str(),
                per_chunk_);
    std::fflush(stdout);
    const int created = RunInChild([&] {
      CreateOptions create;
      create.videos_per_chunk = per_chunk_;
      create.checksums = true;
      Dataset::Create(dir_, create).reset();
      return 0;
    });
    if (!ExitedWith(created, 0)) {
      std::fprintf(stderr, "torture: creating the dataset %s\n", DescribeStatus(created).c_str());
      ++fig_.child_failures;
    }

    const int max_attempts = 3 * o_.kills + 20;
    for (int attempt = 0; fig_.Healthy() && fig_.kills < o_.kills && attempt < max_attempts;
         ++attempt) {
      Attempt(attempt);
    }
    bool complete = fig_.kills >= o_.kills;
    if (!complete) {
      std::fprintf(stderr, "torture: only %" PRId64 " of the %d kills asked for happened\n",
                   fig_.kills, o_.kills);
    }
    if (fig_.Healthy()) complete = FinalWriter() && complete;

    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    Print(seconds);
    const bool pass = fig_.Healthy() && complete;
    std::printf("result %s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
  }

 private:
  Plan MakePlan(int attempt) {
    Plan plan;
    plan.first_batch = known_max_ + 1;
    const double fraction = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    if (chain_recovery_) {
      chain_recovery_ = false;
      plan.target = kRecoveryTarget;
      plan.occurrence = 1;
      plan.max_batches = kTargetedBatchCap;
      return plan;
    }
    if (attempt % 2 == 0) {
      // A random moment from the writer's start to a few batches in.
      plan.delay_ns = static_cast<int64_t>(fraction * (cal_.first_report_ns + 3.0 * cal_.batch_ns));
      plan.max_batches = kRandomBatchCap;
      return plan;
    }
    do {
      plan.target = next_target_++ % kTargetCount;
    } while (plan.target == kRecoveryTarget);
    const Target& t = kTargets[plan.target];
    plan.occurrence = 1 + static_cast<int>(rng_() % static_cast<uint64_t>(t.max_occurrence));
    if (t.timed) plan.delay_ns = static_cast<int64_t>(fraction * 1.5 * cal_.window_ns[t.window]);
    plan.max_batches = kTargetedBatchCap;
    return plan;
  }

  void Attempt(int attempt) {
    const Plan plan = MakePlan(attempt);
    const WriterRun run = RunWriterChild(dir_, plan, shared_);
    const int stage = std::clamp<int>(shared_->stage.load(), 0, kStageCount - 1);
    const int64_t in_flight_batch = shared_->batch.load();
    cal_.Update(run, *shared_);

    std::string outcome;
    bool killed = false;
    if (run.hung) {
      ++fig_.child_failures;
      outcome = "HUNG";
      std::fprintf(stderr, "torture: the writer hung at stage %s (plan %s)\n", kStageNames[stage],
                   PlanName(plan).c_str());
    } else if (WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL) {
      killed = true;
      ++fig_.kills;
      ++fig_.kill_points[stage];
      if (plan.target < 0) {
        ++fig_.kills_random;
      } else {
        ++(kTargets[plan.target].timed ? fig_.kills_timed : fig_.kills_targeted);
        ++fig_.kill_targets[plan.target];
      }
      outcome = std::string("killed in ") + kStageNames[stage];
      chain_recovery_ = plan.target == kTornWriteTarget;
    } else if (ExitedWith(run.status, 0)) {
      ++fig_.writers_unkilled;
      outcome = "finished unkilled";
    } else {
      ++fig_.child_failures;
      outcome = "FAILED: " + DescribeStatus(run.status);
      std::fprintf(stderr, "torture: the writer (plan %s) %s at stage %s\n", PlanName(plan).c_str(),
                   DescribeStatus(run.status).c_str(), kStageNames[stage]);
    }
    for (size_t i = 0; i < run.reports.size(); ++i) {
      if (run.reports[i] != plan.first_batch + static_cast<int64_t>(i)) {
        ++fig_.child_failures;
        std::fprintf(stderr,
                     "torture: the writer reported batch %" PRId64 ", expected %" PRId64 "\n",
                     run.reports[i], plan.first_batch + static_cast<int64_t>(i));
        break;
      }
    }

    VerifyRequest request;
    request.known_max = run.reports.empty() ? known_max_ : run.reports.back();
    if (!ExitedWith(run.status, 0) && in_flight_batch > request.known_max) {
      request.in_flight = in_flight_batch;
    }
    const bool full = killed && fig_.kills % kDeepEvery == 0;
    // The batches this writer committed, and the one before them: its
    // recovery truncated that batch's chunk.
    request.exact_from =
        full ? 0 : std::max<int64_t>(0, std::min(verified_to_ + 1, plan.first_batch - 1));
    request.full = full;
    const int64_t before = known_max_;
    if (!Verify(request)) return;
    if (o_.verbose) {
      std::printf("attempt %d: %s -> %s; reported %zu batches, visible 0..%" PRId64 " (+%" PRId64
                  "), read %" PRId64 "..%" PRId64 "%s\n",
                  attempt, PlanName(plan).c_str(), outcome.c_str(), run.reports.size(), known_max_,
                  known_max_ - before, request.exact_from, known_max_, full ? ", deep check" : "");
      std::fflush(stdout);
    }
  }

  // Verifies, adds up the figures, and moves known_max_ to what is visible.
  bool Verify(const VerifyRequest& request) {
    const std::optional<VerifyResult> result = RunVerifierChild(dir_, request);
    if (!result) {
      ++fig_.child_failures;
      return false;
    }
    fig_.batches_lost += result->lost;
    fig_.uncommitted_visible += result->uncommitted;
    fig_.corrupt_reads += result->corrupt;
    if (result->check_problems > 0) ++fig_.check_failures;
    fig_.batches_read += result->batches_read;
    fig_.frames_read += result->frames_read;
    fig_.orphan_chunk_files_max = std::max(fig_.orphan_chunk_files_max, result->orphan_files);
    last_orphan_files_ = result->orphan_files;
    if (request.full) ++fig_.deep_checks;
    known_max_ = result->committed_max;
    verified_to_ = known_max_;
    last_leftover_notes_ = result->leftover_notes;
    videos_ = result->videos;
    return true;
  }

  // A writer that runs to completion: recovery must leave nothing behind.
  bool FinalWriter() {
    Plan plan;
    plan.kill = false;
    plan.first_batch = known_max_ + 1;
    plan.max_batches = kFinalBatches;
    const WriterRun run = RunWriterChild(dir_, plan, shared_);
    bool ok = true;
    if (run.hung || !ExitedWith(run.status, 0) ||
        run.reports.size() != static_cast<size_t>(kFinalBatches)) {
      ++fig_.child_failures;
      std::fprintf(stderr, "torture: the final writer %s after %zu of %" PRId64 " batches\n",
                   run.hung ? "hung" : DescribeStatus(run.status).c_str(), run.reports.size(),
                   kFinalBatches);
      ok = false;
    }
    VerifyRequest request;
    request.known_max = run.reports.empty() ? known_max_ : run.reports.back();
    request.exact_from = 0;
    request.full = true;
    if (!Verify(request)) return false;
    fig_.leftover_after_clean_writer = last_leftover_notes_;
    if (last_leftover_notes_ != 0) {
      std::fprintf(stderr,
                   "torture: %" PRId64
                   " chunks hold bytes past their committed length "
                   "after a writer ran to completion\n",
                   last_leftover_notes_);
    }
    fig_.orphans_after_clean_writer = last_orphan_files_;
    if (last_orphan_files_ != 0) {
      std::fprintf(stderr,
                   "torture: %" PRId64
                   " data_*.gulp files the index does not know are left "
                   "after a writer ran to completion (GulpIO readers pair every data file with "
                   "a .gmeta)\n",
                   last_orphan_files_);
    }
    return ok;
  }

  static std::string PlanName(const Plan& plan) {
    if (!plan.kill) return "no kill";
    if (plan.target < 0) return "random " + std::to_string(plan.delay_ns / 1000) + " us";
    const Target& t = kTargets[plan.target];
    std::string name = std::string(t.name) + " #" + std::to_string(plan.occurrence);
    if (t.timed) name += " +" + std::to_string(plan.delay_ns / 1000) + " us";
    return name;
  }

  void Print(double seconds) const {
    std::printf("kills %" PRId64 "\n", fig_.kills);
    std::printf("kills_random %" PRId64 "\n", fig_.kills_random);
    std::printf("kills_targeted %" PRId64 "\n", fig_.kills_targeted);
    std::printf("kills_timed %" PRId64 "\n", fig_.kills_timed);
    std::printf("writers_unkilled %" PRId64 "\n", fig_.writers_unkilled);
    std::printf("batches_committed %" PRId64 "\n", known_max_ + 1);
    std::printf("videos %" PRId64 "\n", videos_);
    std::printf("batches_lost %" PRId64 "\n", fig_.batches_lost);
    std::printf("uncommitted_visible %" PRId64 "\n", fig_.uncommitted_visible);
    std::printf("corrupt_reads %" PRId64 "\n", fig_.corrupt_reads);
    std::printf("check_failures %" PRId64 "\n", fig_.check_failures);
    std::printf("leftover_after_clean_writer %" PRId64 "\n", fig_.leftover_after_clean_writer);
    std::printf("orphans_after_clean_writer %" PRId64 "\n", fig_.orphans_after_clean_writer);
    std::printf("child_failures %" PRId64 "\n", fig_.child_failures);
    std::printf("deep_checks %" PRId64 "\n", fig_.deep_checks);
    std::printf("batches_read %" PRId64 "\n", fig_.batches_read);
    std::printf("frames_read %" PRId64 "\n", fig_.frames_read);
    std::printf("orphan_chunk_files_max %" PRId64 "\n", fig_.orphan_chunk_files_max);
    for (int s = 0; s < kStageCount; ++s) {
      std::printf("kill_point %s %" PRId64 "\n", kStageNames[s], fig_.kill_points[s]);
    }
    for (int t = 0; t < kTargetCount; ++t) {
      std::printf("kill_target %s %" PRId64 "\n", kTargets[t].name, fig_.kill_targets[t]);
    }
    std::printf("elapsed_seconds %.1f\n", seconds);
  }

  const Options& o_;
  const std::string dir_;
  Shared* shared_;
  std::mt19937_64 rng_;
  uint32_t per_chunk_ = 0;
  Figures fig_;
  Calibration cal_;
  int next_target_ = 0;
  bool chain_recovery_ = false;  // the next writer dies in its recovery
  int64_t known_max_ = -1;       // batches 0..known_max_ are committed
  int64_t verified_to_ = -1;     // and have been read byte for byte
  int64_t last_leftover_notes_ = 0;
  int64_t last_orphan_files_ = 0;
  int64_t videos_ = 0;
};

int Main(int argc, char** argv) {
  const Options options = ParseOptions(argc, argv);
  std::string dir = options.dir;
  const bool temporary = dir.empty();
  if (temporary) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gulpdb_torture.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "torture: mkdtemp %s: %s\n", pattern.c_str(), std::strerror(errno));
      return 1;
    }
    dir = pattern;
  }
  void* page =
      ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    std::fprintf(stderr, "torture: mmap: %s\n", std::strerror(errno));
    return 1;
  }
  Shared* shared = new (page) Shared();
  int status = 1;
  try {
    status = Torture(options, dir, shared).Run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torture: %s\n", e.what());
    status = 1;
  }
  shared->~Shared();
  ::munmap(page, sizeof(Shared));
  if (temporary && status == 0) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  } else if (status != 0) {
    std::fprintf(stderr, "torture: the dataset is kept in %s\n", dir.c_str());
  }
  return status;
}

}  // namespace
}  // namespace gulpdb::reliability

int main(int argc, char** argv) { return gulpdb::reliability::Main(argc, argv); }
