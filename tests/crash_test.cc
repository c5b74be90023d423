// Crash safety and cross-process behaviour with real processes: a child
// writer is SIGKILLed at chosen points; readers in other processes watch
// commits happen.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <vector>

#include "engine/core/fault_injection.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "support/run_and_kill.h"
#include "support/test_util.h"

namespace gulpdb {
namespace {

using test::FakeJpeg;
using test::TempDir;

constexpr int kBatch = 5;

std::string VideoId(int batch, int i) {
  return "b" + std::to_string(batch) + "v" + std::to_string(i);
}
// Deterministic frames for a video, so any process can check what it reads.
std::vector<std::string> VideoFrames(int batch, int i) {
  std::vector<std::string> frames;
  for (int f = 0; f < 3; ++f) {
    frames.push_back(FakeJpeg(static_cast<size_t>(64 + batch * 7 + i * 3 + f),
                              static_cast<uint32_t>(batch * 1000 + i * 10 + f)));
  }
  return frames;
}

void AppendBatch(Writer& w, int batch) {
  for (int i = 0; i < kBatch; ++i) {
    const auto frames = VideoFrames(batch, i);
    w.Append(VideoId(batch, i), test::Views(frames));
  }
}

bool VideoIntact(const Dataset& ds, int batch, int i) {
  const auto want = VideoFrames(batch, i);
  const StoredFrames got = ds.ReadJpegs(VideoId(batch, i));
  if (got.size() != want.size()) return false;
  for (size_t f = 0; f < want.size(); ++f) {
    if (got[f] != want[f]) return false;
  }
  return true;
}

using test::RunAndKill;

std::unique_ptr<Dataset> OpenRw(const std::string& dir) {
  OpenOptions o;
  o.read_only = false;
  return Dataset::Open(dir, o);
}

BOOST_AUTO_TEST_SUITE(crash_test)

BOOST_AUTO_TEST_CASE(kill_before_commit_loses_only_the_open_batch) {
  TempDir tmp;
  Dataset::Create(tmp.path()).reset();
  RunAndKill([&](const std::function<void()>& crash_here) {
    auto ds = OpenRw(tmp.path());
    auto w = ds->NewWriter();
    AppendBatch(*w, 0);
    w->Commit();
    AppendBatch(*w, 1);  // written to the chunk, never committed
    crash_here();
  });
  auto ds = OpenRw(tmp.path());
  const ChunkInfo chunk = ds->Chunks().at(0);
  // The dead writer's bytes are still in the file but invisible.
  BOOST_TEST(test::FileSizeOf(tmp / chunk.file_name) > chunk.committed_length);
  BOOST_TEST(ds->Count() == static_cast<uint64_t>(kBatch));
  for (int i = 0; i < kBatch; ++i) {
    BOOST_TEST(VideoIntact(*ds, 0, i));
    BOOST_TEST(!ds->Contains(VideoId(1, i)));
  }
  // The next writer truncates them before writing.
  {
    auto w = ds->NewWriter();
    BOOST_TEST(test::FileSizeOf(tmp / chunk.file_name) == chunk.committed_length);
    AppendBatch(*w, 2);
    w->Commit();
  }
  for (int i = 0; i < kBatch; ++i) BOOST_TEST(VideoIntact(*ds, 2, i));
}

BOOST_AUTO_TEST_CASE(kill_after_rollover_truncates_every_dirty_chunk) {
  TempDir tmp;
  CreateOptions small;
  small.videos_per_chunk = 3;
  Dataset::Create(tmp.path(), small).reset();
  RunAndKill([&](const std::function<void()>& crash_here) {
    auto ds = OpenRw(tmp.path());
    auto w = ds->NewWriter();
    AppendBatch(*w, 0);  // chunks 0 and 1
    w->Commit();
    AppendBatch(*w, 1);  // fills chunk 1, creates chunks 2 and 3, uncommitted
    crash_here();
  });
  auto ds = OpenRw(tmp.path());
  int with_garbage = 0;
  for (const ChunkInfo& c : ds->Chunks()) {
    if (test::FileSizeOf(tmp / c.file_name) > c.committed_length) ++with_garbage;
  }
  BOOST_TEST(with_garbage >= 2);  // the old last chunk and the ones created after it
  ds->NewWriter().reset();        // recovery
  for (const ChunkInfo& c : ds->Chunks()) {
    BOOST_TEST(test::FileSizeOf(tmp / c.file_name) == c.committed_length);
  }
  BOOST_TEST(ds->Count() == static_cast<uint64_t>(kBatch));
  for (int i = 0; i < kBatch; ++i) BOOST_TEST(VideoIntact(*ds, 0, i));
}

// A writer killed after creating a chunk file but before registering it
// leaves an empty data_<N>.gulp the index does not know. The next writer
// removes it (an exported directory would otherwise hold a data file without
// its .gmeta, which GulpIO refuses) and takes that number itself.
BOOST_AUTO_TEST_CASE(kill_between_chunk_creation_and_registration_leaves_no_file) {
  TempDir tmp;
  CreateOptions small;
  small.videos_per_chunk = 5;
  Dataset::Create(tmp.path(), small).reset();
  static const std::function<void()>* crash = nullptr;
  RunAndKill([&](const std::function<void()>& crash_here) {
    auto ds = OpenRw(tmp.path());
    auto w = ds->NewWriter();
    AppendBatch(*w, 0);  // chunk 0, full
    w->Commit();
    crash = &crash_here;
    engine::fault::SetPointHook(
        [](engine::fault::Point point, void*) {
          if (point == engine::fault::Point::kChunkCreated) (*crash)();
        },
        nullptr);
    AppendBatch(*w, 1);  // creates data_1.gulp, then the kill
  });
  BOOST_TEST(test::FileSizeOf(tmp / "data_1.gulp") == 0u);
  auto ds = OpenRw(tmp.path());
  BOOST_TEST(ds->Chunks().size() == 1u);
  {
    auto w = ds->NewWriter();
    BOOST_TEST(!std::filesystem::exists(tmp / "data_1.gulp"));
    AppendBatch(*w, 2);
    w->Commit();
  }
  BOOST_TEST(ds->Chunks().size() == 2u);
  BOOST_TEST(ds->Chunks().back().file_name == "data_1.gulp");
  for (int i = 0; i < kBatch; ++i) BOOST_TEST(VideoIntact(*ds, 2, i));
}

// A create killed before its index is in place leaves no dataset (and no
// half-made index that every open would refuse): the directory can be
// created again, and what the killed create built is cleaned up.
BOOST_AUTO_TEST_CASE(kill_while_creating_leaves_no_dataset) {
  TempDir tmp;
  const std::string dir = tmp / "ds";
  RunAndKill([&](const std::function<void()>& crash_here) {
    static const std::function<void()>* crash = nullptr;
    crash = &crash_here;
    engine::fault::SetPointHook(
        [](engine::fault::Point point, void*) {
          if (point == engine::fault::Point::kIndexBuilt) (*crash)();
        },
        nullptr);
    Dataset::Create(dir);
  });
  BOOST_TEST(!Dataset::Exists(dir));
  BOOST_CHECK_THROW(Dataset::Open(dir), NotFoundError);
  auto ds = Dataset::Create(dir);
  {
    auto w = ds->NewWriter();
    AppendBatch(*w, 0);
    w->Commit();
  }
  for (int i = 0; i < kBatch; ++i) BOOST_TEST(VideoIntact(*ds, 0, i));
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    left.push_back(entry.path().filename().string());
  }
  BOOST_TEST(std::count_if(left.begin(), left.end(), [](const std::string& name) {
               return name.find(".building.") != std::string::npos;
             }) == 0);
}

BOOST_AUTO_TEST_CASE(kill_right_after_commit_keeps_the_batch) {
  TempDir tmp;
  Dataset::Create(tmp.path()).reset();
  RunAndKill([&](const std::function<void()>& crash_here) {
    auto ds = OpenRw(tmp.path());
    auto w = ds->NewWriter();
    AppendBatch(*w, 0);
    w->Commit();
    AppendBatch(*w, 1);
    w->Commit();
    crash_here();
  });
  auto ds = OpenRw(tmp.path());
  BOOST_TEST(ds->Count() == static_cast<uint64_t>(2 * kBatch));
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < kBatch; ++i) BOOST_TEST(VideoIntact(*ds, b, i));
  }
  const ChunkInfo chunk = ds->Chunks().at(0);
  BOOST_TEST(test::FileSizeOf(tmp / chunk.file_name) == chunk.committed_length);
  // The lock died with the writer: a new writer gets it at once.
  auto w = ds->NewWriter();
  AppendBatch(*w, 2);
  w->Commit();
  BOOST_TEST(ds->Count() == static_cast<uint64_t>(3 * kBatch));
}

