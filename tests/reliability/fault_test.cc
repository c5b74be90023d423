// Fault injection: disks that fill up (a real tmpfs and injected ENOSPC),
// failing and short reads, writes, syncs and truncates, signals during I/O,
// a file size limit, read-only directories and file systems, and a chunk
// file cut short. Every case checks that the failure is a gulpdb::Error whose
// message names the file and the cause, that readers see exactly the dataset
// of before the failed transaction, that Check(deep) finds it healthy, and
// that the next writer (with the fault gone) commits a batch that reads back.
//
// Two suites: fault_test/any_user runs anywhere; fault_test/root needs root
// (private mount namespaces, dropping to another user). Where that is not
// permitted its cases are skipped and the program exits with 77, which CTest
// reports as skipped. `-- --long` (or GULPDB_RELIABILITY_LONG=1) widens every
// sweep. Work that needs a mount or other credentials runs in forked children
// that report their findings to the parent through a pipe.
#define BOOST_TEST_MODULE gulpdb_faults
#define BOOST_TEST_NO_MAIN
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/fault_injection.h"
#include "engine/gulpio/gulpio_files.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "tests/reliability/common.h"

// Present in sanitizer builds only: where sanitizer reports go.
extern "C" void __sanitizer_set_report_path(const char* path) __attribute__((weak));

namespace gulpdb::reliability {
namespace {

namespace fault = engine::fault;
namespace fs = std::filesystem;

constexpr int kSkipExitCode = 77;  // CTest's SKIP_RETURN_CODE for this program
constexpr uid_t kNobody = 65534;

// ---- Mode and skips -----------------------------------------------------------

bool LongMode() {
  static const bool long_mode = [] {
    const char* env = std::getenv("GULPDB_RELIABILITY_LONG");
    if (env != nullptr && *env != '\0' && std::string(env) != "0") return true;
    const auto& master = boost::unit_test::framework::master_test_suite();
    for (int i = 1; i < master.argc; ++i) {
      if (std::string(master.argv[i]) == "--long") return true;
    }
    return false;
  }();
  return long_mode;
}

// Cases that could not run here; main() turns a passing run with skips into
// exit code 77.
std::vector<std::string>& Skipped() {
  static std::vector<std::string> skipped;
  return skipped;
}

void MarkSkipped(const std::string& why) {
  Skipped().push_back(why);
  BOOST_TEST_MESSAGE("skipped: " + why);
}

std::string Errno(int err) { return std::strerror(err); }

// ---- Files --------------------------------------------------------------------

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/gulpdb_faults_XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + pattern + ": " + Errno(errno));
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

uint64_t SizeOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw std::runtime_error("stat " + path + ": " + Errno(errno));
  return static_cast<uint64_t>(st.st_size);
}

// Every regular file under `dir` with its size: what a failed or refused
// operation must leave exactly as it was.
std::map<std::string, uint64_t> Listing(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      out[fs::relative(entry.path(), dir).string()] = static_cast<uint64_t>(entry.file_size());
    }
  }
  return out;
}

std::string DescribeListing(const std::map<std::string, uint64_t>& listing) {
  std::string out;
  for (const auto& [name, size] : listing) out += " " + name + "=" + std::to_string(size);
  return out;
}

// ---- Videos -------------------------------------------------------------------

struct Video {
  std::string id;
  std::vector<std::string> frames;
  std::string meta;  // one JSON object, already in the form the writer stores
};

uint64_t SeedOf(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  return h % 1000000007ULL;
}

// `count` videos "<prefix><i>" of `frames` real JPEG frames each; the meta
// carries `meta_pad` filler bytes (to make index records large).
std::vector<Video> MakeVideos(const std::string& prefix, int count, int frames,
                              size_t meta_pad = 0) {
  std::vector<Video> videos;
  for (int i = 0; i < count; ++i) {
    Video v;
    v.id = prefix + std::to_string(i);
    v.frames = MakeFrames(SeedOf(v.id), frames);
    v.meta = "{\"id\": \"" + v.id + "\", \"label\": " + std::to_string(i % 7);
    if (meta_pad != 0) v.meta += ", \"pad\": \"" + std::string(meta_pad, 'x') + "\"";
    v.meta += "}";
    videos.push_back(std::move(v));
  }
  return videos;
}

uint64_t VideoBytes(const Video& v) {
  uint64_t bytes = 0;
  for (const std::string& f : v.frames) bytes += f.size() + (4 - f.size() % 4) % 4;
  return bytes;
}

std::unique_ptr<Dataset> OpenReadWrite(const std::string& dir) {
  OpenOptions options;
  options.read_only = false;
  return Dataset::Open(dir, options);
}

void CreateDataset(const std::string& dir, uint32_t videos_per_chunk) {
  CreateOptions options;
  options.videos_per_chunk = videos_per_chunk;
  Dataset::Create(dir, options).reset();
}

void AppendAll(Writer& writer, const std::vector<Video>& videos) {
  for (const Video& v : videos) writer.Append(v.id, Views(v.frames), v.meta);
}

void CommitVideos(const std::string& dir, const std::vector<Video>& videos) {
  auto ds = OpenReadWrite(dir);
  auto writer = ds->NewWriter();
  AppendAll(*writer, videos);
  writer->Commit();
}

std::string ChunkPath(const std::string& dir, const Dataset& ds, uint32_t chunk) {
  for (const ChunkInfo& c : ds.Chunks()) {
    if (c.number == chunk) return dir + "/" + c.file_name;
  }
  throw std::runtime_error("chunk " + std::to_string(chunk) + " of " + dir + " not found");
}

// ---- Expectations -------------------------------------------------------------

// Where the checks of a case go: Boost.Test in the test process, a pipe to
// the parent in a forked child. Shared checks are written once against this.
class Expect {
 public:
  virtual ~Expect() = default;
  virtual void That(bool ok, const std::string& what) = 0;
  virtual void Note(const std::string& what) = 0;
  // Counts an observation the parent asserts on (e.g. which path failed).
  virtual void Fact(const std::string& key) = 0;
  void Fail(const std::string& what) { That(false, what); }
};

class BoostExpect final : public Expect {
 public:
  void That(bool ok, const std::string& what) override { BOOST_CHECK_MESSAGE(ok, what); }
  void Note(const std::string& what) override { BOOST_TEST_MESSAGE(what); }
  void Fact(const std::string& key) override { ++facts[key]; }
  std::map<std::string, int> facts;
};

// In a child: each line goes to the parent at once, so that what was found
// before a crash still arrives.
class ChildExpect final : public Expect {
 public:
  explicit ChildExpect(int fd) : fd_(fd) {}
  void That(bool ok, const std::string& what) override {
    if (ok) return;
    failed_ = true;
    Send('F', what);
  }
  void Note(const std::string& what) override { Send('N', what); }
  void Fact(const std::string& key) override { Send('K', key); }
  [[noreturn]] void Skip(const std::string& why) {
    Send('S', why);
    ::_exit(kSkipExitCode);
  }
  bool failed() const { return failed_; }

 private:
  void Send(char kind, const std::string& text) {
    std::string line = std::string(1, kind) + " ";
    for (char c : text) line += c == '\n' ? '|' : c;
    line += '\n';
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }
  int fd_;
  bool failed_ = false;
};

struct ChildOutcome {
  int status = 0;
  std::vector<std::string> failures, notes, skips;
  std::map<std::string, int> facts;
};

// Runs `body` in a forked child. An exception escaping it is a failure; the
// child exits 0 when nothing failed.
ChildOutcome RunChild(const std::function<void(ChildExpect&)>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + Errno(errno));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork: " + Errno(errno));
  if (pid == 0) {
    ::close(fds[0]);
    ChildExpect ex(fds[1]);
    try {
      body(ex);
    } catch (const std::exception& e) {
      ex.Fail(std::string("unexpected exception: ") + e.what());
    } catch (...) {
      ex.Fail("unexpected exception");
    }
    std::fflush(nullptr);
    ::_exit(ex.failed() ? 1 : 0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  ChildOutcome out;
  while (::waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
  }
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.size() < 2) continue;
    const std::string rest = line.substr(2);
    switch (line[0]) {
      case 'F':
        out.failures.push_back(rest);
        break;
      case 'N':
        out.notes.push_back(rest);
        break;
      case 'K':
        ++out.facts[rest];
        break;
      case 'S':
        out.skips.push_back(rest);
        break;
      default:
        out.failures.push_back("unreadable report line: " + line);
        break;
    }
  }
  return out;
}

