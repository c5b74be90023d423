// Fuzz target: the streaming .gmeta reader (engine/gulpio/gmeta.h).
//
// The input is the whole .gmeta file. Properties checked:
//   - the reader either returns entries or throws CorruptionError (anything
//     else escaping, or a crash, is a finding);
//   - the result does not depend on the read size: a reader fed a few bytes
//     per read(2) returns the same entries, or fails with the same message
//     (byte offset included), as one that reads the file at once;
//   - every entry's offset points at the opening quote of its id, its id is
//     valid UTF-8 and its meta_data is a JSON list that NormalizeJson accepts
//     (import relies on both), and NormalizeJson is idempotent on it;
//   - GmetaWriter accepts every entry the reader returned, and reading the
//     written file gives the same entries back.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gulpio/gmeta.h"
#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using gulpdb::engine::GmetaEntry;

constexpr const char* kTarget = "gmeta_parse";

struct Outcome {
  bool ok = false;
  std::vector<GmetaEntry> entries;
  std::string error;
};

bool SameEntries(const std::vector<GmetaEntry>& a, const std::vector<GmetaEntry>& b,
                 bool compare_offsets) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].frame_info != b[i].frame_info ||
        a[i].meta_data != b[i].meta_data) {
      return false;
    }
    if (compare_offsets && a[i].offset != b[i].offset) return false;
  }
  return true;
}

Outcome ReadAll(const std::string& path, size_t block_size) {
  Outcome out;
  gulpdb::engine::GmetaReadOptions options;
  options.block_size = block_size;
  try {
    gulpdb::engine::ReadGmeta(
        path, [&](GmetaEntry&& e) { out.entries.push_back(std::move(e)); }, options);
    out.ok = true;
  } catch (const gulpdb::CorruptionError& e) {
    out.error = e.what();
    out.entries.clear();
  }
  return out;
}

}  // namespace

extern "C" int GULPDB_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  const std::string& dir = gulpdb::fuzz::ScratchDir(kTarget);
  const std::string in_path = dir + "/in.gmeta";
  const std::string_view text = gulpdb::fuzz::AsText(data, size);
  gulpdb::fuzz::WriteFileOrDie(in_path, text);

  const Outcome whole = ReadAll(in_path, size_t{1} << 20);
  // Small reads make entries straddle buffer refills at every possible byte.
  // At most about 64 reads per file, so that a long input stays cheap.
  static constexpr size_t kSmallBlocks[] = {1, 2, 3, 5, 7, 16, 61};
  size_t small_block = kSmallBlocks[size % (sizeof(kSmallBlocks) / sizeof(size_t))];
  if (size / small_block > 64) small_block = size / 64 + small_block;
  const Outcome pieces = ReadAll(in_path, small_block);
  FUZZ_CHECK(kTarget, whole.ok == pieces.ok,
             "block size " + std::to_string(small_block) + " gives " +
                 (pieces.ok ? "success" : pieces.error) + ", a whole-file read " +
                 (whole.ok ? "success" : whole.error));
  if (!whole.ok) {
    FUZZ_CHECK(kTarget, whole.error == pieces.error,
               "block size " + std::to_string(small_block) + ": '" + pieces.error + "' vs '" +
                   whole.error + "'");
    return 0;
  }
  FUZZ_CHECK(kTarget, SameEntries(whole.entries, pieces.entries, /*compare_offsets=*/true),
             "block size " + std::to_string(small_block) + " gives other entries");

  for (const GmetaEntry& e : whole.entries) {
    FUZZ_CHECK(kTarget, e.offset < size && text[e.offset] == '"',
               "entry offset " + std::to_string(e.offset) + " is not an id's opening quote");
    try {
      (void)gulpdb::engine::PythonJsonString(e.id);
    } catch (const gulpdb::InvalidArgumentError& err) {
      gulpdb::fuzz::Fail(kTarget,
                         std::string("the reader returned an id that is not UTF-8: ") + err.what());
    }
    FUZZ_CHECK(kTarget, !e.meta_data.empty() && e.meta_data.front() == '[',
               "meta_data is not a list: " + e.meta_data);
    std::string normal;
    try {
      normal = gulpdb::engine::NormalizeJson(e.meta_data);
    } catch (const gulpdb::InvalidArgumentError& err) {
      gulpdb::fuzz::Fail(kTarget, "the reader accepted meta_data that NormalizeJson rejects: " +
                                      std::string(err.what()));
    }
    FUZZ_CHECK(kTarget, gulpdb::engine::NormalizeJson(normal) == normal,
               "NormalizeJson is not idempotent on " + e.meta_data);
  }

  // What the reader returned, the writer must write, and it must read back.
  const std::string out_path = dir + "/out.gmeta";
  try {
    gulpdb::engine::GmetaWriter writer(out_path);
    for (const GmetaEntry& e : whole.entries) writer.Add(e.id, e.frame_info, e.meta_data);
    writer.Commit();
  } catch (const gulpdb::Error& err) {
    gulpdb::fuzz::Fail(kTarget,
                       std::string("GmetaWriter refused what the reader returned: ") + err.what());
  }
  const Outcome again = ReadAll(out_path, size_t{1} << 20);
  FUZZ_CHECK(kTarget, again.ok, "the written file does not read back: " + again.error);
  FUZZ_CHECK(kTarget, SameEntries(whole.entries, again.entries, /*compare_offsets=*/false),
             "the written file reads back other entries");
  return 0;
}