BOOST_AUTO_TEST_CASE(writer_in_another_process_excludes_this_one) {
  TempDir tmp;
  Dataset::Create(tmp.path()).reset();
  int ready[2], done[2];
  BOOST_REQUIRE_EQUAL(::pipe(ready), 0);
  BOOST_REQUIRE_EQUAL(::pipe(done), 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      auto ds = OpenRw(tmp.path());
      auto w = ds->NewWriter();
      char c = 'r';
      if (::write(ready[1], &c, 1) != 1) ::_exit(4);
      if (::read(done[0], &c, 1) != 1) ::_exit(5);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  char c = 0;
  BOOST_REQUIRE_EQUAL(::read(ready[0], &c, 1), 1);
  auto ds = OpenRw(tmp.path());
  BOOST_CHECK_THROW(ds->NewWriter(), BusyError);
  BOOST_REQUIRE_EQUAL(::write(done[1], &c, 1), 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  BOOST_CHECK_NO_THROW(ds->NewWriter());
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
}

// Reader processes poll while this process commits batches: every snapshot
// they see holds whole batches with intact bytes.
BOOST_AUTO_TEST_CASE(readers_in_other_processes_see_whole_batches) {
  TempDir tmp;
  Dataset::Create(tmp.path()).reset();
  constexpr int kBatches = 25;
  std::vector<pid_t> readers;
  for (int r = 0; r < 2; ++r) {
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 0;
      try {
        auto ds = Dataset::Open(tmp.path());
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        for (;;) {
          const std::vector<std::string> ids = ds->Ids();
          if (ids.size() % kBatch != 0) {
            code = 10;
            break;
          }
          const int batches = static_cast<int>(ids.size()) / kBatch;
          for (int b = 0; b < batches && code == 0; ++b) {
            for (int i = 0; i < kBatch; ++i) {
              if (!VideoIntact(*ds, b, i)) code = 11;
            }
          }
          if (code != 0 || batches == kBatches) break;
          if (std::chrono::steady_clock::now() > deadline) {
            code = 12;
            break;
          }
        }
      } catch (...) {
        code = 13;
      }
      ::_exit(code);
    }
    readers.push_back(pid);
  }
  {
    auto ds = OpenRw(tmp.path());
    auto w = ds->NewWriter();
    for (int b = 0; b < kBatches; ++b) {
      AppendBatch(*w, b);
      w->Commit();
    }
  }
  for (pid_t pid : readers) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 0);
  }
}

