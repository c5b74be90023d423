// h264 datasets (issue 23's storage core): AppendH264, the stored form,
// ReadFrames/ReadBatch frame-exact against the ffmpeg program's decoding of
// the stored stream, resizing as the JPEG path resizes, what a clip decodes,
// the codec errors, merge and compaction, check --deep, and crash safety.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/codec/resample.h"
#include "engine/video/gop_decoder.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/maintenance.h"
#include "gulpdb/remote.h"
#include "tests/harness/s3_server.h"
#include "tests/support/h264_encode.h"
#include "tests/support/remote_fixture.h"
#include "tests/support/run_and_kill.h"
#include "tests/support/test_util.h"
#include "util/file_io.h"

namespace gulpdb {
namespace {

using test::Contains;
using test::H264Settings;
using test::RunAndKill;
using test::TempDir;

// One encoded video and the ffmpeg program's decoding of it.
struct Clip {
  std::string stream;
  std::string reference;  // RGB24 frames back to back
  int width = 0;
  int height = 0;
  size_t frames = 0;
  size_t frame_bytes() const {
    return static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  }
  std::string Frame(size_t k) const { return reference.substr(k * frame_bytes(), frame_bytes()); }
};

Clip MakeClip(const std::string& source, const H264Settings& s) {
  Clip c;
  c.stream = test::EncodeLavfi(source, s);
  c.reference = test::FfmpegDecodeRgb(c.stream);
  c.width = s.width;
  c.height = s.height;
  c.frames = static_cast<size_t>(s.frames);
  BOOST_REQUIRE_EQUAL(c.reference.size(), c.frames * c.frame_bytes());
  return c;
}

// testsrc2, 64 frames, GOP 8, 320x240 4:2:0.
const Clip& Testsrc() {
  static const Clip clip = [] {
    H264Settings s;
    s.gop = 8;
    s.frames = 64;
    return MakeClip("testsrc2", s);
  }();
  return clip;
}

// mandelbrot, 24 frames, GOP 8, odd-sized 161x121 4:4:4.
const Clip& Odd444() {
  static const Clip clip = [] {
    H264Settings s;
    s.gop = 8;
    s.frames = 24;
    s.width = 161;
    s.height = 121;
    s.pix_fmt = "yuv444p";
    return MakeClip("mandelbrot", s);
  }();
  return clip;
}

CreateOptions H264Create() {
  CreateOptions o;
  o.codec = Codec::kH264;
  return o;
}

std::unique_ptr<Dataset> OpenRo(const std::string& dir, size_t threads = 2) {
  OpenOptions o;
  o.decode_threads = threads;
  return Dataset::Open(dir, o);
}

std::unique_ptr<Dataset> OpenRw(const std::string& dir) {
  OpenOptions o;
  o.read_only = false;
  return Dataset::Open(dir, o);
}

// A dataset in `dir` holding "t" (Testsrc) and "odd" (Odd444), committed.
void MakeDataset(const std::string& dir) {
  auto ds = Dataset::Create(dir, H264Create());
  auto w = ds->NewWriter();
  BOOST_REQUIRE(w->AppendH264("t", Testsrc().stream, R"({"label": "a"})"));
  BOOST_REQUIRE(w->AppendH264("odd", Odd444().stream));
  w->Commit();
}

// Checks that `got` holds exactly `frames` of `clip` at its full size.
void ExpectFrames(const DecodedFrames& got, const Clip& clip, const std::vector<int64_t>& frames,
                  const std::string& what) {
  BOOST_REQUIRE_EQUAL(got.size(), frames.size());
  BOOST_REQUIRE(got.uniform());
  BOOST_REQUIRE(got.shape(0) == (ImageShape{clip.height, clip.width, 3}));
  for (size_t i = 0; i < frames.size(); ++i) {
    const auto k = static_cast<size_t>(frames[i]);
    BOOST_REQUIRE_EQUAL(got.indices()[i], k);
    const std::string pixels(reinterpret_cast<const char*>(got.data(i)), clip.frame_bytes());
    if (pixels != clip.Frame(k)) {
      BOOST_ERROR(what << ": frame " << k << " (slot " << i << ") differs from ffmpeg's decode");
    }
  }
}

std::vector<int64_t> Range(int64_t first, int64_t stop) {
  std::vector<int64_t> out;
  for (int64_t k = first; k < stop; ++k) out.push_back(k);
  return out;
}

// Reads `frames` of `id` and checks them against `clip`.
void ReadAndCheck(const Dataset& ds, const std::string& id, const Clip& clip,
                  const std::vector<int64_t>& frames, const std::string& what) {
  ExpectFrames(ds.ReadFrames(id, Selection::Indices(frames)), clip, frames, what);
}

template <typename F>
void ExpectInvalid(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    BOOST_ERROR("no error");
  } catch (const InvalidArgumentError& e) {
    for (const std::string& part : parts) {
      BOOST_CHECK_MESSAGE(Contains(e.what(), part), "'" << e.what() << "' lacks '" << part << "'");
    }
  }
}

BOOST_AUTO_TEST_SUITE(h264_dataset_test)

BOOST_AUTO_TEST_CASE(codec_names) {
  BOOST_TEST(std::string(CodecName(Codec::kJpeg)) == "jpeg");
  BOOST_TEST(std::string(CodecName(Codec::kH264)) == "h264");
  BOOST_TEST((CodecFromName("h264") == Codec::kH264));
  BOOST_TEST((CodecFromName("jpeg") == Codec::kJpeg));
  BOOST_TEST(!CodecFromName("H264").has_value());
  BOOST_TEST(!CodecFromName("").has_value());
}

// The stored form: one frame per packet, padded as GulpIO pads, a CRC-32C
// per packet, the keyframes; the stored stream is the appended one.
BOOST_AUTO_TEST_CASE(stored_form_and_stream) {
  TempDir tmp;
  MakeDataset(tmp.path());
  auto ds = OpenRo(tmp.path());
  BOOST_TEST((ds->codec() == Codec::kH264));
  BOOST_TEST((ds->Stats().codec == Codec::kH264));
  const VideoInfo v = ds->Get("t");
  BOOST_REQUIRE_EQUAL(v.frames.size(), 64u);
  BOOST_REQUIRE_EQUAL(v.checksums.size(), 64u);
  BOOST_TEST(v.keyframes == (std::vector<uint32_t>{0, 8, 16, 24, 32, 40, 48, 56}),
             boost::test_tools::per_element());
  BOOST_TEST(v.meta_data == R"([{"label": "a"}])");
  uint64_t packet_bytes = 0;
  for (size_t k = 0; k < v.frames.size(); ++k) {
    BOOST_TEST(v.frames[k].length % 4 == 0u);
    if (k > 0) BOOST_TEST(v.frames[k].offset == v.frames[k - 1].offset + v.frames[k - 1].length);
    packet_bytes += v.frames[k].jpeg_size();
  }
  BOOST_TEST(packet_bytes == Testsrc().stream.size());
  BOOST_TEST(ds->ReadH264Stream("t") == Testsrc().stream);
  BOOST_TEST(ds->ReadH264Stream("odd") == Odd444().stream);
  BOOST_TEST(ds->FrameCount("odd") == 24u);
  // A JPEG dataset's videos have no keyframes.
  TempDir jpeg_dir;
  auto jpeg = Dataset::Create(jpeg_dir.path());
  BOOST_TEST((jpeg->codec() == Codec::kJpeg));
  BOOST_TEST((jpeg->Stats().codec == Codec::kJpeg));
}

// Every frame read alone in random order, random contiguous ranges and
// scattered sets equal the ffmpeg program's decoding of the whole stream,
// for a 4:2:0 and an odd-sized 4:4:4 video, after reopening.
BOOST_AUTO_TEST_CASE(frames_equal_ffmpegs_decode_in_any_order) {
  TempDir tmp;
  MakeDataset(tmp.path());
  auto ds = OpenRo(tmp.path());
  std::mt19937 rng(23);
  for (const auto& [id, clip] : {std::pair<std::string, const Clip*>{"t", &Testsrc()},
                                 std::pair<std::string, const Clip*>{"odd", &Odd444()}}) {
    const auto n = static_cast<int64_t>(clip->frames);
    // Every frame, alone, in random order.
    std::vector<int64_t> order = Range(0, n);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t k : order) ReadAndCheck(*ds, id, *clip, {k}, id + " alone");
    // The whole video, and random contiguous ranges.
    ExpectFrames(ds->ReadFrames(id), *clip, Range(0, n), id + " whole");
    for (int i = 0; i < 12; ++i) {
      const int64_t first = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
      const int64_t len =
          std::uniform_int_distribution<int64_t>(1, std::min<int64_t>(20, n - first))(rng);
      ReadAndCheck(*ds, id, *clip, Range(first, first + len), id + " range");
    }
    // Scattered sets, any order, with repeats.
    for (int i = 0; i < 12; ++i) {
      std::vector<int64_t> set;
      const int count = std::uniform_int_distribution<int>(1, 9)(rng);
      for (int j = 0; j < count; ++j)
        set.push_back(std::uniform_int_distribution<int64_t>(0, n - 1)(rng));
      ReadAndCheck(*ds, id, *clip, set, id + " scattered");
    }
  }
  // A batch of both videos, each frame where it belongs.
  std::vector<FrameRequest> batch(3);
  batch[0].id = "odd";
  batch[0].selection = Selection::Indices({23, 0, 9});
  batch[1].id = "t";
  batch[1].selection = Selection::Slice(30, 50, 1);
  batch[2].id = "t";
  batch[2].selection = Selection::Indices({63, 1});
  const std::vector<DecodedFrames> got = ds->ReadBatch(batch);
  BOOST_REQUIRE_EQUAL(got.size(), 3u);
  ExpectFrames(got[0], Odd444(), {23, 0, 9}, "batch odd");
  ExpectFrames(got[1], Testsrc(), Range(30, 50), "batch t");
  ExpectFrames(got[2], Testsrc(), {63, 1}, "batch t again");
  // BGR is RGB with red and blue swapped.
  DecodeOptions bgr;
  bgr.format = PixelFormat::kBGR;
  const DecodedFrames b = ds->ReadFrames("t", Selection::Indices({5}), bgr);
  std::string want = Testsrc().Frame(5);
  for (size_t i = 0; i + 2 < want.size(); i += 3) std::swap(want[i], want[i + 2]);
  BOOST_TEST((std::string(reinterpret_cast<const char*>(b.data(0)), b.byte_size()) == want));
}

