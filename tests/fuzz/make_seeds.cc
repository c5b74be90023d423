// gulpdb_fuzz_make_seeds: writes the seed corpora of the fuzz targets
// (corpus/<target>/, see docs/fuzzing.md) from the test fixtures. Deterministic:
// running it again rewrites the same files.
//
//   gulpdb_fuzz_make_seeds FIXTURES_DIR CORPUS_DIR
//
// Record seeds are real encodings (index/records.h) of the fixtures'
// frame_info, plus records in the first format-1 layout (file identifier
// GDBV, run vectors, 4-byte sizes) built with the generated FlatBuffers code,
// since the current encoder no longer writes them. JPEG seeds are fixture
// frames behind an option byte, plus progressive encodings made with
// TurboJPEG directly (gulpdb's encoder writes none).
#include <flatbuffers/flatbuffers.h>
#include <sys/stat.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "engine/gulpio/gmeta.h"
#include "engine/json/json_text.h"
#include "engine/remote/manifest.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "index/partition_root.h"
#include "index/records.h"
#include "index/records_generated.h"
#include "tests/fuzz/fuzz_util.h"
#include "util/crc32c.h"
#include "util/sha256.h"

namespace {

namespace fs = std::filesystem;
using gulpdb::FrameInfo;
using gulpdb::engine::GmetaEntry;

std::string fixtures;
std::string corpus;

void Put(const std::string& target, const std::string& name, std::string_view bytes) {
  const std::string dir = corpus + "/" + target;
  fs::create_directories(dir);
  gulpdb::fuzz::WriteFileOrDie(dir + "/" + name, bytes);
}

std::vector<GmetaEntry> ReadEntries(const std::string& path) {
  std::vector<GmetaEntry> entries;
  gulpdb::engine::ReadGmeta(path, [&](GmetaEntry&& e) { entries.push_back(std::move(e)); });
  return entries;
}

// ---- .gmeta ------------------------------------------------------------------

void GmetaSeeds() {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"gulpio2_edge_cases", "meta_0.gmeta"},  {"gulpio2_edge_cases", "meta_1.gmeta"},
      {"gulpio2_csv_jpeg", "meta_0.gmeta"},    {"gulpio2_csv_jpeg", "meta_5.gmeta"},
      {"gulpio1_csv_jpeg", "meta_0.gmeta"},    {"gulpio2_json_videos", "meta_0.gmeta"},
      {"gulpio2_json_videos", "meta_2.gmeta"},
  };
  for (const auto& [dir, file] : files) {
    const std::string bytes = gulpdb::fuzz::ReadFileOrDie(fixtures + "/" + dir + "/" + file);
    for (const char* target : {"gmeta_parse", "gmeta_import"}) Put(target, dir + "-" + file, bytes);
  }
  // Layouts json.dump does not write but the reader accepts, and mistakes it
  // must report. Offsets stay inside the import target's 64 KiB data file.
  const std::vector<std::pair<std::string, std::string>> handwritten = {
      {"empty.gmeta", "{}"},
      {"empty_spaced.gmeta", " \n{ \t}\r\n"},
      {"no_frames.gmeta", R"({"a": {"frame_info": [], "meta_data": []}})"},
      {"keys_reversed.gmeta",
       R"({"v": {"meta_data": [{"k": 1}], "frame_info": [[0, 1, 744], [744, 2, 744]]}})"},
      {"pretty.gmeta",
       "{\n  \"v\" : {\n    \"frame_info\" : [ [ 0 , 1 , 744 ] ,\n [744,2,744] ],\n"
       "    \"meta_data\" : [ { \"a\" : [ 1 , 2.5e3 , null ] } ]\n  }\n}\n"},
      {"escapes.gmeta",
       R"({"\u00e9\ud83d\ude00\"\\\/\n": {"frame_info": [[0, 1, 744]], "meta_data": [{"s": "\u0000\t"}]}, )"
       R"("b": {"frame_info": [[744, 2, 744]], "meta_data": [NaN, -Infinity, 123456789012345678901234567890]}})"},
      {"pad4.gmeta", R"({"p": {"frame_info": [[0, 4, 744]], "meta_data": [{}]}})"},
      {"pad5.gmeta", R"({"p": {"frame_info": [[0, 5, 744]], "meta_data": [{}]}})"},
      {"overlap.gmeta",
       R"({"a": {"frame_info": [[0, 1, 744]], "meta_data": [{}]}, "b": {"frame_info": [[700, 0, 100]], "meta_data": [{}]}})"},
      {"duplicate_id.gmeta",
       R"({"a": {"frame_info": [[0, 1, 744]], "meta_data": [{}]}, "a": {"frame_info": [[744, 2, 744]], "meta_data": [{}]}})"},
      {"past_end.gmeta", R"({"a": {"frame_info": [[65530, 0, 8]], "meta_data": [{}]}})"},
      {"big_numbers.gmeta",
       R"({"a": {"frame_info": [[18446744073709551615, 4294967295, 4294967295]], "meta_data": [{}]}})"},
      {"truncated.gmeta", R"({"a": {"frame_info": [[0, 1, 744]], "meta_data": [{"x": )"},
      {"trailing.gmeta", R"({"a": {"frame_info": [], "meta_data": []}} x)"},
      {"deep_meta.gmeta", "{\"a\": {\"frame_info\": [], \"meta_data\": " + std::string(40, '[') +
                              std::string(40, ']') + "}}"},
  };
  for (const auto& [name, bytes] : handwritten) {
    for (const char* target : {"gmeta_parse", "gmeta_import"}) Put(target, name, bytes);
  }
}

