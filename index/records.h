// The index's records and keys: C++ values on one side, FlatBuffers bytes and
// LMDB keys on the other. The layouts are specified in
// docs/format/index_format.md; the schema is records.fbs.
//
// Every Decode* verifies its input with flatbuffers::Verifier and checks the
// invariants the schema cannot express; a record that fails either is a
// CorruptionError naming the record, never a crash.
//
// Thread safety: free functions on values; safe from any thread.
#ifndef GULPDB_INDEX_RECORDS_H_
#define GULPDB_INDEX_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/types.h"

namespace gulpdb::index {

// Names of the LMDB databases inside the environment.
inline constexpr const char* kVideosDb = "videos";  // id -> VideoRecord
inline constexpr const char* kChunksDb = "chunks";  // chunk key -> ChunkRecord
inline constexpr const char* kOrderDb = "order";    // order key -> id
inline constexpr const char* kInfoDb = "info";      // "dataset" -> DatasetInfo
inline constexpr const char* kDatasetInfoKey = "dataset";
// Keys of the `info` database that record an attached shard: this prefix +
// the shard's path relative to the dataset (value: the shard's absolute path).
inline constexpr const char* kAttachedShardKeyPrefix = "attached:";

// 1: the first format. 2: video and chunk records are sealed with a CRC-32C
// of key and value (the engine adds and checks the seal). Version 1 datasets
// are read and appended to as they are.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kFirstSealedFormat = 2;

// DatasetInfo::next_chunk when every 32-bit chunk number has been used.
inline constexpr uint64_t kNoChunkNumberLeft = uint64_t{1} << 32;

// The decoder parameters of an H.264 video (engine/video's VideoParams, as
// the index stores them).
struct H264Params {
  std::string extradata;  // SPS/PPS, Annex-B
  uint32_t width = 0;
  uint32_t height = 0;
  uint8_t chroma = 0;  // 0: 4:2:0, 1: 4:4:4
  bool operator==(const H264Params& o) const {
    return extradata == o.extradata && width == o.width && height == o.height && chroma == o.chroma;
  }
};

// DatasetInfo::codec values (gulpdb::Codec's).
inline constexpr uint8_t kCodecJpeg = 0;
inline constexpr uint8_t kCodecH264 = 1;

struct VideoRecord {
  uint32_t chunk = 0;
  uint64_t seq = 0;
  std::vector<FrameInfo> frames;
  std::vector<uint32_t> crc32c;  // empty, or one per frame
  std::string meta_data;         // JSON list text
  // H.264 videos (h264 set): frames are packets; the keyframes' indices,
  // ascending, the first 0. Both absent for a JPEG video.
  std::vector<uint32_t> keyframes;
  std::optional<H264Params> h264;

  // Bytes of the chunk this video's frames occupy, padding included.
  uint64_t frame_bytes() const;
};

enum class ChunkState : uint8_t { kOpen = 0, kFull = 1 };

// A file's size and modification time (ns since the epoch), as recorded.
struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp& o) const { return size == o.size && mtime_ns == o.mtime_ns; }
  bool operator!=(const FileStamp& o) const { return !(*this == o); }
};

// A file's content: its size and the CRC-32C of all its bytes.
struct ContentStamp {
  uint64_t size = 0;
  uint32_t crc32c = 0;
  bool operator==(const ContentStamp& o) const { return size == o.size && crc32c == o.crc32c; }
  bool operator!=(const ContentStamp& o) const { return !(*this == o); }
};

struct ChunkRecord {
  std::string file_name;
  uint64_t committed_length = 0;
  uint32_t appended_videos = 0;
  uint32_t live_videos = 0;
  uint64_t live_bytes = 0;
  ChunkState state = ChunkState::kOpen;
  std::string meta_file;
  // Imported chunks: the data file and meta_file as the index last saw them
  // (absent: not recorded; the chunk is not checked against its files).
  std::optional<FileStamp> data_stamp;
  std::optional<FileStamp> meta_stamp;
  // Imported chunks: meta_file's content as imported or last exported in
  // place; absent in records older than the field (only meta_stamp then).
  std::optional<ContentStamp> meta_content;
  // Attached chunks: the shard (path relative to the dataset) that owns the
  // file; empty for the dataset's own chunks. Records written before this
  // field existed mark an attached chunk only by a '/' in file_name.
  std::string owner;
  // True when the file belongs to another dataset (see owner).
  bool attached() const { return !owner.empty() || file_name.find('/') != std::string::npos; }
};

