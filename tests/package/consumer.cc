// A program that uses an installed gulpdb as its users do: it creates a
// dataset, appends a video in a transaction, reads it back as JPEG bytes and
// as pixels, and catches a typed error thrown inside the library (which needs
// the error types' run-time type information across a shared library).
// tests/package/package_test.sh builds it against find_package(gulpdb) and
// against `pkg-config gulpdb`, with a static and with a shared libgulpdb.
//
//   consumer DIR     DIR must not exist; prints "consumer: ok ..." and exits 0
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "consumer: FAILED: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  constexpr int kWidth = 16, kHeight = 8;

  std::vector<std::string> jpegs;
  gulpdb::JpegEncoder encoder;
  std::vector<uint8_t> pixels(size_t{kWidth} * kHeight * 3);
  for (int frame = 0; frame < 3; ++frame) {
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 + frame * 50);
    jpegs.push_back(encoder.Encode(pixels.data(), kWidth, kHeight, 3));
  }

  try {
    auto dataset = gulpdb::Dataset::Create(dir);
    auto writer = dataset->NewWriter();
    writer->Append("clip", {jpegs[0], jpegs[1], jpegs[2]}, R"({"label": "test"})");
    writer->Commit();
  } catch (const gulpdb::Error& e) {
    return Fail(std::string("create and append: ") + e.what());
  }

  auto dataset = gulpdb::Dataset::Open(dir);
  if (dataset->Count() != 1) return Fail("Count() is not 1");
  gulpdb::StoredFrames frames = dataset->ReadJpegs("clip", gulpdb::Selection::Slice(1, 3));
  if (frames.size() != 2 || frames[0] != jpegs[1] || frames[1] != jpegs[2]) {
    return Fail("ReadJpegs does not return the appended bytes");
  }
  gulpdb::DecodedFrames decoded = dataset->ReadFrames("clip", gulpdb::Selection::Indices({0}));
  const gulpdb::ImageShape expected{kHeight, kWidth, 3};
  if (decoded.size() != 1 || decoded.shape(0) != expected) return Fail("ReadFrames shape");

  try {
    dataset->Get("no such id");
    return Fail("Get of a missing id did not throw");
  } catch (const gulpdb::IdNotFoundError& e) {
    std::printf("consumer: ok (3 frames written, read back; missing id: %s)\n", e.what());
  }
  return 0;
}
