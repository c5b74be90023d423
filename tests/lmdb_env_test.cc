#include "index/lmdb_env.h"

#include <sys/stat.h>

#include <boost/test/unit_test.hpp>

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
      for (int i = 0; i < 200; ++i) {
        env->Update([&](Txn& txn) { txn.Put(db, std::to_string(i), value); });
      },
      ResourceExhaustedError);
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