struct DatasetInfo {
  uint32_t format_version = kFormatVersion;
  std::string creator;
  uint32_t videos_per_chunk = 100;
  uint64_t bytes_per_chunk = 0;
  bool checksums = true;
  uint64_t next_seq = 0;
  uint64_t total_videos = 0;
  uint64_t total_frames = 0;
  std::vector<uint32_t> dirty_chunks;
  std::vector<std::string> obsolete_files;
  // Chunk records carry file stamps to compare at open (imported datasets).
  bool source_stamps = false;
  // Absolute path of the dataset this one's chunks are attached to; empty
  // when not attached.
  std::string attached_to;
  // No new chunk gets a number below this (0 in records older than the
  // field). Use NextChunkNumber(), which also counts the chunks that exist.
  uint64_t next_chunk = 0;
  // The dataset's identity (a random UUID, 36 characters); empty in an
  // index made before gulpdb recorded one.
  std::string uuid;
  // kCodecJpeg or kCodecH264 (absent in older records: JPEG).
  uint8_t codec = kCodecJpeg;
};

// The number the next new chunk may take at the lowest: past `info.next_chunk`,
// past `last_chunk` (the highest chunk number the index holds, if any) and
// past every chunk listed dirty. Datasets written before next_chunk existed
// derive it from the last two. Values up to 2^32 (no number left).
uint64_t NextChunkNumber(const DatasetInfo& info, std::optional<uint32_t> last_chunk);

// Encoders pick the most compact form: frames that follow each other
// back to back share one run (a video that is one run stores no run vectors),
// sizes take 2 bytes when every JPEG is under 64 KiB, and pads are stored only
// when one breaks GulpIO's rule. Throws InvalidArgumentError when `crc32c` is
// neither empty nor one per frame, or a frame's length is smaller than its pad.
std::string EncodeVideoRecord(const VideoRecord& record);
// `what` names the record in errors (usually the video id). Reads every form
// a record has had (docs/format/index_format.md); throws CorruptionError when
// the bytes fail verification or the shape checks.
VideoRecord DecodeVideoRecord(std::string_view bytes, std::string_view what);
// As DecodeVideoRecord, verified the same way, but leaves `meta_data` empty
// instead of copying it: for the read path, which needs only the frames.
VideoRecord DecodeVideoFrames(std::string_view bytes, std::string_view what);
// The frame count alone, without materialising frames (still verified).
uint32_t DecodeFrameCount(std::string_view bytes, std::string_view what);
// The chunk, sequence and meta_data text of a video record, verified as
// DecodeVideoRecord verifies it, without materialising the frames: for scans
// that look at the meta of every video. `meta_data` views `bytes` (or a
// per-thread copy of them when they are misaligned): valid until the next
// decode on this thread, and never past the transaction `bytes` came from.
struct VideoMetaView {
  uint32_t chunk = 0;
  uint64_t seq = 0;
  std::string_view meta_data;
  uint32_t frames = 0;  // how many frames the video has
};
VideoMetaView DecodeVideoMeta(std::string_view bytes, std::string_view what);

std::string EncodeChunkRecord(const ChunkRecord& record);
ChunkRecord DecodeChunkRecord(std::string_view bytes, std::string_view what);

std::string EncodeDatasetInfo(const DatasetInfo& info);
DatasetInfo DecodeDatasetInfo(std::string_view bytes, std::string_view what);

// Keys: big-endian so that LMDB's byte order is numeric order.
std::string ChunkKey(uint32_t chunk);
uint32_t DecodeChunkKey(std::string_view key);
std::string OrderKey(uint32_t chunk, uint64_t seq);

}  // namespace gulpdb::index

#endif  // GULPDB_INDEX_RECORDS_H_