// size= resizes each decoded frame with the JPEG path's resampler and
// geometry (jpeg.h, "Fixed-size output"), from the full frame.
BOOST_AUTO_TEST_CASE(fixed_size_output_resizes_as_the_jpeg_path) {
  TempDir tmp;
  MakeDataset(tmp.path());
  auto ds = OpenRo(tmp.path());
  struct Case {
    int h, w;
    ResizeMode resize;
    CropMode crop;
  };
  for (const Case& c : {Case{112, 112, ResizeMode::kShortEdge, CropMode::kCenter},
                        Case{100, 60, ResizeMode::kFit, CropMode::kCenter},
                        Case{64, 96, ResizeMode::kStretch, CropMode::kCenter},
                        Case{90, 90, ResizeMode::kShortEdge, CropMode::kRandom},
                        Case{400, 500, ResizeMode::kShortEdge, CropMode::kCenter}}) {
    for (const auto& [id, clip] : {std::pair<std::string, const Clip*>{"t", &Testsrc()},
                                   std::pair<std::string, const Clip*>{"odd", &Odd444()}}) {
      DecodeOptions o;
      o.out_height = c.h;
      o.out_width = c.w;
      o.resize = c.resize;
      o.crop = c.crop;
      o.crop_seed = 77;
      const std::vector<int64_t> frames{3, 17, 2};
      const DecodedFrames got = ds->ReadFrames(id, Selection::Indices(frames), o);
      BOOST_REQUIRE_EQUAL(got.size(), frames.size());
      BOOST_REQUIRE(got.uniform());
      BOOST_REQUIRE(got.shape(0) == (ImageShape{c.h, c.w, 3}));
      const FrameGeometry g = PlanFrameGeometry(clip->height, clip->width, o);
      for (size_t i = 0; i < frames.size(); ++i) {
        const std::string src = clip->Frame(static_cast<size_t>(frames[i]));
        std::string want(static_cast<size_t>(c.h) * static_cast<size_t>(c.w) * 3, '\0');
        const size_t row = static_cast<size_t>(c.w) * 3;
        const int wh = std::min(c.h, g.scaled_height);
        const int ww = std::min(c.w, g.scaled_width);
        engine::ResizeBilinearWindow(
            reinterpret_cast<const uint8_t*>(src.data()), clip->width, clip->height, 3,
            g.scaled_width, g.scaled_height, g.crop_x, g.crop_y, ww, wh,
            reinterpret_cast<uint8_t*>(want.data()) + static_cast<size_t>(g.pad_top) * row +
                static_cast<size_t>(g.pad_left) * 3,
            row);
        const std::string pixels(reinterpret_cast<const char*>(got.data(i)), want.size());
        BOOST_CHECK_MESSAGE(pixels == want, id << " " << c.h << "x" << c.w << " frame " << frames[i]
                                               << " differs from the resized decode");
      }
    }
  }
}

