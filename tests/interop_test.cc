// GulpIO interoperability against the fixtures written by GulpIO and GulpIO2:
// import in place, byte-identical export, appends after import, hostile
// .gmeta files, duplicate policies and the health check.
#include "gulpdb/interop.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "engine/core/dataset_impl.h"
#include "engine/core/fault_injection.h"
#include "engine/gulpio/gmeta.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/gulpio/verified_sources.h"
#include "engine/open.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "support/manifest.h"
#include "support/sha256.h"
#include "support/test_util.h"
#include "util/crc32c.h"
#include "util/file_io.h"

namespace gulpdb {
namespace {

namespace fs = std::filesystem;
using test::Manifest;
using test::TempDir;

std::string Sha(std::string_view bytes) { return test::Sha256Hex(bytes.data(), bytes.size()); }

// Copies a fixture directory (without its manifest) to `to`, writable.
void CopyFixture(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    if (e.path().filename() == "manifest.json") continue;
    const fs::path target = fs::path(to) / e.path().filename();
    fs::copy_file(e.path(), target, fs::copy_options::overwrite_existing);
    fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
  }
}

std::unique_ptr<Dataset> OpenRw(const std::string& dir) {
  OpenOptions o;
  o.read_only = false;
  return Dataset::Open(dir, o);
}

// Asserts that importing `dir` fails with `Expected` and leaves no index behind.
template <typename Expected>
void ExpectImportFails(const std::string& dir, const std::string& fragment,
                       const ImportOptions& options = {}) {
  try {
    ImportGulpio(dir, options);
    BOOST_ERROR("import of " << dir << " should fail with '" << fragment << "'");
  } catch (const Expected& e) {
    BOOST_TEST_INFO("message: " << e.what());
    BOOST_TEST(std::string(e.what()).find(fragment) != std::string::npos);
  }
  BOOST_TEST(!Dataset::Exists(dir));
  for (const auto& e : fs::directory_iterator(dir)) {
    BOOST_TEST(e.path().filename().string().find("gulpdb.index") == std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE(interop_test)

// An export must not hold a read transaction while it writes files: a writer
// in the same process that needs to grow the index map would wait for the
// whole export (LMDB resizes only when no transaction of the process is
// open). Here the writer commits, and must grow the map, while the export
// writes its first file; the export then still describes one state.
BOOST_AUTO_TEST_CASE(export_lets_a_same_process_writer_grow_the_map) {
  TempDir tmp;
  CreateOptions create;
  create.videos_per_chunk = 4;
  create.initial_map_size = 256 * 1024;
  auto ds = Dataset::Create(tmp / "d", create);
  {
    auto w = ds->NewWriter();
    for (int i = 0; i < 12; ++i) {
      w->Append("v" + std::to_string(i), test::Views({test::FakeJpeg(64, 1)}), "{}");
    }
    w->Commit();
  }
  // A batch whose commit needs several times the initial map.
  std::unique_ptr<Writer> writer = ds->NewWriter();
  const std::string big_meta = "{\"pad\": \"" + std::string(4000, 'x') + "\"}";
  for (int i = 0; i < 300; ++i) {
    writer->Append("w" + std::to_string(i), test::Views({test::FakeJpeg(64, 2)}), big_meta);
  }
  struct Context {
    Writer* writer;
    std::atomic<bool> fired{false};
    bool committed_in_time = false;
    std::future<void> commit;
  } context;
  context.writer = writer.get();
  engine::fault::SetIoHook(
      [](engine::fault::Op op, const std::string& path, uint64_t, size_t,
         void* c) -> engine::fault::Injection {
        auto* ctx = static_cast<Context*>(c);
        if (op != engine::fault::Op::kWrite || path.find(".gmeta.tmp") == std::string::npos ||
            ctx->fired.exchange(true)) {
          return {};
        }
        ctx->commit = std::async(std::launch::async, [w = ctx->writer] { w->Commit(); });
        ctx->committed_in_time =
            ctx->commit.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
        return {};
      },
      &context);
  ExportReport report;
  try {
    report = ExportGmeta(*ds, "");
  } catch (...) {
    engine::fault::SetIoHook(nullptr, nullptr);
    throw;
  }
  engine::fault::SetIoHook(nullptr, nullptr);
  BOOST_REQUIRE(context.fired);
  context.commit.get();
  BOOST_TEST(context.committed_in_time);
  // The export restarted on the new state: every video, once.
  BOOST_TEST(report.videos == 312u);
  BOOST_TEST(ds->Count() == 312u);
  size_t entries = 0;
  for (const ChunkInfo& c : ds->Chunks()) {
    engine::ReadGmeta(tmp / ("d/meta_" + std::to_string(c.number) + ".gmeta"),
                      [&](engine::GmetaEntry&&) { ++entries; });
  }
  BOOST_TEST(entries == 312u);
}

BOOST_AUTO_TEST_CASE(import_every_fixture_matches_its_manifest) {
  size_t dirs = 0;
  for (const std::string& fixture : test::GulpFixtureDirs()) {
    BOOST_TEST_CONTEXT("fixture " << fixture) {
      const Manifest m = test::ReadManifest(fixture);
      TempDir tmp;
      const std::string dir = tmp / "d";
      CopyFixture(fixture, dir);
      const ImportReport report = ImportGulpio(dir);
      BOOST_TEST(report.chunks == m.chunks.size());
      BOOST_TEST(report.videos == m.items.size());
      BOOST_TEST(report.frames == m.frame_count());

      // No byte of any .gulp changed.
      for (const auto& c : m.chunks) {
        BOOST_TEST(Sha(test::ReadFile(dir + "/" + c.data_file)) == c.data_sha256);
      }
      auto ds = Dataset::Open(dir);
      BOOST_TEST(ds->Count() == m.items.size());
      size_t decoded_frames = 0;
      for (const auto& item : m.items) {
        const VideoInfo v = ds->Get(item.id);
        BOOST_TEST(v.meta_data == item.meta_data);
        BOOST_TEST(v.chunk == static_cast<uint32_t>(item.chunk_id));
        BOOST_REQUIRE_EQUAL(v.frames.size(), item.frame_info.size());
        for (size_t i = 0; i < v.frames.size(); ++i)
          BOOST_TEST((v.frames[i] == item.frame_info[i]));
        const StoredFrames jpegs = ds->ReadJpegs(item.id);
        BOOST_REQUIRE_EQUAL(jpegs.size(), item.frames.size());
        for (size_t i = 0; i < jpegs.size(); ++i) {
          BOOST_TEST(Sha(jpegs[i]) == item.frames[i].jpeg_sha256);
        }
        // Decoded through the dataset: GulpIO2's pixels by default (fast DCT),
        // GulpIO's with the accurate DCT; grayscale frames have one channel.
        DecodeOptions accurate;
        accurate.dct = DctMethod::kAccurate;
        const DecodedFrames fast_px = ds->ReadFrames(item.id);
        const DecodedFrames accurate_px = ds->ReadFrames(item.id, Selection::All(), accurate);
        BOOST_REQUIRE_EQUAL(fast_px.size(), item.frames.size());
        for (size_t i = 0; i < fast_px.size(); ++i) {
          const auto& f = item.frames[i];
          BOOST_TEST(test::Sha256Hex(fast_px.data(i), fast_px.shape(i).bytes()) == f.sha_fast);
          BOOST_TEST(test::Sha256Hex(accurate_px.data(i), accurate_px.shape(i).bytes()) ==
                     f.sha_accurate);
          BOOST_TEST(fast_px.shape(i).channels == (f.decoded_shape.size() == 3 ? 3 : 1));
          ++decoded_frames;
        }
      }
      // Chunk order and id order within each chunk.
      const std::vector<ChunkInfo> chunks = ds->Chunks();
      BOOST_REQUIRE_EQUAL(chunks.size(), m.chunks.size());
      for (const ChunkInfo& c : chunks) {
        const auto& mc = m.chunk(c.number);
        BOOST_TEST(c.file_name == mc.data_file);
        BOOST_TEST(c.meta_file == mc.meta_file);
        std::vector<std::string> ids;
        ds->ForEachInChunk(c.number, [&](const VideoInfo& v) {
          ids.push_back(v.id);
          return true;
        });
        BOOST_TEST(ids == mc.ids_in_order, boost::test_tools::per_element());
      }
      BOOST_TEST(decoded_frames == m.frame_count());
      CheckOptions deep;
      deep.deep = true;
      const CheckReport check = Check(dir, deep);
      for (const auto& p : check.problems) BOOST_ERROR(p.where << ": " << p.what);
      BOOST_TEST(check.frames == m.frame_count());

      // Export into an empty directory and in place: byte-identical .gmeta.
      const std::string out = tmp / "export";
      fs::create_directories(out);
      const ExportReport exported = ExportGmeta(*ds, out);
      BOOST_TEST(exported.chunks == m.chunks.size());
      ExportGmeta(*ds);
      for (const auto& c : m.chunks) {
        BOOST_TEST(Sha(test::ReadFile(out + "/" + c.meta_file)) == c.meta_sha256);
        BOOST_TEST(Sha(test::ReadFile(dir + "/" + c.meta_file)) == c.meta_sha256);
      }
      if (fs::exists(dir + "/label2idx.json")) {
        BOOST_TEST(test::ReadFile(out + "/label2idx.json") ==
                   test::ReadFile(dir + "/label2idx.json"));
      }
      // Importing again is a clear error, never a second copy.
      ds.reset();
      BOOST_CHECK_THROW(ImportGulpio(dir), InvalidArgumentError);
      ++dirs;
    }
  }
  BOOST_TEST(dirs == 4u);
}

// Import stores a CRC-32C per frame like the writer, so damage to GulpIO
// data after the import is found by check --deep and verify-on-read; with
// checksums off nothing but the .gmeta files is read.
BOOST_AUTO_TEST_CASE(import_stores_frame_checksums_that_catch_later_damage) {
  const std::string fixture = test::GulpFixtureDirs().front();
  const Manifest m = test::ReadManifest(fixture);
  TempDir tmp;
  const std::string dir = tmp / "d";
  CopyFixture(fixture, dir);
  ImportGulpio(dir);
  const auto& item = m.items.front();
  FrameInfo target;
  std::string data_file;
  {
    auto ds = Dataset::Open(dir);
    BOOST_TEST(ds->Stats().checksums);
    const VideoInfo v = ds->Get(item.id);
    BOOST_REQUIRE_EQUAL(v.checksums.size(), v.frames.size());
    const StoredFrames jpegs = ds->ReadJpegs(item.id);
    for (size_t i = 0; i < jpegs.size(); ++i) {
      BOOST_TEST(v.checksums[i] == test::ReferenceCrc32c(jpegs[i].data(), jpegs[i].size()));
    }
    target = v.frames.back();
    data_file = dir + "/" + m.chunk(v.chunk).data_file;
  }
  std::string bytes = test::ReadFile(data_file);
  const size_t at = target.offset + (target.length - target.pad) / 2;
  bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
  test::WriteFile(data_file, bytes);
  CheckOptions deep;
  deep.deep = true;
  const CheckReport report = Check(dir, deep);
  BOOST_REQUIRE(!report.healthy());
  BOOST_TEST(report.problems[0].where.find(item.id) != std::string::npos);
  OpenOptions verify;
  verify.verify_checksums = true;
  BOOST_CHECK_THROW(Dataset::Open(dir, verify)->ReadJpegs(item.id), CorruptionError);

  TempDir tmp2;
  const std::string plain = tmp2 / "d";
  CopyFixture(fixture, plain);
  ImportOptions no_crc;
  no_crc.checksums = false;
  ImportGulpio(plain, no_crc);
  auto ds = Dataset::Open(plain);
  BOOST_TEST(!ds->Stats().checksums);
  BOOST_TEST(ds->Get(item.id).checksums.empty());
}

BOOST_AUTO_TEST_CASE(appends_after_import_export_as_gulpio_expects) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  ImportGulpio(dir);
  const auto frames = test::FixtureFrames("7");
  {
    auto ds = OpenRw(dir);
    auto w = ds->NewWriter();
    w->Append("new_a", test::Views(frames), R"({"label": "circle", "idx": 0})");
    w->Append("new_b", {frames[0]}, "{}");
    w->Commit();
    ExportGmeta(*ds);
  }
  // Read every .gmeta as GulpIO2 would: frame_info triples must point at the
  // right bytes of the matching data file.
  std::map<std::string, std::vector<std::string>> read;  // id -> jpeg bytes
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("meta", 0) != 0) continue;
    const std::string data =
        test::ReadFile(dir + "/data" + name.substr(4, name.size() - 10) + ".gulp");
    engine::ReadGmeta(e.path().string(), [&](engine::GmetaEntry&& entry) {
      for (const FrameInfo& f : entry.frame_info) {
        BOOST_REQUIRE(f.offset + f.length <= data.size());
        read[entry.id].push_back(data.substr(f.offset, f.length - f.pad));
      }
    });
  }
  BOOST_TEST(read.size() == 24u);
  BOOST_TEST(read["new_a"] == frames, boost::test_tools::per_element());
  BOOST_TEST(read["new_b"].at(0) == frames[0]);
  BOOST_TEST(Check(dir).healthy());
}

// Writes `text` as meta_0.gmeta of a copy of the edge-case fixture.
std::string HostileCopy(const TempDir& tmp, const std::string& name, const std::string& text) {
  const std::string dir = tmp / name;
  CopyFixture(test::FixturesDir() + "/gulpio2_edge_cases", dir);
  test::WriteFile(dir + "/meta_0.gmeta", text);
  return dir;
}

BOOST_AUTO_TEST_CASE(hostile_gmeta_files_are_rejected_with_where_and_what) {
  TempDir tmp;
  const std::string good = test::ReadFile(test::FixturesDir() + "/gulpio2_edge_cases/meta_0.gmeta");
  ExpectImportFails<CorruptionError>(HostileCopy(tmp, "truncated", good.substr(0, good.size() / 2)),
                                     "meta_0.gmeta: byte");
  ExpectImportFails<CorruptionError>(
      HostileCopy(tmp, "types", R"({"a": {"frame_info": "no", "meta_data": []}})"), "byte");
  ExpectImportFails<CorruptionError>(
      HostileCopy(tmp, "past_end",
                  R"({"a": {"frame_info": [[7000, 0, 1000]], "meta_data": [{}]}})"),
      "ends past the end of data_0.gulp");
  ExpectImportFails<CorruptionError>(
      HostileCopy(tmp, "negative", R"({"a": {"frame_info": [[-4, 0, 8]], "meta_data": [{}]}})"),
      "byte");
  ExpectImportFails<CorruptionError>(
      HostileCopy(tmp, "overlap",
                  R"({"a": {"frame_info": [[0, 1, 744]], "meta_data": [{}]}, )"
                  R"("b": {"frame_info": [[740, 0, 8]], "meta_data": [{}]}})"),
      "frames overlap");
  ExpectImportFails<CorruptionError>(
      HostileCopy(tmp, "pad", R"({"a": {"frame_info": [[0, 9, 744]], "meta_data": [{}]}})"),
      "pad is over");
  ExpectImportFails<CorruptionError>(
      HostileCopy(tmp, "pad_len", R"({"a": {"frame_info": [[0, 3, 2]], "meta_data": [{}]}})"),
      "smaller than pad");
  ExpectImportFails<CorruptionError>(
      HostileCopy(
          tmp, "twice",
          R"({"a": {"frame_info": [], "meta_data": [{}]}, "a": {"frame_info": [], "meta_data": [{}]}})"),
      "appears twice");
  ExpectImportFails<CorruptionError>(
      HostileCopy(tmp, "meta_type", R"({"a": {"frame_info": [], "meta_data": {"x": 1}}})"), "byte");

  const std::string missing = tmp / "missing_meta";
  CopyFixture(test::FixturesDir() + "/gulpio2_edge_cases", missing);
  fs::remove(missing + "/meta_1.gmeta");
  ExpectImportFails<InvalidArgumentError>(missing, "data_1.gulp has no meta file");
  ImportOptions skip;
  skip.skip_missing_meta = true;
  const ImportReport report = ImportGulpio(missing, skip);
  BOOST_TEST(report.chunks == 1u);
  BOOST_REQUIRE_EQUAL(report.warnings.size(), 1u);
  BOOST_TEST(report.warnings[0].find("data_1.gulp") != std::string::npos);

  BOOST_CHECK_THROW(ImportGulpio(tmp / "nowhere"), NotFoundError);
  fs::create_directories(tmp / "empty");
  ExpectImportFails<InvalidArgumentError>(tmp / "empty", "no data*.gulp");
}

BOOST_AUTO_TEST_CASE(duplicate_ids_across_chunks_follow_the_policy) {
  TempDir tmp;
  // Chunk 1 of the CSV fixture holds ids "2" and "3"; rename "2" to "0",
  // which chunk 0 has.
  const auto make = [&](const std::string& name) {
    const std::string dir = tmp / name;
    CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
    std::string meta = test::ReadFile(dir + "/meta_1.gmeta");
    const size_t at = meta.find("\"2\": ");
    BOOST_REQUIRE(at != std::string::npos);
    meta.replace(at, 3, "\"0\"");
    test::WriteFile(dir + "/meta_1.gmeta", meta);
    return dir;
  };
  ExpectImportFails<InvalidArgumentError>(make("error"), "ids appear in more than one chunk: 0");
  ImportOptions first;
  first.on_duplicate = OnDuplicate::kSkip;
  const std::string d1 = make("first");
  ImportGulpio(d1, first);
  BOOST_TEST(Dataset::Open(d1)->Get("0").chunk == 0u);
  BOOST_TEST(Dataset::Open(d1)->Count() == 21u);
  BOOST_TEST(Check(d1).healthy());
  ImportOptions last;
  last.on_duplicate = OnDuplicate::kReplace;
  const std::string d2 = make("last");
  ImportGulpio(d2, last);
  BOOST_TEST(Dataset::Open(d2)->Get("0").chunk == 1u);
  BOOST_TEST(Dataset::Open(d2)->Count() == 21u);
  BOOST_TEST(Check(d2).healthy());
}

BOOST_AUTO_TEST_CASE(index_can_live_outside_a_read_only_directory) {
  TempDir tmp;
  const std::string dir = tmp / "ro";
  CopyFixture(test::FixturesDir() + "/gulpio2_json_videos", dir);
  ImportOptions options;
  options.index_dir = tmp / "cache_index";
  ImportGulpio(dir, options);
  BOOST_TEST(!Dataset::Exists(dir));
  OpenOptions open;
  open.index_dir = options.index_dir;
  BOOST_TEST(Dataset::Open(dir, open)->Count() > 0u);
}

BOOST_AUTO_TEST_CASE(check_finds_damage_and_passes_healthy_data) {
  TempDir tmp;
  const std::string dir = tmp / "d";
  std::string frame_path;
  uint64_t frame_offset = 0;
  {
    auto ds = Dataset::Create(dir);
    auto w = ds->NewWriter();
    w->Append("a", test::Views(test::FixtureFrames("0")));
    w->Append("b", test::Views(test::FixtureFrames("1")));  // 3 frames
    w->Commit();
    frame_offset = ds->Get("b").frames[1].offset;
  }
  BOOST_TEST(Check(dir).healthy());
  CheckOptions deep;
  deep.deep = true;
  BOOST_TEST(Check(dir, deep).healthy());
  const std::string chunk = dir + "/data_0.gulp";
  const std::string original = test::ReadFile(chunk);

  // A flipped byte inside a frame: only the deep check reads that far.
  std::string flipped = original;
  flipped[frame_offset + 300] = static_cast<char>(flipped[frame_offset + 300] ^ 0x10);
  test::WriteFile(chunk, flipped);
  BOOST_TEST(Check(dir).healthy());
  const CheckReport r1 = Check(dir, deep);
  BOOST_REQUIRE(!r1.healthy());
  BOOST_TEST(r1.problems[0].where.find("id 'b' frame 1") != std::string::npos);

  // A non-zero pad byte.
  const VideoInfo a = Dataset::Open(dir)->Get("a");
  size_t padded = 0;
  while (padded < a.frames.size() && a.frames[padded].pad == 0) ++padded;
  BOOST_REQUIRE(padded < a.frames.size());
  std::string bad_pad = original;
  bad_pad[a.frames[padded].offset + a.frames[padded].length - 1] = 'x';
  test::WriteFile(chunk, bad_pad);
  const CheckReport r2 = Check(dir);
  BOOST_REQUIRE(!r2.healthy());
  BOOST_TEST(r2.problems[0].what.find("pad byte") != std::string::npos);

  // A truncated chunk.
  test::WriteFile(chunk, original.substr(0, original.size() - 10));
  const CheckReport r3 = Check(dir);
  BOOST_REQUIRE(!r3.healthy());
  BOOST_TEST(r3.problems[0].what.find("truncated") != std::string::npos);

  // Bytes past the committed length are a note, not a problem.
  test::WriteFile(chunk, original + "garbage!");
  const CheckReport r4 = Check(dir);
  BOOST_TEST(r4.healthy());
  BOOST_TEST(r4.notes.size() == 1u);
}

// Creating a dataset in a plain GulpIO directory would put an empty index
// beside its chunks and hide every video from then on: it is refused, with
// the command that indexes them, and leaves the directory as it was.
BOOST_AUTO_TEST_CASE(create_refuses_a_gulpio_directory_and_leaves_it_unchanged) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  const std::vector<std::string> before = util::ListDirectory(dir);
  try {
    Dataset::Create(dir);
    BOOST_ERROR("creating a dataset in a GulpIO directory should fail");
  } catch (const InvalidArgumentError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("gulpdb import " + dir) != std::string::npos, what);
    BOOST_TEST(what.find("data_0.gulp") != std::string::npos, what);
  }
  BOOST_TEST(util::ListDirectory(dir) == before, boost::test_tools::per_element());
  BOOST_TEST(!Dataset::Exists(dir));
  // The way the message points to still works.
  BOOST_TEST(ImportGulpio(dir).videos == 22u);
  BOOST_TEST(Dataset::Open(dir)->Count() == 22u);

  // One pair is enough; a lone data file (gulpdb's own chunk naming) or
  // unrelated files are not GulpIO chunks.
  const std::string one = tmp / "one";
  fs::create_directories(one);
  test::WriteFile(one + "/data_7.gulp", "");
  test::WriteFile(one + "/notes.txt", "x");
  BOOST_TEST(Dataset::Create(one)->Count() == 0u);
  const std::string pair = tmp / "pair";
  fs::create_directories(pair);
  test::WriteFile(pair + "/data_x3.gulp", "");
  test::WriteFile(pair + "/meta_x3.gmeta", "{}");
  BOOST_CHECK_THROW(Dataset::Create(pair), InvalidArgumentError);
  BOOST_TEST(!fs::exists(pair + "/gulpdb.index"));
}