// The index journal (engine/core/journal.h): a writer killed with records
// past its checkpoint. Opened "after a reboot" (another boot id) the open
// writes the checkpoint's meta pages back, which takes the index back to
// before every journaled commit, and must bring each back by replay; opened
// in the same boot it must see them as they are.
void KillWithJournaledCommits(const TempDir& tmp) {
  Dataset::Create(tmp.path()).reset();
  RunAndKill([&](const std::function<void()>& crash_here) {
    auto ds = OpenRw(tmp.path());
    auto w = ds->NewWriter();
    for (int b = 0; b < 4; ++b) {
      AppendBatch(*w, b);
      w->Commit();
    }
    crash_here();
  });
  BOOST_REQUIRE(std::filesystem::exists(tmp / "gulpdb.index/journal"));
}

void CheckFourBatches(const Dataset& ds) {
  BOOST_TEST(ds.Count() == uint64_t{4} * kBatch);
  for (int b = 0; b < 4; ++b) {
    for (int i = 0; i < kBatch; ++i) BOOST_TEST(VideoIntact(ds, b, i), VideoId(b, i));
  }
}

BOOST_AUTO_TEST_CASE(journaled_commits_are_replayed_by_the_first_open_after_a_reboot) {
  TempDir tmp;
  KillWithJournaledCommits(tmp);
  ::setenv("GULPDB_TEST_BOOT_ID", "a-later-boot", 1);
  {
    auto ds = Dataset::Open(tmp.path());  // read-only: it recovers all the same
    CheckFourBatches(*ds);
  }
  {
    auto ds = OpenRw(tmp.path());  // recovered once: the journal is settled
    ds->NewWriter().reset();
    CheckFourBatches(*ds);
    const CheckReport report = Check(tmp.path());  // (fake frames: no deep decode)
    BOOST_TEST(
        report.healthy(),
        (report.problems.empty() ? "" : report.problems[0].where + ": " + report.problems[0].what));
  }
  ::unsetenv("GULPDB_TEST_BOOT_ID");
}