// A 16-frame clip at GOP 8 decodes only its GOPs' packets: 16 when it starts
// on a keyframe, and from the keyframe before it otherwise.
BOOST_AUTO_TEST_CASE(a_clip_decodes_each_gop_once) {
  TempDir tmp;
  MakeDataset(tmp.path());
  auto ds = OpenRo(tmp.path(), /*threads=*/1);  // decodes on this thread
  const video::GopDecoder::Stats& stats = video::GopDecoder::ForThisThread().stats();
  struct Case {
    int64_t first;
    uint64_t packets, gops;
  };
  for (const Case& c : {Case{8, 16, 2}, Case{20, 16 + 4, 3}, Case{48, 16, 2}}) {
    const uint64_t packets_before = stats.packets_sent;
    const uint64_t gops_before = stats.gops_decoded;
    ReadAndCheck(*ds, "t", Testsrc(), Range(c.first, c.first + 16), "clip");
    BOOST_TEST(stats.packets_sent - packets_before == c.packets);
    BOOST_TEST(stats.gops_decoded - gops_before == c.gops);
  }
  // Scattered frames decode only the GOPs they touch: frames 3 and 60 need
  // packets 0..3 and 56..60.
  const uint64_t before = stats.packets_sent;
  ReadAndCheck(*ds, "t", Testsrc(), {60, 3}, "scattered");
  BOOST_TEST(stats.packets_sent - before == 4u + 5u);
}