// Passes a child's findings to Boost.Test. Returns false when the child
// found that the case cannot run here (then it is marked skipped).
bool ReportChild(const ChildOutcome& out, const std::string& what, BoostExpect& ex) {
  for (const std::string& note : out.notes) ex.Note(what + ": " + note);
  for (const auto& [key, count] : out.facts) ex.facts[key] += count;
  if (ExitedWith(out.status, kSkipExitCode) && !out.skips.empty()) {
    std::string why;
    for (const std::string& s : out.skips) why += (why.empty() ? "" : "; ") + s;
    MarkSkipped(what + ": " + why);
    return false;
  }
  for (const std::string& failure : out.failures) ex.Fail(what + ": " + failure);
  if (out.failures.empty()) {
    ex.That(ExitedWith(out.status, 0), what + ": the child " + DescribeStatus(out.status));
  }
  return true;
}

struct Caught {
  ErrorCode code;
  std::string message;
};

// The error must be of kind `code` and its message must contain each needle.
void ExpectClearError(Expect& ex, const Caught& e, ErrorCode code,
                      const std::vector<std::string>& needles, const std::string& context) {
  ex.That(e.code == code, context + ": the error is '" + ErrorCodeName(e.code) + "', expected '" +
                              ErrorCodeName(code) + "': " + e.message);
  for (const std::string& needle : needles) {
    ex.That(e.message.find(needle) != std::string::npos,
            context + ": the message does not say '" + needle + "': " + e.message);
  }
}

// Runs `fn`, which must throw a gulpdb::Error; returns it.
std::optional<Caught> ExpectThrows(Expect& ex, const std::string& context,
                                   const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return Caught{e.code(), e.what()};
  } catch (const std::exception& e) {
    ex.Fail(context + ": threw a non-gulpdb exception: " + e.what());
    return std::nullopt;
  }
  ex.Fail(context + ": did not fail");
  return std::nullopt;
}

std::string Problems(const CheckReport& report) {
  std::string out;
  for (size_t i = 0; i < report.problems.size() && i < 5; ++i) {
    out += "\n  " + report.problems[i].where + ": " + report.problems[i].what;
  }
  if (report.problems.size() > 5)
    out += "\n  ... " + std::to_string(report.problems.size() - 5) + " more";
  return out;
}

CheckReport DeepCheck(const std::string& dir) {
  CheckOptions options;
  options.deep = true;
  return Check(dir, options);
}

void ExpectHealthy(Expect& ex, const std::string& dir, const std::string& context) {
  try {
    const CheckReport report = DeepCheck(dir);
    ex.That(report.healthy(), context + ": check --deep found problems:" + Problems(report));
  } catch (const std::exception& e) {
    ex.Fail(context + ": check --deep threw: " + e.what());
  }
}

// Every video reads back with exactly its frames and meta.
void ExpectVideos(Expect& ex, const Dataset& ds, const std::vector<Video>& videos,
                  const std::string& context) {
  for (const Video& v : videos) {
    try {
      const std::optional<VideoInfo> info = ds.Find(v.id);
      if (!info) {
        ex.Fail(context + ": '" + v.id + "' is missing");
        continue;
      }
      ex.That(info->meta_data == "[" + v.meta + "]",
              context + ": '" + v.id + "' has meta " + info->meta_data.substr(0, 80));
      const StoredFrames got = ds.ReadJpegs(v.id);
      bool same = got.size() == v.frames.size();
      for (size_t i = 0; same && i < got.size(); ++i) same = got[i] == v.frames[i];
      ex.That(same, context + ": '" + v.id + "' reads back other frames than were appended");
    } catch (const std::exception& e) {
      ex.Fail(context + ": reading '" + v.id + "' threw: " + e.what());
    }
  }
}

// No chunk file holds bytes past its committed length (a writer that opened
// after a failure removed what the failed batch left).
void ExpectChunksAtCommittedLength(Expect& ex, const std::string& dir, const std::string& context) {
  try {
    auto ds = Dataset::Open(dir);
    for (const ChunkInfo& c : ds->Chunks()) {
      const uint64_t size = SizeOf(dir + "/" + c.file_name);
      ex.That(size == c.committed_length, context + ": " + c.file_name + " has " +
                                              std::to_string(size) + " bytes, committed " +
                                              std::to_string(c.committed_length));
    }
  } catch (const std::exception& e) {
    ex.Fail(context + ": listing chunks threw: " + e.what());
  }
}

// After a failed transaction: readers see exactly `before`, the deep check is
// clean, and the next writer (the fault gone) commits a batch that reads back.
void ExpectUnchangedAndUsable(Expect& ex, const std::string& dir, const Snapshot& before,
                              const std::string& context) {
  try {
    const Snapshot after = TakeSnapshot(dir);
    ex.That(after == before, context + ": the failed transaction changed what readers see: " +
                                 Difference(before, after));
  } catch (const std::exception& e) {
    ex.Fail(context + ": reading the dataset after the failure threw: " + e.what());
  }
  ExpectHealthy(ex, dir, context);
  static int next_batch = 0;
  const auto next = MakeVideos("next" + std::to_string(next_batch++) + "_", 2, 2);
  try {
    CommitVideos(dir, next);
    auto ds = Dataset::Open(dir);
    ExpectVideos(ex, *ds, next, context + ", the next writer's batch");
    ex.That(ds->Count() == before.videos.size() + next.size(),
            context + ": " + std::to_string(ds->Count()) +
                " videos after the next batch, expected " +
                std::to_string(before.videos.size() + next.size()));
  } catch (const std::exception& e) {
    ex.Fail(context + ": the next writer failed: " + e.what());
  }
  ExpectChunksAtCommittedLength(ex, dir, context + ", after the next writer");
}

// ---- I/O fault plans ----------------------------------------------------------

// One injected fault: the nth call of `op` (on paths containing
// `path_filter`) fails with `error`, or first transfers only `cut_to` bytes
// and the call after it fails; `sticky` makes every later call fail too (a
// disk that stays full).
struct FaultRule {
  fault::Op op = fault::Op::kWrite;
  int error = ENOSPC;
  int nth = 1;
  bool sticky = false;
  size_t cut_to = SIZE_MAX;
  std::string path_filter;
  // What happened.
  int calls = 0;
  int fired = 0;
  bool failing = false;
  std::string path;     // of the first failed call
  uint64_t offset = 0;  // of the first failed call
};

class FaultPlan {
 public:
  explicit FaultPlan(std::vector<FaultRule> rules) : rules_(std::move(rules)) {}
  const FaultRule& rule(size_t i) const { return rules_[i]; }

  static fault::Injection Hook(fault::Op op, const std::string& path, uint64_t offset, size_t size,
                               void* context) {
    return static_cast<FaultPlan*>(context)->Decide(op, path, offset, size);
  }

 private:
  fault::Injection Decide(fault::Op op, const std::string& path, uint64_t offset, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (FaultRule& r : rules_) {
      if (r.op != op) continue;
      if (!r.path_filter.empty() && path.find(r.path_filter) == std::string::npos) continue;
      if (r.failing) {
        if (!r.sticky) r.failing = false;
        return Fire(r, path, offset);
      }
      if (++r.calls != r.nth) continue;
      if (r.cut_to != SIZE_MAX && size > r.cut_to) {
        r.failing = true;
        return fault::Injection{0, r.cut_to};
      }
      r.failing = r.sticky;
      return Fire(r, path, offset);
    }
    return {};
  }

  static fault::Injection Fire(FaultRule& r, const std::string& path, uint64_t offset) {
    if (r.fired++ == 0) {
      r.path = path;
      r.offset = offset;
    }
    return fault::Injection{r.error, SIZE_MAX};
  }

  std::mutex mutex_;
  std::vector<FaultRule> rules_;
};

// Installs an I/O hook for its lifetime.
class ScopedIoHook {
 public:
  ScopedIoHook(fault::IoHook hook, void* context) { fault::SetIoHook(hook, context); }
  ~ScopedIoHook() { fault::SetIoHook(nullptr, nullptr); }
  ScopedIoHook(const ScopedIoHook&) = delete;
  ScopedIoHook& operator=(const ScopedIoHook&) = delete;
};

// Lets every read or write through 1..7 bytes at a time (a pseudo-random
// amount per call), as a device or a signal may.
struct ShortTransfers {
  fault::Op op;
  std::atomic<uint64_t> calls{0};

  static fault::Injection Hook(fault::Op op, const std::string&, uint64_t, size_t, void* context) {
    auto* self = static_cast<ShortTransfers*>(context);
    if (op != self->op) return {};
    uint64_t x = self->calls.fetch_add(1, std::memory_order_relaxed) + 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return fault::Injection{0, static_cast<size_t>(1 + (x ^ (x >> 31)) % 7)};
  }
};

ErrorCode CodeFor(int error) {
  return error == ENOSPC || error == EDQUOT ? ErrorCode::kResourceExhausted : ErrorCode::kIoError;
}

