// Fuzz target: verification of index records (index/records.h).
//
// The input is one LMDB value. It goes through every decoder: DecodeVideoRecord,
// DecodeVideoFrames, DecodeFrameCount, DecodeChunkRecord and DecodeDatasetInfo
// (and the key decoders when it has a key's length), both at an 8-byte aligned
// address and at the 2-byte alignment LMDB guarantees. Properties checked:
//   - each decoder returns or throws CorruptionError, nothing else;
//   - the three video decoders agree: all accept or all reject, with the same
//     frames and frame count, DecodeVideoFrames without meta_data;
//   - alignment changes nothing;
//   - an accepted record satisfies the invariants of records.h and
//     docs/format/index_format.md: every frame's length is at least its pad
//     and the pad at most 255, checksums are absent or one per frame; a chunk
//     has a file name, live bytes within its committed length and a known
//     state; dataset info has a supported format version;
//   - re-encoding an accepted record and decoding it gives the same record,
//     and encoding is deterministic (encode(decode(encode(r))) == encode(r)).
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gulpdb/error.h"
#include "index/records.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace index = gulpdb::index;

constexpr const char* kTarget = "record";

bool operator==(const index::VideoRecord& a, const index::VideoRecord& b) {
  return a.chunk == b.chunk && a.seq == b.seq && a.frames == b.frames && a.crc32c == b.crc32c &&
         a.meta_data == b.meta_data;
}

bool operator==(const index::ChunkRecord& a, const index::ChunkRecord& b) {
  return a.file_name == b.file_name && a.committed_length == b.committed_length &&
         a.appended_videos == b.appended_videos && a.live_videos == b.live_videos &&
         a.live_bytes == b.live_bytes && a.state == b.state && a.meta_file == b.meta_file;
}

bool operator==(const index::DatasetInfo& a, const index::DatasetInfo& b) {
  return a.format_version == b.format_version && a.creator == b.creator &&
         a.videos_per_chunk == b.videos_per_chunk && a.bytes_per_chunk == b.bytes_per_chunk &&
         a.checksums == b.checksums && a.next_seq == b.next_seq &&
         a.total_videos == b.total_videos && a.total_frames == b.total_frames &&
         a.dirty_chunks == b.dirty_chunks && a.obsolete_files == b.obsolete_files;
}

// Runs `decode`; nullopt when it throws CorruptionError (anything else escapes).
template <typename F>
auto Try(F decode) -> std::optional<decltype(decode())> {
  try {
    return decode();
  } catch (const gulpdb::CorruptionError&) {
    return std::nullopt;
  }
}

void CheckVideo(std::string_view bytes, std::string_view misaligned) {
  const auto full = Try([&] { return index::DecodeVideoRecord(bytes, "fuzz"); });
  const auto frames = Try([&] { return index::DecodeVideoFrames(bytes, "fuzz"); });
  const auto count = Try([&] { return index::DecodeFrameCount(bytes, "fuzz"); });
  const auto full2 = Try([&] { return index::DecodeVideoRecord(misaligned, "fuzz"); });
  FUZZ_CHECK(kTarget,
             full.has_value() == frames.has_value() && full.has_value() == count.has_value() &&
                 full.has_value() == full2.has_value(),
             std::string("video decoders disagree: record ") + (full ? "ok" : "corrupt") +
                 ", frames " + (frames ? "ok" : "corrupt") + ", count " +
                 (count ? "ok" : "corrupt") + ", misaligned " + (full2 ? "ok" : "corrupt"));
  if (!full) return;
  const index::VideoRecord& r = *full;
  FUZZ_CHECK(kTarget, *full2 == r, "the misaligned copy decodes differently");
  FUZZ_CHECK(kTarget, *count == r.frames.size(),
             "DecodeFrameCount " + std::to_string(*count) + " for " +
                 std::to_string(r.frames.size()) + " frames");
  index::VideoRecord without_meta = r;
  without_meta.meta_data.clear();
  FUZZ_CHECK(kTarget, *frames == without_meta, "DecodeVideoFrames differs from DecodeVideoRecord");
  FUZZ_CHECK(kTarget, r.crc32c.empty() || r.crc32c.size() == r.frames.size(),
             std::to_string(r.crc32c.size()) + " checksums for " + std::to_string(r.frames.size()) +
                 " frames");
  uint64_t bytes_total = 0;
  for (const gulpdb::FrameInfo& f : r.frames) {
    FUZZ_CHECK(kTarget, f.length >= f.pad && f.pad <= 255,
               "frame [" + std::to_string(f.offset) + ", " + std::to_string(f.pad) + ", " +
                   std::to_string(f.length) + "]");
    bytes_total += f.length;
  }
  FUZZ_CHECK(kTarget, r.frame_bytes() == bytes_total, "frame_bytes()");

  std::string encoded;
  try {
    encoded = index::EncodeVideoRecord(r);
  } catch (const gulpdb::InvalidArgumentError& e) {
    gulpdb::fuzz::Fail(kTarget, std::string("a decoded record does not encode: ") + e.what());
  }
  const auto again = Try([&] { return index::DecodeVideoRecord(encoded, "fuzz"); });
  FUZZ_CHECK(kTarget, again.has_value(), "a re-encoded record fails verification");
  FUZZ_CHECK(kTarget, *again == r, "a re-encoded record decodes differently");
  FUZZ_CHECK(kTarget, index::EncodeVideoRecord(*again) == encoded, "encoding is not stable");
}