BOOST_AUTO_TEST_CASE(codec_errors) {
  TempDir tmp;
  MakeDataset(tmp.path());
  {
    auto ds = OpenRw(tmp.path());
    ExpectInvalid([&] { ds->ReadJpegs("t"); }, {"h264", "ReadFrames"});
    ExpectInvalid([&] { ds->ReadJpegBatch({FrameRequest{"t", Selection::All()}}); }, {"h264"});
    DecodeOptions accurate;
    accurate.dct = DctMethod::kAccurate;
    ExpectInvalid([&] { ds->ReadFrames("t", Selection::All(), accurate); }, {"h264", "dct"});
    DecodeOptions scaled;
    scaled.scale_denom = 2;
    ExpectInvalid([&] { ds->ReadFrames("t", Selection::All(), scaled); }, {"h264"});
    DecodeOptions gray;
    gray.format = PixelFormat::kGray;
    ExpectInvalid([&] { ds->ReadFrames("t", Selection::All(), gray); }, {"h264", "grayscale"});
    // The same refusals before any read (a PyTorch dataset checks its options
    // when it is made).
    ExpectInvalid([&] { ds->CheckDecodeOptions(accurate); }, {tmp.path(), "h264", "dct"});
    ExpectInvalid([&] { ds->CheckDecodeOptions(scaled); }, {"h264", "downscale"});
    ExpectInvalid([&] { ds->CheckDecodeOptions(gray); }, {"h264", "grayscale"});
    DecodeOptions sized;
    sized.out_height = 32;
    sized.out_width = 32;
    ds->CheckDecodeOptions(sized);
    DecodeOptions bgr;
    bgr.format = PixelFormat::kBGR;
    ds->CheckDecodeOptions(bgr);
    sized.out_width = -1;
    ExpectInvalid([&] { ds->CheckDecodeOptions(sized); }, {"output size"});
    auto w = ds->NewWriter();
    const std::string jpeg = test::FakeJpeg(100, 1);
    ExpectInvalid([&] { w->Append("j", {jpeg}); }, {"'j'", "h264", "AppendH264"});
    ExpectInvalid([&] { w->AppendEntry("j", {jpeg}, "[{}]"); }, {"h264"});
    ExpectInvalid([&] { w->AppendH264("junk", "this is not h264"); }, {"'junk'"});
    ExpectInvalid([&] { w->AppendH264("", Testsrc().stream); }, {"empty"});
    // Duplicates follow the writer's policy.
    ExpectInvalid([&] { w->AppendH264("t", Testsrc().stream); }, {"'t'", "exists"});
    BOOST_TEST(w->pending_videos() == 0u);
    w.reset();
    WriterOptions skip;
    skip.on_duplicate = OnDuplicate::kSkip;
    auto ws = ds->NewWriter(skip);
    BOOST_TEST(!ws->AppendH264("t", Odd444().stream));
    ws->Commit();
    ws.reset();
    BOOST_TEST(ds->FrameCount("t") == 64u);
    BOOST_CHECK_THROW(ds->ReadFrames("t", Selection::Indices({64})), OutOfRangeError);
    BOOST_CHECK_THROW(ds->ReadFrames("nope"), IdNotFoundError);
  }
  // A JPEG dataset takes no H.264 and has no stream.
  TempDir jpeg_dir;
  auto jpeg = Dataset::Create(jpeg_dir.path());
  {
    auto w = jpeg->NewWriter();
    ExpectInvalid([&] { w->AppendH264("v", Testsrc().stream); }, {"'v'", "jpeg"});
    const std::string frame = test::FakeJpeg(100, 1);
    w->Append("v", {frame});
    w->Commit();
  }
  ExpectInvalid([&] { jpeg->ReadH264Stream("v"); }, {"'v'", "jpeg"});
  // A JPEG dataset honours the JPEG-only options.
  DecodeOptions jpeg_only;
  jpeg_only.dct = DctMethod::kAccurate;
  jpeg_only.scale_denom = 2;
  jpeg_only.format = PixelFormat::kGray;
  jpeg->CheckDecodeOptions(jpeg_only);
}