// How the engine names each operation in its messages.
std::vector<std::string> NeedlesFor(const FaultRule& r) {
  switch (r.op) {
    case fault::Op::kWrite:
      return {"write " + r.path + " at offset " + std::to_string(r.offset), Errno(r.error)};
    case fault::Op::kSync:
      return {"fdatasync " + r.path, Errno(r.error)};
    case fault::Op::kTruncate:
      return {"truncate " + r.path, Errno(r.error)};
    case fault::Op::kRead:
      return {"read " + r.path + " at offset " + std::to_string(r.offset), Errno(r.error)};
    case fault::Op::kRename:
      return {"rename " + r.path, Errno(r.error)};
    case fault::Op::kRemove:
      return {"remove " + r.path, Errno(r.error)};
    case fault::Op::kSyncDirectory:
      return {"fsync directory " + r.path, Errno(r.error)};
  }
  return {};
}

// ---- Injected writer faults ---------------------------------------------------

// A batch and the dataset it goes into.
struct Shape {
  const char* name;
  uint32_t videos_per_chunk;
  int committed_videos;  // before the batch
  int batch_videos;
  int frames;
};

// The shapes: a batch that crosses into a new chunk, one video too large for
// one pwritev (more than IOV_MAX frames and pads), and (long mode) a batch
// that spans four chunks.
constexpr Shape kAcrossChunks{"4 videos crossing into a new chunk", 4, 3, 4, 2};
constexpr Shape kHugeVideo{"one video of 700 frames", 100, 1, 1, 700};
constexpr Shape kFourChunks{"12 videos over four chunks", 4, 2, 12, 1};

