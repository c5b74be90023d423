// Dataset::SnapshotId: it changes with every commit, made by this process or
// another handle, and not otherwise.
#include <boost/test/unit_test.hpp>

#include "gulpdb/dataset.h"
#include "tests/support/test_util.h"

namespace gulpdb {
namespace {

BOOST_AUTO_TEST_SUITE(snapshot_id_test)

BOOST_AUTO_TEST_CASE(a_commit_changes_the_snapshot_id_and_reads_do_not) {
  test::TempDir tmp;
  auto rw = Dataset::Create(tmp.path());
  auto reader = Dataset::Open(tmp.path());
  const uint64_t first = reader->SnapshotId();
  BOOST_TEST(reader->SnapshotId() == first);
  BOOST_TEST(reader->Count() == 0u);
  BOOST_TEST(reader->SnapshotId() == first);
  {
    auto w = rw->NewWriter();
    w->Append("a", {test::FakeJpeg(16, 1)});
    w->Commit();
  }
  const uint64_t second = reader->SnapshotId();
  BOOST_TEST(second != first);
  {
    auto w = rw->NewWriter();
    w->SetSplit("train", {"a"});  // a commit that adds no video
    w->Commit();
  }
  BOOST_TEST(reader->SnapshotId() != second);
  BOOST_TEST(rw->SnapshotId() == reader->SnapshotId());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
