#include "index/records.h"

#include <flatbuffers/flatbuffers.h>

#include <boost/test/unit_test.hpp>
#include <optional>

#include "gulpdb/error.h"

namespace gulpdb::index {
namespace {

VideoRecord Contiguous(uint32_t frames) {
  VideoRecord r;
  r.chunk = 3;
  r.seq = 77;
  uint64_t offset = 128;
  for (uint32_t i = 0; i < frames; ++i) {
    const uint32_t size = 20000 + i * 7;
    r.frames.push_back(FrameInfo{offset, PadFor(size), size + PadFor(size)});
    offset += size + PadFor(size);
  }
  r.meta_data = R"([{"label": "x"}])";
  return r;
}

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// Records written by the first encoder (run_offsets + run_frames + [uint]
// jpeg_sizes, file identifier "GDBV"), byte for byte as it wrote them.
// chunk 3, seq 77, frames of 1001, 1002 and 70000 bytes from offset 128, one run.
constexpr std::string_view kOldContiguous =
    "1c00000047444256140020001c00140010000c00080000000000040014000000"
    "1c000000300000003c000000400000004d000000000000000300000010000000"
    "5b7b226c6162656c223a202278227d5d0000000003000000e9030000ea030000"
    "701101000100000003000000010000008000000000000000";
// chunk 0, seq 5, the frames of non_contiguous_and_odd_pads_round_trip, CRCs 1-5.
constexpr std::string_view kOldRuns =
    "1c000000474442561400280000001c001800140010000c000800040014000000"
    "2400000030000000440000004c00000060000000700000000500000000000000"
    "00000000080000005b7b7d2c207b7d5d00000000050000000100000002000000"
    "03000000040000000500000005000000010100040000000005000000e7020000"
    "e7020000e8020000640000000000000004000000020000000100000001000000"
    "0100000004000000000000000000000004140000000000002823000000000000"
    "204e000000000000";
// No frames, meta "[{}]".
constexpr std::string_view kOldEmpty =
    "1c00000047444256140014000000000010000c00080000000000040014000000"
    "10000000180000001800000018000000040000005b7b7d5d0000000000000000"
    "0000000000000000";

// Builds a VideoRecord table field by field (field id i lives at vtable
// offset 4 + 2 i), so that tests can write any layout, old or malformed.
struct RawVideo {
  std::optional<std::vector<uint64_t>> run_offsets;   // id 2
  std::optional<std::vector<uint32_t>> run_frames;    // id 3
  std::optional<std::vector<uint32_t>> jpeg_sizes;    // id 4
  std::optional<std::vector<uint16_t>> jpeg_sizes16;  // id 8
  uint64_t run_offset = 0;                            // id 9
  std::optional<std::string> meta_data = "[]";        // id 7
  const char* identifier = nullptr;