// Sets the modification time of `path` `seconds` into the future, as a
// later write by another program would.
void TouchLater(const std::string& path, int seconds) {
  const auto t = fs::last_write_time(path);
  fs::last_write_time(path, t + std::chrono::seconds(seconds));
}

// What GulpIO/GulpIO2 tools may do to a directory after gulpdb indexed it in
// place, and the file each change must be reported for.
struct ForeignChange {
  const char* name;
  const char* file;  // named in the error
  std::function<void(const std::string&)> apply;
};

std::vector<ForeignChange> ForeignChanges() {
  return {
      {"gmeta rewritten, same size", "meta_3.gmeta",
       [](const std::string& dir) {
         std::string text = test::ReadFile(dir + "/meta_3.gmeta");
         const size_t at = text.find("\"label\": \"");
         BOOST_REQUIRE(at != std::string::npos);
         text[at + 10] = static_cast<char>(std::toupper(text[at + 10]));
         test::WriteFile(dir + "/meta_3.gmeta", text);
         TouchLater(dir + "/meta_3.gmeta", 2);
       }},
      {"gmeta rewritten, other size", "meta_3.gmeta",
       [](const std::string& dir) {
         std::string text = test::ReadFile(dir + "/meta_3.gmeta");
         text.insert(text.find("\"label\""), "\"x\": 1, ");
         test::WriteFile(dir + "/meta_3.gmeta", text);
       }},
      {"chunk pair appended", "data_11.gulp",
       [](const std::string& dir) {
         fs::copy_file(dir + "/data_0.gulp", dir + "/data_11.gulp");
         std::string text = test::ReadFile(dir + "/meta_0.gmeta");
         text.replace(text.find("{\"0\": "), 6, "{\"x0\": ");
         text.replace(text.find(", \"1\": {"), 8, ", \"x1\": {");
         test::WriteFile(dir + "/meta_11.gmeta", text);
       }},
      {"bytes appended to a chunk", "data_4.gulp",
       [](const std::string& dir) {
         test::WriteFile(dir + "/data_4.gulp", test::ReadFile(dir + "/data_4.gulp") + "\xff\xd8zz");
       }},
      {"chunk removed", "data_5.gulp",
       [](const std::string& dir) {
         fs::remove(dir + "/data_5.gulp");
         fs::remove(dir + "/meta_5.gmeta");
       }},
      // A rewrite that keeps the size and sets the modification time back
      // (touch -r, a restore with times): its change time still differs.
      {"gmeta rewritten, same size and modification time", "meta_6.gmeta",
       [](const std::string& dir) {
         const std::string path = dir + "/meta_6.gmeta";
         const auto mtime = fs::last_write_time(path);
         std::string text = test::ReadFile(path);
         const size_t at = text.find("\"label\": \"");
         BOOST_REQUIRE(at != std::string::npos);
         text[at + 10] = static_cast<char>(std::toupper(text[at + 10]));
         test::WriteFile(path, text);
         fs::last_write_time(path, mtime);
       }},
      // Same bytes but for the ids: the file lists other videos.
      {"gmeta lists other videos, same size", "meta_2.gmeta",
       [](const std::string& dir) {
         const std::string path = dir + "/meta_2.gmeta";
         std::string text = test::ReadFile(path);
         BOOST_REQUIRE(text.compare(0, 6, "{\"4\": ") == 0);
         text[2] = 'z';
         test::WriteFile(path, text);
       }},
  };
}