// ---- index records -------------------------------------------------------------

// A record in the first format-1 layout: GDBV identifier, run vectors even
// for one run, 4-byte sizes, no compact fields.
std::string FirstFormatRecord(const gulpdb::index::VideoRecord& r) {
  namespace fb = gulpdb::index::fb;
  flatbuffers::FlatBufferBuilder builder;
  std::vector<uint64_t> run_offsets;
  std::vector<uint32_t> run_frames, sizes;
  std::vector<uint8_t> pads;
  bool canonical_pads = true;
  uint64_t next = 0;
  for (const FrameInfo& f : r.frames) {
    if (run_offsets.empty() || f.offset != next) {
      run_offsets.push_back(f.offset);
      run_frames.push_back(0);
    }
    ++run_frames.back();
    next = f.offset + f.length;
    sizes.push_back(f.jpeg_size());
    pads.push_back(static_cast<uint8_t>(f.pad));
    canonical_pads = canonical_pads && f.pad == gulpdb::PadFor(f.jpeg_size());
  }
  const auto meta = builder.CreateString(r.meta_data);
  const auto offsets_vec = builder.CreateVector(run_offsets);
  const auto frames_vec = builder.CreateVector(run_frames);
  const auto sizes_vec = builder.CreateVector(sizes);
  const auto pads_vec = canonical_pads ? 0 : builder.CreateVector(pads);
  const auto crc_vec = r.crc32c.empty() ? 0 : builder.CreateVector(r.crc32c);
  fb::VideoRecordBuilder b(builder);
  b.add_chunk(r.chunk);
  b.add_seq(r.seq);
  b.add_run_offsets(offsets_vec);
  b.add_run_frames(frames_vec);
  b.add_jpeg_sizes(sizes_vec);
  if (!canonical_pads) b.add_pads(pads_vec);
  if (!r.crc32c.empty()) b.add_crc32c(crc_vec);
  b.add_meta_data(meta);
  builder.Finish(b.Finish(), "GDBV");
  return std::string(reinterpret_cast<const char*>(builder.GetBufferPointer()), builder.GetSize());
}