// Fails the nth call of `base.op` for n = 1, 2, ... until the batch makes no
// nth call; every failed batch must leave the dataset as it was. Returns
// how many calls of the op the batch makes.
int SweepWriterFault(const FaultRule& base, const Shape& shape) {
  BoostExpect ex;
  TempDir tmp;
  int fired_runs = 0;
  const auto committed = MakeVideos("c", shape.committed_videos, shape.frames);
  const auto batch = MakeVideos("batch", shape.batch_videos, shape.frames);
  for (int n = 1; n <= 1000; ++n) {
    const std::string dir = tmp / ("n" + std::to_string(n));
    const std::string tag = std::string(fault::OpName(base.op)) + " " + Errno(base.error) +
                            (base.sticky ? " (sticky)" : "") +
                            (base.cut_to != SIZE_MAX ? " after a short transfer" : "") +
                            " on call " + std::to_string(n) + ", " + shape.name;
    CreateDataset(dir, shape.videos_per_chunk);
    CommitVideos(dir, committed);
    const Snapshot before = TakeSnapshot(dir);

    FaultRule rule = base;
    rule.nth = n;
    FaultPlan plan({rule});
    std::optional<Caught> caught;
    bool commit_returned = false;
    std::unique_ptr<Dataset> ds;
    std::unique_ptr<Writer> writer;
    {
      ScopedIoHook hook(&FaultPlan::Hook, &plan);
      try {
        ds = OpenReadWrite(dir);
        writer = ds->NewWriter();
        try {
          AppendAll(*writer, batch);
        } catch (const Error&) {
          // Odd runs roll back explicitly and go on with the same writer;
          // even runs leave the rollback to the destructor.
          if (n % 2 == 1) writer->Rollback();
          throw;
        }
        writer->Commit();
        commit_returned = true;
      } catch (const Error& e) {
        caught = Caught{e.code(), e.what()};
      }
    }
    const FaultRule& r = plan.rule(0);
    if (r.fired == 0) {
      writer.reset();
      ds.reset();
      // Past the batch's last call of the op: it went through untouched.
      ex.That(commit_returned && !caught,
              tag + ": no fault fired but the batch failed: " + (caught ? caught->message : ""));
      auto reader = Dataset::Open(dir);
      ExpectVideos(ex, *reader, committed, tag);
      ExpectVideos(ex, *reader, batch, tag);
      ExpectHealthy(ex, dir, tag);
      ex.That(fired_runs == r.calls, tag + ": " + std::to_string(fired_runs) +
                                         " runs failed but the batch makes " +
                                         std::to_string(r.calls) + " calls");
      BOOST_TEST_MESSAGE(shape.name << ": " << r.calls << " " << fault::OpName(base.op)
                                    << " calls per batch, each failed once");
      return r.calls;
    }
    ++fired_runs;
    ex.That(!commit_returned,
            tag + ": Commit returned although a " + fault::OpName(base.op) + " failed");
    if (caught) {
      ExpectClearError(ex, *caught, CodeFor(base.error), NeedlesFor(r), tag);
    } else {
      ex.Fail(tag + ": the injected failure was swallowed");
    }
    if (n % 2 == 0 || !writer) {
      writer.reset();
      ds.reset();
      ExpectUnchangedAndUsable(ex, dir, before, tag);
    } else {
      // The same writer, the fault gone, commits its next batch: the dataset
      // is then exactly the old one plus that batch.
      const std::string same = tag + ", the same writer's next batch";
      const auto more = MakeVideos("more" + std::to_string(n) + "_", 2, 2);
      try {
        ex.That(TakeSnapshot(dir) == before, tag + ": the failed batch is visible");
        AppendAll(*writer, more);
        writer->Commit();
      } catch (const std::exception& e) {
        ex.Fail(same + " failed: " + e.what());
      }
      writer.reset();
      ds.reset();
      try {
        Snapshot after = TakeSnapshot(dir);
        for (const Video& v : more) after.videos.erase(v.id);
        ex.That(after == before, same + ": the dataset differs: " + Difference(before, after));
        auto reader = Dataset::Open(dir);
        ExpectVideos(ex, *reader, more, same);
      } catch (const std::exception& e) {
        ex.Fail(same + ": reading threw: " + e.what());
      }
      ExpectHealthy(ex, dir, same);
      ExpectChunksAtCommittedLength(ex, dir, same);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  ex.Fail(std::string(shape.name) + ": the sweep did not end");
  return 0;
}

// Lower bound of the pwritev calls a video needs: IOV_MAX entries per call,
// one per frame and one per non-empty pad.
int MinWriteCalls(const std::vector<Video>& videos) {
  int calls = 0;
  for (const Video& v : videos) {
    size_t iov = 0;
    for (const std::string& f : v.frames) iov += f.size() % 4 == 0 ? size_t{1} : size_t{2};
    calls += static_cast<int>((iov + size_t{IOV_MAX} - 1) / size_t{IOV_MAX});
  }
  return calls;
}

// ---- The child side of privileged cases ----------------------------------------

// Enters a private mount namespace (mounts vanish with the child and never
// reach the rest of the system); skips when that is not permitted.
void EnterPrivateMountNamespace(ChildExpect& ex) {
  if (::unshare(CLONE_NEWNS) != 0) {
    const int err = errno;
    if (err == EPERM || err == EACCES) ex.Skip("unshare(CLONE_NEWNS): " + Errno(err));
    throw std::runtime_error("unshare(CLONE_NEWNS): " + Errno(err));
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    const int err = errno;
    if (err == EPERM || err == EACCES) ex.Skip("making / private: " + Errno(err));
    throw std::runtime_error("mount(/, MS_REC|MS_PRIVATE): " + Errno(err));
  }
}

void MountTmpfs(ChildExpect& ex, const std::string& where, const std::string& options) {
  if (::mount("gulpdb-faults", where.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) !=
      0) {
    const int err = errno;
    if (err == EPERM || err == EACCES) ex.Skip("mount tmpfs on " + where + ": " + Errno(err));
    throw std::runtime_error("mount tmpfs on " + where + ": " + Errno(err));
  }
}

// Becomes uid/gid 65534 with no supplementary groups. Sanitizer reports go
// to stderr from here on: a log_path the user set may not be writable for
// that user.
void DropToNobody() {
  if (__sanitizer_set_report_path != nullptr) __sanitizer_set_report_path("stderr");
  if (::setgroups(0, nullptr) != 0) throw std::runtime_error("setgroups: " + Errno(errno));
  if (::setgid(kNobody) != 0) throw std::runtime_error("setgid: " + Errno(errno));
  if (::setuid(kNobody) != 0) throw std::runtime_error("setuid: " + Errno(errno));
  // Changing credentials makes the process non-dumpable, which hides
  // /proc/self from it; the sanitizers read /proc/self/maps.
  ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

boost::test_tools::assertion_result Skip(const std::string& why) {
  MarkSkipped(why);
  boost::test_tools::assertion_result result(false);
  result.message() << why;
  return result;
}

// Whether this process may create a private mount namespace and mount a
// tmpfs in it (root, or CAP_SYS_ADMIN). Probed once, in a child.
boost::test_tools::assertion_result MountsPermitted(boost::unit_test::test_unit_id) {
  static const std::optional<std::string> why_not = []() -> std::optional<std::string> {
    TempDir tmp;
    const ChildOutcome out = RunChild([&](ChildExpect& ex) {
      EnterPrivateMountNamespace(ex);
      MountTmpfs(ex, tmp.path(), "size=64k");
    });
    if (ExitedWith(out.status, kSkipExitCode) && !out.skips.empty()) return out.skips.front();
    return std::nullopt;  // permitted, or an unexpected failure the case reports itself
  }();
  if (why_not) return Skip("mounting is not permitted here (" + *why_not + ")");
  return true;
}

boost::test_tools::assertion_result IsRoot(boost::unit_test::test_unit_id) {
  if (::geteuid() != 0) return Skip("needs root to switch to uid 65534");
  return true;
}

// ---- Full file system ------------------------------------------------------------

enum class FullPath { kChunkWrite, kIndexCommit, kOther };

// Tells from the message which write the full disk stopped: a chunk file's
// data or the LMDB index.
FullPath ClassifyFull(const std::string& dir, const std::string& message) {
  if (message.find("write " + dir + "/data_") != std::string::npos &&
      message.find(".gulp at offset") != std::string::npos) {
    return FullPath::kChunkWrite;
  }
  if (message.find(dir + "/gulpdb.index") != std::string::npos) return FullPath::kIndexCommit;
  return FullPath::kOther;
}

void ExpectDiskFullError(ChildExpect& ex, const std::string& dir, const Caught& e,
                         const std::string& context) {
  ExpectClearError(ex, e, ErrorCode::kResourceExhausted, {dir, Errno(ENOSPC)}, context);
  switch (ClassifyFull(dir, e.message)) {
    case FullPath::kChunkWrite:
      ex.Fact("full: chunk write");
      break;
    case FullPath::kIndexCommit:
      ex.Fact("full: index commit");
      break;
    case FullPath::kOther:
      ex.Fail(context + ": the message names neither a chunk file nor the index: " + e.message);
      break;
  }
}

uint64_t FreeBytes(const std::string& path) {
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0)
    throw std::runtime_error("statvfs " + path + ": " + Errno(errno));
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

// Allocates a file of `bytes` (0: none) so that the file system fills up.
void Allocate(const std::string& path, uint64_t bytes) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("create " + path + ": " + Errno(errno));
  const int rc = bytes == 0 ? 0 : ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  ::close(fd);
  if (rc != 0) throw std::runtime_error("fallocate " + path + ": " + Errno(rc));
}

// Appends batches of larger frames until the file system is full.
void FillUntilFull(ChildExpect& ex, const std::string& mnt) {
  const std::string reserve = mnt + "/reserve";
  Allocate(reserve, 256 * 1024);
  const std::string dir = mnt + "/fill";
  CreateDataset(dir, 8);
  std::vector<std::string> pool;
  for (int i = 0; i < 24; ++i) pool.push_back(MakeJpeg(static_cast<uint64_t>(i), 64, 64));
  Snapshot before = TakeSnapshot(dir);
  std::optional<Caught> caught;
  int batches = 0;
  for (int b = 0; b < 400 && !caught; ++b) {
    std::vector<Video> videos;
    for (int i = 0; i < 4; ++i) {
      Video v;
      v.id = "fill" + std::to_string(b) + "_" + std::to_string(i);
      for (int f = 0; f < 12; ++f)
        v.frames.push_back(pool[static_cast<size_t>(b * 7 + i * 5 + f) % pool.size()]);
      v.meta = "{}";
      videos.push_back(std::move(v));
    }
    try {
      CommitVideos(dir, videos);
      ++batches;
      before = TakeSnapshot(dir);
    } catch (const Error& e) {
      caught = Caught{e.code(), e.what()};
    }
  }
  if (!caught) {
    ex.Fail("appending never filled the file system");
    return;
  }
  ex.Note("filled after " + std::to_string(batches) + " batches: " + caught->message);
  ExpectDiskFullError(ex, dir, *caught, "appending until the file system is full");
  if (::unlink(reserve.c_str()) != 0)
    throw std::runtime_error("unlink " + reserve + ": " + Errno(errno));
  ExpectUnchangedAndUsable(ex, dir, before, "after the file system filled up");
  fs::remove_all(dir);
}

// Leaves 0, 1, 2, ... pages free and appends a batch of small frames with
// large meta: with little room the chunk write fails, with a little more the
// frames fit and the index commit fails, and with enough the batch commits.
void FillLevels(ChildExpect& ex, const std::string& mnt) {
  const std::string dir = mnt + "/levels";
  CreateDataset(dir, 100);
  CommitVideos(dir, MakeVideos("first", 2, 1));
  struct statvfs st;
  if (::statvfs(mnt.c_str(), &st) != 0) throw std::runtime_error("statvfs: " + Errno(errno));
  const uint64_t page = st.f_frsize;
  const std::string filler = mnt + "/filler";
  const int step = LongMode() ? 1 : 2;
  int failures = 0;
  for (int pages = 0; pages <= 400; pages += step) {
    const std::string tag = "with " + std::to_string(pages) + " pages free";
    const Snapshot before = TakeSnapshot(dir);
    const uint64_t target = static_cast<uint64_t>(pages) * page;
    const uint64_t free_now = FreeBytes(mnt);
    Allocate(filler, free_now > target ? free_now - target : 0);
    const auto batch = MakeVideos("lvl" + std::to_string(pages) + "_", 6, 1, 6000);
    std::optional<Caught> caught;
    try {
      CommitVideos(dir, batch);
    } catch (const Error& e) {
      caught = Caught{e.code(), e.what()};
    }
    if (::unlink(filler.c_str()) != 0) throw std::runtime_error("unlink filler: " + Errno(errno));
    if (!caught) {
      auto ds = Dataset::Open(dir);
      ExpectVideos(ex, *ds, batch, tag);
      ExpectHealthy(ex, dir, tag);
      ex.Note("the batch fits " + tag + " after " + std::to_string(failures) + " failed levels");
      return;
    }
    ++failures;
    ex.Note(tag + ": " + caught->message);
    ExpectDiskFullError(ex, dir, *caught, tag);
    ExpectUnchangedAndUsable(ex, dir, before, tag);
  }
  ex.Fail("the batch never fitted");
}

// ---- Signals ---------------------------------------------------------------------

std::atomic<int> g_signals{0};
void CountSignal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

// Delivers SIGALRM every `interval_us` to the process (no SA_RESTART, so
// system calls it lands in return EINTR) while it lives.
class SignalStorm {
 public:
  explicit SignalStorm(long interval_us) {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_handler = &CountSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    ::sigaction(SIGALRM, &action, &old_action_);
    struct itimerval timer;
    timer.it_interval.tv_sec = 0;
    timer.it_interval.tv_usec = interval_us;
    timer.it_value = timer.it_interval;
    ::setitimer(ITIMER_REAL, &timer, &old_timer_);
  }
  ~SignalStorm() {
    struct itimerval off;
    std::memset(&off, 0, sizeof off);
    ::setitimer(ITIMER_REAL, &off, nullptr);
    ::sigaction(SIGALRM, &old_action_, nullptr);
  }
  SignalStorm(const SignalStorm&) = delete;
  SignalStorm& operator=(const SignalStorm&) = delete;

 private:
  struct sigaction old_action_;
  struct itimerval old_timer_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(fault_test)
BOOST_AUTO_TEST_SUITE(any_user)

// ---- 2. Injected full disk and failing device -----------------------------------

BOOST_AUTO_TEST_CASE(injected_write_errors_roll_back_every_call) {
  FaultRule enospc;
  enospc.op = fault::Op::kWrite;
  enospc.error = ENOSPC;
  const int across = SweepWriterFault(enospc, kAcrossChunks);
  BOOST_CHECK_GE(
      across, MinWriteCalls(MakeVideos("batch", kAcrossChunks.batch_videos, kAcrossChunks.frames)));

  // A disk that fills up mid-write: a short write, then ENOSPC for good
  // (also for whatever the rollback would write).
  FaultRule filling = enospc;
  filling.sticky = true;
  filling.cut_to = 100;
  SweepWriterFault(filling, kAcrossChunks);

  FaultRule eio = enospc;
  eio.error = EIO;
  const int huge = SweepWriterFault(eio, kHugeVideo);
  const int min_huge =
      MinWriteCalls(MakeVideos("batch", kHugeVideo.batch_videos, kHugeVideo.frames));
  BOOST_CHECK_GE(min_huge, 2);  // the shape must take more than one pwritev
  BOOST_CHECK_GE(huge, min_huge);

  if (LongMode()) {
    for (int error : {EDQUOT, EFBIG, EIO}) {
      FaultRule r = enospc;
      r.error = error;
      SweepWriterFault(r, kAcrossChunks);
      SweepWriterFault(r, kFourChunks);
    }
    SweepWriterFault(filling, kHugeVideo);
    SweepWriterFault(filling, kFourChunks);
  }
}

BOOST_AUTO_TEST_CASE(injected_sync_errors_roll_back_every_call) {
  FaultRule eio;
  eio.op = fault::Op::kSync;
  eio.error = EIO;
  // The batch wrote two chunks: both are synced before the index commits.
  BOOST_CHECK_EQUAL(SweepWriterFault(eio, kAcrossChunks), 2);
  if (LongMode()) {
    FaultRule enospc = eio;
    enospc.error = ENOSPC;  // as NFS or thin provisioning report it
    SweepWriterFault(enospc, kAcrossChunks);
    BOOST_CHECK_EQUAL(SweepWriterFault(eio, kFourChunks), 4);
    SweepWriterFault(eio, kHugeVideo);
  }
}

// The rollback's truncate fails: the batch's bytes stay past the committed
// length, invisible to readers; the next writer removes them, and when its
// own truncate fails it refuses to start, changing nothing.
BOOST_AUTO_TEST_CASE(failed_truncates_leave_bytes_the_next_writer_removes) {
  BoostExpect ex;
  TempDir tmp;
  const Shape& shape = kAcrossChunks;
  const auto committed = MakeVideos("c", shape.committed_videos, shape.frames);
  const auto batch = MakeVideos("batch", shape.batch_videos, shape.frames);
  int fired_runs = 0;
  for (int n = 1; n <= 100; ++n) {
    const std::string dir = tmp / ("n" + std::to_string(n));
    const std::string tag = "truncate EIO on call " + std::to_string(n);
    CreateDataset(dir, shape.videos_per_chunk);
    CommitVideos(dir, committed);
    const Snapshot before = TakeSnapshot(dir);

    FaultRule write_fault;  // the last video's write fails, so the batch rolls back
    write_fault.op = fault::Op::kWrite;
    write_fault.error = ENOSPC;
    write_fault.nth = shape.batch_videos;
    FaultRule truncate_fault;
    truncate_fault.op = fault::Op::kTruncate;
    truncate_fault.error = EIO;
    truncate_fault.nth = n;
    FaultPlan plan({write_fault, truncate_fault});
    std::optional<Caught> caught;
    {
      ScopedIoHook hook(&FaultPlan::Hook, &plan);
      caught = ExpectThrows(ex, tag, [&] {
        auto ds = OpenReadWrite(dir);
        auto writer = ds->NewWriter();
        AppendAll(*writer, batch);
        writer->Commit();
      });
    }
    if (caught)
      ExpectClearError(ex, *caught, ErrorCode::kResourceExhausted, NeedlesFor(plan.rule(0)), tag);
    const FaultRule& t = plan.rule(1);
    if (t.fired == 0) {
      ex.That(fired_runs == t.calls, tag + ": the rollback truncated " + std::to_string(t.calls) +
                                         " chunks but " + std::to_string(fired_runs) +
                                         " runs failed");
      ExpectUnchangedAndUsable(ex, dir, before, tag);
      break;
    }
    ++fired_runs;
    // Readers see nothing of the batch; check notes the leftover bytes.
    try {
      ex.That(TakeSnapshot(dir) == before, tag + ": the rolled back batch is visible");
      const CheckReport report = DeepCheck(dir);
      ex.That(report.healthy(), tag + ": check found problems:" + Problems(report));
      const std::string name = fs::path(t.path).filename().string();
      bool noted = false;
      for (const std::string& note : report.notes) noted = noted || note.find(name) == 0;
      ex.That(noted, tag + ": check does not note the bytes left in " + name);
      ex.That(SizeOf(t.path) > 0, tag + ": " + t.path + " is empty although its truncate failed");
    } catch (const std::exception& e) {
      ex.Fail(tag + ": reading after the failed rollback threw: " + e.what());
    }
    // A writer whose recovery cannot truncate refuses to start.
    const auto listing = Listing(dir);
    FaultRule recover_fault = truncate_fault;
    recover_fault.nth = 1;
    FaultPlan recover_plan({recover_fault});
    {
      ScopedIoHook hook(&FaultPlan::Hook, &recover_plan);
      auto refused = ExpectThrows(ex, tag + ", recovering writer", [&] {
        auto ds = OpenReadWrite(dir);
        ds->NewWriter();
      });
      if (refused) {
        ExpectClearError(ex, *refused, ErrorCode::kIoError, NeedlesFor(recover_plan.rule(0)),
                         tag + ", recovering writer");
      }
    }
    ex.That(Listing(dir) == listing,
            tag + ": the refused writer changed files:" + DescribeListing(listing) + " ->" +
                DescribeListing(Listing(dir)));
    // Without the fault the next writer truncates the leftovers and goes on.
    ExpectUnchangedAndUsable(ex, dir, before, tag);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  BOOST_CHECK_EQUAL(fired_runs, 2);  // the rolled back batch touched two chunks
}

// ---- 3. RLIMIT_FSIZE ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(file_size_limit_fails_with_efbig_naming_the_chunk) {
  BoostExpect ex;
  TempDir tmp;
  const std::string dir = tmp / "ds";
  CreateDataset(dir, 100);
  CommitVideos(dir, MakeVideos("base", 8, 60));
  const auto batch = MakeVideos("over", 3, 12);
  std::vector<uint64_t> bytes;
  for (const Video& v : batch) bytes.push_back(VideoBytes(v));

  // Where the limit falls, relative to the end of the chunk: inside the
  // first video, exactly at the second one's start, inside the last one.
  std::vector<std::pair<const char*, uint64_t>> limits = {
      {"inside the first video", 1},
      {"at the second video's start", bytes[0]},
      {"inside the last video", bytes[0] + bytes[1] + bytes[2] / 2},
  };
  if (LongMode()) {
    limits.push_back({"one byte into the second video", bytes[0] + 1});
    limits.push_back({"one byte before the end", bytes[0] + bytes[1] + bytes[2] - 1});
  }
  for (const auto& [where, delta] : limits) {
    const std::string tag = std::string("RLIMIT_FSIZE ") + where;
    uint64_t chunk_size = 0;
    std::string chunk_path;
    {
      auto ds = Dataset::Open(dir);
      const ChunkInfo last = ds->Chunks().back();
      chunk_size = last.committed_length;
      chunk_path = dir + "/" + last.file_name;
    }
    const uint64_t limit = chunk_size + delta;
    // The index file must stay below the limit, or its writes would fail first.
    const uint64_t index_size = SizeOf(dir + "/gulpdb.index/data.mdb");
    BOOST_REQUIRE_MESSAGE(index_size + 256 * 1024 < limit,
                          tag + ": the index (" + std::to_string(index_size) +
                              " bytes) is too close to the limit " + std::to_string(limit));
    size_t crossing = 0;  // the first video that ends past the limit
    for (uint64_t end = chunk_size + bytes[0]; end <= limit; end += bytes[++crossing]) {
    }
    const Snapshot before = TakeSnapshot(dir);
    const ChildOutcome out = RunChild([&](ChildExpect& cx) {
      struct rlimit rl;
      ::getrlimit(RLIMIT_FSIZE, &rl);
      rl.rlim_cur = limit;
      if (::setrlimit(RLIMIT_FSIZE, &rl) != 0)
        throw std::runtime_error("setrlimit: " + Errno(errno));
      ::signal(SIGXFSZ, SIG_IGN);
      auto ds = OpenReadWrite(dir);
      auto writer = ds->NewWriter();
      size_t appended = 0;
      auto caught = ExpectThrows(cx, tag, [&] {
        for (const Video& v : batch) {
          writer->Append(v.id, Views(v.frames), v.meta);
          ++appended;
        }
        writer->Commit();
      });
      if (!caught) return;
      ExpectClearError(
          cx, *caught, ErrorCode::kIoError,
          {"write " + chunk_path + " at offset " + std::to_string(limit), Errno(EFBIG)}, tag);
      cx.That(appended == crossing, tag + ": failed on video " + std::to_string(appended) +
                                        ", the limit falls in video " + std::to_string(crossing));
    });
    if (!ReportChild(out, tag, ex)) continue;
    ExpectUnchangedAndUsable(ex, dir, before, tag);
  }
}

// ---- 6. Short transfers, signals and read errors --------------------------------

BOOST_AUTO_TEST_CASE(short_reads_and_writes_transfer_exact_bytes) {
  BoostExpect ex;
  TempDir tmp;
  const std::string dir = tmp / "ds";
  CreateDataset(dir, 3);
  const int rounds = LongMode() ? 6 : 2;
  std::vector<Video> all;
  ShortTransfers short_writes{fault::Op::kWrite};
  uint64_t written = 0;
  for (int round = 0; round < rounds; ++round) {
    const auto videos = MakeVideos("s" + std::to_string(round) + "_", 4, 4);
    for (const Video& v : videos) written += VideoBytes(v);
    {
      ScopedIoHook hook(&ShortTransfers::Hook, &short_writes);
      CommitVideos(dir, videos);
    }
    all.insert(all.end(), videos.begin(), videos.end());
  }
  // At most 7 bytes per call: the hook really cut every write.
  BOOST_CHECK_GE(short_writes.calls.load(), written / 7);
  {
    auto ds = Dataset::Open(dir);
    ExpectVideos(ex, *ds, all, "written 1-7 bytes at a time");
  }
  ExpectChunksAtCommittedLength(ex, dir, "after short writes");
  ExpectHealthy(ex, dir, "after short writes");

  const Snapshot reference = TakeSnapshot(dir);
  OpenOptions verify;
  verify.verify_checksums = true;
  std::vector<DecodedFrames> decoded;
  {
    auto ds = Dataset::Open(dir);
    for (const Video& v : all) decoded.push_back(ds->ReadFrames(v.id));
  }
  ShortTransfers short_reads{fault::Op::kRead};
  {
    ScopedIoHook hook(&ShortTransfers::Hook, &short_reads);
    ex.That(TakeSnapshot(dir) == reference, "reading 1-7 bytes at a time gives other bytes");
    auto ds = Dataset::Open(dir, verify);
    ExpectVideos(ex, *ds, all, "read 1-7 bytes at a time, checksums verified");
    for (size_t i = 0; i < all.size(); ++i) {
      const DecodedFrames frames = ds->ReadFrames(all[i].id);
      bool same =
          frames.size() == decoded[i].size() && frames.byte_size() == decoded[i].byte_size();
      for (size_t f = 0; same && f < frames.size(); ++f) {
        same = frames.shape(f).bytes() == decoded[i].shape(f).bytes() &&
               std::memcmp(frames.data(f), decoded[i].data(f), frames.shape(f).bytes()) == 0;
      }
      ex.That(same, "'" + all[i].id + "' decodes to other pixels when read 1-7 bytes at a time");
      const StoredFrames odd = ds->ReadJpegs(all[i].id, Selection::Slice(1, std::nullopt, 2));
      bool odd_same = odd.size() == all[i].frames.size() / 2;
      for (size_t f = 0; odd_same && f < odd.size(); ++f)
        odd_same = odd[f] == all[i].frames[2 * f + 1];
      ex.That(odd_same, "'" + all[i].id + "' frames 1::2 differ when read 1-7 bytes at a time");
    }
    ExpectHealthy(ex, dir, "check --deep reading 1-7 bytes at a time");
  }
  uint64_t stored = 0;
  for (const Video& v : all) stored += VideoBytes(v);
  BOOST_CHECK_GE(short_reads.calls.load(), stored / 7);
}

// System calls interrupted by signals (SA_RESTART off) return EINTR or come
// back short; writes, syncs, commits and reads must all go on as if nothing
// happened.
BOOST_AUTO_TEST_CASE(signals_during_io_change_no_byte) {
  BoostExpect ex;
  TempDir tmp;
  const std::string dir = tmp / "ds";
  CreateDataset(dir, 5);
  std::vector<Video> all;
  Snapshot during;
  g_signals = 0;
  {
    SignalStorm storm(200);
    const int batches = LongMode() ? 80 : 20;
    for (int b = 0; b < batches; ++b) {
      const auto videos = MakeVideos("sig" + std::to_string(b) + "_", 3, 3);
      CommitVideos(dir, videos);
      all.insert(all.end(), videos.begin(), videos.end());
    }
    auto ds = Dataset::Open(dir);
    ExpectVideos(ex, *ds, all, "read during a signal storm");
    during = TakeSnapshot(dir);
    ExpectHealthy(ex, dir, "check --deep during a signal storm");
  }
  BOOST_TEST_MESSAGE(g_signals.load() << " signals delivered");
  BOOST_CHECK_GT(g_signals.load(), 20);
  BOOST_CHECK(TakeSnapshot(dir) == during);
  auto ds = Dataset::Open(dir);
  ExpectVideos(ex, *ds, all, "read after a signal storm");
}

BOOST_AUTO_TEST_CASE(read_errors_name_the_chunk_file_and_offset) {
  BoostExpect ex;
  TempDir tmp;
  const std::string dir = tmp / "ds";
  CreateDataset(dir, 3);
  const auto videos = MakeVideos("r", 6, 3);
  CommitVideos(dir, videos);
  const Snapshot before = TakeSnapshot(dir);
  const auto listing = Listing(dir);
  std::string bad_path;
  std::map<std::string, VideoInfo> infos;
  {
    auto ds = Dataset::Open(dir);
    bad_path = ChunkPath(dir, *ds, 1);
    for (const Video& v : videos) infos[v.id] = ds->Get(v.id);
  }
  const std::string bad_name = fs::path(bad_path).filename().string();

  // Every read of one chunk file fails.
  FaultRule eio;
  eio.op = fault::Op::kRead;
  eio.error = EIO;
  eio.sticky = true;
  eio.path_filter = bad_path;
  FaultPlan plan({eio});
  {
    ScopedIoHook hook(&FaultPlan::Hook, &plan);
    auto ds = Dataset::Open(dir);
    for (const Video& v : videos) {
      const VideoInfo& info = infos[v.id];
      if (info.chunk != 1) {
        ExpectVideos(ex, *ds, {v}, "a chunk without read errors");
        continue;
      }
      const std::string tag = "reading '" + v.id + "' from " + bad_name;
      const std::string offset0 = std::to_string(info.frames[0].offset);
      if (auto e = ExpectThrows(ex, tag, [&] { ds->ReadJpegs(v.id); })) {
        ExpectClearError(ex, *e, ErrorCode::kIoError,
                         {"read " + bad_path + " at offset " + offset0, Errno(EIO)}, tag);
      }
      const std::string offset2 = std::to_string(info.frames[2].offset);
      if (auto e = ExpectThrows(ex, tag + " frame 2",
                                [&] { ds->ReadJpegs(v.id, Selection::Indices({2})); })) {
        ExpectClearError(ex, *e, ErrorCode::kIoError,
                         {"read " + bad_path + " at offset " + offset2, Errno(EIO)},
                         tag + " frame 2");
      }
      if (auto e = ExpectThrows(ex, tag + " decoded", [&] { ds->ReadFrames(v.id); })) {
        ExpectClearError(ex, *e, ErrorCode::kIoError, {bad_path, Errno(EIO)}, tag + " decoded");
      }
    }
    // Check reports the failing reads as problems of that file only.
    try {
      const CheckReport report = DeepCheck(dir);
      ex.That(!report.healthy(),
              "check --deep is healthy although " + bad_name + " cannot be read");
      for (const CheckProblem& p : report.problems) {
        ex.That(p.where.find(bad_name) == 0 && p.what.find(Errno(EIO)) != std::string::npos,
                "check reports an unexpected problem: " + p.where + ": " + p.what);
      }
    } catch (const std::exception& e) {
      ex.Fail(std::string("check --deep threw instead of reporting: ") + e.what());
    }
  }
  ex.That(Listing(dir) == listing, "failed reads changed files");
  ex.That(TakeSnapshot(dir) == before, "failed reads changed the dataset");

  // A transient error: one read fails, the next attempt reads exact bytes.
  FaultRule once = eio;
  once.sticky = false;
  once.nth = 1;
  FaultPlan transient({once});
  {
    ScopedIoHook hook(&FaultPlan::Hook, &transient);
    auto ds = Dataset::Open(dir);
    int failed = 0;
    for (const Video& v : videos) {
      if (infos[v.id].chunk != 1) continue;
      try {
        ds->ReadJpegs(v.id);
      } catch (const IoError&) {
        ++failed;
      }
      ExpectVideos(ex, *ds, {v}, "after a transient read error");
    }
    BOOST_CHECK_EQUAL(failed, 1);
  }
  ExpectUnchangedAndUsable(ex, dir, before, "after read errors");
}

// ---- 7. A chunk file cut short --------------------------------------------------

// What the engine does: reads that reach past the cut throw CorruptionError
// naming the file and offset; everything before the cut reads as before;
// Check reports the chunk as truncated. A writer whose current chunk (the
// one it appends to) is cut refuses to start with CorruptionError and
// changes nothing; with only an older chunk cut, a writer appends as usual
// and never touches that chunk, so the damage neither spreads nor hides.
BOOST_AUTO_TEST_CASE(truncated_chunk_fails_reads_past_the_cut_only) {
  BoostExpect ex;
  TempDir tmp;
  const std::string dir = tmp / "ds";
  CreateDataset(dir, 4);
  const auto a = MakeVideos("a", 4, 3);
  const auto b = MakeVideos("b", 4, 3);
  const auto c = MakeVideos("c", 2, 3);
  CommitVideos(dir, a);
  CommitVideos(dir, b);
  CommitVideos(dir, c);
  std::string path1;
  VideoInfo b2, b3;
  {
    auto ds = Dataset::Open(dir);
    BOOST_REQUIRE_EQUAL(ds->Chunks().size(), 3u);
    b2 = ds->Get("b2");
    b3 = ds->Get("b3");
    BOOST_REQUIRE_EQUAL(b2.chunk, 1u);
    path1 = ChunkPath(dir, *ds, 1);
  }
  const std::string name1 = fs::path(path1).filename().string();
  // Cut in the middle of b2's second frame.
  const uint64_t cut = b2.frames[1].offset + b2.frames[1].length / 2;
  BOOST_REQUIRE_EQUAL(::truncate(path1.c_str(), static_cast<off_t>(cut)), 0);

  std::vector<Video> intact = a;
  intact.insert(intact.end(), b.begin(), b.begin() + 2);
  intact.insert(intact.end(), c.begin(), c.end());
  auto expect_damage = [&](const std::string& when) {
    auto ds = Dataset::Open(dir);
    ExpectVideos(ex, *ds, intact, when + ", videos before the cut");
    for (const VideoInfo* info : {&b2, &b3}) {
      const std::string tag = when + ", reading '" + info->id + "'";
      if (auto e = ExpectThrows(ex, tag, [&] { ds->ReadJpegs(info->id); })) {
        ExpectClearError(ex, *e, ErrorCode::kCorruption,
                         {path1, "at offset " + std::to_string(info->frames[0].offset),
                          "ends at " + std::to_string(cut)},
                         tag);
      }
      if (auto e = ExpectThrows(ex, tag + " decoded", [&] { ds->ReadFrames(info->id); })) {
        ExpectClearError(ex, *e, ErrorCode::kCorruption, {path1}, tag + " decoded");
      }
    }
    // b2's first frame lies before the cut and still reads exactly.
    const StoredFrames first = ds->ReadJpegs("b2", Selection::Indices({0}));
    ex.That(first.size() == 1 && first[0] == b[2].frames[0], when + ": b2 frame 0 changed");
    ex.That(SizeOf(path1) == cut, when + ": " + name1 + " changed size");
  };
  auto problems = [&](const std::string& when) {
    std::set<std::string> out;
    for (bool deep : {false, true}) {
      CheckOptions options;
      options.deep = deep;
      const CheckReport report = Check(dir, options);
      bool reported = false;
      for (const CheckProblem& p : report.problems) {
        reported = reported || (p.where == name1 && p.what.find("truncated") != std::string::npos &&
                                p.what.find(std::to_string(cut)) != std::string::npos);
        ex.That(p.where.find(name1) == 0,
                when + ": check reports a problem elsewhere: " + p.where + ": " + p.what);
        if (deep) out.insert(p.where + ": " + p.what);
      }
      ex.That(reported, when + ": check" + (deep ? " --deep" : "") +
                            " does not report the cut in " + name1 + ":" + Problems(report));
    }
    return out;
  };
  expect_damage("older chunk cut");
  const std::set<std::string> found = problems("older chunk cut");

  // A writer appends to the current chunk; the damage stays as it was.
  const auto d = MakeVideos("d", 3, 3);
  try {
    CommitVideos(dir, d);
  } catch (const std::exception& e) {
    ex.Fail(std::string("a writer with an older chunk cut failed: ") + e.what());
  }
  expect_damage("after a writer");
  {
    auto ds = Dataset::Open(dir);
    ExpectVideos(ex, *ds, d, "the writer's batch");
  }
  ex.That(problems("after a writer") == found, "the writer changed what check reports");

  // Now cut the current chunk in the middle of its last frame.
  std::string current;
  uint64_t committed = 0, current_cut = 0;
  {
    auto ds = Dataset::Open(dir);
    const ChunkInfo last = ds->Chunks().back();
    current = dir + "/" + last.file_name;
    committed = last.committed_length;
    const VideoInfo d2 = ds->Get("d2");
    BOOST_REQUIRE_EQUAL(d2.chunk, last.number);
    current_cut = d2.frames.back().offset + d2.frames.back().length / 2;
  }
  BOOST_REQUIRE_EQUAL(::truncate(current.c_str(), static_cast<off_t>(current_cut)), 0);
  const auto listing = Listing(dir);
  const Snapshot ids_before = [&] {
    Snapshot s;
    auto ds = Dataset::Open(dir);
    for (const std::string& id : ds->Ids()) s.videos[id] = 0;
    return s;
  }();
  for (const char* how : {"NewWriter", "Remove"}) {
    const std::string tag = std::string(how) + " with the current chunk cut";
    if (auto e = ExpectThrows(ex, tag, [&] {
          auto ds = OpenReadWrite(dir);
          if (std::string(how) == "NewWriter") {
            ds->NewWriter();
          } else {
            ds->Remove({"a0"});
          }
        })) {
      ExpectClearError(ex, *e, ErrorCode::kCorruption,
                       {current, std::to_string(current_cut), std::to_string(committed)}, tag);
    }
    ex.That(Listing(dir) == listing, tag + ": files changed:" + DescribeListing(listing) + " ->" +
                                         DescribeListing(Listing(dir)));
  }
  {
    auto ds = Dataset::Open(dir);
    Snapshot ids_after;
    for (const std::string& id : ds->Ids()) ids_after.videos[id] = 0;
    ex.That(ids_after == ids_before, "the refused writers changed the ids");
    ExpectVideos(ex, *ds, intact, "with the current chunk cut");
    ExpectVideos(ex, *ds, {d[0], d[1]}, "with the current chunk cut");
  }
}

BOOST_AUTO_TEST_SUITE_END()  // any_user

// ---- Cases that need root -------------------------------------------------------

BOOST_AUTO_TEST_SUITE(root)

// ---- 1. A real full disk --------------------------------------------------------

BOOST_AUTO_TEST_CASE(full_tmpfs_fails_chunk_writes_and_index_commits,
                     *boost::unit_test::precondition(MountsPermitted)) {
  BoostExpect ex;
  TempDir tmp;
  const std::string mnt = tmp / "mnt";
  BOOST_REQUIRE(fs::create_directory(mnt));
  const ChildOutcome out = RunChild([&](ChildExpect& cx) {
    EnterPrivateMountNamespace(cx);
    MountTmpfs(cx, mnt, "size=4m,mode=0755");
    FillUntilFull(cx, mnt);
    FillLevels(cx, mnt);
  });
  if (!ReportChild(out, "full tmpfs", ex)) return;
  BOOST_CHECK_MESSAGE(ex.facts["full: chunk write"] >= 1, "no full disk hit a chunk write");
  BOOST_CHECK_MESSAGE(ex.facts["full: index commit"] >= 1, "no full disk hit the index commit");
  BOOST_TEST_MESSAGE("full disk: " << ex.facts["full: chunk write"] << " chunk writes, "
                                   << ex.facts["full: index commit"] << " index commits");
}

// ---- 5. A read-only file system -------------------------------------------------

BOOST_AUTO_TEST_CASE(read_only_bind_mount_serves_readers,
                     *boost::unit_test::precondition(MountsPermitted)) {
  BoostExpect ex;
  TempDir tmp;
  const std::string src = tmp / "ds";
  const std::string ro = tmp / "ro";
  BOOST_REQUIRE(fs::create_directory(ro));
  CreateDataset(src, 3);
  const auto first = MakeVideos("ro", 5, 3);
  const auto second = MakeVideos("rp", 3, 2);
  CommitVideos(src, first);
  CommitVideos(src, second);
  std::vector<Video> all = first;
  all.insert(all.end(), second.begin(), second.end());
  const Snapshot before = TakeSnapshot(src);
  const auto listing = Listing(src);

  const ChildOutcome out = RunChild([&](ChildExpect& cx) {
    EnterPrivateMountNamespace(cx);
    if (::mount(src.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, ro.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
      const int err = errno;
      if (err == EPERM || err == EACCES) cx.Skip("read-only bind mount: " + Errno(err));
      throw std::runtime_error("read-only bind mount of " + src + ": " + Errno(err));
    }
    const std::string probe = ro + "/probe";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    const int probe_errno = errno;
    if (fd >= 0) ::close(fd);
    cx.That(fd < 0 && probe_errno == EROFS, "the bind mount is writable");

    // A writer first: this process must not have the index open read-only.
    if (auto e = ExpectThrows(cx, "opening read-write", [&] { OpenReadWrite(ro); })) {
      ExpectClearError(cx, *e, ErrorCode::kIoError, {ro + "/gulpdb.index", Errno(EROFS)},
                       "opening read-write");
    }
    if (auto e = ExpectThrows(cx, "creating a dataset", [&] { CreateDataset(ro + "/new", 4); })) {
      ExpectClearError(cx, *e, ErrorCode::kIoError, {ro + "/new", Errno(EROFS)},
                       "creating a dataset");
    }
    {
      auto ds = Dataset::Open(ro);
      ExpectVideos(cx, *ds, all, "read-only mount");
      for (const Video& v : all) {
        const DecodedFrames frames = ds->ReadFrames(v.id);
        cx.That(frames.size() == v.frames.size(), "'" + v.id + "' decodes to another frame count");
      }
      if (auto e = ExpectThrows(cx, "NewWriter", [&] { ds->NewWriter(); })) {
        ExpectClearError(cx, *e, ErrorCode::kInvalidArgument, {ro, "read-only"}, "NewWriter");
      }
    }
    OpenOptions verify;
    verify.verify_checksums = true;
    {
      auto ds = Dataset::Open(ro, verify);
      ExpectVideos(cx, *ds, all, "read-only mount, checksums verified");
    }
    cx.That(TakeSnapshot(ro) == before, "the read-only mount shows another dataset");
    ExpectHealthy(cx, ro, "read-only mount");
    cx.That(Listing(ro) == listing, "files changed on the read-only mount");
  });
  if (!ReportChild(out, "read-only bind mount", ex)) return;
  BOOST_CHECK_MESSAGE(Listing(src) == listing, "the source changed:" + DescribeListing(listing) +
                                                   " ->" + DescribeListing(Listing(src)));
  ExpectUnchangedAndUsable(ex, src, before, "the source after the read-only mount");
}

// A copy (new modification times, new inodes) of an imported GulpIO
// directory, on a read-only file system: it opens (its .gmeta files are read
// once and match the index), and what was verified goes to the user cache,
// so that the next open reads no .gmeta; nothing is written to the copy.
BOOST_AUTO_TEST_CASE(read_only_copy_of_an_imported_directory_verifies_once_into_the_user_cache,
                     *boost::unit_test::precondition(MountsPermitted)) {
  BoostExpect ex;
  TempDir tmp;
  const std::string src = tmp / "gio";
  CreateDataset(src, 3);
  const auto videos = MakeVideos("g", 7, 2);
  CommitVideos(src, videos);
  ExportGmeta(*Dataset::Open(src));
  fs::remove_all(src + "/gulpdb.index");
  ImportGulpio(src);  // now an imported GulpIO directory, as GulpIO2 wrote it
  const std::string copy = tmp / "copy";
  fs::copy(src, copy, fs::copy_options::recursive);  // as cp -r: new times
  const std::string ro = tmp / "ro";
  const std::string cache = tmp / "cache";
  BOOST_REQUIRE(fs::create_directory(ro));
  const auto listing = Listing(copy);

  const ChildOutcome out = RunChild([&](ChildExpect& cx) {
    EnterPrivateMountNamespace(cx);
    if (::mount(copy.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, ro.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
      const int err = errno;
      if (err == EPERM || err == EACCES) cx.Skip("read-only bind mount: " + Errno(err));
      throw std::runtime_error("read-only bind mount of " + copy + ": " + Errno(err));
    }
    ::setenv("GULPDB_CACHE", cache.c_str(), 1);
    {
      auto ds = Dataset::Open(ro);  // reads the .gmeta files once
      ExpectVideos(cx, *ds, videos, "read-only copy");
    }
    auto ds = Dataset::Open(ro);
    const engine::SourceReport sources = engine::CheckSources(*ds);
    cx.That(sources.changes.empty(), "the copy reads as changed");
    cx.That(sources.hashed_bytes == 0,
            "the second open read .gmeta bytes again: " + std::to_string(sources.hashed_bytes));
    size_t records = 0;
    for (const auto& entry : fs::directory_iterator(cache + "/verified")) {
      if (entry.is_regular_file()) ++records;
    }
    cx.That(records == 1,
            "expected one record in the user cache, found " + std::to_string(records));
    cx.That(Listing(ro) == listing, "files changed on the read-only copy");
  });
  if (!ReportChild(out, "read-only copy", ex)) return;
  BOOST_CHECK_MESSAGE(Listing(copy) == listing, "the copy changed:" + DescribeListing(listing) +
                                                    " ->" + DescribeListing(Listing(copy)));
}

// ---- 4. A directory the process may not write -----------------------------------

BOOST_AUTO_TEST_CASE(unprivileged_user_reads_but_cannot_write,
                     *boost::unit_test::precondition(IsRoot)) {
  BoostExpect ex;
  TempDir tmp;
  BOOST_REQUIRE_EQUAL(::chmod(tmp.path().c_str(), 0755), 0);
  for (fs::path p = fs::path(tmp.path()).parent_path(); !p.empty() && p != p.root_path();
       p = p.parent_path()) {
    struct stat st;
    BOOST_REQUIRE_MESSAGE(::stat(p.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) != 0,
                          p.string() + " cannot be searched by other users; set TMPDIR elsewhere");
  }
  const std::string dir = tmp / "ds";
  CreateDataset(dir, 3);
  const auto videos = MakeVideos("u", 7, 3);
  CommitVideos(dir, videos);
  const Snapshot before = TakeSnapshot(dir);
  const auto listing = Listing(dir);
  const std::string index = dir + "/gulpdb.index";

  auto reader_checks = [&](ChildExpect& cx, const std::string& tag) {
    auto ds = Dataset::Open(dir);
    ExpectVideos(cx, *ds, videos, tag);
    OpenOptions verify;
    verify.verify_checksums = true;
    auto verified = Dataset::Open(dir, verify);
    ExpectVideos(cx, *verified, videos, tag + ", checksums verified");
    cx.That(TakeSnapshot(dir) == before, tag + ": another dataset is visible");
    ExpectHealthy(cx, dir, tag);
  };

  // Default modes: nothing of the dataset is writable for uid 65534.
  const ChildOutcome out = RunChild([&](ChildExpect& cx) {
    DropToNobody();
    const std::string probe = dir + "/probe";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    const int probe_errno = errno;
    if (fd >= 0) ::close(fd);
    cx.That(fd < 0 && probe_errno == EACCES, "uid 65534 may write the dataset directory");

    if (auto e = ExpectThrows(cx, "opening read-write", [&] { OpenReadWrite(dir); })) {
      ExpectClearError(cx, *e, ErrorCode::kIoError, {index, Errno(EACCES)}, "opening read-write");
    }
    reader_checks(cx, "read by uid 65534");
    auto ds = Dataset::Open(dir);
    if (auto e = ExpectThrows(cx, "NewWriter", [&] { ds->NewWriter(); })) {
      ExpectClearError(cx, *e, ErrorCode::kInvalidArgument, {dir, "read-only"}, "NewWriter");
    }
    if (auto e = ExpectThrows(cx, "Remove", [&] { ds->Remove({videos[0].id}); })) {
      ExpectClearError(cx, *e, ErrorCode::kInvalidArgument, {dir, "read-only"}, "Remove");
    }
  });
  if (!ReportChild(out, "uid 65534", ex)) return;
  BOOST_CHECK_MESSAGE(Listing(dir) == listing, "files changed:" + DescribeListing(listing) + " ->" +
                                                   DescribeListing(Listing(dir)));

  // The index (and the writer lock) writable for it, the chunks not: the
  // index opens read-write, but a writer cannot open its chunk.
  auto chown_index = [&](uid_t uid, gid_t gid) {
    BOOST_REQUIRE_EQUAL(::chown(index.c_str(), uid, gid), 0);
    for (const auto& entry : fs::directory_iterator(index)) {
      BOOST_REQUIRE_EQUAL(::chown(entry.path().c_str(), uid, gid), 0);
    }
  };
  chown_index(kNobody, kNobody);
  std::string current;
  {
    auto ds = Dataset::Open(dir);
    current = dir + "/" + ds->Chunks().back().file_name;
  }
  const ChildOutcome out2 = RunChild([&](ChildExpect& cx) {
    DropToNobody();
    auto ds = OpenReadWrite(dir);
    if (auto e = ExpectThrows(cx, "NewWriter", [&] { ds->NewWriter(); })) {
      ExpectClearError(cx, *e, ErrorCode::kIoError, {current, Errno(EACCES)}, "NewWriter");
    }
    if (auto e = ExpectThrows(cx, "Remove", [&] { ds->Remove({videos[0].id}); })) {
      ExpectClearError(cx, *e, ErrorCode::kIoError, {current, Errno(EACCES)}, "Remove");
    }
    ds.reset();
    reader_checks(cx, "read by uid 65534 with a writable index");
  });
  chown_index(0, 0);
  if (!ReportChild(out2, "uid 65534, writable index", ex)) return;
  BOOST_CHECK_MESSAGE(Listing(dir) == listing, "files changed:" + DescribeListing(listing) + " ->" +
                                                   DescribeListing(Listing(dir)));
  ExpectUnchangedAndUsable(ex, dir, before, "after uid 65534");
}

BOOST_AUTO_TEST_SUITE_END()  // root
BOOST_AUTO_TEST_SUITE_END()  // fault_test

}  // namespace gulpdb::reliability

// A run whose cases all passed but some could not run here exits with 77,
// which CTest reports as skipped.
int main(int argc, char* argv[]) {
  const int rc = boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
  if (rc == 0 && !gulpdb::reliability::Skipped().empty()) {
    for (const std::string& why : gulpdb::reliability::Skipped()) {
      std::fprintf(stderr, "skipped: %s\n", why.c_str());
    }
    return gulpdb::reliability::kSkipExitCode;
  }
  return rc;
}