BOOST_AUTO_TEST_CASE(in_place_index_refuses_gulpio_changes_made_after_import) {
  for (const ForeignChange& change : ForeignChanges()) {
    BOOST_TEST_CONTEXT(change.name) {
      TempDir tmp;
      const std::string dir = tmp / "gio";
      CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
      ImportGulpio(dir);
      BOOST_TEST(Dataset::Open(dir)->Count() == 22u);
      BOOST_TEST(Check(dir).healthy());
      change.apply(dir);
      try {
        Dataset::Open(dir);
        BOOST_ERROR("a stale index should not open");
      } catch (const CorruptionError& e) {
        const std::string what = e.what();
        BOOST_TEST(what.find("changed since it was indexed") != std::string::npos, what);
        BOOST_TEST(what.find(change.file) != std::string::npos, what);
        BOOST_TEST(what.find("gulpdb import " + dir + " --reindex") != std::string::npos, what);
      }
      const CheckReport report = Check(dir);
      BOOST_TEST(!report.healthy());
      bool named = false;
      for (const CheckProblem& p : report.problems) {
        if (p.where == change.file && p.what.find("changed since") != std::string::npos) {
          named = true;
        }
      }
      BOOST_TEST(named);
    }
  }
}

// gulpdb's own writes to an imported directory (new chunks, .gmeta files
// rewritten by an export in place) are not foreign changes.
BOOST_AUTO_TEST_CASE(in_place_index_accepts_its_own_appends_and_exports) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  ImportGulpio(dir);
  const auto frames = test::FixtureFrames("7");
  {
    auto ds = OpenRw(dir);
    ds->Remove({"6"});  // meta_3.gmeta changes size when exported
    auto w = ds->NewWriter();
    w->Append("new_a", test::Views(frames), R"({"label": "circle", "idx": 0})");
    w->Commit();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a coarse clock ticks
  ExportGmeta(*Dataset::Open(dir));
  BOOST_TEST(fs::exists(dir + "/meta_11.gmeta"));
  BOOST_TEST(Dataset::Open(dir)->Count() == 22u);
  BOOST_TEST(Check(dir).healthy());
  {
    auto ds = OpenRw(dir);
    auto w = ds->NewWriter();
    w->Append("new_b", {frames[0]}, "{}");
    w->Commit();
  }
  ExportGmeta(*Dataset::Open(dir));
  BOOST_TEST(Dataset::Open(dir)->Count() == 23u);
  BOOST_TEST(Check(dir).healthy());
}

