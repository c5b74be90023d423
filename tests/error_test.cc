// Errors keep their type when a layer adds context: the type is part of the
// contract (Python raises KeyError for IdNotFoundError, FileNotFoundError for
// other NotFoundErrors, MemoryError for OutOfMemoryError).
#include "gulpdb/error.h"

#include <boost/test/unit_test.hpp>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "engine/core/fault_injection.h"
#include "gulpdb/dataset.h"
#include "gulpdb/maintenance.h"
#include "support/test_util.h"

namespace gulpdb {
namespace {

using test::TempDir;

template <typename E>
void ExpectKeptWithContext(const E& original) {
  try {
    static_cast<const Error&>(original).ThrowWithContext("while testing: ");
  } catch (const E& e) {
    BOOST_TEST((typeid(e) == typeid(E)));
    BOOST_TEST((e.code() == original.code()));
    BOOST_TEST(std::string(e.what()) == "while testing: " + std::string(original.what()));
    return;
  } catch (const Error& e) {
    BOOST_ERROR("the type was lost: " << typeid(e).name());
  }
}

// A real JPEG whose header claims 60000 x 60000 pixels.
std::string PixelBomb() {
  std::string jpeg = test::FixtureFrames("0").front();
  const size_t sof = jpeg.find("\xff\xc0", 0, 2);
  BOOST_REQUIRE(sof != std::string::npos);
  for (size_t i : {5u, 7u}) {  // height, then width, big-endian
    jpeg[sof + i] = static_cast<char>(60000 >> 8);
    jpeg[sof + i + 1] = static_cast<char>(60000 & 0xff);
  }
  return jpeg;
}

BOOST_AUTO_TEST_SUITE(error_test)

BOOST_AUTO_TEST_CASE(every_error_type_survives_added_context) {
  ExpectKeptWithContext(NotFoundError("a"));
  ExpectKeptWithContext(IdNotFoundError("b"));
  ExpectKeptWithContext(InvalidArgumentError("c"));
  ExpectKeptWithContext(OutOfRangeError("d"));
  ExpectKeptWithContext(CorruptionError("e"));
  ExpectKeptWithContext(IoError("f"));
  ExpectKeptWithContext(BusyError("g"));
  ExpectKeptWithContext(ResourceExhaustedError("h"));
  ExpectKeptWithContext(OutOfMemoryError("i"));
  ExpectKeptWithContext(LimitExceededError("j"));
  BOOST_TEST((OutOfMemoryError("x").code() == ErrorCode::kResourceExhausted));
  BOOST_TEST((LimitExceededError("x").code() == ErrorCode::kResourceExhausted));
}

// A shard video removed while merge copies the shard: the merge adds its
// context to the shard's IdNotFoundError, which must stay one.
BOOST_AUTO_TEST_CASE(merge_keeps_id_not_found_when_it_adds_context) {
  TempDir tmp;
  {
    auto shard = Dataset::Create(tmp / "shard");
    auto w = shard->NewWriter();
    for (const char* id : {"a", "b", "c"}) {
      w->Append(id, test::Views({test::FakeJpeg(64, 1)}), "{}");
    }
    w->Commit();
  }
  struct Context {
    std::string shard;
    bool removed = false;
  } context{tmp / "shard"};
  engine::fault::SetPointHook(
      [](engine::fault::Point point, void* c) {
        auto* ctx = static_cast<Context*>(c);
        if (point != engine::fault::Point::kFramesWritten || ctx->removed) return;
        ctx->removed = true;  // after the first copied video, "b" disappears
        OpenOptions rw;
        rw.read_only = false;
        Dataset::Open(ctx->shard, rw)->Remove({"b"});
      },
      &context);
  try {
    Merge(tmp / "out", {tmp / "shard"});
    BOOST_ERROR("the merge did not see the removed id");
  } catch (const IdNotFoundError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("merge " + tmp / "shard") == 0u, what);
    BOOST_TEST(what.find("'b'") != std::string::npos, what);
  } catch (const Error& e) {
    BOOST_ERROR("wrong type for: " << e.what());
  }
  engine::fault::SetPointHook(nullptr, nullptr);
  BOOST_TEST(context.removed);
}

BOOST_AUTO_TEST_CASE(decoded_read_keeps_out_of_memory_when_it_adds_context) {
  TempDir tmp;
  auto ds = Dataset::Create(tmp / "d");
  {
    auto w = ds->NewWriter();
    w->Append("bomb", test::Views({PixelBomb()}), "{}");
    w->Commit();
  }
  try {
    ds->ReadFrames("bomb");
    BOOST_ERROR("a 60000 x 60000 frame was decoded");
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("decode id 'bomb' frame 0") == 0u, what);
    BOOST_TEST(what.find("exceeds the limit") != std::string::npos, what);
  }
  BOOST_CHECK_THROW(ds->ReadFrames("missing"), IdNotFoundError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
