// Fuzz target: gulpdb::ImportGulpio (interop.h) on a one-chunk GulpIO
// directory whose meta_0.gmeta is the input and whose data_0.gulp is fixed:
// the edge-case fixture chunk (tests/fixtures/gulpio2_edge_cases/data_0.gulp)
// followed by zero bytes up to 64 KiB, so that frame_info of the other
// fixtures also lies inside it.
//
// Properties checked:
//   - the import succeeds or throws CorruptionError or InvalidArgumentError;
//   - a failed import leaves the directory as it was (no index, no temporary
//     index, no lock file), and fails whenever the .gmeta reader fails;
//   - after a successful import the dataset holds exactly the .gmeta's
//     entries, in order: ids, frame_info, meta_data (normalised), one chunk
//     with the data file's length, every frame's JPEG bytes are the data
//     file's bytes at that frame_info, and with ImportOptions::checksums
//     (on for inputs of even length) every frame has the CRC-32C of those
//     bytes, which reads then verify; `check` runs to the end;
//   - ExportGmeta writes exactly what Python's json.dump writes for those
//     entries (built independently here), so an imported json.dump file
//     exports byte for byte.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/gulpio/gmeta.h"
#include "engine/json/json_text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "tests/fuzz/fuzz_util.h"
#include "util/crc32c.h"