// import --reindex rebuilds the index of a changed directory from its .gmeta
// files, and refuses to drop videos no .gmeta describes unless told.
// A re-index keeps the user's meta indexes and the splits whose videos are
// all still described; a split that lost videos is dropped with a warning.
BOOST_AUTO_TEST_CASE(reindex_keeps_meta_indexes_and_whole_splits) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  ImportGulpio(dir);
  std::vector<std::string> in_chunk_5, others;
  {
    auto ds = OpenRw(dir);
    BOOST_REQUIRE(ds->CreateMetaIndex("label"));
    for (const std::string& id : ds->Ids()) {
      (ds->Get(id).chunk == 5 ? in_chunk_5 : others).push_back(id);
    }
    BOOST_REQUIRE(!in_chunk_5.empty());
    auto w = ds->NewWriter();
    w->SetSplit("kept", others);
    w->SetSplit("loses_chunk_5", {others[0], in_chunk_5[0]});
    w->Commit();
  }
  ForeignChanges()[4].apply(dir);  // data_5.gulp and meta_5.gmeta removed
  BOOST_REQUIRE(std::string(ForeignChanges()[4].file) == "data_5.gulp");
  ImportOptions re;
  re.reindex = true;
  const ImportReport r = ImportGulpio(dir, re);
  BOOST_TEST(r.splits == 1u);
  bool warned = false;
  for (const std::string& w : r.warnings) {
    warned = warned || w.find("'loses_chunk_5'") != std::string::npos;
  }
  BOOST_TEST(warned);
  auto ds = Dataset::Open(dir);
  BOOST_TEST(ds->MetaIndexes() == std::vector<std::string>{"label"});
  BOOST_TEST(ds->Split("kept") == others);
  BOOST_CHECK_THROW(ds->Split("loses_chunk_5"), NotFoundError);
  BOOST_TEST(Check(dir).healthy());
}

