// Dataset::ReadThumbnails of an h264 dataset: frames decoded, resized to
// fit (engine/codec/resample.h's bilinear) and encoded.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "engine/codec/resample.h"
#include "gulpdb/dataset.h"
#include "gulpdb/jpeg.h"
#include "tests/support/h264_encode.h"
#include "tests/support/test_util.h"

namespace gulpdb {
namespace {

using test::TempDir;

ImageShape ShapeOf(std::string_view jpeg) {
  return ThreadLocalDecoder().OutputShape(reinterpret_cast<const uint8_t*>(jpeg.data()),
                                          jpeg.size());
}

BOOST_AUTO_TEST_SUITE(thumbnail_h264_test)

BOOST_AUTO_TEST_CASE(h264_frames_are_decoded_resized_and_encoded) {
  TempDir tmp;
  test::H264Settings s;
  s.frames = 16;
  s.gop = 8;
  s.width = 320;
  s.height = 240;
  {
    CreateOptions create;
    create.codec = Codec::kH264;
    auto rw = Dataset::Create(tmp.path(), create);
    auto w = rw->NewWriter();
    w->AppendH264("clip", test::EncodeLavfi("testsrc2", s));
    w->Commit();
  }
  auto ds = Dataset::Open(tmp.path());
  ThumbnailOptions options;
  options.max_side = 100;
  const StoredFrames thumbs = ds->ReadThumbnails("clip", Selection::Indices({9, 3}), options);
  BOOST_REQUIRE_EQUAL(thumbs.size(), 2u);
  BOOST_TEST(thumbs.indices() == (std::vector<uint32_t>{9, 3}));
  for (size_t i = 0; i < 2; ++i) {
    const DecodedFrames full =
        ds->ReadFrames("clip", Selection::Indices({static_cast<int64_t>(thumbs.indices()[i])}));
    const std::vector<uint8_t> small = engine::ResizeBilinear(full.data(0), 320, 240, 3, 100, 75);
    EncodeOptions encode;
    encode.quality = 85;
    BOOST_TEST(std::string(thumbs[i]) ==
               ThreadLocalEncoder().Encode(small.data(), 100, 75, 3, encode));
  }
  // At its own size: the decoded frame, encoded.
  options.max_side = 0;
  const StoredFrames whole = ds->ReadThumbnails("clip", Selection::Indices({0}), options);
  BOOST_TEST((ShapeOf(whole[0]) == ImageShape{240, 320, 3}));
}
BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
