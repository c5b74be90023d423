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
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gulpdb/error.h"
#include "support/test_util.h"
#include "util/coding.h"
#include "util/env.h"
#include "util/file_io.h"
#include "util/hex.h"
#include "util/host_name.h"
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
  BOOST_TEST(FixedBig(0x01020304u, 4) == std::string("\x01\x02\x03\x04", 4));
  BOOST_TEST(FixedBig(0x0a0b, 2) == std::string("\x0a\x0b", 2));
  BOOST_TEST(FixedBig(255, 4) < FixedBig(256, 4));  // byte order is numeric order
}

BOOST_AUTO_TEST_CASE(fixed32_little_endian_orders_bytes_least_significant_first) {
  std::string out = "x";
  PutFixed32Little(&out, 0x11223344u);
  BOOST_TEST(out == std::string("x\x44\x33\x22\x11", 5));
  BOOST_TEST(GetFixed32Little(out, 1) == 0x11223344u);
}

BOOST_AUTO_TEST_CASE(fixed64_little_endian_round_trips_and_the_reader_checks_bounds) {
  std::string out;
  PutFixed64Little(&out, 0x0102030405060708ull);
  PutFixed32Little(&out, 3);
  out += "abc";
  BOOST_TEST(out.substr(0, 8) == std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  BOOST_TEST(GetFixed64Little(out, 0) == 0x0102030405060708ull);
  ByteReader in(out, "journal record 7");
  BOOST_TEST(in.Fixed64() == 0x0102030405060708ull);
  BOOST_TEST(in.Sized() == "abc");
  BOOST_TEST(in.remaining() == 0u);
  // A length that claims more than is left: CorruptionError naming what was
  // being decoded and where, never a read past the end.
  std::string short_bytes;
  PutFixed32Little(&short_bytes, 1000);
  short_bytes += "xy";
  ByteReader bad(short_bytes, "journal record 9");
  try {
    bad.Sized();
    BOOST_ERROR("a length past the end was taken");
  } catch (const CorruptionError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("journal record 9") != std::string::npos, what);
    BOOST_TEST(what.find("at byte 4") != std::string::npos, what);
  }
  ByteReader empty("", "header");
  BOOST_CHECK_THROW(empty.Fixed(1), CorruptionError);
}

BOOST_AUTO_TEST_CASE(hex_names_are_exactly_the_lowercase_digits_of_their_length) {
  const std::string sha = Sha256Hex("x");
  BOOST_TEST(IsSha256Hex(sha));
  BOOST_TEST(!IsSha256Hex(sha.substr(1)));
  BOOST_TEST(!IsSha256Hex(sha + "0"));
  std::string upper = sha;
  upper[0] = 'A';
  BOOST_TEST(!IsSha256Hex(upper));
  BOOST_TEST(!IsSha256Hex("../" + sha.substr(3)));
  BOOST_TEST(IsLowerHex("0a9f", 4));
  BOOST_TEST(!IsLowerHex("0a9g", 4));
  BOOST_TEST(!IsLowerHex("", 1));
}