BOOST_AUTO_TEST_CASE(reindex_rebuilds_a_changed_directory_and_keeps_unexported_videos_safe) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  ImportGulpio(dir);
  ForeignChanges()[2].apply(dir);  // a chunk pair appended
  BOOST_CHECK_THROW(Dataset::Open(dir), CorruptionError);
  BOOST_CHECK_THROW(ImportGulpio(dir), InvalidArgumentError);  // already indexed
  ImportOptions re;
  re.reindex = true;
  BOOST_TEST(ImportGulpio(dir, re).videos == 24u);
  {
    auto ds = Dataset::Open(dir);
    BOOST_TEST(ds->Count() == 24u);
    BOOST_TEST(ds->Contains("x1"));
  }
  BOOST_TEST(Check(dir).healthy());
  BOOST_TEST(!fs::exists(dir + "/gulpdb.index.importing"));

  // Videos gulpdb wrote and did not export: refused, and the index stays.
  const auto frames = test::FixtureFrames("7");
  {
    auto ds = OpenRw(dir);
    auto w = ds->NewWriter();
    w->Append("mine", test::Views(frames), "{}");
    w->Commit();
  }
  try {
    ImportGulpio(dir, re);
    BOOST_ERROR("re-indexing should refuse to drop 'mine'");
  } catch (const InvalidArgumentError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("1 videos") != std::string::npos, what);
    BOOST_TEST(what.find("'mine'") != std::string::npos, what);
    BOOST_TEST(what.find("gulpdb export " + dir) != std::string::npos, what);
  }
  BOOST_TEST(Dataset::Open(dir)->Contains("mine"));
  BOOST_TEST(!fs::exists(dir + "/gulpdb.index.importing"));
  // Exported, they are described and survive a re-index.
  ExportGmeta(*Dataset::Open(dir));
  BOOST_TEST(ImportGulpio(dir, re).videos == 25u);
  BOOST_TEST(Dataset::Open(dir)->Get("mine").frames.size() == frames.size());

  // Not exported before a foreign change: dropped only when asked to.
  {
    auto ds = OpenRw(dir);
    auto w = ds->NewWriter();
    w->Append("mine2", {frames[0]}, "{}");
    w->Commit();
  }
  ForeignChanges()[0].apply(dir);
  BOOST_CHECK_THROW(ImportGulpio(dir, re), InvalidArgumentError);
  re.discard_unexported = true;
  const ImportReport r = ImportGulpio(dir, re);
  BOOST_TEST(r.videos == 25u);
  BOOST_TEST(!r.warnings.empty());
  auto ds = Dataset::Open(dir);
  BOOST_TEST(!ds->Contains("mine2"));
  BOOST_TEST(ds->Get("6").meta_data.find("\"Circle\"") != std::string::npos,
             ds->Get("6").meta_data);
  BOOST_TEST(Check(dir).healthy());
}