BOOST_AUTO_TEST_CASE(journaled_commits_survive_a_kill_in_the_same_boot) {
  TempDir tmp;
  KillWithJournaledCommits(tmp);
  auto ds = OpenRw(tmp.path());
  CheckFourBatches(*ds);
  auto w = ds->NewWriter();  // settles the journal
  AppendBatch(*w, 4);
  w->Commit();
  w.reset();
  BOOST_TEST(ds->Count() == uint64_t{5} * kBatch);
}

// A journal that fills is checkpointed and doubled (Journal::Grow); the
// commits journaled into its new part after that checkpoint are replayed
// after a power cut like any others.
BOOST_AUTO_TEST_CASE(a_full_journal_grows_and_what_it_holds_replays) {
  TempDir tmp;
  constexpr uint64_t kSmallJournal = 128 << 10;  // 64 KiB of records
  constexpr int kBatches = 60;                   // ~3.5 KB each
  CreateOptions create;
  create.videos_per_chunk = 1000;
  Dataset::Create(tmp.path(), create).reset();
  ::setenv("GULPDB_TEST_JOURNAL_BYTES", std::to_string(kSmallJournal).c_str(), 1);
  RunAndKill([&](const std::function<void()>& crash_here) {
    auto ds = OpenRw(tmp.path());
    auto w = ds->NewWriter();
    for (int b = 0; b < kBatches; ++b) {
      AppendBatch(*w, b);
      w->Commit();
    }
    crash_here();
  });
  ::unsetenv("GULPDB_TEST_JOURNAL_BYTES");
  BOOST_TEST(std::filesystem::file_size(tmp / "gulpdb.index/journal") >= 2 * kSmallJournal);
  ::setenv("GULPDB_TEST_BOOT_ID", "a-later-boot", 1);
  {
    auto ds = Dataset::Open(tmp.path());
    BOOST_TEST(ds->Count() == uint64_t{kBatches} * kBatch);
    for (int b = 0; b < kBatches; ++b) {
      for (int i = 0; i < kBatch; ++i) BOOST_TEST(VideoIntact(*ds, b, i), VideoId(b, i));
    }
  }
  ::unsetenv("GULPDB_TEST_BOOT_ID");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