// Merging datasets of different codecs is refused before anything changes;
// merging h264 datasets keeps them exact.
BOOST_AUTO_TEST_CASE(merge_checks_codecs) {
  TempDir tmp;
  MakeDataset(tmp / "h");
  {
    auto j = Dataset::Create(tmp / "j");
    auto w = j->NewWriter();
    const std::string frame = test::FakeJpeg(100, 1);
    w->Append("v", {frame});
    w->Commit();
  }
  ExpectInvalid([&] { Merge(tmp / "out", {tmp / "h", tmp / "j"}); }, {"codec", "h264", "jpeg"});
  BOOST_TEST(!Dataset::Exists(tmp / "out"));
  ExpectInvalid([&] { Merge(tmp / "j", {tmp / "h"}); }, {"codec"});
  // h264 into a new output: the output takes the codec.
  {
    auto h2 = Dataset::Create(tmp / "h2", H264Create());
    auto w = h2->NewWriter();
    w->AppendH264("t2", Testsrc().stream);
    w->Commit();
  }
  Merge(tmp / "m", {tmp / "h", tmp / "h2"});
  auto m = OpenRo(tmp / "m");
  BOOST_TEST((m->codec() == Codec::kH264));
  ReadAndCheck(*m, "t2", Testsrc(), {9, 33, 2}, "merged t2");
  ReadAndCheck(*m, "odd", Odd444(), Range(0, 24), "merged odd");
}