// A dataset imported before file stamps were recorded opens and works as it
// did: nothing to compare, so changes go unnoticed (as they did then).
BOOST_AUTO_TEST_CASE(imported_dataset_without_stamps_still_opens) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  ImportGulpio(dir);
  {
    // Strip what this version records, as the previous one wrote the index.
    auto ds = OpenRw(dir);
    engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
    impl.env->Update([&](index::Txn& txn) {
      for (const ChunkInfo& c : ds->Chunks()) {
        index::ChunkRecord r = impl.GetChunk(txn, c.number);
        r.data_stamp.reset();
        r.meta_stamp.reset();
        impl.PutChunk(txn, c.number, r);
      }
      index::DatasetInfo info = impl.GetInfo(txn);
      info.source_stamps = false;
      txn.Put(impl.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
  }
  ForeignChanges()[1].apply(dir);
  BOOST_TEST(Dataset::Open(dir)->Count() == 22u);
  BOOST_TEST(Check(dir).healthy());
  // Re-indexing records stamps from then on.
  ImportOptions re;
  re.reindex = true;
  ImportGulpio(dir, re);
  ForeignChanges()[3].apply(dir);
  BOOST_CHECK_THROW(Dataset::Open(dir), CorruptionError);
}

// ---- Copies of imported directories (docs/format/index_format.md "Source stamps") ----

// Every video's meta and frame bytes, for comparing a copy with its original.
std::map<std::string, std::string> Contents(const Dataset& ds) {
  std::map<std::string, std::string> out;
  for (const std::string& id : ds.Ids()) {
    std::string all = ds.Get(id).meta_data;
    const StoredFrames frames = ds.ReadJpegs(id);
    for (size_t i = 0; i < frames.size(); ++i) all += "|" + std::string(frames[i]);
    out[id] = all;
  }
  return out;
}

// Runs a shell command; fails the test when it does not exit 0.
void Run(const std::string& command) {
  const int status = std::system(command.c_str());
  BOOST_REQUIRE_MESSAGE(status == 0, command << " exited with " << status);
}

std::string Quoted(const std::string& path) { return "'" + path + "'"; }

// The ways users copy a dataset directory: each keeps every byte; only some
// keep modification times, none keeps inodes or change times.
struct CopyMethod {
  const char* name;
  std::function<void(const std::string& from, const std::string& to)> copy;
};

std::vector<CopyMethod> CopyMethods() {
  std::vector<CopyMethod> methods = {
      {"cp -r", [](const std::string& from,
                   const std::string& to) { Run("cp -r " + Quoted(from) + " " + Quoted(to)); }},
      {"cp -a", [](const std::string& from,
                   const std::string& to) { Run("cp -a " + Quoted(from) + " " + Quoted(to)); }},
      {"tar round trip",
       [](const std::string& from, const std::string& to) {
         fs::create_directories(to);
         Run("tar -C " + Quoted(from) + " -cf - . | tar -C " + Quoted(to) + " -xf -");
       }},
      {"tar round trip without times",
       [](const std::string& from, const std::string& to) {
         fs::create_directories(to);
         Run("tar -C " + Quoted(from) + " -cf - . | tar -C " + Quoted(to) + " -xmf -");
       }},
  };
  // rsync is in Debian (scripts/setup.sh installs it); -r keeps no times.
  if (std::system("command -v rsync >/dev/null 2>&1") == 0) {
    methods.push_back({"rsync -r", [](const std::string& from, const std::string& to) {
                         Run("rsync -r " + Quoted(from + "/") + " " + Quoted(to + "/"));
                       }});
  } else {
    BOOST_TEST_MESSAGE("rsync is not installed: its copy is not tried (scripts/setup.sh)");
  }
  return methods;
}

// The source check of an open dataset, run once more: what it finds and
// how many .gmeta bytes it had to read.
engine::SourceReport SourcesOf(const Dataset& ds) { return engine::CheckSources(ds); }

// Bytes of the .gmeta files the import read (gulpdb's own chunks have none).
uint64_t ImportedGmetaBytes(const Dataset& ds) {
  uint64_t bytes = 0;
  for (const ChunkInfo& c : ds.Chunks()) {
    if (!c.meta_file.empty()) bytes += fs::file_size(ds.dir() + "/" + c.meta_file);
  }
  return bytes;
}

// A copy of an imported directory (made any way that keeps the bytes) opens
// and reads as the original: staleness is a change of content, not of
// times or inodes. The first open of the copy reads its .gmeta files once;
// the opens after it read none. Datasets written by GulpIO and by GulpIO2,
// and one gulpdb appended to and exported in place.
BOOST_AUTO_TEST_CASE(copies_of_an_imported_directory_open_and_read_as_the_original) {
  const std::vector<CopyMethod> methods = CopyMethods();
  const std::vector<std::string> sources = {"gulpio1_csv_jpeg", "gulpio2_csv_jpeg",
                                            "gulpio2_edge_cases", "gulpio2_json_videos",
                                            "gulpio2_csv_jpeg+appended"};
  for (const std::string& source : sources) {
    TempDir tmp;
    const std::string dir = tmp / "gio";
    const bool appended = source.find('+') != std::string::npos;
    CopyFixture(test::FixturesDir() + "/" + source.substr(0, source.find('+')), dir);
    ImportGulpio(dir);
    {
      // The import recorded what it read: the next open reads no .gmeta.
      auto ds = Dataset::Open(dir);
      const engine::SourceReport sources_now = SourcesOf(*ds);
      BOOST_TEST(sources_now.changes.empty());
      BOOST_TEST(sources_now.hashed_bytes == 0u, source);
    }
    if (appended) {
      {
        auto ds = OpenRw(dir);
        ds->Remove({"6"});
        auto w = ds->NewWriter();
        w->Append("new_a", test::Views(test::FixtureFrames("7")), R"({"label": "circle"})");
        w->Commit();
      }
      ExportGmeta(*Dataset::Open(dir));
    }
    std::map<std::string, std::string> original;
    {
      auto ds = Dataset::Open(dir);
      original = Contents(*ds);
    }
    BOOST_REQUIRE(!original.empty());
    for (const CopyMethod& method : methods) {
      BOOST_TEST_CONTEXT(source << ", " << method.name) {
        const std::string copy = tmp / ("copy " + std::string(method.name));
        method.copy(dir, copy);
        BOOST_REQUIRE(Dataset::Exists(copy));
        {
          OpenOptions open;
          auto unchecked = engine::OpenDataset(copy, open, /*check_sources=*/false);
          const engine::SourceReport first = SourcesOf(*unchecked);
          BOOST_TEST(first.changes.empty());
          BOOST_TEST(first.missing_meta.empty());
          // cp -a keeps times but not inodes: every copy is read once.
          BOOST_TEST(first.hashed_bytes == ImportedGmetaBytes(*unchecked));
          BOOST_TEST(first.hashed_bytes > 0u);
          BOOST_TEST(SourcesOf(*unchecked).hashed_bytes == 0u);  // recorded
        }
        auto ds = Dataset::Open(copy);
        BOOST_TEST(SourcesOf(*ds).hashed_bytes == 0u);
        BOOST_TEST((Contents(*ds) == original));
        const CheckReport report = Check(copy);
        BOOST_TEST(report.healthy());
        BOOST_TEST(report.notes.empty());
        // The copy is as writable as the original.
        OpenRw(copy)->Remove({original.begin()->first});
        BOOST_TEST(Dataset::Open(copy)->Count() == original.size() - 1);
        ExportGmeta(*Dataset::Open(copy));
        BOOST_TEST(Check(copy).healthy());
      }
    }
  }
}

// A real change in a copy is still caught, including one that restores the
// modification time the copy gave the file.
BOOST_AUTO_TEST_CASE(changes_to_a_copy_are_still_caught) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  ImportGulpio(dir);
  for (const ForeignChange& change : ForeignChanges()) {
    BOOST_TEST_CONTEXT(change.name) {
      const std::string copy = tmp / "copy";
      fs::remove_all(copy);
      Run("cp -r " + Quoted(dir) + " " + Quoted(copy));
      BOOST_TEST(Dataset::Open(copy)->Count() == 22u);  // and records the copy's files
      change.apply(copy);
      try {
        Dataset::Open(copy);
        BOOST_ERROR("a changed copy should not open");
      } catch (const StaleIndexError& e) {
        BOOST_TEST(std::string(e.what()).find(change.file) != std::string::npos, e.what());
      }
    }
  }
}

// A damaged or stale side record costs a re-read, never a missed change.
BOOST_AUTO_TEST_CASE(a_damaged_or_stale_verified_record_never_hides_a_change) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  ImportGulpio(dir);
  const std::string record = dir + "/gulpdb.index/" + engine::kVerifiedSourcesName;
  const std::string good = test::ReadFile(record);
  BOOST_REQUIRE(engine::DecodeVerifiedSources(good).has_value());
  BOOST_TEST(engine::DecodeVerifiedSources(good)->size() == 11u);
  // Damage of any kind parses as no record: the files are read again.
  std::vector<std::string> damaged = {"", "garbage", good.substr(0, good.size() / 2),
                                      good.substr(0, good.size() - 1)};
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x01;
  damaged.push_back(flipped);
  for (const std::string& bytes : damaged) {
    BOOST_TEST(!engine::DecodeVerifiedSources(bytes).has_value());
    test::WriteFile(record, bytes);
    auto ds = Dataset::Open(dir);
    BOOST_TEST(SourcesOf(*ds).hashed_bytes == 0u);  // the open above rewrote it
    BOOST_TEST(ds->Count() == 22u);
  }
  // A record of the files before a same-size edit: the edit changes the
  // file's identity, so the record does not vouch for it.
  test::WriteFile(record, good);
  ForeignChanges()[0].apply(dir);
  BOOST_CHECK_THROW(Dataset::Open(dir), StaleIndexError);
}

