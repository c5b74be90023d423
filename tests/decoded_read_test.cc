#include <boost/test/unit_test.hpp>
#include <map>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "support/test_util.h"

namespace gulpdb {
namespace {

using test::TempDir;

// A smooth test image with `channels` channels.
std::vector<uint8_t> Pattern(int w, int h, int channels, int seed) {
  std::vector<uint8_t> px(static_cast<size_t>(w * h * channels));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        px[static_cast<size_t>((y * w + x) * channels + c)] =
            static_cast<uint8_t>((x * 3 + y * 2 + c * 50 + seed * 17) % 256);
      }
    }
  }
  return px;
}

std::string Encode(int w, int h, int channels, int seed) {
  const auto px = Pattern(w, h, channels, seed);
  return ThreadLocalEncoder().Encode(px.data(), w, h, channels);
}

std::unique_ptr<Dataset> OpenWithThreads(const std::string& dir, size_t threads) {
  OpenOptions o;
  o.decode_threads = threads;
  return Dataset::Open(dir, o);
}

// Every frame decoded through the dataset equals the same bytes decoded directly.
void CheckMatchesDirectDecode(const Dataset& ds, const std::string& id,
                              const std::vector<std::string>& jpegs, const DecodeOptions& opts) {
  const DecodedFrames got = ds.ReadFrames(id, Selection::All(), opts);
  BOOST_REQUIRE_EQUAL(got.size(), jpegs.size());
  for (size_t i = 0; i < jpegs.size(); ++i) {
    ImageShape shape;
    const std::vector<uint8_t> want = ThreadLocalDecoder().Decode(
        reinterpret_cast<const uint8_t*>(jpegs[i].data()), jpegs[i].size(), opts, &shape);
    BOOST_TEST((got.shape(i) == shape));
    BOOST_TEST(std::equal(want.begin(), want.end(), got.data(i)));
  }
}

BOOST_AUTO_TEST_SUITE(decoded_read_test)

BOOST_AUTO_TEST_CASE(real_frames_decode_like_the_codec_with_any_thread_count) {
  TempDir tmp;
  std::map<std::string, std::vector<std::string>> videos;
  {
    auto ds = Dataset::Create(tmp.path());
    auto w = ds->NewWriter();
    for (const char* name : {"0", "5", "9", "15", "21"}) {
      videos[name] = test::FixtureFrames(name);
      w->Append(name, test::Views(videos[name]));
    }
    w->Commit();
  }
  for (size_t threads : {1u, 2u, 4u}) {
    auto ds = OpenWithThreads(tmp.path(), threads);
    for (const auto& [id, jpegs] : videos) {
      CheckMatchesDirectDecode(*ds, id, jpegs, DecodeOptions{});
      DecodeOptions accurate;
      accurate.dct = DctMethod::kAccurate;
      CheckMatchesDirectDecode(*ds, id, jpegs, accurate);
    }
  }
}

BOOST_AUTO_TEST_CASE(uniform_videos_form_one_array_and_mixed_ones_do_not) {
  TempDir tmp;
  auto ds = Dataset::Create(tmp.path());
  const std::vector<std::string> same = {Encode(33, 17, 3, 1), Encode(33, 17, 3, 2),
                                         Encode(33, 17, 3, 3)};
  const std::vector<std::string> mixed = {Encode(64, 48, 3, 1), Encode(48, 64, 3, 2),
                                          Encode(7, 5, 1, 3)};
  auto w = ds->NewWriter();
  w->Append("same", test::Views(same));
  w->Append("mixed", test::Views(mixed));
  w->Commit();

  const DecodedFrames u = ds->ReadFrames("same", Selection::Slice(std::nullopt, std::nullopt, -1));
  BOOST_TEST(u.uniform());
  BOOST_TEST(u.byte_size() == 3u * 33 * 17 * 3);
  BOOST_TEST(u.indices() == (std::vector<uint32_t>{2, 1, 0}), boost::test_tools::per_element());
  // Frame i of the array starts right after frame i-1.
  BOOST_TEST(u.data(1) == u.data(0) + 33 * 17 * 3);

  const DecodedFrames m = ds->ReadFrames("mixed");
  BOOST_TEST(!m.uniform());
  BOOST_TEST((m.shape(0) == ImageShape{48, 64, 3}));
  BOOST_TEST((m.shape(1) == ImageShape{64, 48, 3}));
  BOOST_TEST((m.shape(2) == ImageShape{5, 7, 1}));  // grayscale comes back with one channel

  DecodeOptions half;
  half.scale_denom = 2;
  half.format = PixelFormat::kGray;
  const DecodedFrames s = ds->ReadFrames("mixed", Selection::All(), half);
  BOOST_TEST((s.shape(0) == ImageShape{24, 32, 1}));
  BOOST_TEST((s.shape(2) == ImageShape{3, 4, 1}));
  BOOST_TEST(ds->ReadFrames("mixed", Selection::Slice(5, 9)).empty());
}