// Compaction moves packets exactly, with their keyframes and parameters.
BOOST_AUTO_TEST_CASE(compaction_keeps_videos_exact) {
  TempDir tmp;
  MakeDataset(tmp.path());
  {
    auto ds = OpenRw(tmp.path());
    {
      auto w = ds->NewWriter();
      w->AppendH264("t3", Testsrc().stream);
      w->Commit();
    }
    BOOST_TEST(ds->Remove({"t"}) == 1u);
    CompactOptions o;
    o.min_garbage_fraction = 0;
    const CompactReport r = Compact(*ds, o);
    BOOST_TEST(r.videos_moved >= 1u);
  }
  auto ds = OpenRo(tmp.path());
  BOOST_TEST(ds->Stats().garbage_bytes == 0u);
  ReadAndCheck(*ds, "odd", Odd444(), Range(0, 24), "compacted odd");
  ReadAndCheck(*ds, "t3", Testsrc(), {63, 8, 7}, "compacted t3");
  BOOST_TEST(ds->ReadH264Stream("t3") == Testsrc().stream);
  BOOST_TEST(Check(tmp.path(), CheckOptions{true, "", nullptr, ""}).problems.empty());
}

// check --deep: CRC of every packet and a decode of every GOP. A flipped
// byte in a packet is reported with the id and the frame; reads with
// verify_checksums and ReadH264Stream refuse it too.
BOOST_AUTO_TEST_CASE(deep_check_finds_a_flipped_byte) {
  TempDir tmp;
  MakeDataset(tmp.path());
  CheckOptions deep;
  deep.deep = true;
  {
    const CheckReport clean = Check(tmp.path(), deep);
    for (const CheckProblem& p : clean.problems) BOOST_ERROR(p.where << ": " << p.what);
    BOOST_TEST(clean.frames == 64u + 24u);
  }
  const VideoInfo v = OpenRo(tmp.path())->Get("t");
  const FrameInfo f = v.frames[19];
  const std::string chunk = tmp / OpenRo(tmp.path())->Chunks().at(v.chunk).file_name;
  {
    std::fstream file(chunk, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(f.offset + f.jpeg_size() / 2));
    char c = 0;
    file.read(&c, 1);
    c = static_cast<char>(c ^ 0x10);
    file.seekp(static_cast<std::streamoff>(f.offset + f.jpeg_size() / 2));
    file.write(&c, 1);
  }
  const CheckReport report = Check(tmp.path(), deep);
  BOOST_REQUIRE(!report.problems.empty());
  bool found = false;
  for (const CheckProblem& p : report.problems) {
    BOOST_TEST_MESSAGE(p.where << ": " << p.what);
    found = found || (Contains(p.where, "'t'") && Contains(p.where, "frame 19") &&
                      Contains(p.what, "CRC-32C"));
  }
  BOOST_TEST(found);
  // The shallow check does not read packets' bytes for CRCs.
  BOOST_TEST(Check(tmp.path(), CheckOptions{}).problems.empty());
  BOOST_CHECK_THROW(OpenRo(tmp.path())->ReadH264Stream("t"), CorruptionError);
  OpenOptions verify;
  verify.verify_checksums = true;
  auto ds = Dataset::Open(tmp.path(), verify);
  BOOST_CHECK_THROW(ds->ReadFrames("t", Selection::Indices({20})), CorruptionError);
  // Frames of other GOPs are still read.
  ReadAndCheck(*ds, "t", Testsrc(), {15, 24}, "other GOPs");
}