// A .gmeta that is missing while its data file is intact is not staleness:
// the index still describes every byte. Reads work, check is healthy (with a
// note), and export writes the file again, byte for byte, as often as asked.
BOOST_AUTO_TEST_CASE(a_missing_gmeta_is_not_a_change_and_export_writes_it_again) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  const std::string fixture = test::FixturesDir() + "/gulpio2_csv_jpeg";
  CopyFixture(fixture, dir);
  ImportGulpio(dir);
  std::map<std::string, std::string> original;
  {
    auto ds = Dataset::Open(dir);
    original = Contents(*ds);
  }
  fs::remove(dir + "/meta_3.gmeta");
  fs::remove(dir + "/meta_7.gmeta");
  {
    auto ds = Dataset::Open(dir);
    BOOST_TEST((Contents(*ds) == original));
    const engine::SourceReport sources = SourcesOf(*ds);
    BOOST_TEST(sources.changes.empty());
    BOOST_TEST((sources.missing_meta == std::vector<std::string>{"meta_3.gmeta", "meta_7.gmeta"}));
  }
  const CheckReport report = Check(dir);
  BOOST_TEST(report.healthy());
  BOOST_REQUIRE(report.notes.size() == 2u);
  BOOST_TEST(report.notes[0].find("meta_3.gmeta: missing") != std::string::npos, report.notes[0]);
  BOOST_TEST(report.notes[0].find("gulpdb export " + dir) != std::string::npos, report.notes[0]);
  for (int round = 0; round < 2; ++round) {
    BOOST_TEST_CONTEXT("export " << round + 1) {
      ExportGmeta(*Dataset::Open(dir));
      for (const char* name : {"meta_3.gmeta", "meta_7.gmeta", "meta_0.gmeta"}) {
        BOOST_TEST(test::ReadFile(dir + "/" + name) == test::ReadFile(fixture + "/" + name), name);
      }
      auto ds = Dataset::Open(dir);
      BOOST_TEST(SourcesOf(*ds).hashed_bytes == 0u);
      BOOST_TEST((Contents(*ds) == original));
      const CheckReport again = Check(dir);
      BOOST_TEST(again.healthy());
      BOOST_TEST(again.notes.empty());
    }
  }
  // Present and different is a change, as ever.
  ForeignChanges()[0].apply(dir);
  BOOST_CHECK_THROW(Dataset::Open(dir), StaleIndexError);
}