void RecordSeeds() {
  const std::vector<std::pair<std::string, int>> chunks = {
      {"gulpio2_edge_cases", 0}, {"gulpio2_edge_cases", 1}, {"gulpio2_json_videos", 0}};
  uint64_t seq = 0;
  int n = 0;
  for (const auto& [dir, number] : chunks) {
    const std::string base = fixtures + "/" + dir + "/";
    const std::string data =
        gulpdb::fuzz::ReadFileOrDie(base + "data_" + std::to_string(number) + ".gulp");
    const std::vector<GmetaEntry> entries =
        ReadEntries(base + "meta_" + std::to_string(number) + ".gmeta");
    gulpdb::index::ChunkRecord chunk;
    chunk.file_name = "data_" + std::to_string(number) + ".gulp";
    chunk.meta_file = "meta_" + std::to_string(number) + ".gmeta";
    chunk.committed_length = data.size();
    chunk.state = number == 0 ? gulpdb::index::ChunkState::kFull : gulpdb::index::ChunkState::kOpen;
    for (const GmetaEntry& e : entries) {
      gulpdb::index::VideoRecord r;
      r.chunk = static_cast<uint32_t>(number);
      r.seq = seq++;
      r.frames = e.frame_info;
      r.meta_data = gulpdb::engine::NormalizeJson(e.meta_data);
      ++chunk.appended_videos;
      ++chunk.live_videos;
      chunk.live_bytes += r.frame_bytes();
      const std::string stem = dir + "-" + std::to_string(number) + "-" + std::to_string(n++);
      Put("record", stem + "-video", gulpdb::index::EncodeVideoRecord(r));
      if (n % 2 == 0) Put("record", stem + "-video-v1", FirstFormatRecord(r));
      if (n % 3 == 0 || r.frames.size() > 2) {
        for (const FrameInfo& f : r.frames) {
          r.crc32c.push_back(gulpdb::util::Crc32c(data.data() + f.offset, f.jpeg_size()));
        }
        Put("record", stem + "-video-crc", gulpdb::index::EncodeVideoRecord(r));
        Put("record", stem + "-video-crc-v1", FirstFormatRecord(r));
      }
    }
    Put("record", dir + "-" + std::to_string(number) + "-chunk",
        gulpdb::index::EncodeChunkRecord(chunk));
  }
  // Forms the fixtures do not reach: JPEGs of 64 KiB and more (4-byte
  // sizes), pads that break GulpIO's rule, several runs, no frames.
  gulpdb::index::VideoRecord big;
  big.chunk = 7;
  big.seq = 1u << 20;
  big.frames = {{0, 0, 70000}, {70000, 3, 100003}, {500000, 4, 8}, {500008, 0, 65536}};
  big.meta_data = R"([{"id": "big"}, {"note": "appended twice"}])";
  Put("record", "synthetic-big-runs", gulpdb::index::EncodeVideoRecord(big));
  Put("record", "synthetic-big-runs-v1", FirstFormatRecord(big));
  gulpdb::index::VideoRecord empty;
  empty.meta_data = "[{}]";
  Put("record", "synthetic-no-frames", gulpdb::index::EncodeVideoRecord(empty));
  Put("record", "synthetic-no-frames-v1", FirstFormatRecord(empty));

  gulpdb::index::ChunkRecord attached;
  attached.file_name = "shard_a/data_3.gulp";
  attached.committed_length = 1u << 30;
  attached.live_bytes = 12345;
  attached.appended_videos = 100;
  attached.live_videos = 99;
  Put("record", "synthetic-chunk-attached", gulpdb::index::EncodeChunkRecord(attached));

  gulpdb::index::DatasetInfo info;
  info.creator = "gulpdb 0.1.0";
  Put("record", "info-new", gulpdb::index::EncodeDatasetInfo(info));
  info.creator += " (imported from GulpIO)";
  info.checksums = false;
  info.next_seq = 1000;
  info.total_videos = 999;
  info.total_frames = 12345;
  info.bytes_per_chunk = 1u << 30;
  info.dirty_chunks = {3, 4};
  info.obsolete_files = {"data_1.gulp", "meta_1.gmeta"};
  Put("record", "info-busy", gulpdb::index::EncodeDatasetInfo(info));
  // Keys: a chunk key and an order key.
  Put("record", "key-chunk", gulpdb::index::ChunkKey(258));
  Put("record", "key-order", gulpdb::index::OrderKey(258, 1u << 20));
}

// ---- JPEG ------------------------------------------------------------------------

std::string Frame(const std::string& video, const std::string& file) {
  return gulpdb::fuzz::ReadFileOrDie(fixtures + "/frames_src/" + video + "/" + file);
}

// Encodes `pixels` with TurboJPEG flags gulpdb's own encoder never sets.
std::string EncodeWithFlags(const std::vector<uint8_t>& pixels, const gulpdb::ImageShape& shape,
                            int subsampling, int flags) {
  tjhandle handle = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;  // NOLINT(runtime/int): TurboJPEG's type
  const int pixel_format = shape.channels == 3 ? TJPF_RGB : TJPF_GRAY;
  if (tjCompress2(handle, pixels.data(), shape.width, 0, shape.height, pixel_format, &out, &size,
                  shape.channels == 3 ? subsampling : TJSAMP_GRAY, 85, flags) != 0) {
    gulpdb::fuzz::Fail("make_seeds", std::string("tjCompress2: ") + tjGetErrorStr2(handle));
  }
  std::string jpeg(reinterpret_cast<const char*>(out), size);
  tjFree(out);
  tjDestroy(handle);
  return jpeg;
}

