// What a distributed ingest needs from the ingest library: the shuffled order
// computed apart from Ingest, the label map file written apart from it, a wait
// for another writer of the same shard, and runs inside a host process that
// owns its signals and stops an ingest by throwing from a callback.
#include <signal.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "support/test_util.h"

namespace gulpdb::ingest {
namespace {

using test::TempDir;

IngestOptions FixtureFrames(const std::string& dir) {
  IngestOptions o;
  o.dir = dir;
  o.frames_dir = test::FixturesDir() + "/frames_src";
  o.labels = o.frames_dir + "/labels.csv";
  o.keep_jpeg = true;
  o.num_workers = 2;
  o.batch = 2;
  o.on_problem = [](const SourceProblem& p) {
    BOOST_ERROR("unexpected problem with '" << p.id << "': " << p.message);
  };
  o.on_note = [](const std::string&) {};
  return o;
}

extern "C" void IgnoreSignal(int) {}

// The handler currently installed for `sig`.
void (*HandlerOf(int sig))(int) {
  struct sigaction now;
  std::memset(&now, 0, sizeof(now));
  ::sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

BOOST_AUTO_TEST_SUITE(ingest_plan_test)

BOOST_AUTO_TEST_CASE(shuffled_order_is_the_order_a_shuffled_ingest_appends_in) {
  TempDir tmp;
  IngestOptions o = FixtureFrames(tmp / "ds");
  const std::vector<SourceSpec> listed = ListSources(o);
  BOOST_REQUIRE_EQUAL(listed.size(), 22u);
  o.shuffle = true;
  o.seed = 20261122;
  Ingest(o);

  const std::vector<size_t> order = ShuffledOrder(listed.size(), *o.seed);
  std::vector<std::string> expected;
  for (size_t i : order) expected.push_back(listed[i].id);
  const std::vector<std::string> ids = Dataset::Open(o.dir)->Ids();
  BOOST_TEST(ids == expected, boost::test_tools::per_element());

  // A permutation, not the identity, and fixed by the seed.
  std::vector<size_t> sorted = order, identity(order.size());
  std::sort(sorted.begin(), sorted.end());
  std::iota(identity.begin(), identity.end(), 0);
  BOOST_TEST(sorted == identity, boost::test_tools::per_element());
  BOOST_TEST(order != identity);
  BOOST_TEST(ShuffledOrder(22, *o.seed) == order);
  BOOST_TEST(ShuffledOrder(22, *o.seed + 1) != order);
  BOOST_TEST(ShuffledOrder(0, 1).empty());
}

BOOST_AUTO_TEST_CASE(plan_sources_drops_ids_listed_twice_and_unstorable_sources_as_ingest_does) {
  const std::vector<std::string_view> ids = {"a", "b", "a", "c", "b"};
  std::vector<std::optional<SourceProblem>> problems(ids.size());
  problems[3] = SourceProblem{"c", "/x/c", "the id (/x/c) is not valid UTF-8", true};
  // kSkip keeps the first listing, kReplace the last.
  SourcePlan skip = PlanSources("out", OnDuplicate::kSkip, false, ids, problems);
  BOOST_TEST(skip.keep == (std::vector<bool>{true, true, false, false, false}),
             boost::test_tools::per_element());
  BOOST_TEST(skip.duplicates == 2u);
  BOOST_TEST(skip.bad == std::vector<size_t>{3}, boost::test_tools::per_element());
  SourcePlan replace = PlanSources("out", OnDuplicate::kReplace, false, ids, problems);
  BOOST_TEST(replace.keep == (std::vector<bool>{false, false, true, false, true}),
             boost::test_tools::per_element());
  // kError and strict: ingest's messages.
  try {
    PlanSources("out", OnDuplicate::kError, false, ids, problems);
    BOOST_ERROR("an id listed twice was taken");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(std::string(e.what()) == "ingest out: id 'a' is listed twice (see --on-duplicate)");
  }
  try {
    PlanSources("out", OnDuplicate::kSkip, true, ids, problems);
    BOOST_ERROR("an unstorable source was taken under strict");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(std::string(e.what()) == "ingest 'c': the id (/x/c) is not valid UTF-8");
  }
  // A problem of a dropped duplicate is not reported.
  problems[3].reset();
  problems[2] = SourceProblem{"a", "", "bad", true};
  BOOST_TEST(PlanSources("out", OnDuplicate::kSkip, true, ids, problems).bad.empty());
  BOOST_CHECK_THROW(PlanSources("out", OnDuplicate::kSkip, false, ids, {std::nullopt}),
                    InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(drop_ids_present_skips_or_refuses_what_the_dataset_holds) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  {
    auto writer = Dataset::Create(dir)->NewWriter();
    writer->Append("b", test::Views({test::FakeJpeg(10, 1)}), "{}");
    writer->Commit();
  }
  auto ds = Dataset::Open(dir);
  const std::vector<std::string_view> ids = {"a", "b", "c"};
  std::vector<bool> keep = {true, true, true};
  BOOST_TEST(DropIdsPresent(*ds, dir, OnDuplicate::kReplace, ids, &keep) == 0u);
  BOOST_TEST(DropIdsPresent(*ds, dir, OnDuplicate::kSkip, ids, &keep) == 1u);
  BOOST_TEST(keep == (std::vector<bool>{true, false, true}), boost::test_tools::per_element());
  keep = {true, true, true};
  try {
    DropIdsPresent(*ds, dir, OnDuplicate::kError, ids, &keep);
    BOOST_ERROR("an id already present was taken");
  } catch (const InvalidArgumentError& e) {
    BOOST_TEST(std::string(e.what()) ==
               "ingest " + dir + ": id 'b' is already in the dataset (see --on-duplicate)");
  }
  keep = {true, false, true};  // a dropped source is not looked up
  BOOST_TEST(DropIdsPresent(*ds, dir, OnDuplicate::kError, ids, &keep) == 0u);
}

BOOST_AUTO_TEST_CASE(update_label_map_file_keeps_existing_entries_and_refuses_a_renumbering) {
  TempDir tmp;
  const std::string dir = tmp.path();
  test::WriteFile(dir + "/label2idx.json", R"({"zebra": 0})");
  UpdateLabelMapFile(dir, LabelMap{{"zebra", 0}, {"ant", 2}, {"bee", 1}});
  BOOST_TEST(test::ReadFile(dir + "/label2idx.json") == R"({"zebra": 0, "bee": 1, "ant": 2})");
  BOOST_CHECK_THROW(UpdateLabelMapFile(dir, LabelMap{{"zebra", 3}}), InvalidArgumentError);
  BOOST_TEST(test::ReadFile(dir + "/label2idx.json") == R"({"zebra": 0, "bee": 1, "ant": 2})");
}

BOOST_AUTO_TEST_CASE(a_second_writer_of_the_shard_waits_for_the_lock_with_lock_timeout) {
  TempDir tmp;
  IngestOptions o = FixtureFrames(tmp / "shard");
  Dataset::Create(o.dir);
  OpenOptions rw;
  rw.read_only = false;
  auto holder = Dataset::Open(o.dir, rw);
  auto writer = holder->NewWriter();

  // Without a timeout: BusyError at once, nothing written.
  BOOST_CHECK_THROW(Ingest(o), BusyError);
  BOOST_TEST(Dataset::Open(o.dir)->Count() == 0u);

  // With one: it waits until the holder is done, then ingests everything.
  o.lock_timeout = std::chrono::seconds(30);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    writer.reset();
  });
  const auto start = std::chrono::steady_clock::now();
  IngestReport r;
  try {
    r = Ingest(o);
  } catch (const Error& e) {
    BOOST_ERROR("the second writer did not wait: " << e.what());
  }
  release.join();
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  BOOST_TEST(waited.count() >= 250);
  BOOST_TEST(r.added == 22u);
}

BOOST_AUTO_TEST_CASE(without_catch_signals_the_host_keeps_its_handlers) {
  TempDir tmp;
  struct sigaction mine, old_int, old_term;
  std::memset(&mine, 0, sizeof(mine));
  mine.sa_handler = IgnoreSignal;
  sigemptyset(&mine.sa_mask);
  ::sigaction(SIGINT, &mine, &old_int);
  ::sigaction(SIGTERM, &mine, &old_term);

  IngestOptions o = FixtureFrames(tmp / "a");
  bool host_handlers = true;
  o.catch_signals = false;
  o.on_progress = [&](const IngestProgress&) {
    host_handlers =
        host_handlers && HandlerOf(SIGINT) == IgnoreSignal && HandlerOf(SIGTERM) == IgnoreSignal;
  };
  BOOST_TEST(Ingest(o).added == 22u);
  BOOST_TEST(host_handlers);

  // The default catches them for the run (the control: the check above can fail).
  IngestOptions caught = FixtureFrames(tmp / "b");
  bool replaced = false;
  caught.on_progress = [&](const IngestProgress&) {
    replaced = replaced || HandlerOf(SIGTERM) != IgnoreSignal;
  };
  Ingest(caught);
  BOOST_TEST(replaced);
  BOOST_TEST((HandlerOf(SIGTERM) == IgnoreSignal));  // restored afterwards

  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
}

BOOST_AUTO_TEST_CASE(an_exception_from_on_progress_stops_the_run_and_keeps_committed_batches) {
  TempDir tmp;
  IngestOptions o = FixtureFrames(tmp / "shard");
  o.catch_signals = false;
  o.on_progress = [](const IngestProgress& p) {
    if (p.done == 5) throw std::runtime_error("stop");
  };
  BOOST_CHECK_THROW(Ingest(o), std::runtime_error);
  // Batches of 2: four videos committed, the fifth rolled back.
  BOOST_TEST(Dataset::Open(o.dir)->Count() == 4u);

  // The lock was released and a re-run resumes.
  o.on_progress = nullptr;
  const IngestReport r = Ingest(o);
  BOOST_TEST(r.present == 4u);
  BOOST_TEST(r.added == 18u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::ingest