// An index imported before content fingerprints were recorded (stamps of
// size and modification time only) compares those, as it did: a copy that
// keeps times opens, an edit is caught. An export in place, or a re-index,
// records the fingerprints; from then on a cp -r copy opens too.
BOOST_AUTO_TEST_CASE(index_without_content_fingerprints_compares_stamps_until_exported) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  ImportGulpio(dir);
  {
    auto ds = OpenRw(dir);
    engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
    impl.env->Update([&](index::Txn& txn) {
      for (const ChunkInfo& c : ds->Chunks()) {
        index::ChunkRecord r = impl.GetChunk(txn, c.number);
        r.meta_content.reset();
        impl.PutChunk(txn, c.number, r);
      }
    });
  }
  fs::remove(dir + "/gulpdb.index/" + std::string(engine::kVerifiedSourcesName));
  Run("cp -a " + Quoted(dir) + " " + Quoted(tmp / "kept_times"));
  BOOST_TEST(Dataset::Open(tmp / "kept_times")->Count() == 22u);
  ForeignChanges()[0].apply(tmp / "kept_times");
  BOOST_CHECK_THROW(Dataset::Open(tmp / "kept_times"), StaleIndexError);
  Run("cp -r " + Quoted(dir) + " " + Quoted(tmp / "new_times"));
  try {
    Dataset::Open(tmp / "new_times");
    BOOST_ERROR("without fingerprints, a copy with new times cannot be told from an edit");
  } catch (const StaleIndexError& e) {
    BOOST_TEST(std::string(e.what()).find("predates content fingerprints") != std::string::npos,
               e.what());
  }
  ExportGmeta(*Dataset::Open(dir));  // records the fingerprints
  Run("cp -r " + Quoted(dir) + " " + Quoted(tmp / "after_export"));
  BOOST_TEST(Dataset::Open(tmp / "after_export")->Count() == 22u);
  ForeignChanges()[0].apply(tmp / "after_export");
  BOOST_CHECK_THROW(Dataset::Open(tmp / "after_export"), StaleIndexError);
}

// Threads that open a fresh copy at once (as DataLoader workers' processes
// do) all succeed, each reading the files once at most, while a writer holds the
// dataset's lock: the source check takes no lock and blocks nobody; the
// record they race to write is whole whichever rename wins.
BOOST_AUTO_TEST_CASE(concurrent_first_opens_of_a_copy_neither_block_nor_fail) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  ImportGulpio(dir);
  const std::string copy = tmp / "copy";
  Run("cp -r " + Quoted(dir) + " " + Quoted(copy));
  auto writing = OpenRw(copy);
  auto writer = writing->NewWriter();  // holds the writer lock throughout
  writer->Append("while_opening", test::Views(test::FixtureFrames("7")), "{}");
  // (Boost.Test's assertions are checked here, in the test's thread.)
  std::vector<std::future<std::pair<size_t, uint64_t>>> opens;
  for (int i = 0; i < 6; ++i) {
    opens.push_back(std::async(std::launch::async, [&] {
      // Each thread runs its own check (a process would, too).
      OpenOptions open;
      auto ds = engine::OpenDataset(copy, open, /*check_sources=*/false);
      const engine::SourceReport r = SourcesOf(*ds);
      return std::make_pair(r.changes.size(), ds->Count());
    }));
  }
  for (auto& f : opens) {
    const auto [changes, count] = f.get();
    BOOST_TEST(changes == 0u);
    BOOST_TEST(count == 22u);
  }
  writer->Commit();
  const auto record = engine::DecodeVerifiedSources(
      test::ReadFile(copy + "/gulpdb.index/" + engine::kVerifiedSourcesName));
  BOOST_REQUIRE(record.has_value());
  BOOST_TEST(record->size() == 11u);
  auto ds = Dataset::Open(copy);
  BOOST_TEST(SourcesOf(*ds).hashed_bytes == 0u);
  BOOST_TEST(ds->Count() == 23u);
}

// A dataset gulpdb created records no stamps: opening it looks at no chunk
// file (O(1) in the number of chunks), so it opens even without them.
BOOST_AUTO_TEST_CASE(opening_a_native_dataset_looks_at_no_chunk_file) {
  TempDir tmp;
  const std::string dir = tmp / "native";
  {
    CreateOptions c;
    c.videos_per_chunk = 1;
    auto ds = Dataset::Create(dir, c);
    auto w = ds->NewWriter();
    for (const char* id : {"a", "b", "c"})
      w->Append(id, test::Views(test::FixtureFrames("3")), "{}");
    w->Commit();
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".gulp") fs::remove(e.path());
  }
  auto ds = Dataset::Open(dir);
  BOOST_TEST(ds->Count() == 3u);
  BOOST_TEST(SourcesOf(*ds).hashed_bytes == 0u);
  BOOST_CHECK_THROW(ds->ReadJpegs("a"), Error);  // the files are gone, as reads say
}

// The content fingerprint is what the importer parsed, and what the .gmeta
// writer wrote: CRC-32C of the whole file.
BOOST_AUTO_TEST_CASE(import_records_the_crc32c_of_each_gmeta) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  CopyFixture(test::FixturesDir() + "/gulpio2_edge_cases", dir);
  ImportGulpio(dir);
  auto ds = Dataset::Open(dir);
  const engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
  index::Txn txn = impl.env->BeginRead();
  for (const ChunkInfo& c : ds->Chunks()) {
    const std::string bytes = test::ReadFile(dir + "/" + c.meta_file);
    const index::ChunkRecord r = impl.GetChunk(txn, c.number);
    BOOST_REQUIRE(r.meta_content.has_value());
    BOOST_TEST(r.meta_content->size == bytes.size());
    BOOST_TEST(r.meta_content->crc32c == util::Crc32c(bytes.data(), bytes.size()));
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