// A read lays a video out by its first frame's shape and decodes every frame
// in place; a frame of another shape further on makes it lay the video out
// again from every header. Both ways give the codec's pixels, in one batch
// with uniform videos, on any number of threads.
BOOST_AUTO_TEST_CASE(a_frame_of_another_shape_after_the_first_is_laid_out_again) {
  TempDir tmp;
  std::map<std::string, std::vector<std::string>> videos;
  for (int f = 0; f < 9; ++f) {
    videos["late"].push_back(f == 3   ? Encode(20, 40, 3, f)
                             : f == 6 ? Encode(17, 33, 3, f)
                                      : Encode(33, 17, 3, f));
    videos["gray"].push_back(f == 8 ? Encode(33, 17, 1, f) : Encode(33, 17, 3, f));
    videos["same"].push_back(Encode(33, 17, 3, f + 20));
  }
  {
    auto ds = Dataset::Create(tmp.path());
    auto w = ds->NewWriter();
    for (const auto& [id, jpegs] : videos) w->Append(id, test::Views(jpegs));
    w->Commit();
  }
  for (size_t threads : {1u, 2u, 3u}) {
    auto ds = OpenWithThreads(tmp.path(), threads);
    for (const auto& [id, jpegs] : videos)
      CheckMatchesDirectDecode(*ds, id, jpegs, DecodeOptions{});
    const std::vector<FrameRequest> requests = {{"same", Selection::All()},
                                                {"late", Selection::All()},
                                                {"gray", Selection::All()},
                                                {"late", Selection::Slice(4, 8)},
                                                {"same", Selection::Slice(3, 3)}};
    const std::vector<DecodedFrames> batch = ds->ReadBatch(requests);
    BOOST_REQUIRE_EQUAL(batch.size(), requests.size());
    BOOST_TEST(batch[0].uniform());
    BOOST_TEST(!batch[1].uniform());
    BOOST_TEST((batch[1].shape(3) == ImageShape{40, 20, 3}));
    BOOST_TEST((batch[1].shape(6) == ImageShape{33, 17, 3}));
    BOOST_TEST((batch[2].shape(8) == ImageShape{17, 33, 1}));
    BOOST_TEST(batch[4].empty());
    for (size_t r = 0; r < requests.size(); ++r) {
      const DecodedFrames single = ds->ReadFrames(requests[r].id, requests[r].selection);
      BOOST_REQUIRE_EQUAL(batch[r].size(), single.size());
      BOOST_REQUIRE_EQUAL(batch[r].byte_size(), single.byte_size());
      size_t laid_out = 0;  // frames back to back, in one buffer
      for (size_t i = 0; i < single.size(); ++i) {
        BOOST_TEST(batch[r].data(i) == batch[r].data(0) + laid_out);
        laid_out += batch[r].shape(i).bytes();
        BOOST_TEST((batch[r].shape(i) == single.shape(i)));
        const std::vector<uint8_t> want = ThreadLocalDecoder().Decode(
            reinterpret_cast<const uint8_t*>(videos[requests[r].id][batch[r].indices()[i]].data()),
            videos[requests[r].id][batch[r].indices()[i]].size());
        BOOST_REQUIRE_EQUAL(want.size(), batch[r].shape(i).bytes());
        BOOST_TEST(std::equal(want.begin(), want.end(), batch[r].data(i)));
      }
      BOOST_TEST(batch[r].byte_size() == laid_out);
    }
  }
}

BOOST_AUTO_TEST_CASE(batch_equals_single_reads) {
  TempDir tmp;
  auto ds = Dataset::Create(tmp.path());
  auto w = ds->NewWriter();
  for (int v = 0; v < 6; ++v) {
    std::vector<std::string> frames;
    for (int f = 0; f < 4; ++f) frames.push_back(Encode(40 + v, 30, 3, v * 10 + f));
    w->Append("v" + std::to_string(v), test::Views(frames));
  }
  w->Commit();
  std::vector<FrameRequest> requests;
  for (int v = 5; v >= 0; --v) {
    requests.push_back({"v" + std::to_string(v), Selection::Indices({3, 0})});
  }
  const std::vector<DecodedFrames> batch = ds->ReadBatch(requests);
  BOOST_REQUIRE_EQUAL(batch.size(), requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    const DecodedFrames single = ds->ReadFrames(requests[r].id, requests[r].selection);
    BOOST_REQUIRE_EQUAL(batch[r].byte_size(), single.byte_size());
    BOOST_TEST(std::equal(single.data(0), single.data(0) + single.byte_size(), batch[r].data(0)));
  }
  BOOST_CHECK_THROW(ds->ReadBatch({{"v1", Selection::All()}, {"missing", Selection::All()}}),
                    NotFoundError);
}

BOOST_AUTO_TEST_CASE(corrupt_frame_names_id_and_frame) {
  TempDir tmp;
  auto ds = Dataset::Create(tmp.path());
  std::string good = Encode(64, 64, 3, 1);
  // Keep the headers and markers but cut the entropy-coded data short.
  const size_t sos = good.find("\xff\xda");
  BOOST_REQUIRE(sos != std::string::npos);
  std::string cut = good.substr(0, sos + (good.size() - sos) / 2) + "\xff\xd9";
  auto w = ds->NewWriter();
  w->Append("vid", {good, cut});
  w->Commit();
  BOOST_CHECK_NO_THROW(ds->ReadFrames("vid", Selection::Indices({0})));
  try {
    ds->ReadFrames("vid");
    BOOST_FAIL("a corrupt frame must throw");
  } catch (const CorruptionError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("'vid'") != std::string::npos);
    BOOST_TEST(what.find("frame 1") != std::string::npos);
  }
  DecodeOptions lenient;
  lenient.lenient = true;
  BOOST_CHECK_NO_THROW(ds->ReadFrames("vid", Selection::All(), lenient));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
