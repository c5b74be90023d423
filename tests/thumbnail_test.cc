// Dataset::ReadThumbnails (dataset.h): which frames are sent as stored, which
// scale the DCT-scaled decode takes, the resize past 1/8, the bytes (the
// encoder is deterministic, so a thumbnail equals the encoding of the
// pixels it was made from), and the errors (H.264 frames:
// thumbnail_h264_test.cc).
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "tests/support/test_util.h"

namespace gulpdb {
namespace {

using test::Contains;
using test::TempDir;

// A smooth image of `channels` channels that differs with `seed`.
std::string Jpeg(int width, int height, int channels, int seed) {
  std::vector<uint8_t> px(static_cast<size_t>(width) * static_cast<size_t>(height) *
                          static_cast<size_t>(channels));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        px[static_cast<size_t>((y * width + x) * channels + c)] =
            static_cast<uint8_t>((x * 255 / width + y * 2 + c * 60 + seed * 40) % 256);
      }
    }
  }
  return ThreadLocalEncoder().Encode(px.data(), width, height, channels);
}

ImageShape ShapeOf(std::string_view jpeg) {
  return ThreadLocalDecoder().OutputShape(reinterpret_cast<const uint8_t*>(jpeg.data()),
                                          jpeg.size());
}

// The thumbnail the pixels of `frames` (one frame) make at quality 85, 4:4:4.
std::string EncodeAsThumbnail(const DecodedFrames& frames) {
  EncodeOptions options;
  options.quality = 85;
  options.subsampling = Subsampling::k444;
  const ImageShape& s = frames.shape(0);
  return ThreadLocalEncoder().Encode(frames.data(0), s.width, s.height, s.channels, options);
}

struct Fixture {
  TempDir tmp;
  std::unique_ptr<Dataset> ds;
  // Videos of one frame each, by size.
  Fixture() {
    {
      auto rw = Dataset::Create(tmp.path());
      auto w = rw->NewWriter();
      const auto add = [&](const char* id, const std::vector<std::string>& frames) {
        w->Append(id, test::Views(frames));
      };
      add("small", {Jpeg(64, 48, 3, 0), Jpeg(64, 48, 3, 1)});
      add("vga", {Jpeg(640, 480, 3, 2)});
      add("half", {Jpeg(320, 240, 3, 3)});
      add("odd", {Jpeg(400, 300, 3, 4)});
      add("huge", {Jpeg(2000, 1500, 3, 5)});
      add("tall", {Jpeg(90, 1000, 3, 6)});
      add("gray", {Jpeg(320, 240, 1, 7)});
      w->Commit();
    }
    ds = Dataset::Open(tmp.path());
  }
  std::string Thumb(const char* id, int max_side, int frame = 0) const {
    ThumbnailOptions options;
    options.max_side = max_side;
    const StoredFrames t = ds->ReadThumbnails(id, Selection::Indices({frame}), options);
    BOOST_REQUIRE_EQUAL(t.size(), 1u);
    return std::string(t[0]);
  }
  DecodedFrames Scaled(const char* id, int denom) const {
    DecodeOptions options;
    options.scale_denom = denom;
    return ds->ReadFrames(id, Selection::Indices({0}), options);
  }
};

BOOST_AUTO_TEST_SUITE(thumbnail_test)

BOOST_AUTO_TEST_CASE(a_frame_that_fits_is_sent_as_stored) {
  Fixture f;
  const StoredFrames stored = f.ds->ReadJpegs("small");
  ThumbnailOptions options;
  options.max_side = 160;
  const StoredFrames thumbs = f.ds->ReadThumbnails("small", Selection::All(), options);
  BOOST_REQUIRE_EQUAL(thumbs.size(), 2u);
  BOOST_TEST(thumbs.indices() == stored.indices());
  BOOST_TEST(thumbs[0] == stored[0]);
  BOOST_TEST(thumbs[1] == stored[1]);
  BOOST_TEST(thumbs[0] != thumbs[1]);
  // max_side 0 sends every frame as stored, whatever its size.
  BOOST_TEST(f.Thumb("vga", 0) == std::string(f.ds->ReadJpegs("vga")[0]));
}

BOOST_AUTO_TEST_CASE(a_larger_frame_is_the_dct_scaled_decode_encoded_again) {
  Fixture f;
  // 640x480 into 160: 1/4 fits exactly; 320x240: 1/2.
  const std::string vga = f.Thumb("vga", 160);
  BOOST_TEST((ShapeOf(vga) == ImageShape{120, 160, 3}));
  BOOST_TEST(vga == EncodeAsThumbnail(f.Scaled("vga", 4)));
  BOOST_TEST(vga != EncodeAsThumbnail(f.Scaled("vga", 2)));
  const std::string half = f.Thumb("half", 160);
  BOOST_TEST(half == EncodeAsThumbnail(f.Scaled("half", 2)));
  // 400x300: 1/2 (200x150) is too large, 1/4 (100x75) is the largest that fits.
  const std::string odd = f.Thumb("odd", 160);
  BOOST_TEST((ShapeOf(odd) == ImageShape{75, 100, 3}));
  BOOST_TEST(odd == EncodeAsThumbnail(f.Scaled("odd", 4)));
  // A grayscale frame stays grayscale.
  const std::string gray = f.Thumb("gray", 160);
  BOOST_TEST((ShapeOf(gray) == ImageShape{120, 160, 1}));
  BOOST_TEST(gray == EncodeAsThumbnail(f.Scaled("gray", 2)));
}