void JpegSeeds() {
  // One frame of every fixture video, behind option bytes that between
  // them cover every format, DCT method, scale and the lenient flag.
  std::vector<std::string> videos;
  for (const auto& entry : fs::directory_iterator(fixtures + "/frames_src")) {
    if (entry.is_directory()) videos.push_back(entry.path().filename().string());
  }
  std::sort(videos.begin(), videos.end());
  for (size_t i = 0; i < videos.size(); ++i) {
    const char option = static_cast<char>((i * 37 + 5) & 0xff);
    Put("jpeg", "frames_src-" + videos[i], std::string(1, option) + Frame(videos[i], "0000.jpg"));
  }
  // The original GulpIO's frames (OpenCV's encoder, other tables).
  const std::string base = fixtures + "/gulpio1_csv_jpeg/";
  const std::string data = gulpdb::fuzz::ReadFileOrDie(base + "data_0.gulp");
  const std::vector<GmetaEntry> entries = ReadEntries(base + "meta_0.gmeta");
  for (size_t k = 0; k < 2 && k < entries[0].frame_info.size(); ++k) {
    const FrameInfo& f = entries[0].frame_info[k];
    Put("jpeg", "gulpio1-" + std::to_string(k),
        std::string(1, static_cast<char>(0x41 + 0x10 * k)) + data.substr(f.offset, f.jpeg_size()));
  }
  // Progressive versions of a colour frame, the 4:2:2 and 4:4:0 layouts,
  // and truncated and damaged frames for the lenient path.
  gulpdb::JpegDecoder decoder;
  const std::string colour = Frame("0", "0000.jpg");
  gulpdb::DecodeOptions rgb;
  rgb.format = gulpdb::PixelFormat::kRGB;
  gulpdb::ImageShape shape;
  const std::vector<uint8_t> pixels =
      decoder.Decode(reinterpret_cast<const uint8_t*>(colour.data()), colour.size(), rgb, &shape);
  Put("jpeg", "progressive-420",
      "\x01" + EncodeWithFlags(pixels, shape, TJSAMP_420, TJFLAG_PROGRESSIVE));
  Put("jpeg", "progressive-444-lenient",
      "\x65" + EncodeWithFlags(pixels, shape, TJSAMP_444, TJFLAG_PROGRESSIVE));
  Put("jpeg", "baseline-422", "\x42" + EncodeWithFlags(pixels, shape, TJSAMP_422, 0));
  Put("jpeg", "progressive-gray",
      "\x0b" + EncodeWithFlags(pixels, shape, TJSAMP_GRAY, TJFLAG_PROGRESSIVE));
  Put("jpeg", "baseline-440", "\x8a" + EncodeWithFlags(pixels, shape, TJSAMP_440, 0));
  Put("jpeg", "truncated-lenient", "\x20" + colour.substr(0, colour.size() * 2 / 3));
  Put("jpeg", "truncated-strict", "\x40" + colour.substr(0, colour.size() * 2 / 3));
  std::string damaged = colour;
  for (size_t k = damaged.size() / 2; k < damaged.size() / 2 + 16; ++k) damaged[k] = '\x5a';
  Put("jpeg", "damaged-lenient", "\xa1" + damaged);
  Put("jpeg", "tables-only", std::string(1, '\0') + colour.substr(0, 2) + "\xff\xd9");
}

// ---- selections --------------------------------------------------------------------

void SelectionSeeds() {
  const std::vector<std::pair<uint16_t, std::string>> seeds = {
      {10, "all"},
      {10, ""},
      {10, ":"},
      {10, "1:10:2"},
      {10, "::-1"},
      {10, "-3:"},
      {10, ":-3"},
      {10, "0,1,2"},
      {10, "-1"},
      {10, " 2 , 3 "},
      {5, "9"},
      {0, "0"},
      {0, "::"},
      {1000, "5:900:7"},
      {1000, "-1:-900:-3"},
      {3, "+1:"},
      {7, "1:2:3:4"},
      {7, "a"},
      {7, "1::0"},
      {7, "-9223372036854775808:"},
      {300, "9223372036854775807"},
      {65535, "::1000"},
  };
  int i = 0;
  for (const auto& [n, text] : seeds) {
    std::string bytes;
    bytes.push_back(static_cast<char>(n & 0xff));
    bytes.push_back(static_cast<char>(n >> 8));
    bytes += text;
    Put("selection", "seed-" + std::to_string(i++), bytes);
  }
}