  std::string Build() const {
    flatbuffers::FlatBufferBuilder fbb;
    const auto meta = meta_data ? fbb.CreateString(*meta_data).o : 0;
    const auto offsets = run_offsets ? fbb.CreateVector(*run_offsets).o : 0;
    const auto frames = run_frames ? fbb.CreateVector(*run_frames).o : 0;
    const auto sizes = jpeg_sizes ? fbb.CreateVector(*jpeg_sizes).o : 0;
    const auto sizes16 = jpeg_sizes16 ? fbb.CreateVector(*jpeg_sizes16).o : 0;
    const auto start = fbb.StartTable();
    fbb.AddElement<uint64_t>(4 + 2 * 9, run_offset, 0);
    if (offsets) fbb.AddOffset(4 + 2 * 2, flatbuffers::Offset<void>(offsets));
    if (frames) fbb.AddOffset(4 + 2 * 3, flatbuffers::Offset<void>(frames));
    if (sizes) fbb.AddOffset(4 + 2 * 4, flatbuffers::Offset<void>(sizes));
    if (sizes16) fbb.AddOffset(4 + 2 * 8, flatbuffers::Offset<void>(sizes16));
    if (meta) fbb.AddOffset(4 + 2 * 7, flatbuffers::Offset<void>(meta));
    fbb.Finish(flatbuffers::Offset<void>(fbb.EndTable(start)), identifier);
    return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
  }
};

void CheckSame(const VideoRecord& a, const VideoRecord& b) {
  BOOST_TEST(a.chunk == b.chunk);
  BOOST_TEST(a.seq == b.seq);
  BOOST_TEST(a.meta_data == b.meta_data);
  BOOST_REQUIRE_EQUAL(a.frames.size(), b.frames.size());
  for (size_t i = 0; i < a.frames.size(); ++i) BOOST_TEST((a.frames[i] == b.frames[i]));
  BOOST_TEST(a.crc32c == b.crc32c, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE(records_test)

BOOST_AUTO_TEST_CASE(contiguous_video_round_trips_in_about_four_bytes_a_frame) {
  const VideoRecord r = Contiguous(1000);
  const std::string bytes = EncodeVideoRecord(r);
  CheckSame(r, DecodeVideoRecord(bytes, "v"));
  BOOST_TEST(DecodeFrameCount(bytes, "v") == 1000u);
  BOOST_TEST(bytes.size() < 1000 * 4 + 128);
}

BOOST_AUTO_TEST_CASE(non_contiguous_and_odd_pads_round_trip) {
  VideoRecord r;
  r.frames = {{0, 1, 744}, {744, 1, 744}, {5124, 0, 744}, {9000, 4, 104}, {20000, 0, 0}};
  r.crc32c = {1, 2, 3, 4, 5};
  r.meta_data = "[{}, {}]";
  CheckSame(r, DecodeVideoRecord(EncodeVideoRecord(r), "dup"));
}

BOOST_AUTO_TEST_CASE(contiguous_small_frames_cost_two_bytes_a_frame) {
  // Guards the compact form: [ushort] sizes, no run vectors, no identifier.
  // 136 bytes today; the first encoder took 216. (With "[{}]" the string is
  // 4 bytes longer and 8-byte alignment makes the record 144.)
  VideoRecord r = Contiguous(30);
  r.meta_data = "[]";
  const std::string bytes = EncodeVideoRecord(r);
  CheckSame(r, DecodeVideoRecord(bytes, "v"));
  BOOST_TEST(bytes.size() <= 30 * 2 + 80);
  // The checksums add their 4 bytes a frame and little else.
  r.crc32c.assign(30, 0xdeadbeef);
  const std::string with_crc = EncodeVideoRecord(r);
  CheckSame(r, DecodeVideoRecord(with_crc, "v"));
  BOOST_TEST(with_crc.size() <= 30 * 6 + 88);
}

BOOST_AUTO_TEST_CASE(large_frames_fall_back_to_four_byte_sizes) {
  for (const uint32_t big : {65535u, 65536u, 70001u, 0xfffffff0u}) {
    VideoRecord r = Contiguous(3);
    const uint64_t offset = r.frames.back().offset + r.frames.back().length;
    r.frames.push_back(FrameInfo{offset, PadFor(big), big + PadFor(big)});
    const std::string bytes = EncodeVideoRecord(r);
    CheckSame(r, DecodeVideoRecord(bytes, "big"));
    BOOST_TEST(DecodeFrameCount(bytes, "big") == 4u);
  }
  BOOST_TEST(EncodeVideoRecord(Contiguous(100)).size() <= 100 * 2 + 96);
}

BOOST_AUTO_TEST_CASE(one_run_at_offset_zero_round_trips) {
  VideoRecord r = Contiguous(5);
  uint64_t offset = 0;
  for (FrameInfo& f : r.frames) {
    f.offset = offset;
    offset += f.length;
  }
  CheckSame(r, DecodeVideoRecord(EncodeVideoRecord(r), "v"));
  r.frames.resize(1);
  CheckSame(r, DecodeVideoRecord(EncodeVideoRecord(r), "v"));
}

BOOST_AUTO_TEST_CASE(records_from_the_first_encoder_still_decode) {
  VideoRecord contiguous;
  contiguous.chunk = 3;
  contiguous.seq = 77;
  contiguous.frames = {{128, 3, 1004}, {1132, 2, 1004}, {2136, 0, 70000}};
  contiguous.meta_data = R"([{"label": "x"}])";
  CheckSame(contiguous, DecodeVideoRecord(FromHex(kOldContiguous), "old"));
  BOOST_TEST(DecodeFrameCount(FromHex(kOldContiguous), "old") == 3u);

  VideoRecord runs;
  runs.seq = 5;
  runs.frames = {{0, 1, 744}, {744, 1, 744}, {5124, 0, 744}, {9000, 4, 104}, {20000, 0, 0}};
  runs.crc32c = {1, 2, 3, 4, 5};
  runs.meta_data = "[{}, {}]";
  CheckSame(runs, DecodeVideoRecord(FromHex(kOldRuns), "old"));
  BOOST_TEST(DecodeFrameCount(FromHex(kOldRuns), "old") == 5u);

  VideoRecord empty;
  empty.meta_data = "[{}]";
  CheckSame(empty, DecodeVideoRecord(FromHex(kOldEmpty), "old"));
  BOOST_TEST(DecodeFrameCount(FromHex(kOldEmpty), "old") == 0u);

  // The same layout built field by field, with and without the identifier.
  RawVideo old;
  old.run_offsets = std::vector<uint64_t>{100, 4000};
  old.run_frames = std::vector<uint32_t>{2, 1};
  old.jpeg_sizes = std::vector<uint32_t>{10, 12, 70000};
  for (const char* identifier : {"GDBV", static_cast<const char*>(nullptr)}) {
    old.identifier = identifier;
    const VideoRecord d = DecodeVideoRecord(old.Build(), "raw");
    BOOST_REQUIRE_EQUAL(d.frames.size(), 3u);
    BOOST_TEST((d.frames[0] == FrameInfo{100, 2, 12}));
    BOOST_TEST((d.frames[1] == FrameInfo{112, 0, 12}));
    BOOST_TEST((d.frames[2] == FrameInfo{4000, 0, 70000}));
  }
}

BOOST_AUTO_TEST_CASE(frames_only_decode_skips_meta) {
  VideoRecord r = Contiguous(7);
  r.crc32c.assign(7, 9);
  const std::string bytes = EncodeVideoRecord(r);
  VideoRecord expected = r;
  expected.meta_data.clear();
  CheckSame(expected, DecodeVideoFrames(bytes, "v"));
  CheckSame(r, DecodeVideoRecord(bytes, "v"));
  CheckSame(VideoRecord{}, DecodeVideoFrames(FromHex(kOldEmpty), "old"));
  BOOST_CHECK_THROW(DecodeVideoFrames(bytes.substr(0, bytes.size() / 2), "v"), CorruptionError);
}

BOOST_AUTO_TEST_CASE(malformed_record_shapes_are_corruption) {
  const auto check_corrupt = [](const RawVideo& raw) {
    const std::string bytes = raw.Build();
    BOOST_CHECK_THROW(DecodeVideoRecord(bytes, "bad"), CorruptionError);
    BOOST_CHECK_THROW(DecodeVideoFrames(bytes, "bad"), CorruptionError);
    BOOST_CHECK_THROW(DecodeFrameCount(bytes, "bad"), CorruptionError);
  };
  RawVideo good;
  good.jpeg_sizes16 = std::vector<uint16_t>{10, 11};
  good.run_offset = 64;
  BOOST_TEST(DecodeFrameCount(good.Build(), "good") == 2u);

  RawVideo both = good;  // both size vectors
  both.jpeg_sizes = std::vector<uint32_t>{10, 11};
  check_corrupt(both);
  RawVideo neither = good;  // no size vector at all
  neither.jpeg_sizes16.reset();
  check_corrupt(neither);
  RawVideo frames_alone = good;  // run_frames without run_offsets
  frames_alone.run_frames = std::vector<uint32_t>{2};
  check_corrupt(frames_alone);
  RawVideo two_starts = good;  // run_offset and run_offsets
  two_starts.run_offsets = std::vector<uint64_t>{64};
  two_starts.run_frames = std::vector<uint32_t>{2};
  check_corrupt(two_starts);
  RawVideo short_runs = good;  // runs hold fewer frames than sizes
  short_runs.run_offset = 0;
  short_runs.run_offsets = std::vector<uint64_t>{64};
  short_runs.run_frames = std::vector<uint32_t>{1};
  check_corrupt(short_runs);
  RawVideo no_meta = good;
  no_meta.meta_data.reset();
  check_corrupt(no_meta);
  RawVideo huge_runs = good;  // run counts that overflow 32 bits
  huge_runs.run_offset = 0;
  huge_runs.run_offsets = std::vector<uint64_t>{0, 0};
  huge_runs.run_frames = std::vector<uint32_t>{0xffffffffu, 3};
  check_corrupt(huge_runs);
}

// An H.264 video's record: keyframes and decoder parameters round trip, a
// JPEG video's record has neither, and keyframes the decoder could not use
// are corruption.
BOOST_AUTO_TEST_CASE(h264_fields_round_trip_and_are_checked) {
  VideoRecord r = Contiguous(6);
  r.keyframes = {0, 4};
  H264Params p;
  p.extradata = std::string("\0\0\0\1gSPS\0\0\0\1hPPS", 16);
  p.width = 161;
  p.height = 121;
  p.chroma = 1;
  r.h264 = p;
  const VideoRecord back = DecodeVideoRecord(EncodeVideoRecord(r), "h");
  CheckSame(r, back);
  BOOST_TEST(back.keyframes == r.keyframes, boost::test_tools::per_element());
  BOOST_REQUIRE(back.h264.has_value());
  BOOST_TEST((*back.h264 == p));
  BOOST_TEST(DecodeVideoFrames(EncodeVideoRecord(r), "h").keyframes.size() == 2u);
  const VideoRecord jpeg = DecodeVideoRecord(EncodeVideoRecord(Contiguous(6)), "j");
  BOOST_TEST(jpeg.keyframes.empty());
  BOOST_TEST(!jpeg.h264.has_value());

  const auto check_corrupt = [&](const std::vector<uint32_t>& keyframes, uint8_t chroma,
                                 uint32_t width) {
    VideoRecord bad = r;
    bad.keyframes = keyframes;
    bad.h264->chroma = chroma;
    bad.h264->width = width;
    const std::string bytes = EncodeVideoRecord(bad);
    BOOST_CHECK_THROW(DecodeVideoRecord(bytes, "bad"), CorruptionError);
    BOOST_CHECK_THROW(DecodeFrameCount(bytes, "bad"), CorruptionError);
  };
  check_corrupt({1, 4}, 1, 161);     // the first frame is not a keyframe
  check_corrupt({0, 4, 2}, 1, 161);  // not ascending
  check_corrupt({0, 6}, 1, 161);     // past the last frame
  check_corrupt({0, 4}, 2, 161);     // unknown chroma
  check_corrupt({0, 4}, 1, 0);       // no width
  // Keyframes without parameters (or the other way round) are refused.
  VideoRecord half = Contiguous(6);
  half.keyframes = {0};
  BOOST_CHECK_THROW(EncodeVideoRecord(half), InvalidArgumentError);
  half.keyframes.clear();
  half.h264 = p;
  BOOST_CHECK_THROW(EncodeVideoRecord(half), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(empty_video_round_trips) {
  VideoRecord r;
  r.meta_data = "[{}]";
  CheckSame(r, DecodeVideoRecord(EncodeVideoRecord(r), "empty"));
}

BOOST_AUTO_TEST_CASE(encoder_rejects_inconsistent_input) {
  VideoRecord r = Contiguous(2);
  r.crc32c = {1};
  BOOST_CHECK_THROW(EncodeVideoRecord(r), InvalidArgumentError);
  VideoRecord bad;
  bad.frames = {{0, 3, 2}};
  BOOST_CHECK_THROW(EncodeVideoRecord(bad), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(garbage_and_truncated_records_are_corruption) {
  VideoRecord runs;
  runs.frames = {{0, 1, 744}, {744, 1, 744}, {5124, 0, 744}, {9000, 4, 100004}};
  runs.crc32c = {1, 2, 3, 4};
  runs.meta_data = "[{}]";
  for (const std::string& good :
       {EncodeVideoRecord(Contiguous(10)), EncodeVideoRecord(runs), FromHex(kOldRuns)}) {
    const VideoRecord whole = DecodeVideoRecord(good, "v");
    for (size_t cut = 0; cut < good.size(); ++cut) {
      // Only the alignment padding after the last string may go unnoticed.
      try {
        CheckSame(whole, DecodeVideoRecord(good.substr(0, cut), "v"));
        BOOST_TEST(cut + 4 > good.size());
      } catch (const CorruptionError&) {
      }
    }
    std::string flipped = good;
    for (size_t i = 0; i < flipped.size(); ++i) {
      for (const char mask : {'\x5a', '\x01', '\x80'}) {
        flipped[i] = static_cast<char>(flipped[i] ^ mask);
        // Either it still decodes to something self-consistent or it is reported.
        try {
          DecodeVideoRecord(flipped, "v");
        } catch (const CorruptionError&) {
        }
        try {
          DecodeVideoFrames(flipped, "v");
        } catch (const CorruptionError&) {
        }
        try {
          DecodeFrameCount(flipped, "v");
        } catch (const CorruptionError&) {
        }
        flipped[i] = good[i];
      }
    }
  }
  BOOST_CHECK_THROW(DecodeVideoRecord(std::string(64, '\x7f'), "v"), CorruptionError);
  BOOST_CHECK_THROW(DecodeChunkRecord("xx", "c"), CorruptionError);
  BOOST_CHECK_THROW(DecodeDatasetInfo("", "d"), CorruptionError);
}

BOOST_AUTO_TEST_CASE(chunk_and_info_round_trip) {
  ChunkRecord c;
  c.file_name = "data_7.gulp";
  c.committed_length = 123456;
  c.appended_videos = 9;
  c.live_videos = 8;
  c.live_bytes = 1000;
  c.state = ChunkState::kFull;
  c.meta_file = "meta_7.gmeta";
  const ChunkRecord d = DecodeChunkRecord(EncodeChunkRecord(c), "c");
  BOOST_TEST(d.file_name == c.file_name);
  BOOST_TEST(d.committed_length == c.committed_length);
  BOOST_TEST(d.appended_videos == 9u);
  BOOST_TEST(d.live_videos == 8u);
  BOOST_TEST(d.live_bytes == 1000u);
  BOOST_TEST((d.state == ChunkState::kFull));
  BOOST_TEST(d.meta_file == c.meta_file);

  DatasetInfo info;
  info.creator = "test";
  info.next_seq = 42;
  info.dirty_chunks = {3, 4};
  const DatasetInfo j = DecodeDatasetInfo(EncodeDatasetInfo(info), "d");
  BOOST_TEST(j.creator == "test");
  BOOST_TEST(j.next_seq == 42u);
  BOOST_TEST(j.dirty_chunks == info.dirty_chunks, boost::test_tools::per_element());
  info.format_version = kFormatVersion + 1;
  BOOST_CHECK_THROW(DecodeDatasetInfo(EncodeDatasetInfo(info), "d"), CorruptionError);
}

// Chunk records and dataset info as the encoder wrote them before file
// stamps, owners, source_stamps and attached_to were added (hex of the
// previous version's EncodeChunkRecord / EncodeDatasetInfo output).
constexpr const char* kOldAttachedChunk =
    "1c0000000000000000001200280024001c00180014000c000b000400120000002400000000000001a00f00000000"
    "0000020000000300000088130000000000000c0000000000000000000000140000007368617264732f612f6461"
    "74615f302e67756c7000000000";
constexpr const char* kOldImportedChunk =
    "1c0000000000000000001200280024001c00180014000c000b000400120000002400000000000001a00f00000000"
    "000002000000030000008813000000000000180000000c0000006d6574615f332e676d657461000000000b0000"
    "00646174615f332e67756c7000";
constexpr const char* kOldInfo =
    "1c0000001800340030002c002800000027001c0014000c0008000400180000003000000044000000460000000000"
    "000007000000000000002a000000000000000000000164000000280000000200000001000000040000000b0000"
    "00646174615f312e67756c700001000000030000002300000067756c70646220302e312e302028696d706f7274"
    "65642066726f6d2047756c70494f2900";

BOOST_AUTO_TEST_CASE(chunk_and_info_records_from_before_stamps_and_owners_still_decode) {
  const ChunkRecord attached = DecodeChunkRecord(FromHex(kOldAttachedChunk), "old");
  BOOST_TEST(attached.file_name == "shards/a/data_0.gulp");
  BOOST_TEST(attached.committed_length == 5000u);
  BOOST_TEST(attached.live_bytes == 4000u);
  BOOST_TEST(attached.owner.empty());
  BOOST_TEST(attached.attached());  // known by the '/' in its name
  BOOST_TEST(!attached.data_stamp.has_value());
  BOOST_TEST(!attached.meta_stamp.has_value());
  const ChunkRecord imported = DecodeChunkRecord(FromHex(kOldImportedChunk), "old");
  BOOST_TEST(imported.meta_file == "meta_3.gmeta");
  BOOST_TEST(!imported.attached());
  BOOST_TEST(!imported.data_stamp.has_value());
  const DatasetInfo info = DecodeDatasetInfo(FromHex(kOldInfo), "old");
  BOOST_TEST(info.total_frames == 70u);
  BOOST_TEST(info.obsolete_files.at(0) == "data_1.gulp");
  BOOST_TEST(!info.source_stamps);
  BOOST_TEST(info.attached_to.empty());
  BOOST_TEST(info.next_chunk == 0u);  // derived (NextChunkNumber)
  BOOST_TEST(!imported.meta_content.has_value());

  // Without the new fields the encoder writes exactly the old bytes: they
  // cost nothing where they are not used.
  BOOST_TEST(EncodeChunkRecord(attached) == FromHex(kOldAttachedChunk));
  BOOST_TEST(EncodeChunkRecord(imported) == FromHex(kOldImportedChunk));
  BOOST_TEST(EncodeDatasetInfo(info) == FromHex(kOldInfo));
}

BOOST_AUTO_TEST_CASE(stamps_owner_and_attachment_round_trip) {
  ChunkRecord c;
  c.file_name = "data_3.gulp";
  c.meta_file = "meta_3.gmeta";
  c.data_stamp = FileStamp{7544, 1732482000123456789};
  c.meta_stamp = FileStamp{0, -5};
  const ChunkRecord d = DecodeChunkRecord(EncodeChunkRecord(c), "c");
  BOOST_REQUIRE(d.data_stamp.has_value());
  BOOST_TEST((*d.data_stamp == *c.data_stamp));
  BOOST_REQUIRE(d.meta_stamp.has_value());
  BOOST_TEST((*d.meta_stamp == *c.meta_stamp));
  BOOST_TEST(!d.attached());
  c = ChunkRecord();
  c.file_name = "s/0/data_0.gulp";
  c.owner = "s/0";
  const ChunkRecord e = DecodeChunkRecord(EncodeChunkRecord(c), "c");
  BOOST_TEST(e.owner == "s/0");
  BOOST_TEST(!e.data_stamp.has_value());

  DatasetInfo info;
  info.source_stamps = true;
  info.attached_to = "/data/out";
  info.uuid = "0f8e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b";
  const DatasetInfo j = DecodeDatasetInfo(EncodeDatasetInfo(info), "d");
  BOOST_TEST(j.source_stamps);
  BOOST_TEST(j.attached_to == "/data/out");
  BOOST_TEST(j.uuid == info.uuid);
  // A record without one (every record before the field existed) has none.
  BOOST_TEST(DecodeDatasetInfo(EncodeDatasetInfo(DatasetInfo()), "d").uuid.empty());
}

BOOST_AUTO_TEST_CASE(content_fingerprint_and_next_chunk_round_trip) {
  ChunkRecord c;
  c.file_name = "data_3.gulp";
  c.meta_file = "meta_3.gmeta";
  c.meta_content = ContentStamp{uint64_t{5} << 33, 0xdeadbeef};
  const ChunkRecord d = DecodeChunkRecord(EncodeChunkRecord(c), "c");
  BOOST_REQUIRE(d.meta_content.has_value());
  BOOST_TEST((*d.meta_content == *c.meta_content));
  c.meta_content = ContentStamp{0, 0};  // an empty file: present, not absent
  BOOST_TEST(DecodeChunkRecord(EncodeChunkRecord(c), "c").meta_content.has_value());

  DatasetInfo info;
  info.next_chunk = uint64_t{1} << 32;  // every number used
  BOOST_TEST(DecodeDatasetInfo(EncodeDatasetInfo(info), "d").next_chunk == info.next_chunk);
  info.next_chunk = (uint64_t{1} << 32) + 1;
  BOOST_CHECK_THROW(DecodeDatasetInfo(EncodeDatasetInfo(info), "d"), CorruptionError);
}

// The codec: absent (every record before the field) is JPEG, and a value
// this build does not know is corruption, not a JPEG dataset.
BOOST_AUTO_TEST_CASE(codec_round_trips) {
  DatasetInfo info;
  BOOST_TEST(DecodeDatasetInfo(EncodeDatasetInfo(info), "d").codec == kCodecJpeg);
  info.codec = kCodecH264;
  BOOST_TEST(DecodeDatasetInfo(EncodeDatasetInfo(info), "d").codec == kCodecH264);
  info.codec = 7;
  BOOST_CHECK_THROW(DecodeDatasetInfo(EncodeDatasetInfo(info), "d"), CorruptionError);
}

// The next chunk number: the recorded one, or past every chunk that exists
// or is listed as being written (datasets written before it was recorded).
BOOST_AUTO_TEST_CASE(next_chunk_number_never_goes_back) {
  DatasetInfo info;
  BOOST_TEST(NextChunkNumber(info, std::nullopt) == 0u);
  BOOST_TEST(NextChunkNumber(info, 4u) == 5u);
  info.dirty_chunks = {7};
  BOOST_TEST(NextChunkNumber(info, 4u) == 8u);
  info.next_chunk = 20;
  BOOST_TEST(NextChunkNumber(info, 4u) == 20u);
  BOOST_TEST(NextChunkNumber(info, 30u) == 31u);
  info = DatasetInfo();
  BOOST_TEST(NextChunkNumber(info, UINT32_MAX) == kNoChunkNumberLeft);
}

BOOST_AUTO_TEST_CASE(keys_sort_numerically) {
  BOOST_TEST(ChunkKey(2) < ChunkKey(10));
  BOOST_TEST(OrderKey(1, 500) < OrderKey(2, 0));
  BOOST_TEST(OrderKey(1, 255) < OrderKey(1, 256));
  // An order key: chunk (4 bytes) then sequence (8), big-endian.
  BOOST_TEST(OrderKey(0xabcdef01u, 0x0102030405060708ull) ==
             std::string("\xab\xcd\xef\x01\x01\x02\x03\x04\x05\x06\x07\x08", 12));
  BOOST_TEST(DecodeChunkKey(ChunkKey(99)) == 99u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::index
