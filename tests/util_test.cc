// The floor of shared helpers (util/): integer coding, SHA-256, UTF-8, the
// errno translation, path text, the seam's rename and removal, mkdir -p, recursive
// removal and ParallelFor. The file layer's reads, writes and atomic files
// are file_io_test's.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <vector>

#include "gulpdb/error.h"
#include "support/test_util.h"
#include "util/coding.h"
#include "util/file_io.h"
#include "util/markup.h"
#include "util/path.h"
#include "util/sha256.h"
#include "util/sys_error.h"
#include "util/thread_pool.h"
#include "util/utf8.h"

namespace gulpdb::util {
namespace {

using test::TempDir;

BOOST_AUTO_TEST_SUITE(util_test)

BOOST_AUTO_TEST_CASE(fixed_big_endian_orders_bytes_most_significant_first) {
  std::string out;
  PutFixedBig(&out, 0x01020304u, 4);
  PutFixedBig(&out, 0x0a0b, 2);
  BOOST_TEST(out == std::string("\x01\x02\x03\x04\x0a\x0b", 6));
  BOOST_TEST(GetFixedBig(out, 0, 4) == 0x01020304u);
  BOOST_TEST(GetFixedBig(out, 4, 2) == 0x0a0bu);
  std::string wide;
  PutFixedBig(&wide, 0xfedcba9876543210ULL, 8);
  BOOST_TEST(GetFixedBig(wide, 0, 8) == 0xfedcba9876543210ULL);
  BOOST_TEST(static_cast<uint8_t>(wide[0]) == 0xfe);
}

BOOST_AUTO_TEST_CASE(fixed32_little_endian_orders_bytes_least_significant_first) {
  std::string out = "x";
  PutFixed32Little(&out, 0x11223344u);
  BOOST_TEST(out == std::string("x\x44\x33\x22\x11", 5));
  BOOST_TEST(GetFixed32Little(out, 1) == 0x11223344u);
}

// FIPS 180-4's published examples (NIST's SHA256.pdf), also fed in pieces.
BOOST_AUTO_TEST_CASE(sha256_matches_the_published_vectors_whole_and_in_pieces) {
  const std::string abc_digest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  const std::string two_blocks_digest =
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
  BOOST_TEST(Sha256Hex("abc") == abc_digest);
  BOOST_TEST(Sha256Hex(two_blocks) == two_blocks_digest);
  BOOST_TEST(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 sha;
  for (size_t i = 0; i < two_blocks.size(); i += 7) sha.Update(two_blocks.substr(i, 7));
  BOOST_TEST(sha.FinishHex() == two_blocks_digest);
  // Finishing starts the object again, empty.
  sha.Update("ab");
  sha.Update("c");
  BOOST_TEST(sha.FinishHex() == abc_digest);
  const std::string thousand_a(1000, 'a');
  for (int i = 0; i < 1000; ++i) sha.Update(thousand_a);  // one million 'a'
  BOOST_TEST(sha.FinishHex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256 moved = std::move(sha);
  moved.Update(two_blocks.data(), two_blocks.size());
  BOOST_TEST(moved.FinishHex() == two_blocks_digest);
}

BOOST_AUTO_TEST_CASE(utf8_decoder_accepts_rfc3629_and_refuses_the_rest) {
  uint32_t cp = 0;
  size_t len = 0;
  BOOST_TEST((DecodeUtf8("a", 0, &cp, &len) == Utf8Step::kOk));
  BOOST_TEST(cp == 0x61u);
  BOOST_TEST((DecodeUtf8("\xe2\x82\xac", 0, &cp, &len) == Utf8Step::kOk));  // EURO SIGN
  BOOST_TEST(cp == 0x20acu);
  BOOST_TEST(len == 3u);
  BOOST_TEST((DecodeUtf8("\xf4\x8f\xbf\xbf", 0, &cp, &len) == Utf8Step::kOk));  // U+10FFFF
  BOOST_TEST(cp == 0x10ffffu);
  // Overlong forms, surrogates, past U+10FFFF, lone continuation bytes.
  for (const char* bad : {"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xf0\x80\x80\x80",
                          "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\x80"}) {
    BOOST_TEST((DecodeUtf8(bad, 0, &cp, &len) == Utf8Step::kInvalid), test::Printable(bad));
    BOOST_TEST(Utf8SequenceLength(bad, 0) == 0u);
  }
  BOOST_TEST((DecodeUtf8("\xe2\x82", 0, &cp, &len) == Utf8Step::kTruncated));
  BOOST_TEST(Utf8SequenceLength("\xe2\x82", 0) == 0u);
  BOOST_TEST(FindInvalidUtf8("ok \xc3\xa9 \xff") == 6u);
  BOOST_TEST(FindInvalidUtf8("ok \xc3\xa9") == std::string_view::npos);
  for (uint32_t code : {0x24u, 0xa2u, 0x20acu, 0x10348u}) {
    std::string out;
    AppendUtf8(code, &out);
    BOOST_TEST((DecodeUtf8(out, 0, &cp, &len) == Utf8Step::kOk));
    BOOST_TEST(cp == code);
    BOOST_TEST(len == out.size());
  }
}

template <typename E>
bool ThrowsAs(int err, const std::string& needle) {
  try {
    ThrowErrno("open", "/p", err);
  } catch (const E& e) {
    return test::Contains(e.what(), needle);
  } catch (...) {
  }
  return false;
}

BOOST_AUTO_TEST_CASE(errno_translation_maps_each_errno_to_its_type) {
  BOOST_TEST(ThrowsAs<NotFoundError>(ENOENT, "open /p: No such file"));
  BOOST_TEST(ThrowsAs<ResourceExhaustedError>(ENOSPC, "open /p: No space"));
  BOOST_TEST(ThrowsAs<ResourceExhaustedError>(EDQUOT, "open /p: "));
  BOOST_TEST(ThrowsAs<InvalidArgumentError>(ENOTDIR, "open /p: Not a directory"));
  BOOST_TEST(ThrowsAs<InvalidArgumentError>(EEXIST, "open /p: File exists"));
  BOOST_TEST(ThrowsAs<IoError>(EIO, "open /p: Input/output error"));
  BOOST_TEST(ThrowsAs<IoError>(EACCES, "open /p: Permission denied"));
}

BOOST_AUTO_TEST_CASE(parent_of_has_one_answer_for_every_form) {
  BOOST_TEST(ParentOf("a/b") == "a");
  BOOST_TEST(ParentOf("a/b/") == "a");
  BOOST_TEST(ParentOf("/x") == "/");  // one copy answered "." here
  BOOST_TEST(ParentOf("/x/y//") == "/x");
  BOOST_TEST(ParentOf("/") == "/");
  BOOST_TEST(ParentOf("x") == ".");
  BOOST_TEST(ParentOf("") == ".");
}

BOOST_AUTO_TEST_CASE(make_directories_creates_missing_parents_and_refuses_a_file) {
  TempDir tmp;
  MakeDirectories(tmp / "a/b/c");
  BOOST_TEST(IsDirectory(tmp / "a/b/c"));
  MakeDirectories(tmp / "a/b/c");  // already there
  BOOST_TEST(!MakeDirectory(tmp / "a"));
  test::WriteFile(tmp / "file", "x");
  BOOST_CHECK_THROW(MakeDirectories(tmp / "file/sub"), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(remove_tree_removes_everything_and_never_follows_links) {
  TempDir tmp;
  MakeDirectories(tmp / "outside");
  test::WriteFile(tmp / "outside/keep", "k");
  MakeDirectories(tmp / "tree/a/b");
  test::WriteFile(tmp / "tree/a/b/f", "f");
  test::WriteFile(tmp / "tree/g", "g");
  BOOST_REQUIRE(::symlink((tmp / "outside").c_str(), (tmp / "tree/a/link").c_str()) == 0);
  RemoveTree(tmp / "tree");
  BOOST_TEST(!PathExists(tmp / "tree"));
  BOOST_TEST(test::ReadFile(tmp / "outside/keep") == "k");
  RemoveTree(tmp / "missing");  // not an error
  test::WriteFile(tmp / "plain", "p");
  RemoveTree(tmp / "plain");
  BOOST_TEST(!PathExists(tmp / "plain"));
}

// The seam: renames and removals pass the I/O hook, which can fail them.
struct Seen {
  std::vector<std::string> ops;
  fault::Op fail_op;
  int error;
};

fault::Injection RecordHook(fault::Op op, const std::string& path, uint64_t, size_t, void* c) {
  auto* seen = static_cast<Seen*>(c);
  seen->ops.push_back(std::string(fault::OpName(op)) + " " + path.substr(path.rfind('/') + 1));
  if (op == seen->fail_op) return fault::Injection{seen->error, SIZE_MAX};
  return {};
}

BOOST_AUTO_TEST_CASE(rename_and_remove_pass_the_io_hook) {
  TempDir tmp;
  test::WriteFile(tmp / "a", "1");
  Seen seen{{}, fault::Op::kRemove, EIO};
  fault::SetIoHook(RecordHook, &seen);
  try {
    Rename(tmp / "a", tmp / "b");
    BOOST_CHECK_EXCEPTION(RemoveFile(tmp / "b"), IoError,
                          [](const IoError& e) { return test::Contains(e.what(), "remove "); });
    seen.fail_op = fault::Op::kRename;
    BOOST_TEST(RenameOrErrno(tmp / "b", tmp / "c") == EIO);
  } catch (...) {
    fault::SetIoHook(nullptr, nullptr);
    throw;
  }
  fault::SetIoHook(nullptr, nullptr);
  BOOST_TEST(seen.ops == (std::vector<std::string>{"rename a", "remove b", "rename b"}));
  BOOST_TEST(PathExists(tmp / "b"));  // the injected failures changed nothing
  BOOST_TEST(RemoveFile(tmp / "b"));
  BOOST_TEST(!RemoveFile(tmp / "b"));
}

BOOST_AUTO_TEST_CASE(write_full_writes_everything_and_names_the_file) {
  TempDir tmp;
  const std::string path = tmp / "out";
  {
    UniqueFd fd = OpenFile(path, O_WRONLY | O_CREAT | O_EXCL);
    WriteFull(fd.get(), std::string(100000, 'w'), path);
  }
  BOOST_TEST(test::ReadFile(path) == std::string(100000, 'w'));
  UniqueFd read_only = OpenFile(path, O_RDONLY);
  BOOST_CHECK_EXCEPTION(WriteFull(read_only.get(), "x", path), IoError, [&](const IoError& e) {
    return test::Contains(e.what(), "write " + path + ": ");
  });
}

BOOST_AUTO_TEST_CASE(parallel_for_runs_every_index_once_and_rethrows) {
  for (size_t threads : {0u, 1u, 3u, 16u}) {
    std::vector<std::atomic<int>> hits(100);
    ParallelFor(hits.size(), threads, [&](size_t i) { hits[i]++; });
    for (const auto& h : hits) BOOST_TEST(h.load() == 1);
  }
  ParallelFor(0, 4, [](size_t) { throw std::logic_error("called for n = 0"); });
  BOOST_CHECK_THROW(ParallelFor(50, 4,
                                [](size_t i) {
                                  if (i == 7) throw std::runtime_error("seven");
                                }),
                    std::runtime_error);
}

BOOST_AUTO_TEST_CASE(markup_escapes_the_five_characters_and_nothing_else) {
  BOOST_TEST(EscapeMarkup("") == "");
  BOOST_TEST(EscapeMarkup("a&b<c>d\"e'f") == "a&amp;b&lt;c&gt;d&quot;e&#39;f");
  BOOST_TEST(EscapeMarkup("&amp;") == "&amp;amp;");  // escaped again, never taken as an entity
  BOOST_TEST(EscapeMarkup("caf\xc3\xa9 \t\n/") == "caf\xc3\xa9 \t\n/");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::util