// ---- meta values --------------------------------------------------------------------

void MetaValueSeeds() {
  const std::vector<std::string> seeds = {
      R"("cat")",
      R"("caf\u00e9")",
      "\"caf\xc3\xa9\"",
      R"("\ud83d\ude00")",
      R"("\ud800")",
      "1",
      "1.0",
      "-0.0",
      "10E-1",
      "1e100000000000000000000",
      "123456789012345678901234567890",
      "true",
      "null",
      "NaN",
      "-Infinity",
      R"([1, "a", [], {}])",
      R"({"k": 1, "label": "x", "k": [2.50, {"b": 1, "a": 2}]})",
      R"({"caf\u00e9": 1, "": null})",
      R"(  {"k" :  "v" }  )",
      R"([{"k": 1}])",
      R"({"k": )",
      "01",
      "\xef\xbb\xbf"
      "1",
  };
  int i = 0;
  for (const std::string& text : seeds) Put("meta_value", "seed-" + std::to_string(i++), text);
}

// ---- queries ------------------------------------------------------------------------

// A query, a newline, the video's first meta entry; the last byte's low bit
// picks the index key form (query_fuzzer.cc).
void QuerySeeds() {
  const std::vector<std::string> seeds = {
      "frames >= 16 and label in ('a', 'b')\n{\"label\": \"a\"}",
      "label = 3\n{\"label\": \"3\"}",
      "n > 0.5 or n <= -1e400\n{\"n\": 1.0}",
      "not (s >= 'b' and s < 'c')\n{\"s\": \"b\\u0000\"}",
      "has z and not z = null\n{\"z\": null}",
      "meta.id != 'x' and id = 'video'\n{\"id\": \"y\"}",
      "`a b` in (1, [1, 2], {\"k\": 1}, NaN, -Infinity)\n{\"a b\": [1.0, 2]}",
      "meta['caf\\u00e9'] > 'z'\n{\"caf\\u00e9\": \"\\u00e9\"}",
      "n = 1e100000000000000000000\n{\"n\": 1e100000000000000000000}",
      "s <= '\\ud800'\n{\"s\": \"\\ud7ff\"}",
      "n >= 123456789012345678901234567890\n{\"n\": 123456789012345678901234567891}1",
      "chunk = 3 and frames < Infinity\n{}",
      "label >= '" + std::string(420, 'q') + "'\n{\"label\": \"" + std::string(430, 'q') + "\"}",
      "(((a = 1)))) or",
      "a == 1",
      "x != null",
      "label = cat",
      "NOT a = 1 AND b != true OR c IN ()\n{\"b\": false}",
      "k = 1\n{\"k\": ",
  };
  int i = 0;
  for (const std::string& text : seeds) Put("query", "seed-" + std::to_string(i++), text);
}

// ---- published objects: manifests, chunk pages, roots -------------------------