void CheckChunk(std::string_view bytes, std::string_view misaligned) {
  const auto r = Try([&] { return index::DecodeChunkRecord(bytes, "fuzz"); });
  const auto r2 = Try([&] { return index::DecodeChunkRecord(misaligned, "fuzz"); });
  FUZZ_CHECK(kTarget, r.has_value() == r2.has_value() && (!r || *r == *r2),
             "a misaligned chunk record decodes differently");
  if (!r) return;
  FUZZ_CHECK(kTarget, !r->file_name.empty(), "chunk record without a file name");
  FUZZ_CHECK(kTarget, r->live_bytes <= r->committed_length,
             "live bytes " + std::to_string(r->live_bytes) + " past the committed length " +
                 std::to_string(r->committed_length));
  FUZZ_CHECK(kTarget, r->state == index::ChunkState::kOpen || r->state == index::ChunkState::kFull,
             "chunk state " + std::to_string(static_cast<int>(r->state)));
  const std::string encoded = index::EncodeChunkRecord(*r);
  const auto again = Try([&] { return index::DecodeChunkRecord(encoded, "fuzz"); });
  FUZZ_CHECK(kTarget, again.has_value() && *again == *r, "a re-encoded chunk record differs");
  FUZZ_CHECK(kTarget, index::EncodeChunkRecord(*again) == encoded, "encoding is not stable");
}

void CheckInfo(std::string_view bytes, std::string_view misaligned) {
  const auto r = Try([&] { return index::DecodeDatasetInfo(bytes, "fuzz"); });
  const auto r2 = Try([&] { return index::DecodeDatasetInfo(misaligned, "fuzz"); });
  FUZZ_CHECK(kTarget, r.has_value() == r2.has_value() && (!r || *r == *r2),
             "a misaligned dataset info decodes differently");
  if (!r) return;
  FUZZ_CHECK(kTarget, r->format_version >= 1 && r->format_version <= index::kFormatVersion,
             "format version " + std::to_string(r->format_version));
  const std::string encoded = index::EncodeDatasetInfo(*r);
  const auto again = Try([&] { return index::DecodeDatasetInfo(encoded, "fuzz"); });
  FUZZ_CHECK(kTarget, again.has_value() && *again == *r, "a re-encoded dataset info differs");
  FUZZ_CHECK(kTarget, index::EncodeDatasetInfo(*again) == encoded, "encoding is not stable");
}

void CheckKeys(std::string_view bytes) {
  const auto chunk = Try([&] { return index::DecodeChunkKey(bytes); });
  FUZZ_CHECK(kTarget, chunk.has_value() == (bytes.size() == 4), "chunk key of the wrong size");
  if (chunk) FUZZ_CHECK(kTarget, index::ChunkKey(*chunk) == bytes, "chunk key round trip");
}

}  // namespace

extern "C" int GULPDB_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  // The input itself (libFuzzer and the replay program hand over an exact-size
  // heap block, so ASan sees any read past its end; malloc aligns it to at
  // least 8 bytes) and an exact-size copy 2 bytes past 8-byte alignment, the
  // least LMDB guarantees.
  std::unique_ptr<char[]> shifted(new char[size + 2]);
  if (size != 0) std::memcpy(shifted.get() + 2, data, size);
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string_view misaligned(shifted.get() + 2, size);
  CheckVideo(bytes, misaligned);
  CheckChunk(bytes, misaligned);
  CheckInfo(bytes, misaligned);
  CheckKeys(bytes);
  return 0;
}
