#include "util/file_io.h"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <string>

#include "engine/core/fault_injection.h"
#include "gulpdb/error.h"
#include "support/test_util.h"

namespace gulpdb::util {
namespace {

using test::TempDir;

// Fails every I/O operation `op` on a path containing ".tmp." with `error`.
struct FailTemp {
  fault::Op op;
  int error;
  int calls = 0;
};

fault::Injection FailTempHook(fault::Op op, const std::string& path, uint64_t, size_t,
                              void* context) {
  auto* f = static_cast<FailTemp*>(context);
  if (op != f->op || path.find(".tmp.") == std::string::npos) return {};
  ++f->calls;
  return fault::Injection{f->error, SIZE_MAX};
}

// Installs FailTempHook while it lives.
class ScopedFailure {
 public:
  ScopedFailure(fault::Op op, int error) : failure_{op, error} {
    fault::SetIoHook(FailTempHook, &failure_);
  }
  ~ScopedFailure() { fault::SetIoHook(nullptr, nullptr); }
  int calls() const { return failure_.calls; }

 private:
  FailTemp failure_;
};

// The names in `dir` other than the expected ones: left-over temporary files.
std::vector<std::string> Leftovers(const TempDir& dir, const std::vector<std::string>& expected) {
  std::vector<std::string> extra;
  for (const std::string& name : ListDirectory(dir.path())) {
    if (std::find(expected.begin(), expected.end(), name) == expected.end()) extra.push_back(name);
  }
  return extra;
}

BOOST_AUTO_TEST_SUITE(file_io_test)

BOOST_AUTO_TEST_CASE(read_file_reads_whole_file_and_refuses_directories) {
  TempDir tmp;
  test::WriteFile(tmp / "a", std::string(3000, 'x') + "end");
  BOOST_TEST(ReadFile(tmp / "a") == std::string(3000, 'x') + "end");
  BOOST_CHECK_THROW(ReadFile(tmp / "missing"), NotFoundError);
  BOOST_CHECK_THROW(ReadFile(tmp.path()), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(write_file_atomically_replaces_the_file) {
  TempDir tmp;
  test::WriteFile(tmp / "f", "old");
  WriteFileAtomically(tmp / "f", "new content");
  BOOST_TEST(test::ReadFile(tmp / "f") == "new content");
  BOOST_TEST(Leftovers(tmp, {"f"}).empty());
}

BOOST_AUTO_TEST_CASE(failed_write_leaves_no_temporary_file_and_the_destination_unchanged) {
  for (const fault::Op op : {fault::Op::kWrite, fault::Op::kSync}) {
    BOOST_TEST_CONTEXT("failing " << fault::OpName(op)) {
      TempDir tmp;
      test::WriteFile(tmp / "f", "old");
      {
        ScopedFailure failure(op, op == fault::Op::kWrite ? ENOSPC : EIO);
        BOOST_CHECK_THROW(WriteFileAtomically(tmp / "f", "new content"), Error);
        BOOST_TEST(failure.calls() == 1);
      }
      BOOST_TEST(test::ReadFile(tmp / "f") == "old");
      BOOST_TEST(Leftovers(tmp, {"f"}) == std::vector<std::string>{});
    }
  }
}

BOOST_AUTO_TEST_CASE(failed_copy_leaves_no_temporary_file_and_the_destination_unchanged) {
  for (const fault::Op op : {fault::Op::kWrite, fault::Op::kSync}) {
    BOOST_TEST_CONTEXT("failing " << fault::OpName(op)) {
      TempDir tmp;
      test::WriteFile(tmp / "src", std::string(3 << 20, 's'));  // several blocks
      test::WriteFile(tmp / "dst", "old");
      {
        ScopedFailure failure(op, EIO);
        BOOST_CHECK_THROW(CopyFile(tmp / "src", tmp / "dst"), IoError);
        BOOST_TEST(failure.calls() == 1);
      }
      BOOST_TEST(test::ReadFile(tmp / "dst") == "old");
      BOOST_TEST(Leftovers(tmp, {"dst", "src"}) == std::vector<std::string>{});
      CopyFile(tmp / "src", tmp / "dst");  // and without the fault, it copies
      BOOST_TEST(test::ReadFile(tmp / "dst") == test::ReadFile(tmp / "src"));
      BOOST_TEST(Leftovers(tmp, {"dst", "src"}) == std::vector<std::string>{});
    }
  }
}

BOOST_AUTO_TEST_CASE(atomic_file_destroyed_without_commit_removes_its_temporary_file) {
  TempDir tmp;
  {
    AtomicFile f(tmp / "x");
    f.Append("partial");
    BOOST_TEST(PathExists(f.temp_path()));
  }
  BOOST_TEST(Leftovers(tmp, {}) == std::vector<std::string>{});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::util