// One flipped bit in packet 19 (of the GOP 16..23) of "t": every read that
// feeds it to the decoder fails, by default, naming the video, the packet, the
// file and both checksums, a frame after it in its GOP included (decoding
// starts at the keyframe); frames before it in the GOP, other GOPs and other
// videos decode exactly; the export to JPEG refuses it whatever the dataset
// was opened with, and leaves nothing behind.
BOOST_AUTO_TEST_CASE(a_damaged_packet_fails_every_read_that_decodes_it) {
  TempDir tmp;
  MakeDataset(tmp / "d");
  const VideoInfo v = OpenRo(tmp / "d")->Get("t");
  const FrameInfo f = v.frames[19];
  const std::string chunk = tmp / ("d/" + OpenRo(tmp / "d")->Chunks().at(v.chunk).file_name);
  {
    std::string bytes = test::ReadFile(chunk);
    bytes[f.offset + f.jpeg_size() / 2] ^= 0x01;
    test::WriteFile(chunk, bytes);
  }
  const auto expect_damage = [&](const std::function<void()>& read, bool lead_in,
                                 const std::string& what) {
    try {
      read();
      BOOST_ERROR(what << ": a damaged packet was decoded without an error");
    } catch (const CorruptionError& e) {
      const std::string m = e.what();
      BOOST_TEST_INFO(what << ": " << m);
      BOOST_TEST(Contains(m, "id 't' frame 19"));
      BOOST_TEST(Contains(m, chunk));
      BOOST_TEST(Contains(m, "offset " + std::to_string(f.offset)));
      BOOST_TEST(Contains(m, "checksum mismatch"));
      BOOST_TEST(Contains(m, "a packet that decoding the frames asked for starts from") == lead_in);
    }
  };
  auto ds = OpenRo(tmp / "d");  // the default open: checksums verified
  expect_damage([&] { ds->ReadFrames("t", Selection::Indices({20})); }, true, "frame 20");
  expect_damage([&] { ds->ReadFrames("t", Selection::Indices({19})); }, false, "frame 19");
  expect_damage([&] { ds->ReadFrames("t"); }, false, "every frame");
  expect_damage(
      [&] {
        ds->ReadBatch({FrameRequest{"odd"}, FrameRequest{"t", Selection::Slice(22, 24)}});
      },
      true, "ReadBatch 22:24");
  DecodeOptions fixed;
  fixed.out_height = 48;
  fixed.out_width = 64;
  expect_damage([&] { ds->ReadFrames("t", Selection::Indices({23}), fixed); }, true, "sized");
  expect_damage([&] { ds->ReadH264Stream("t"); }, false, "the stream");
  ReadAndCheck(*ds, "t", Testsrc(), {16, 17, 18}, "before the damage in its GOP");
  ReadAndCheck(*ds, "t", Testsrc(), {15, 24, 63}, "other GOPs");
  ReadAndCheck(*ds, "odd", Odd444(), Range(0, 24), "another video");

  // The export re-encodes what it decodes: refused even when the dataset
  // was opened without checks; the output directory keeps nothing of it.
  OpenOptions unchecked;
  unchecked.verify_checksums = false;
  auto raw = Dataset::Open(tmp / "d", unchecked);
  ReadAndCheck(*raw, "t", Testsrc(), {18}, "unchecked, before the damage");
  util::MakeDirectories(tmp / "out");
  expect_damage([&] { ExportGulpioDirectory(*raw, tmp / "out"); }, false, "export");
  BOOST_TEST(util::ListDirectory(tmp / "out").empty());
  // Merging by copy and compaction move the packets under new records: refused.
  expect_damage([&] { Merge(tmp / "m", {tmp / "d"}); }, false, "merge");
  {
    auto rw = OpenRw(tmp / "d");
    rw->Remove({"odd"});
    expect_damage([&] { Compact(*rw); }, false, "compact");
  }
}