namespace {

using gulpdb::engine::GmetaEntry;

constexpr const char* kTarget = "gmeta_import";
constexpr size_t kDataFileSize = size_t{64} << 10;

struct Directory {
  std::string dir;   // the GulpIO directory
  std::string data;  // data_0.gulp's bytes
};

const Directory& Fixture() {
  static const Directory fixture = [] {
    Directory d;
    d.dir = gulpdb::fuzz::ScratchDir(kTarget) + "/gulpio";
    gulpdb::fuzz::RemoveTreeOrDie(d.dir);
    if (::mkdir(d.dir.c_str(), 0755) != 0) gulpdb::fuzz::Fail(kTarget, "cannot create " + d.dir);
    d.data = gulpdb::fuzz::ReadFileOrDie(std::string(GULPDB_FIXTURES_DIR) +
                                         "/gulpio2_edge_cases/data_0.gulp");
    if (d.data.empty() || d.data.size() > kDataFileSize) {
      gulpdb::fuzz::Fail(kTarget, "unexpected fixture chunk size " + std::to_string(d.data.size()));
    }
    d.data.resize(kDataFileSize, '\0');
    gulpdb::fuzz::WriteFileOrDie(d.dir + "/data_0.gulp", d.data);
    return d;
  }();
  return fixture;
}

// The .gmeta json.dump writes for `entries`, from the format's definition.
std::string JsonDump(const std::vector<GmetaEntry>& entries) {
  if (entries.empty()) return "{}";
  std::string out = "{";
  for (size_t i = 0; i < entries.size(); ++i) {
    const GmetaEntry& e = entries[i];
    if (i != 0) out += ", ";
    out += gulpdb::engine::PythonJsonString(e.id) + ": {\"frame_info\": [";
    for (size_t j = 0; j < e.frame_info.size(); ++j) {
      const gulpdb::FrameInfo& f = e.frame_info[j];
      if (j != 0) out += ", ";
      out += "[" + std::to_string(f.offset) + ", " + std::to_string(f.pad) + ", " +
             std::to_string(f.length) + "]";
    }
    out += "], \"meta_data\": " + gulpdb::engine::NormalizeJson(e.meta_data) + "}";
  }
  return out + "}";
}

std::string Show(const std::vector<gulpdb::FrameInfo>& frames) {
  std::string s;
  for (const gulpdb::FrameInfo& f : frames) {
    s += "[" + std::to_string(f.offset) + ", " + std::to_string(f.pad) + ", " +
         std::to_string(f.length) + "]";
  }
  return s;
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void CheckImported(const Directory& d, const std::vector<GmetaEntry>& entries,
                   const gulpdb::ImportReport& report, bool checksums) {
  uint64_t frames = 0, live_bytes = 0;
  for (const GmetaEntry& e : entries) {
    frames += e.frame_info.size();
    for (const gulpdb::FrameInfo& f : e.frame_info) live_bytes += f.length;
  }
  FUZZ_CHECK(
      kTarget, report.chunks == 1 && report.videos == entries.size() && report.frames == frames,
      "report: " + std::to_string(report.chunks) + " chunks, " + std::to_string(report.videos) +
          " videos, " + std::to_string(report.frames) + " frames; the .gmeta has " +
          std::to_string(entries.size()) + " videos, " + std::to_string(frames) + " frames");

  gulpdb::OpenOptions options;
  options.decode_threads = 1;
  options.verify_checksums = checksums;
  std::unique_ptr<gulpdb::Dataset> ds = gulpdb::Dataset::Open(d.dir, options);
  FUZZ_CHECK(kTarget, ds->Count() == entries.size(), "Count() " + std::to_string(ds->Count()));
  const std::vector<std::string> ids = ds->Ids();
  FUZZ_CHECK(kTarget, ids.size() == entries.size(), "Ids() has " + std::to_string(ids.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    const GmetaEntry& e = entries[i];
    FUZZ_CHECK(kTarget, ids[i] == e.id, "id " + std::to_string(i) + " is '" + ids[i] + "'");
    const gulpdb::VideoInfo v = ds->Get(e.id);
    FUZZ_CHECK(kTarget, v.chunk == 0 && v.frames == e.frame_info,
               "the record of '" + e.id + "': chunk " + std::to_string(v.chunk) + ", frames " +
                   Show(v.frames) + "; frame_info " + Show(e.frame_info));
    FUZZ_CHECK(kTarget, v.checksums.size() == (checksums ? e.frame_info.size() : 0),
               std::to_string(v.checksums.size()) + " checksums for '" + e.id + "'");
    for (size_t j = 0; j < v.checksums.size(); ++j) {
      const gulpdb::FrameInfo& f = e.frame_info[j];
      FUZZ_CHECK(kTarget,
                 v.checksums[j] == gulpdb::util::Crc32c(d.data.data() + f.offset, f.jpeg_size()),
                 "checksum of frame " + std::to_string(j) + " of '" + e.id + "'");
    }
    FUZZ_CHECK(kTarget, v.meta_data == gulpdb::engine::NormalizeJson(e.meta_data),
               "meta_data of '" + e.id + "' is " + v.meta_data);
    const gulpdb::StoredFrames jpegs = ds->ReadJpegs(e.id);
    FUZZ_CHECK(kTarget, jpegs.size() == e.frame_info.size(), "frame count of '" + e.id + "'");
    for (size_t j = 0; j < jpegs.size(); ++j) {
      const gulpdb::FrameInfo& f = e.frame_info[j];
      FUZZ_CHECK(kTarget, jpegs[j] == std::string_view(d.data).substr(f.offset, f.jpeg_size()),
                 "frame " + std::to_string(j) + " of '" + e.id + "' has other bytes");
    }
  }
  const std::vector<gulpdb::ChunkInfo> chunks = ds->Chunks();
  FUZZ_CHECK(kTarget, chunks.size() == 1, "Chunks() has " + std::to_string(chunks.size()));
  const gulpdb::ChunkInfo& c = chunks[0];
  FUZZ_CHECK(kTarget,
             c.number == 0 && c.file_name == "data_0.gulp" && c.meta_file == "meta_0.gmeta" &&
                 c.committed_length == d.data.size() && c.live_videos == entries.size() &&
                 c.live_bytes == live_bytes && c.appended_videos == entries.size() && c.full,
             "chunk record: " + c.file_name + " " + std::to_string(c.committed_length) + " " +
                 std::to_string(c.live_videos) + " " + std::to_string(c.live_bytes));

  gulpdb::CheckOptions check;
  (void)gulpdb::Check(d.dir, check);

  const std::string out_dir = gulpdb::fuzz::ScratchDir(kTarget) + "/export";
  gulpdb::fuzz::RemoveTreeOrDie(out_dir);
  if (::mkdir(out_dir.c_str(), 0755) != 0) gulpdb::fuzz::Fail(kTarget, "cannot create " + out_dir);
  const gulpdb::ExportReport exported = gulpdb::ExportGmeta(*ds, out_dir);
  FUZZ_CHECK(kTarget, exported.chunks == 1 && exported.videos == entries.size(),
             "export report: " + std::to_string(exported.chunks) + " chunks, " +
                 std::to_string(exported.videos) + " videos");
  const std::string written = gulpdb::fuzz::ReadFileOrDie(out_dir + "/meta_0.gmeta");
  const std::string expected = JsonDump(entries);
  FUZZ_CHECK(kTarget, written == expected,
             "export wrote\n" + written + "\nwhere json.dump writes\n" + expected);
}

}  // namespace

extern "C" int GULPDB_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  const Directory& d = Fixture();
  const std::string meta_path = d.dir + "/meta_0.gmeta";
  gulpdb::fuzz::WriteFileOrDie(meta_path, gulpdb::fuzz::AsText(data, size));

  // What the reader makes of the file on its own.
  std::vector<GmetaEntry> entries;
  bool parsed = true;
  try {
    gulpdb::engine::ReadGmeta(meta_path, [&](GmetaEntry&& e) { entries.push_back(std::move(e)); });
  } catch (const gulpdb::CorruptionError&) {
    parsed = false;
  }

  // Both ways of importing, picked by the input's length.
  gulpdb::ImportOptions import_options;
  import_options.checksums = size % 2 == 0;
  bool imported = false;
  gulpdb::ImportReport report;
  try {
    report = gulpdb::ImportGulpio(d.dir, import_options);
    imported = true;
  } catch (const gulpdb::CorruptionError&) {
  } catch (const gulpdb::InvalidArgumentError&) {
  } catch (const gulpdb::Error& e) {
    gulpdb::fuzz::Fail(kTarget, std::string("unexpected error kind: ") + e.what());
  }

  if (!imported) {
    const std::vector<std::string> left = Listing(d.dir);
    const std::vector<std::string> expected = {"data_0.gulp", "meta_0.gmeta"};
    std::string names;
    for (const std::string& n : left) names += " " + n;
    FUZZ_CHECK(kTarget, left == expected, "a failed import left:" + names);
    return 0;
  }
  FUZZ_CHECK(kTarget, parsed, "the import accepted a .gmeta that the reader rejects");
  try {
    CheckImported(d, entries, report, import_options.checksums);
  } catch (const gulpdb::Error& e) {
    gulpdb::fuzz::Fail(kTarget, std::string("reading the imported dataset failed: ") + e.what());
  }
  gulpdb::fuzz::RemoveTreeOrDie(d.dir + "/gulpdb.index");
  return 0;
}
