// Frame checksums on every local read (OpenOptions::verify_checksums, on by
// default). One flipped bit in a committed frame makes every read that reads
// that frame fail with a CorruptionError naming the video, the frame, the
// file, the offset and both checksums, before anything decodes it; the
// video's other frames and the other videos read as before;
// verify_checksums = false reads the damaged bytes as they are; merge by copy
// and compaction refuse the frame whatever the dataset was opened with. A
// dataset stored without checksums reads as before, and Stats and Check say
// how many of its videos are read unverified.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/jpeg.h"
#include "gulpdb/maintenance.h"
#include "support/test_util.h"

namespace gulpdb {
namespace {

using test::Contains;
using test::FixtureFrames;
using test::TempDir;
using test::Views;

std::unique_ptr<Dataset> OpenWith(const std::string& dir, bool verify, bool read_only = true) {
  OpenOptions o;
  o.verify_checksums = verify;
  o.read_only = read_only;
  o.decode_threads = 2;
  return Dataset::Open(dir, o);
}

// A dataset in `dir` of two videos of real JPEG frames, "a" (fixture video
// 0, 5 frames) and "b" (fixture video 4, 6 frames), in one chunk.
void MakeDataset(const std::string& dir, bool checksums = true) {
  CreateOptions c;
  c.checksums = checksums;
  auto ds = Dataset::Create(dir, c);
  auto w = ds->NewWriter();
  const std::vector<std::string> a = FixtureFrames("0"), b = FixtureFrames("4");
  BOOST_REQUIRE_GE(a.size(), 4u);
  w->Append("a", Views(a), R"({"label": "x"})");
  w->Append("b", Views(b), R"({"label": "y"})");
  w->Commit();
}

// What a flipped bit did: where, and the frame's bytes before and after.
struct Damage {
  std::string file;  // the chunk file's path
  uint64_t offset = 0;
  uint32_t stored_crc = 0;
  std::string clean, damaged;
};

// Flips one bit in the middle of frame `k` of video `id` of the dataset in `dir`.
Damage FlipBit(const std::string& dir, const std::string& id, size_t k) {
  Damage d;
  const std::unique_ptr<Dataset> ds = OpenWith(dir, false);
  const VideoInfo v = ds->Get(id);
  d.file = dir + "/" + ds->Chunks().at(v.chunk).file_name;
  const FrameInfo& f = v.frames.at(k);
  d.offset = f.offset;
  if (!v.checksums.empty()) d.stored_crc = v.checksums.at(k);
  std::string bytes = test::ReadFile(d.file);
  d.clean = bytes.substr(f.offset, f.jpeg_size());
  const size_t at = f.offset + f.jpeg_size() / 2;
  bytes[at] = static_cast<char>(bytes[at] ^ 0x08);
  test::WriteFile(d.file, bytes);
  d.damaged = bytes.substr(f.offset, f.jpeg_size());
  return d;
}

std::string Hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

// Runs `read`, which must throw a CorruptionError naming video `id`, frame
// `k`, the damaged file and offset and both checksums.
template <typename F>
void ExpectDamage(F&& read, const Damage& d, const std::string& id, size_t k,
                  const std::string& what) {
  try {
    read();
    BOOST_ERROR(what << ": a damaged frame was read without an error");
  } catch (const CorruptionError& e) {
    const std::string m = e.what();
    BOOST_TEST_INFO(what << ": " << m);
    BOOST_TEST(Contains(m, "id '" + id + "' frame " + std::to_string(k)));
    BOOST_TEST(Contains(m, d.file));
    BOOST_TEST(Contains(m, "offset " + std::to_string(d.offset)));
    BOOST_TEST(Contains(m, "checksum mismatch"));
    BOOST_TEST(Contains(m, Hex(d.stored_crc)));
    BOOST_TEST(Contains(m, Hex(test::ReferenceCrc32c(d.damaged.data(), d.damaged.size()))));
  }
}

BOOST_AUTO_TEST_SUITE(frame_checksum_test)

BOOST_AUTO_TEST_CASE(checksums_are_verified_by_default) {
  BOOST_TEST(OpenOptions().verify_checksums);
}

// Every local read that reads the damaged frame fails, opened the default way.
BOOST_AUTO_TEST_CASE(a_flipped_bit_fails_every_read_of_that_frame) {
  TempDir tmp;
  MakeDataset(tmp.path());
  const std::vector<std::string> a = FixtureFrames("0"), b = FixtureFrames("4");
  const Damage d = FlipBit(tmp.path(), "a", 2);
  BOOST_REQUIRE(d.damaged != d.clean);
  const std::unique_ptr<Dataset> ds = Dataset::Open(tmp.path());
  ExpectDamage([&] { ds->ReadJpegs("a"); }, d, "a", 2, "ReadJpegs all");
  ExpectDamage([&] { ds->ReadJpegs("a", Selection::Indices({2})); }, d, "a", 2, "ReadJpegs [2]");
  ExpectDamage([&] { ds->ReadJpegs("a", Selection::Slice(1, 4)); }, d, "a", 2, "ReadJpegs 1:4");
  ExpectDamage(
      [&] {
        ds->ReadJpegBatch({FrameRequest{"b"}, FrameRequest{"a"}});
      },
      d, "a", 2, "ReadJpegBatch");
  ExpectDamage([&] { ds->ReadFrames("a"); }, d, "a", 2, "ReadFrames");
  ExpectDamage(
      [&] {
        ds->ReadFrames("a", Selection::Indices({2, 0}));
      },
      d, "a", 2, "ReadFrames [2, 0]");
  DecodeOptions fixed;
  fixed.out_height = 32;
  fixed.out_width = 32;
  ExpectDamage(
      [&] {
        ds->ReadBatch({FrameRequest{"a"}, FrameRequest{"b"}}, fixed);
      },
      d, "a", 2, "ReadBatch, fixed size");

  // The video's other frames and the other video read as before (the
  // checksum is per frame).
  const StoredFrames others = ds->ReadJpegs("a", Selection::Indices({0, 1, 3}));
  BOOST_REQUIRE_EQUAL(others.size(), 3u);
  BOOST_TEST(others[0] == a[0]);
  BOOST_TEST(others[1] == a[1]);
  BOOST_TEST(others[2] == a[3]);
  BOOST_TEST(ds->ReadFrames("a", Selection::Slice(3, 4)).size() == 1u);
  const StoredFrames whole_b = ds->ReadJpegs("b");
  BOOST_REQUIRE_EQUAL(whole_b.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) BOOST_TEST(whole_b[i] == b[i]);
  BOOST_TEST(ds->ReadFrames("b").size() == b.size());
}

// verify_checksums = false is the opt-out: the bytes as they are on disk.
BOOST_AUTO_TEST_CASE(verify_checksums_false_reads_the_damaged_bytes) {
  TempDir tmp;
  MakeDataset(tmp.path());
  const Damage d = FlipBit(tmp.path(), "a", 1);
  const std::unique_ptr<Dataset> ds = OpenWith(tmp.path(), false);
  const StoredFrames got = ds->ReadJpegs("a", Selection::Indices({1}));
  BOOST_REQUIRE_EQUAL(got.size(), 1u);
  BOOST_TEST(got[0] == d.damaged);
}

// GULPDB_TEST_BUG=unverified-reads puts the old default back (what
// test_lifecycle_finds_bugs.py shows the lifecycle test finds): the damaged
// bytes are served.
BOOST_AUTO_TEST_CASE(the_seeded_bug_serves_a_damaged_frame) {
  TempDir tmp;
  MakeDataset(tmp.path());
  const Damage d = FlipBit(tmp.path(), "a", 3);
  test::ScopedEnv env;
  env.Set("GULPDB_TEST_BUG", "unverified-reads");
  BOOST_TEST(Dataset::Open(tmp.path())->ReadJpegs("a", Selection::Indices({3}))[0] == d.damaged);
  env.Unset("GULPDB_TEST_BUG");
  BOOST_CHECK_THROW(Dataset::Open(tmp.path())->ReadJpegs("a"), CorruptionError);
}

// A dataset stored without checksums reads as before (damage included: there
// is nothing to check it against), and says that its frames are unverified.
BOOST_AUTO_TEST_CASE(a_dataset_without_checksums_reads_unverified_and_says_so) {
  TempDir tmp;
  MakeDataset(tmp / "plain", /*checksums=*/false);
  const Damage d = FlipBit(tmp / "plain", "a", 1);
  {
    const std::unique_ptr<Dataset> ds = Dataset::Open(tmp / "plain");
    BOOST_TEST(ds->ReadJpegs("a", Selection::Indices({1}))[0] == d.damaged);
    const DatasetStats s = ds->Stats();
    BOOST_TEST(!s.checksums);
    BOOST_REQUIRE(s.unverified_videos.has_value());
    BOOST_TEST(*s.unverified_videos == 2u);
    BOOST_TEST(*s.unverified_chunks == 1u);
  }
  const CheckReport r = Check(tmp / "plain");
  BOOST_TEST(r.healthy());
  BOOST_TEST(r.unverified_videos == 2u);
  BOOST_TEST(r.unverified_chunks == 1u);
  bool noted = false;
  for (const std::string& n : r.notes) noted = noted || Contains(n, "read unverified");
  BOOST_TEST(noted);

  // With checksums: nothing unverified.
  MakeDataset(tmp / "summed");
  const DatasetStats s = Dataset::Open(tmp / "summed")->Stats();
  BOOST_TEST(s.checksums);
  BOOST_TEST((s.unverified_videos == std::optional<uint64_t>(0)));
  BOOST_TEST((s.unverified_chunks == std::optional<uint64_t>(0)));
  const CheckReport clean = Check(tmp / "summed");
  BOOST_TEST(clean.unverified_videos == 0u);
  BOOST_TEST(clean.notes.empty());
}

// A shard merged in place keeps its records, checksums or none: Stats cannot
// tell without reading every record (nullopt), Check counts them.
BOOST_AUTO_TEST_CASE(chunks_merged_in_place_are_counted_by_check) {
  TempDir tmp;
  MakeDataset(tmp / "out");
  MakeDataset(tmp / "out/shard", /*checksums=*/false);
  {
    const std::unique_ptr<Dataset> shard = OpenWith(tmp / "out/shard", true, false);
    auto w = shard->NewWriter();
    const std::vector<std::string> frames = FixtureFrames("1");
    w->Append("c", Views(frames));
    w->Commit();
  }
  {
    const std::unique_ptr<Dataset> out = OpenWith(tmp / "out", true, false);
    out->Remove({"a", "b"});
  }
  Merge(tmp / "out", {tmp / "out/shard"});
  const DatasetStats s = Dataset::Open(tmp / "out")->Stats();
  BOOST_TEST(s.videos == 3u);
  BOOST_TEST(!s.unverified_videos.has_value());
  BOOST_TEST(!s.unverified_chunks.has_value());
  const CheckReport r = Check(tmp / "out");
  for (const CheckProblem& p : r.problems) BOOST_ERROR(p.where << ": " << p.what);
  BOOST_TEST(r.unverified_videos == 3u);
  BOOST_TEST(r.unverified_chunks == 1u);
}

// Merging by copy writes the frames under new checksums: a damaged frame
// stops it, naming the frame, and the output gets none of that shard.
BOOST_AUTO_TEST_CASE(merge_by_copy_refuses_a_damaged_frame) {
  TempDir tmp;
  MakeDataset(tmp / "shard");
  const Damage d = FlipBit(tmp / "shard", "b", 0);
  ExpectDamage([&] { Merge(tmp / "out", {tmp / "shard"}); }, d, "b", 0, "merge");
  const std::unique_ptr<Dataset> out = Dataset::Open(tmp / "out");
  BOOST_TEST(out->Count() == 0u);
}

// Compaction checks what it copies even when the dataset was opened without
// checks (it would otherwise give the damaged frame a fresh checksum).
BOOST_AUTO_TEST_CASE(compaction_refuses_a_damaged_frame_whatever_the_open_said) {
  TempDir tmp;
  MakeDataset(tmp.path());
  const Damage d = FlipBit(tmp.path(), "b", 1);
  const std::unique_ptr<Dataset> ds = OpenWith(tmp.path(), false, false);
  ds->Remove({"a"});
  ExpectDamage([&] { Compact(*ds); }, d, "b", 1, "compact");
  BOOST_TEST(ds->ReadJpegs("b", Selection::Indices({1}))[0] == d.damaged);
  BOOST_TEST(ds->Get("b").frames[1].offset == d.offset);
}

// import --reindex recomputes checksums from the .gulp bytes: where the index
// it replaces has one for the same bytes (chunk, offset, length), they must
// agree, or the damaged frame would read as clean from then on. The refusal
// names the video, the frame, the file and what to do, and leaves the old
// index (which still refuses the frame); once the file is restored the
// re-index goes through.
BOOST_AUTO_TEST_CASE(reindex_refuses_a_frame_damaged_since_it_was_indexed) {
  TempDir tmp;
  MakeDataset(tmp.path());
  ExportGmeta(*Dataset::Open(tmp.path()));  // .gmeta files: the directory can be re-indexed
  ImportOptions re;
  re.reindex = true;
  const Damage d = FlipBit(tmp.path(), "b", 4);
  try {
    ImportGulpio(tmp.path(), re);
    BOOST_ERROR("the re-index gave the damaged frame a fresh checksum");
  } catch (const CorruptionError& e) {
    const std::string m = e.what();
    BOOST_TEST_INFO(m);
    BOOST_TEST(Contains(m, "id 'b' frame 4"));
    BOOST_TEST(Contains(m, d.file));
    BOOST_TEST(Contains(m, "offset " + std::to_string(d.offset)));
    BOOST_TEST(Contains(m, Hex(d.stored_crc)));
    BOOST_TEST(Contains(m, Hex(test::ReferenceCrc32c(d.damaged.data(), d.damaged.size()))));
    BOOST_TEST(Contains(m, "Restore the file"));
  }
  ExpectDamage([&] { Dataset::Open(tmp.path())->ReadJpegs("b"); }, d, "b", 4, "after refusal");
  BOOST_TEST(Dataset::Open(tmp.path())->ReadJpegs("a").size() == 5u);

  // Restored: the re-index is a clean one, and reads are as before.
  std::string bytes = test::ReadFile(d.file);
  bytes.replace(d.offset, d.clean.size(), d.clean);
  test::WriteFile(d.file, bytes);
  BOOST_TEST(ImportGulpio(tmp.path(), re).videos == 2u);
  const std::unique_ptr<Dataset> ds = Dataset::Open(tmp.path());
  BOOST_TEST(ds->ReadJpegs("b")[4] == d.clean);
  BOOST_TEST(ds->Get("b").checksums.at(4) == d.stored_crc);
}

// GULPDB_TEST_BUG=reindex-blesses-rot puts the bug back: the damaged frame
// gets a fresh checksum and reads as clean.
BOOST_AUTO_TEST_CASE(the_seeded_bug_blesses_a_damaged_frame_on_reindex) {
  TempDir tmp;
  MakeDataset(tmp.path());
  ExportGmeta(*Dataset::Open(tmp.path()));
  const Damage d = FlipBit(tmp.path(), "a", 2);
  ImportOptions re;
  re.reindex = true;
  test::ScopedEnv env;
  env.Set("GULPDB_TEST_BUG", "reindex-blesses-rot");
  BOOST_TEST(ImportGulpio(tmp.path(), re).videos == 2u);
  env.Unset("GULPDB_TEST_BUG");
  BOOST_TEST(Dataset::Open(tmp.path())->ReadJpegs("a")[2] == d.damaged);
}

// What the old index has no checksum for is read as new: a dataset imported
// without checksums, re-indexed with them, takes the bytes as they are.
BOOST_AUTO_TEST_CASE(reindex_checksums_frames_the_old_index_did_not) {
  TempDir tmp;
  MakeDataset(tmp.path(), /*checksums=*/false);
  ExportGmeta(*Dataset::Open(tmp.path()));
  const Damage d = FlipBit(tmp.path(), "a", 0);
  ImportOptions re;
  re.reindex = true;
  BOOST_TEST(ImportGulpio(tmp.path(), re).videos == 2u);
  const std::unique_ptr<Dataset> ds = Dataset::Open(tmp.path());
  BOOST_TEST(ds->ReadJpegs("a")[0] == d.damaged);
  BOOST_TEST(ds->Get("a").checksums.size() == 5u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
