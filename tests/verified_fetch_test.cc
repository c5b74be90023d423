// engine/remote/verified_fetch.h: damage on the way is fetched again, the
// same wrong bytes twice are an object damaged in the store (remembered by a
// reader for its store and generation), different wrong bytes every time are
// an IoError that nothing remembers.
#include "engine/remote/verified_fetch.h"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "gulpdb/error.h"
#include "s3/errors.h"
#include "support/test_util.h"

namespace gulpdb::engine {
namespace {

using test::Contains;

const std::string kGood(64, 'a');

NamedObject Object(const std::string& key = "gulpdb.partitions/x") {
  NamedObject o;
  o.key = key;
  o.size = 100;
  o.sha256 = kGood;
  o.subject = "open dataset s3://b/p: partition s3://b/p/" + key;
  o.named_by = "the root";
  return o;
}

// A download that brings, in turn, what `arrivals` says (the last one
// again once they run out), counting its calls.
struct Downloads {
  std::vector<Arrival> arrivals;
  int calls = 0;
  Arrival operator()() {
    const size_t i = static_cast<size_t>(calls++);
    return arrivals[i < arrivals.size() ? i : arrivals.size() - 1];
  }
};

Arrival Good() { return Arrival{100, kGood}; }
Arrival Wrong(char c) { return Arrival{100, std::string(64, c)}; }

// The message of what FetchVerified throws, and its code; "" if nothing.
std::string Fetch(const NamedObject& o, Downloads* d, const BadObjectScope* scope,
                  ErrorCode* code = nullptr, std::function<void()> check = nullptr) {
  try {
    FetchVerified(
        o, [&] { return (*d)(); }, check, scope);
  } catch (const Error& e) {
    if (code != nullptr) *code = e.code();
    return e.what();
  }
  return "";
}

BOOST_AUTO_TEST_SUITE(verified_fetch_test)

BOOST_AUTO_TEST_CASE(damage_on_the_way_is_fetched_again) {
  ForgetBadObjects();
  const BadObjectScope scope{"store", 3};
  Downloads d{{Wrong('b'), Good()}};
  BOOST_TEST(Fetch(Object(), &d, &scope) == "");
  BOOST_TEST(d.calls == 2);
  Downloads twice{{Wrong('b'), Wrong('c'), Good()}};
  BOOST_TEST(Fetch(Object(), &twice, &scope) == "");
  BOOST_TEST(twice.calls == 3);
}

BOOST_AUTO_TEST_CASE(the_same_wrong_bytes_twice_are_a_damaged_object_not_fetched_again) {
  ForgetBadObjects();
  const BadObjectScope scope{"store", 3};
  Downloads d{{Wrong('b')}};
  ErrorCode code = ErrorCode::kIoError;
  const std::string first = Fetch(Object(), &d, &scope, &code);
  BOOST_TEST((code == ErrorCode::kCorruption));
  BOOST_TEST(Contains(first, "partition s3://b/p/gulpdb.partitions/x is damaged in the bucket"),
             first);
  BOOST_TEST(Contains(first, "the same bytes in 2 downloads"), first);
  BOOST_TEST(!Contains(first, "behind the manifest's back"), first);
  BOOST_TEST(d.calls == 2);
  // Every later fetch in this scope fails at once, with the same error.
  for (int i = 0; i < 100; ++i) {
    Downloads none{{Good()}};
    const std::string again = Fetch(Object(), &none, &scope, &code);
    BOOST_TEST(none.calls == 0);
    BOOST_TEST((code == ErrorCode::kCorruption));
    BOOST_TEST(again.rfind(first, 0) == 0u, again);
  }
  // A newer generation, another store, another object, no scope, or a new
  // process: fetched again.
  const BadObjectScope newer{"store", 4}, other{"other store", 3};
  for (const BadObjectScope* s : {&newer, &other, static_cast<const BadObjectScope*>(nullptr)}) {
    Downloads fresh{{Good()}};
    BOOST_TEST(Fetch(Object(), &fresh, s) == "");
    BOOST_TEST(fresh.calls == 1);
  }
  Downloads another{{Good()}};
  BOOST_TEST(Fetch(Object("gulpdb.partitions/y"), &another, &scope) == "");
  ForgetBadObjects();
  Downloads repaired{{Good()}};
  BOOST_TEST(Fetch(Object(), &repaired, &scope) == "");
  BOOST_TEST(repaired.calls == 1);
}

BOOST_AUTO_TEST_CASE(other_bytes_every_time_are_damage_on_the_way_and_not_remembered) {
  ForgetBadObjects();
  const BadObjectScope scope{"store", 3};
  Downloads d{{Wrong('b'), Wrong('c'), Arrival{99, kGood}}};
  ErrorCode code = ErrorCode::kCorruption;
  const std::string m = Fetch(Object(), &d, &scope, &code);
  BOOST_TEST((code == ErrorCode::kIoError));
  BOOST_TEST(d.calls == kFetchAttempts);
  BOOST_TEST(Contains(m, "3 downloads each brought other bytes than the root names"), m);
  BOOST_TEST(Contains(m, "damaged on the way"), m);
  Downloads later{{Good()}};
  BOOST_TEST(Fetch(Object(), &later, &scope) == "");
  BOOST_TEST(later.calls == 1);
}

BOOST_AUTO_TEST_CASE(missing_larger_and_unsound_objects_are_told_apart) {
  ForgetBadObjects();
  const BadObjectScope scope{"store", 3};
  ErrorCode code = ErrorCode::kIoError;
  // Missing: not remembered (a later read asks again).
  int calls = 0;
  const auto missing = [&]() -> Arrival {
    ++calls;
    throw NotFoundError("GET s3://b/p/gulpdb.partitions/x: HTTP 404");
  };
  for (int i = 0; i < 2; ++i) {
    try {
      FetchVerified(Object(), missing, nullptr, &scope);
      BOOST_FAIL("a missing object was fetched");
    } catch (const CorruptionError& e) {
      BOOST_TEST(Contains(e.what(), "is missing: it was deleted behind the manifest's back"));
    }
  }
  BOOST_TEST(calls == 2);
  // Larger than named: one download, stopped early, remembered.
  calls = 0;
  const auto larger = [&]() -> Arrival {
    ++calls;
    throw remote::ObjectTooLargeError("GET s3://b/p/gulpdb.partitions/x: more than 100 bytes");
  };
  for (int i = 0; i < 3; ++i) {
    try {
      FetchVerified(Object(), larger, nullptr, &scope);
      BOOST_FAIL("a larger object was fetched");
    } catch (const CorruptionError& e) {
      BOOST_TEST(Contains(e.what(), "is damaged in the bucket: it is larger than the 100 bytes"));
    }
  }
  BOOST_TEST(calls == 1);
  // The named bytes, and not sound: remembered.
  Downloads d{{Good()}};
  const auto unsound = [] { throw CorruptionError("open partition x: a page out of bounds"); };
  const std::string m = Fetch(Object("gulpdb.partitions/z"), &d, &scope, &code, unsound);
  BOOST_TEST((code == ErrorCode::kCorruption));
  BOOST_TEST(Contains(m,
                      "is damaged in the bucket: its bytes are the ones the root names, and "
                      "not sound: open partition x: a page out of bounds"),
             m);
  Downloads none{{Good()}};
  Fetch(Object("gulpdb.partitions/z"), &none, &scope);
  BOOST_TEST(none.calls == 0);
}

BOOST_AUTO_TEST_CASE(the_memory_is_bounded) {
  ForgetBadObjects();
  const BadObjectScope scope{"store", 3};
  for (int i = 0; i <= 4096; ++i) {
    Downloads d{{Wrong('b')}};
    Fetch(Object("k" + std::to_string(i)), &d, &scope);
  }
  // The oldest was forgotten, the newest is remembered.
  Downloads oldest{{Good()}}, newest{{Good()}};
  BOOST_TEST(Fetch(Object("k0"), &oldest, &scope) == "");
  BOOST_TEST(oldest.calls == 1);
  BOOST_TEST(Fetch(Object("k4096"), &newest, &scope) != "");
  BOOST_TEST(newest.calls == 0);
  ForgetBadObjects();
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::engine