// A writer killed with an h264 append uncommitted: the committed video
// survives exactly, the other is invisible, and the next writer appends
// again — through the journal (small) and directly.
BOOST_AUTO_TEST_CASE(kill_before_commit_keeps_committed_h264_videos) {
  for (const bool journal : {true, false}) {
    TempDir tmp;
    Dataset::Create(tmp.path(), H264Create()).reset();
    const std::string& a = Testsrc().stream;
    const std::string& b = Odd444().stream;
    RunAndKill([&](const std::function<void()>& crash_here) {
      auto ds = OpenRw(tmp.path());
      WriterOptions o;
      o.journal = journal;
      auto w = ds->NewWriter(o);
      w->AppendH264("committed", a);
      w->Commit();
      w->AppendH264("uncommitted", b);
      crash_here();
    });
    auto ds = OpenRw(tmp.path());
    BOOST_TEST(ds->Count() == 1u);
    BOOST_TEST(!ds->Contains("uncommitted"));
    BOOST_TEST(ds->ReadH264Stream("committed") == a);
    ReadAndCheck(*ds, "committed", Testsrc(), {0, 31, 63}, "after the crash");
    {
      auto w = ds->NewWriter();
      w->AppendH264("uncommitted", b);
      w->Commit();
    }
    ReadAndCheck(*ds, "uncommitted", Odd444(), Range(0, 24), "appended again");
    CheckOptions deep;
    deep.deep = true;
    BOOST_TEST(Check(tmp.path(), deep).problems.empty());
  }
}

// A published h264 dataset (s3rver) reads through the same chunk source as
// JPEG frames (range requests of the packets a selection needs, CRCs always
// checked): exact frames, the stored stream, the codec's errors.
BOOST_AUTO_TEST_CASE(published_dataset_reads_exactly) {
  static std::unique_ptr<test::S3rverServer> server = std::make_unique<test::S3rverServer>();
  TempDir tmp;
  // The S3 configuration comes from the environment, as for every S3 tool.
  test::ScopedEnv env;
  const auto set = [&](const std::string& name, const std::string& value) { env.Set(name, value); };
  set("AWS_ENDPOINT_URL", server->endpoint());
  set("AWS_ACCESS_KEY_ID", test::S3rverServer::kAccessKey);
  set("AWS_SECRET_ACCESS_KEY", test::S3rverServer::kSecretKey);
  set("AWS_REGION", "us-east-1");
  set("GULPDB_CACHE", tmp / "cache");
  set("GULPDB_S3_MAX_ATTEMPTS", "4");
  const std::string prefix = test::UniquePrefix("h264");
  const std::string url = "s3://" + server->bucket() + "/" + prefix.substr(0, prefix.size() - 1);
  MakeDataset(tmp / "local");
  Push(tmp / "local", url);
  auto ds = OpenRo(url);
  BOOST_TEST((ds->codec() == Codec::kH264));
  ReadAndCheck(*ds, "t", Testsrc(), Range(20, 36), "remote clip");
  ReadAndCheck(*ds, "odd", Odd444(), {23, 0, 12}, "remote scattered");
  BOOST_TEST(ds->ReadH264Stream("t") == Testsrc().stream);
  ExpectInvalid([&] { ds->ReadJpegs("t"); }, {"h264"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