BOOST_AUTO_TEST_CASE(file_suffixes_are_unique_and_name_the_process) {
  const std::string a = UniqueFileSuffix();
  const std::string b = UniqueFileSuffix();
  BOOST_TEST(a != b);
  BOOST_TEST(a.rfind(std::to_string(::getpid()) + ".", 0) == 0u, a);
  BOOST_TEST(!HostName().empty());
  BOOST_TEST(HostNameInFileName().find_first_of("./") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(environment_variables_parse_by_kind_with_one_error_form) {
  BOOST_TEST(ParseEnvBytes("GULPDB_CACHE_BYTES", "2M") == uint64_t{2} << 20);
  BOOST_TEST(ParseEnvBytes("GULPDB_CACHE_BYTES", "3KiB") == uint64_t{3} << 10);
  BOOST_TEST(ParseEnvCount("GULPDB_S3_MAX_ATTEMPTS", " 7 ", 1, 100) == 7u);
  BOOST_TEST(ParseEnvDuration("GULPDB_PUSH_LEASE", "30m").count() == 1800);
  BOOST_TEST(ParseEnvFlag("GULPDB_ALLOW_NETWORK_INDEX", "yes"));
  BOOST_TEST(!ParseEnvFlag("GULPDB_ALLOW_NETWORK_INDEX", "0"));
  const auto form = [](const std::function<void()>& parse, const std::string& start) {
    try {
      parse();
      BOOST_ERROR(start << " was taken");
    } catch (const InvalidArgumentError& e) {
      BOOST_TEST(std::string(e.what()).rfind(start, 0) == 0u, e.what());
    }
  };
  form([] { ParseEnvBytes("GULPDB_CACHE_BYTES", "12X"); }, "GULPDB_CACHE_BYTES '12X': ");
  form([] { ParseEnvBytes("GULPDB_CACHE_BYTES", "99999999999999999999"); },
       "GULPDB_CACHE_BYTES '99999999999999999999': ");
  form([] { ParseEnvCount("GULPDB_S3_MAX_ATTEMPTS", "0", 1, 100); },
       "GULPDB_S3_MAX_ATTEMPTS '0': ");
  form([] { ParseEnvCount("GULPDB_S3_MAX_ATTEMPTS", "-1", 1, 100); },
       "GULPDB_S3_MAX_ATTEMPTS '-1': ");
  form([] { ParseEnvDuration("GULPDB_PUSH_GRACE", "soon"); }, "GULPDB_PUSH_GRACE 'soon': ");
  form([] { ParseEnvFlag("GULPDB_ALLOW_NETWORK_INDEX", "maybe"); },
       "GULPDB_ALLOW_NETWORK_INDEX 'maybe': ");
  // Read from the environment through the table; unset or empty is unset.
  test::ScopedEnv env;
  env.Set("GULPDB_CACHE_BYTES", "");
  BOOST_TEST(!EnvBytes("GULPDB_CACHE_BYTES").has_value());
  env.Set("GULPDB_CACHE_BYTES", "1K");
  BOOST_TEST(EnvBytes("GULPDB_CACHE_BYTES").value() == 1024u);
  env.Set("GULPDB_PUSH_GRACE", "nope");
  BOOST_CHECK_THROW(EnvDuration("GULPDB_PUSH_GRACE"), InvalidArgumentError);
  // A name outside the table cannot be read: a bug, not a user's error.
  BOOST_CHECK_THROW(EnvText("GULPDB_NOT_A_VARIABLE"), std::logic_error);
  for (const EnvVariable& v : EnvVariables()) {
    BOOST_TEST(std::string(v.name).rfind("GULPDB_", 0) == 0u);
    BOOST_TEST(std::string(v.doc).size() > 10u, v.name);
    BOOST_TEST(&EnvVariableNamed(v.name) == &v);
  }
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

BOOST_AUTO_TEST_CASE(md5_matches_the_published_vectors_in_hex_and_base64) {
  // RFC 1321, appendix A.5; base64 as Content-MD5 carries it.
  Md5 md5;
  Md5::Digest d = md5.Finish();
  BOOST_TEST(d.hex == "d41d8cd98f00b204e9800998ecf8427e");
  BOOST_TEST(d.base64 == "1B2M2Y8AsgTpgAmY7PhCfg==");
  md5.Update("abc");
  d = md5.Finish();
  BOOST_TEST(d.hex == "900150983cd24fb0d6963f7d28e17f72");
  BOOST_TEST(d.base64 == "kAFQmDzST7DWlj99KOF/cg==");
  // In pieces; finishing started the object again, empty.
  md5.Update("message ");
  md5.Update(std::string_view("digest"));
  Md5 moved = std::move(md5);
  d = moved.Finish();
  BOOST_TEST(d.hex == "f96b697d7cb7938d525a2f31aaf161d0");
  BOOST_TEST(d.base64 == "+WtpfXy3k41SWi8xqvFh0A==");
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
