#include "index/lmdb_env.h"

#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <optional>
#include <string>
#include <utility>

#include "support/test_util.h"

namespace gulpdb::index {
namespace {

BOOST_AUTO_TEST_SUITE(lmdb_env_test)

BOOST_AUTO_TEST_CASE(put_get_delete_and_cursor_order) {
  test::TempDir tmp;
  auto env = Env::Open(tmp.path(), EnvOptions{});
  const Dbi db = env->OpenDb("t", true);
  env->Update([&](Txn& txn) {
    txn.Put(db, "b", "2");
    txn.Put(db, "a", "1");
    txn.Put(db, "c", "3");
  });
  Txn txn = env->BeginRead();
  std::string_view v;
  BOOST_TEST(txn.Get(db, "a", &v));
  BOOST_TEST(v == "1");
  BOOST_TEST(!txn.Get(db, "zz", &v));
  BOOST_TEST(txn.Count(db) == 3u);
  std::string keys;
  {
    Cursor cursor(txn, db);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) keys += cursor.key();
    BOOST_TEST(cursor.Seek("bb"));
    BOOST_TEST(cursor.key() == "c");
  }
  BOOST_TEST(keys == "abc");
}

// LMDB cannot hold an empty key or one longer than max_key_size(), so a
// lookup or a delete of one is a miss, never MDB_BAD_VALSIZE; storing one
// stays an error.
BOOST_AUTO_TEST_CASE(keys_lmdb_cannot_hold_are_absent) {
  test::TempDir tmp;
  auto env = Env::Open(tmp.path(), EnvOptions{});
  const Dbi db = env->OpenDb("t", true);
  env->Update([&](Txn& txn) { txn.Put(db, "a", "1"); });
  const std::string too_long(env->max_key_size() + 1, 'k');
  const std::string longest(env->max_key_size(), 'k');
  {
    Txn txn = env->BeginRead();
    std::string_view v;
    BOOST_TEST(!txn.Get(db, "", &v));
    BOOST_TEST(!txn.Get(db, too_long, &v));
    BOOST_TEST(!txn.Get(db, longest, &v));
  }
  env->Update([&](Txn& txn) {
    BOOST_TEST(!txn.Del(db, ""));
    BOOST_TEST(!txn.Del(db, too_long));
    BOOST_CHECK_THROW(txn.Put(db, "", "x"), InvalidArgumentError);
    BOOST_CHECK_THROW(txn.Put(db, too_long, "x"), InvalidArgumentError);
    txn.Put(db, longest, "2");
  });
  Txn txn = env->BeginRead();
  std::string_view v;
  BOOST_TEST(txn.Get(db, longest, &v));
  BOOST_TEST(v == "2");
  BOOST_TEST(txn.Count(db) == 2u);
}

// The verifier accepts every healthy file LMDB writes (deep trees, overflow
// values, free pages after deletes) with counts that match LMDB's own, and
// finds damage LMDB would follow blindly.
BOOST_AUTO_TEST_CASE(verifier_accepts_healthy_files_and_finds_damage) {
  test::TempDir tmp;
  auto env = Env::Open(tmp.path(), EnvOptions{});
  const Dbi small = env->OpenDb("small", true);
  const Dbi big = env->OpenDb("big", true);
  for (int round = 0; round < 4; ++round) {
    env->Update([&](Txn& txn) {
      for (int i = 0; i < 3000; ++i) {
        const std::string key =
            "key" + std::to_string(i * 7919 % 3001) + std::string(static_cast<size_t>(i % 50), 'k');
        txn.Put(small, key, std::string(static_cast<size_t>(i % 90), 'v'));
        if (i % 100 == 0) txn.Put(big, key, std::string(static_cast<size_t>(5000 + i), 'b'));
      }
    });
    env->Update([&](Txn& txn) {
      for (int i = round; i < 3000; i += 5) {
        txn.Del(small, "key" + std::to_string(i * 7919 % 3001) +
                           std::string(static_cast<size_t>(i % 50), 'k'));
      }
    });
  }
  uint64_t entries = 0;
  {
    Txn txn = env->BeginRead();
    entries = txn.Count(small) + txn.Count(big) + 2;  // + the two named-database records
  }
  const IndexFileReport report = env->VerifyFile();
  for (const std::string& p : report.problems) BOOST_ERROR(p);
  BOOST_TEST(report.entries == entries);
  BOOST_TEST(report.branch_pages > 0u);
  BOOST_TEST(report.overflow_pages > 0u);
  BOOST_TEST(report.free_pages > 0u);
  env.reset();

  // Damage: a leaf or branch page's node offset pointing outside its page.
  const std::string data = tmp / "data.mdb";
  const std::string original = test::ReadFile(data);
  const size_t page_size = report.page_size;
  size_t damaged_pages = 0, found = 0;
  for (size_t page = 2; page * page_size < original.size(); ++page) {
    const uint16_t flags =
        static_cast<uint16_t>(static_cast<uint8_t>(original[page * page_size + 10]) |
                              static_cast<uint8_t>(original[page * page_size + 11]) << 8);
    if ((flags & 0x03) == 0) continue;  // not a branch or leaf page
    std::string bytes = original;
    bytes[page * page_size + 16] = '\xff';  // the first node's offset, low byte
    bytes[page * page_size + 17] = '\xff';
    test::WriteFile(data, bytes);
    ++damaged_pages;
    const IndexFileReport damaged = VerifyIndexFile(data);
    // A page that is no longer reachable (freed) may hold anything.
    if (!damaged.healthy()) {
      ++found;
      BOOST_TEST(damaged.problems[0].find("page") != std::string::npos);
    }
    if (damaged_pages == 40) break;
  }
  BOOST_TEST(found > 0u);
  // Truncated: refused at open, before LMDB maps the file.
  test::WriteFile(data, original.substr(0, original.size() / 2));
  try {
    Env::Open(tmp.path(), EnvOptions{});
    BOOST_ERROR("a truncated index must not open");
  } catch (const CorruptionError& e) {
    BOOST_TEST(std::string(e.what()).find("truncated") != std::string::npos);
  }
  // Not an LMDB file at all.
  test::WriteFile(data, std::string(8192, 'x'));
  BOOST_CHECK_THROW(Env::Open(tmp.path(), EnvOptions{}), CorruptionError);
}

// A commit that grows the file while an open checks its header (the race a
// DataLoader worker opening a dataset being appended to hit): the check must
// measure the file after reading the meta pages, never call it truncated.
Env* g_growing_env = nullptr;
Dbi g_growing_db = 0;
int g_growing_commits = 0;

void GrowIndexOnce() {
  if (g_growing_env == nullptr) return;
  Env* env = std::exchange(g_growing_env, nullptr);
  env->Update([](Txn& txn) {
    for (int i = 0; i < 200; ++i) {
      txn.Put(g_growing_db, "grow" + std::to_string(g_growing_commits) + "_" + std::to_string(i),
              std::string(3000, 'g'));
    }
  });
  ++g_growing_commits;
}

BOOST_AUTO_TEST_CASE(header_check_never_calls_a_growing_index_truncated) {
  test::TempDir tmp;
  auto env = Env::Open(tmp.path(), EnvOptions{});
  g_growing_db = env->OpenDb("t", true);
  env->Update([](Txn& txn) { txn.Put(g_growing_db, "a", "1"); });
  const std::string data = tmp.path() + "/data.mdb";
  SetBeforeMetaReadHookForTesting(&GrowIndexOnce);
  for (int round = 0; round < 3; ++round) {
    struct stat before;
    BOOST_REQUIRE(::stat(data.c_str(), &before) == 0);
    g_growing_env = env.get();
    BOOST_CHECK_NO_THROW(CheckIndexFileHeader(data));
    g_growing_env = env.get();
    const IndexFileReport report = VerifyIndexFile(data);
    BOOST_TEST(report.healthy(), (report.problems.empty() ? "" : report.problems[0]));
    struct stat after;
    BOOST_REQUIRE(::stat(data.c_str(), &after) == 0);
    BOOST_TEST(after.st_size > before.st_size);  // the hook did grow the file
  }
  SetBeforeMetaReadHookForTesting(nullptr);
  BOOST_TEST(g_growing_commits == 6);
}

// Two commits between the verifier's read transaction and its meta read
// overwrite both meta pages: an open with verify_index must retry with a
// newer snapshot, not fail a healthy index that is being appended to.
int g_commits_left = 0;

void CommitTwice() {
  while (g_commits_left > 0 && g_growing_env != nullptr) {
    --g_commits_left;
    g_growing_env->Update([](Txn& txn) {
      txn.Put(g_growing_db, "twice" + std::to_string(g_commits_left), std::string(100, 't'));
    });
  }
}

BOOST_AUTO_TEST_CASE(verify_file_survives_commits_overwriting_both_meta_pages) {
  test::TempDir tmp;
  auto env = Env::Open(tmp.path(), EnvOptions{});
  g_growing_db = env->OpenDb("t", true);
  env->Update([](Txn& txn) { txn.Put(g_growing_db, "a", "1"); });
  g_growing_env = env.get();
  g_commits_left = 2;
  SetBeforeMetaReadHookForTesting(&CommitTwice);
  IndexFileReport report;
  BOOST_CHECK_NO_THROW(report = env->VerifyFile());
  SetBeforeMetaReadHookForTesting(nullptr);
  g_growing_env = nullptr;
  BOOST_TEST(g_commits_left == 0);  // both commits happened inside the first attempt
  BOOST_TEST(report.healthy(), (report.problems.empty() ? "" : report.problems[0]));
  BOOST_TEST(report.entries >= 3u);
}

// What a pin keeps from reuse: the pages commits free while it holds,
// counted from LMDB's free-page records (the writer's journal bounds them).
BOOST_AUTO_TEST_CASE(pinned_free_bytes_counts_the_pages_freed_since_the_pin) {
  test::TempDir tmp;
  auto env = Env::Open(tmp.path(), EnvOptions{});
  const Dbi db = env->OpenDb("t", true);
  auto put = [&](int i) {
    env->Update([&](Txn& txn) { txn.Put(db, "k" + std::to_string(i % 7), std::string(100, 'v')); });
  };
  for (int i = 0; i < 5; ++i) put(i);
  BOOST_TEST(env->PinnedFreeBytes() == 0u);  // no pin
  env->Pin();
  const uint64_t at_pin = env->PinnedFreeBytes();
  BOOST_TEST(at_pin <= 4u * 4096);  // what the pinned commit itself freed, at most
  uint64_t last = at_pin;
  for (int i = 0; i < 20; ++i) {
    put(i);
    const uint64_t now = env->PinnedFreeBytes();
    BOOST_TEST(now >= last + 4096, "commit " << i << ": " << now << " after " << last);
    last = now;
  }
  const uint64_t used = env->used_bytes();
  env->Pin();  // a new pin: the pages freed before it are reusable again
  BOOST_TEST(env->PinnedFreeBytes() <= 4u * 4096);
  for (int i = 0; i < 10; ++i) put(i);  // half the pages the first pin freed
  BOOST_TEST(env->used_bytes() <= used, "the file grew although freed pages were reusable");
  env->Unpin();
  BOOST_TEST(env->PinnedFreeBytes() == 0u);
}

BOOST_AUTO_TEST_CASE(map_grows_instead_of_failing_full) {
  test::TempDir tmp;
  EnvOptions options;
  options.initial_map_size = 256 * 1024;
  auto env = Env::Open(tmp.path(), options);
  const Dbi db = env->OpenDb("t", true);
  const std::string value(1000, 'x');
  // ~4 MB of values through a 256 KiB initial map.
  for (int batch = 0; batch < 40; ++batch) {
    env->Update([&](Txn& txn) {
      for (int i = 0; i < 100; ++i) {
        txn.Put(db, std::to_string(batch * 100 + i), value);
      }
    });
  }
  BOOST_TEST(env->map_size() > options.initial_map_size);
  Txn txn = env->BeginRead();
  BOOST_TEST(txn.Count(db) == 4000u);
}

BOOST_AUTO_TEST_CASE(map_limit_is_a_clear_error) {
  test::TempDir tmp;
  EnvOptions options;
  options.initial_map_size = 64 * 1024;
  options.max_map_size = 128 * 1024;
  auto env = Env::Open(tmp.path(), options);
  const Dbi db = env->OpenDb("t", true);
  const std::string value(4000, 'x');
  BOOST_CHECK_THROW(
      for (int i = 0; i < 200;
           ++i) { env->Update([&](Txn& txn) { txn.Put(db, std::to_string(i), value); }); },
      LimitExceededError);
}

// Cursors point to their Txn: moving a Txn with open cursors would leave
// them on the moved-from object (and the moved-to one counting cursors it
// does not have, so that Commit refused forever). It is refused instead.
BOOST_AUTO_TEST_CASE(a_transaction_with_open_cursors_cannot_move) {
  test::TempDir tmp;
  auto env = Env::Open(tmp.path(), EnvOptions{});
  const Dbi db = env->OpenDb("t", true);
  env->Update([&](Txn& txn) {
    txn.Put(db, "a", "1");
    txn.Put(db, "b", "2");
  });
  Txn write = env->BeginWrite();
  std::optional<Txn> moved;
  {
    Cursor cursor(write, db);
    BOOST_TEST(cursor.First());
    BOOST_CHECK_THROW(moved.emplace(std::move(write)), InvalidArgumentError);
    BOOST_TEST(cursor.Next());  // the cursor and its transaction are intact
    BOOST_TEST(cursor.key() == "b");
  }
  BOOST_REQUIRE(!moved.has_value());
  write.Put(db, "c", "3");
  moved.emplace(std::move(write));  // no cursor open: it moves
  moved->Commit();
  Txn read = env->BeginRead();
  BOOST_TEST(read.Count(db) == 3u);
}

BOOST_AUTO_TEST_CASE(read_only_env_refuses_writes_and_missing_dbs) {
  test::TempDir tmp;
  {
    auto env = Env::Open(tmp.path(), EnvOptions{});
    env->OpenDb("t", true);
  }
  EnvOptions ro;
  ro.read_only = true;
  auto env = Env::Open(tmp.path(), ro);
  BOOST_CHECK_THROW(env->BeginWrite(), InvalidArgumentError);
  BOOST_CHECK_THROW(env->OpenDb("absent", false), NotFoundError);
  BOOST_CHECK_THROW(Env::Open(tmp / "missing", ro), NotFoundError);
}

BOOST_AUTO_TEST_CASE(commit_refuses_open_cursors) {
  test::TempDir tmp;
  auto env = Env::Open(tmp.path(), EnvOptions{});
  const Dbi db = env->OpenDb("t", true);
  Txn txn = env->BeginWrite();
  txn.Put(db, "k", "v");
  Cursor cursor(txn, db);
  BOOST_CHECK_THROW(txn.Commit(), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(oversized_key_is_invalid_argument) {
  test::TempDir tmp;
  auto env = Env::Open(tmp.path(), EnvOptions{});
  const Dbi db = env->OpenDb("t", true);
  BOOST_TEST(env->max_key_size() == 511u);
  BOOST_CHECK_THROW(env->Update([&](Txn& txn) { txn.Put(db, std::string(600, 'k'), "v"); }),
                    InvalidArgumentError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::index