void PublishedSeeds() {
  namespace engine = gulpdb::engine;
  std::vector<engine::ManifestChunk> chunks;
  for (uint32_t n : {0u, 1u, 2u, 300u}) {
    engine::ManifestChunk c;
    c.number = n;
    c.key = "data_" + std::to_string(n) + ".gulp";
    c.committed_length = 4096 + n;
    c.live_videos = 3;
    c.live_bytes = 4000;
    c.etag = "\"0123abcd\"";
    c.crc32c = 0xdeadbeefu - n;
    c.gmeta_key = "meta_" + std::to_string(n) + ".gmeta";
    c.gmeta_sha256 = std::string(64, 'e');
    chunks.push_back(c);
  }
  engine::Manifest whole;
  whole.generation = 3;
  whole.created_unix = 1795000000;
  whole.creator = "gulpdb seeds";
  whole.dataset = "01234567-89ab-cdef-0123-456789abcdef";
  whole.snapshot_key = engine::SnapshotKey(std::string(64, 'a'));
  whole.snapshot_size = 8192;
  whole.snapshot_sha256 = std::string(64, 'a');
  whole.videos = 12;
  whole.frames = 48;
  whole.grace_seconds = 86400;
  whole.label2idx_key = "label2idx.json";
  whole.label2idx_sha256 = std::string(64, 'c');
  whole.chunks = chunks;
  engine::ManifestObsolete o;
  o.key = "data_9.gulp";
  o.since_unix = 1794999999;
  o.committed_length = 100;
  o.crc32c = 7;
  o.gmeta_key = "meta_9.gmeta";
  whole.obsolete.push_back(o);
  Put("published", "manifest-v1", engine::SerializeManifest(whole));
  const std::vector<engine::ChunkPageText> pages = engine::MakeChunkPages(chunks);
  engine::Manifest paged = whole;
  paged.version = engine::kManifestVersionChunkPages;
  paged.snapshot_key.clear();
  paged.root_key = engine::RootKey(std::string(64, 'b'));
  paged.root_size = 4000;
  paged.root_sha256 = std::string(64, 'b');
  paged.chunks.clear();
  for (const engine::ChunkPageText& t : pages) {
    paged.chunk_pages.push_back(t.page);
    Put("published", "chunk-page-" + std::to_string(t.page.first), t.text);
  }
  paged.chunk_count = chunks.size();
  Put("published", "manifest-v3", engine::SerializeManifest(paged));

  gulpdb::index::PartitionRoot root;
  root.format_version = 2;
  root.generation = 4;
  gulpdb::index::DatasetInfo info;
  info.creator = "gulpdb seeds";
  info.total_videos = 3;
  root.dataset_info = gulpdb::index::EncodeDatasetInfo(info);
  root.meta_fields.push_back({"label", 1});
  root.splits.push_back({"train", 1, 2});
  const auto entry = [](gulpdb::index::PartitionKind kind, uint64_t generation, std::string first,
                        std::string last, uint64_t first_position, uint64_t count, char hex) {
    gulpdb::index::PartitionEntry p;
    p.kind = kind;
    p.generation = generation;
    p.first_key = std::move(first);
    p.last_key = std::move(last);
    p.first_position = first_position;
    p.count = count;
    p.size = 16384;
    p.sha256 = std::string(64, hex);
    return p;
  };
  using Kind = gulpdb::index::PartitionKind;
  root.partitions = {
      entry(Kind::kVideos, 0, "a", "m", 0, 2, '1'),
      entry(Kind::kVideos, 0, "n", "z", 0, 1, '2'),
      entry(Kind::kVideos, 4, "b", "b", 0, 1, '3'),
      entry(Kind::kMetaIndex, 0, "k1", "k9", 0, 3, '4'),
      entry(Kind::kOrder, 0, gulpdb::index::OrderKey(0, 0), gulpdb::index::OrderKey(0, 1), 0, 2,
            '5'),
      entry(Kind::kOrder, 0, gulpdb::index::OrderKey(1, 0), gulpdb::index::OrderKey(1, 0), 2, 1,
            '6'),
      entry(Kind::kChunks, 0, gulpdb::index::ChunkKey(0), gulpdb::index::ChunkKey(1), 0, 2, '7'),
      entry(Kind::kSplitMembers, 0, "s1", "s2", 0, 2, '8'),
  };
  Put("published", "root-v2", gulpdb::index::EncodePartitionRoot(root));
  // Format 3: the base videos group listed by a page (the page the fuzz
  // target judges its input against: published_fuzzer.cc, RootPage).
  {
    gulpdb::index::PartitionRoot paged_root = root;
    paged_root.format_version = 3;
    const std::vector<gulpdb::index::PartitionEntry> run(paged_root.partitions.begin(),
                                                         paged_root.partitions.begin() + 2);
    const std::string page_bytes = gulpdb::index::EncodeRootPage(run);
    gulpdb::index::RootPage page;
    page.kind = Kind::kVideos;
    page.first_key = "a";
    page.last_key = "z";
    page.count = 3;
    page.partitions = 2;
    page.partition_bytes = 2 * 16384;
    page.size = page_bytes.size();
    page.sha256 = gulpdb::util::Sha256Hex(page_bytes);
    paged_root.pages = {page};
    Put("published", "root-v3", gulpdb::index::EncodePartitionRoot(paged_root));
    Put("published", "root-page", page_bytes);
  }
  root.format_version = 1;
  root.splits.clear();
  root.splits_omitted = true;
  root.partitions.pop_back();
  Put("published", "root-v1", gulpdb::index::EncodePartitionRoot(root));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s FIXTURES_DIR CORPUS_DIR\n", argv[0]);
    return 2;
  }
  fixtures = argv[1];
  corpus = argv[2];
  try {
    GmetaSeeds();
    RecordSeeds();
    JpegSeeds();
    SelectionSeeds();
    MetaValueSeeds();
    QuerySeeds();
    PublishedSeeds();
  } catch (const gulpdb::Error& e) {
    std::fprintf(stderr, "make seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