BOOST_AUTO_TEST_CASE(a_frame_more_than_eight_times_too_large_is_resized_to_fit) {
  Fixture f;
  // 2000x1500 into 160: 1/8 is 250x188, so 1/8 then bilinear to 160x120.
  const std::string huge = f.Thumb("huge", 160);
  BOOST_TEST((ShapeOf(huge) == ImageShape{120, 160, 3}));
  DecodeOptions options;
  options.out_height = 120;
  options.out_width = 160;
  options.resize = ResizeMode::kStretch;
  BOOST_TEST(huge == EncodeAsThumbnail(f.ds->ReadFrames("huge", Selection::All(), options)));
  // The aspect ratio is kept: 90x1000 into 64 is 6x64 (rounded).
  BOOST_TEST((ShapeOf(f.Thumb("tall", 64)) == ImageShape{64, 6, 3}));
  // Never a side of 0: 90x1000 into 16 is 1x16.
  BOOST_TEST((ShapeOf(f.Thumb("tall", 16)) == ImageShape{16, 1, 3}));
}

BOOST_AUTO_TEST_CASE(a_batch_gives_each_requests_thumbnails_in_order) {
  Fixture f;
  std::vector<FrameRequest> requests(4);
  requests[0].id = "vga";
  requests[1].id = "small";
  requests[1].selection = Selection::Indices({1, 0});
  requests[2].id = "huge";
  requests[3].id = "gray";
  ThumbnailOptions options;
  options.max_side = 160;
  const std::vector<StoredFrames> batch = f.ds->ReadThumbnailBatch(requests, options);
  BOOST_REQUIRE_EQUAL(batch.size(), 4u);
  for (size_t r = 0; r < requests.size(); ++r) {
    const StoredFrames one = f.ds->ReadThumbnails(requests[r].id, requests[r].selection, options);
    BOOST_REQUIRE_EQUAL(batch[r].size(), one.size());
    BOOST_TEST(batch[r].indices() == one.indices());
    for (size_t i = 0; i < one.size(); ++i) BOOST_TEST(batch[r][i] == one[i]);
  }
  BOOST_TEST(batch[1].indices() == (std::vector<uint32_t>{1, 0}));
  BOOST_TEST(f.ds->ReadThumbnailBatch({}, options).empty());
  // The first request that fails names itself.
  requests[2].id = "nope";
  BOOST_CHECK_THROW(f.ds->ReadThumbnailBatch(requests, options), IdNotFoundError);
}

BOOST_AUTO_TEST_CASE(bad_options_ids_and_frames_are_refused) {
  Fixture f;
  ThumbnailOptions options;
  options.max_side = -1;
  BOOST_CHECK_THROW(f.ds->ReadThumbnails("vga", Selection::All(), options), InvalidArgumentError);
  options.max_side = 65501;
  BOOST_CHECK_THROW(f.ds->ReadThumbnails("vga", Selection::All(), options), InvalidArgumentError);
  options.max_side = 160;
  for (const int quality : {0, 101}) {
    options.quality = quality;
    BOOST_CHECK_THROW(f.ds->ReadThumbnails("vga", Selection::All(), options), InvalidArgumentError);
  }
  options.quality = 85;
  BOOST_CHECK_THROW(f.ds->ReadThumbnails("../vga", Selection::All(), options), IdNotFoundError);
  BOOST_CHECK_THROW(f.ds->ReadThumbnails("vga", Selection::Indices({1}), options), OutOfRangeError);
}

BOOST_AUTO_TEST_CASE(a_damaged_frame_is_a_corruption_error_naming_the_id_and_frame) {
  TempDir tmp;
  {
    auto rw = Dataset::Create(tmp.path());
    auto w = rw->NewWriter();
    w->Append("bad", {Jpeg(320, 240, 3, 0), test::FakeJpeg(4000, 1)});
    w->Commit();
  }
  auto ds = Dataset::Open(tmp.path());
  ThumbnailOptions options;
  options.max_side = 160;
  BOOST_TEST(ds->ReadThumbnails("bad", Selection::Indices({0}), options).size() == 1u);
  try {
    ds->ReadThumbnails("bad", Selection::All(), options);
    BOOST_FAIL("a frame that does not decode made a thumbnail");
  } catch (const CorruptionError& e) {
    BOOST_TEST(Contains(e.what(), "thumbnail id 'bad'"));
    BOOST_TEST(Contains(e.what(), "frame 1"));
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
