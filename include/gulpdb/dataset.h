// gulpdb's public face: a dataset directory of GulpIO chunk files indexed by
// an LMDB B+tree (docs/format/). Open it, look videos up by id, read their
// frames as JPEG bytes, and append or remove videos in transactions.
//
// Thread safety: a Dataset may be used from any number of threads at once;
// every read runs in its own short LMDB read transaction and reads chunk
// files with pread. A Writer belongs to one thread at a time, and at most one
// Writer exists per dataset across all processes (a file lock).
//
// Processes: open a Dataset in the process that uses it. A Dataset opened
// before fork() must not be used by the child; open another one there.
//
// Errors: every method throws a gulpdb::Error subclass (error.h): NotFoundError
// for a missing id or directory, InvalidArgumentError for bad input,
// CorruptionError when files and index disagree, IoError, BusyError.
#ifndef GULPDB_DATASET_H_
#define GULPDB_DATASET_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/export.h"
#include "gulpdb/jpeg.h"
#include "gulpdb/query.h"
#include "gulpdb/selection.h"
#include "gulpdb/types.h"

namespace gulpdb {

// How a dataset stores its frames, fixed when it is created.
//   kJpeg: one JPEG per frame, GulpIO's layout (the default; a dataset made
//          before codecs existed is JPEG).
//   kH264: each video's frames as one H.264 stream, one packet per frame
//          (docs/h264.md); ReadFrames decodes them frame-exactly. Needs a build
//          with H.264 support (GULPDB_WITH_H264): creating or opening such a
//          dataset in a build without it throws InvalidArgumentError saying so.
enum class Codec : uint8_t { kJpeg = 0, kH264 = 1 };
// "jpeg", "h264"; CodecFromName returns nullopt for any other text.
GULPDB_EXPORT const char* CodecName(Codec codec);
GULPDB_EXPORT std::optional<Codec> CodecFromName(std::string_view name);
// Whether this build reads and writes datasets of `codec` (kJpeg always;
// kH264 only in a build with GULPDB_WITH_H264).
GULPDB_EXPORT bool CodecSupported(Codec codec);

// Settings fixed when a dataset is created.
struct CreateOptions {
  uint32_t videos_per_chunk = 100;  // GulpIO's default; a new chunk starts after this many
  uint64_t bytes_per_chunk = 0;     // also start a new chunk past this size (0: no limit)
  bool checksums = true;            // store a CRC-32C per frame
  size_t initial_map_size = size_t{1} << 30;  // LMDB map; grows by doubling when full
  // Where the index lives; empty: <dir>/gulpdb.index (see interop.h for why
  // it may live elsewhere).
  std::string index_dir;
  // How frames are stored (see Codec).
  Codec codec = Codec::kJpeg;
};

// The most threads one read, batch or encode may use (OpenOptions::
// decode_threads, the Python writer's encode_threads): more is a mistake
// (a count of frames or bytes given for threads), not a wish to be met.
inline constexpr size_t kMaxThreads = 1024;

struct OpenOptions {
  bool read_only = true;
  // Chunk files kept open for reading; 0: half the process's descriptor limit
  // (at most 4096).
  size_t max_open_chunk_files = 0;
  // Check each frame's CRC-32C against the one stored when it was written,
  // on every read, before it is decoded or returned: a frame whose bytes
  // changed on disk is a CorruptionError naming the video, the frame, the
  // file, its offset and both checksums, never a wrong answer. Frames of a
  // dataset created without checksums (CreateOptions::checksums = false)
  // read unverified either way. false reads damaged bytes as they are (to
  // salvage what is left of a video); reads from an object store, the stored
  // H.264 stream (ReadH264Stream) and merge, compaction and export (which
  // write what they read under new checksums or a new form) check anyway.
  bool verify_checksums = true;
  // Walk the whole index file with bounds-checked reads before using it, and
  // refuse it (CorruptionError) if any page is damaged. LMDB itself trusts
  // its pages; use this for an index that may have been damaged (costs one
  // read of the index file: about 10 ms per 100 MB).
  bool verify_index = false;
  // Threads that decode the frames of one read or batch: 0 = one per core,
  // 1 = decode on the calling thread only; at most kMaxThreads (Open
  // refuses more with an InvalidArgumentError).
  size_t decode_threads = 0;
  // Where the index lives; empty: <dir>/gulpdb.index.
  std::string index_dir;
  // A dataset published to an object store (Open("s3://bucket/prefix"),
  // gulpdb/remote.h): open this generation instead of the newest (0). An
  // older generation stays readable for the grace period after a newer push.
  uint64_t generation = 0;
  // A dataset published to an object store: open it only if the manifest
  // names this index snapshot (its SHA-256) and this dataset identity (the
  // UUID); else CorruptionError saying that the prefix now holds another
  // dataset. Empty: any. A copy of a reader (a DataLoader worker's) passes
  // what the original opened (RemoteInfo), so that it never reads another
  // dataset pushed to the same place and generation meanwhile.
  std::string expected_snapshot_sha256;
  std::string expected_dataset_uuid;
  // A read-only open of an index on a network file system (NFS, SMB/CIFS,
  // Lustre, FUSE, Ceph, GPFS, 9P, ...) never maps the live index file, which
  // LMDB cannot share across hosts: it reads the snapshot `gulpdb snapshot`
  // published beside the dataset, or throws an error saying why and what to
  // do. true opens the live index anyway: safe only while no other host
  // writes the dataset. The environment variable GULPDB_ALLOW_NETWORK_INDEX=1
  // does the same.
  bool allow_network_index = false;
  // Open the version tagged `version` (Dataset::Tag, docs/versions.md)
  // instead of the live dataset: read-only, as it was when tagged; on an
  // "s3://" URL, a tag its push published (of `generation`, if given).
  // Empty or "HEAD": the live dataset. NameNotFoundError naming the tags for
  // a name no tag has.
  std::string version;
};

// A tag of a dataset (Dataset::Tag, docs/versions.md).
struct VersionInfo {
  std::string name;
  double created = 0;  // seconds since the epoch (UTC), millisecond precision
  uint64_t videos = 0;
  uint64_t frames = 0;
  std::string message;  // empty when none was given
  std::string root;     // SHA-256 of the tag's partition root
};

// What changed between two versions (Dataset::Diff): ids in id order.
// frames_changed compares each frame's content (length and CRC-32C), never
// where it is stored, so a compaction changes nothing here.
struct VersionDiff {
  std::vector<std::string> added, removed, meta_changed, frames_changed;
};

// What the index knows of one video.
struct VideoInfo {
  std::string id;
  uint32_t chunk = 0;
  uint64_t seq = 0;                 // insertion sequence
  std::vector<FrameInfo> frames;    // GulpIO frame_info
  std::vector<uint32_t> checksums;  // CRC-32C per frame, or empty
  std::string meta_data;            // JSON list, one entry per append (GulpIO's meta_data)
  // H.264 videos: the frames that are keyframes, ascending (frame 0 always);
  // frames[i] is then packet i. Empty for a JPEG video.
  std::vector<uint32_t> keyframes;
};

struct ChunkInfo {
  uint32_t number = 0;
  std::string file_name;  // relative to the dataset directory
  uint64_t committed_length = 0;
  uint32_t appended_videos = 0;
  uint32_t live_videos = 0;
  uint64_t live_bytes = 0;
  bool full = false;
  std::string meta_file;  // the .gmeta it was imported from, if any
  // Attached by an in-place merge: the shard dataset (path relative to this
  // dataset's directory) that owns the file. Empty for the dataset's own
  // chunks (and for chunks attached before gulpdb recorded owners, whose
  // file_name then holds a '/').
  std::string owner;
  // Meta edits (Writer::UpdateMeta / SetMeta) of its videos ever committed:
  // a push re-writes the chunk's .gmeta when the count moved.
  uint64_t meta_edits = 0;
};

struct DatasetStats {
  uint32_t format_version = 0;
  std::string creator;
  uint64_t videos = 0;
  uint64_t frames = 0;
  uint64_t chunks = 0;
  uint64_t committed_bytes = 0;  // sum of chunk committed lengths
  uint64_t live_bytes = 0;       // bytes of frames the index points to
  uint64_t garbage_bytes = 0;    // committed bytes of removed or replaced videos
  uint64_t index_bytes = 0;      // size of the LMDB data in use
  uint32_t videos_per_chunk = 0;
  uint64_t bytes_per_chunk = 0;
  bool checksums = false;  // the dataset stores a CRC-32C per frame it writes
  // Videos stored without a CRC-32C, whose frames are read unverified, and
  // the chunks holding them, when known from the chunk records alone: a
  // dataset's own chunks follow `checksums`; chunks merged in place
  // (MergeOptions, attach) keep their shard's, and with any of them both are
  // nullopt: Check (gulpdb check) counts them, reading every record.
  std::optional<uint64_t> unverified_videos;
  std::optional<uint64_t> unverified_chunks;
  // The dataset's identity: a random UUID made when it was created or
  // imported (kept by copies and re-indexing); empty for an index made before
  // gulpdb recorded one, until its first push gives it one.
  std::string uuid;
  Codec codec = Codec::kJpeg;
  // Videos that transactions have committed into the dataset over its life
  // (appended, replaced, merged or imported; a removal does not lower it):
  // 0 until a transaction commits a video. A failed command uses it to tell
  // a dataset it created and filled in part from one it only created.
  uint64_t committed_videos = 0;
};

class Writer;
namespace engine {
class DatasetAccess;
class DecodedRead;
}  // namespace engine

// The stored bytes of the frames of one read, in selection order: JPEG
// bytes, or the H.264 packets of a dataset that stores its frames as H.264.
// Owns its buffer; the views stay valid while the object lives.
class GULPDB_EXPORT StoredFrames {
 public:
  size_t size() const { return spans_.size(); }
  bool empty() const { return spans_.empty(); }
  std::string_view operator[](size_t i) const {
    return std::string_view(buffer_.get() + spans_[i].first, spans_[i].second);
  }
  // The frame index (in the video) of each returned frame.
  const std::vector<uint32_t>& indices() const { return indices_; }

 private:
  friend class Dataset;
  friend class engine::DatasetAccess;  // the engine's read path fills it
  struct Free {
    void operator()(char* p) const;
  };
  std::unique_ptr<char, Free> buffer_;
  std::vector<std::pair<size_t, size_t>> spans_;  // (position in buffer_, size)
  std::vector<uint32_t> indices_;
};

// The name StoredFrames had until 0.2: it holds H.264 packets too.
// Deprecated; removed in the release after next.
using JpegFrames [[deprecated("use gulpdb::StoredFrames")]] = StoredFrames;

// Decoded pixels of the frames of one read, in selection order, in one
// buffer that this object owns. When every frame has the same shape
// (uniform()), the buffer is one C-contiguous N×H×W×C uint8 array; otherwise
// frame i is the H_i×W_i×C_i array at data(i). Movable, not copyable.
class GULPDB_EXPORT DecodedFrames {
 public:
  size_t size() const { return shapes_.size(); }
  bool empty() const { return shapes_.empty(); }
  const ImageShape& shape(size_t i) const { return shapes_[i]; }
  const uint8_t* data(size_t i) const { return buffer_.get() + offsets_[i]; }
  uint8_t* mutable_data(size_t i) { return buffer_.get() + offsets_[i]; }
  // True when there is at least one frame and all frames share one shape.
  bool uniform() const;
  size_t byte_size() const { return byte_size_; }
  // The frame index (in the video) of each returned frame.
  const std::vector<uint32_t>& indices() const { return indices_; }

 private:
  friend class Dataset;
  friend class engine::DecodedRead;  // the engine's decoded read fills it
  // Returns the buffer to a small process-wide pool, so that the next read
  // of a similar size reuses memory that is already mapped (no page faults).
  struct Free {
    Free() noexcept : capacity(0) {}
    size_t capacity;
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> buffer_;
  size_t byte_size_ = 0;
  std::vector<ImageShape> shapes_;
  std::vector<size_t> offsets_;
  std::vector<uint32_t> indices_;
};

// How Dataset::ReadThumbnails makes the small images a viewer shows.
struct ThumbnailOptions {
  // The longest side a thumbnail may have, in pixels (1..65500); 0 keeps
  // every frame at its own size.
  int max_side = 0;
  // JPEG quality (1..100) of the thumbnails that are encoded.
  int quality = 85;
};

// One request of a batch read.
struct FrameRequest {
  std::string id;
  Selection selection = Selection::All();
};

// What to do with an id that is already there: the one duplicate policy of
// appends, ingest, merge and import (ImportOptions, where "already there"
// means in an earlier chunk, in numeric order).
enum class OnDuplicate {
  kError,    // appending an existing id throws InvalidArgumentError
  kSkip,     // the append is ignored (Append returns false): the first one stays
  kReplace,  // the id is re-pointed to the new frames (the last one wins); the
             // old bytes become garbage
};

// The names of the policies, the one vocabulary of the command's
// --on-duplicate and Python's on_duplicate: "error", "skip", "replace".
// OnDuplicateFromName returns nullopt for any other text.
GULPDB_EXPORT std::optional<OnDuplicate> OnDuplicateFromName(std::string_view name);
GULPDB_EXPORT const char* OnDuplicateName(OnDuplicate policy);

struct WriterOptions {
  OnDuplicate on_duplicate = OnDuplicate::kError;
  // How long to wait for another writer to finish; zero fails at once with BusyError.
  std::chrono::milliseconds lock_timeout{0};
  // Reject frames that do not start with the JPEG SOI marker and end with EOI.
  bool check_jpeg_markers = true;
  // Start a new chunk for the first append instead of filling the last one.
  bool start_new_chunk = false;
  // Start a new chunk by itself when the current one holds videos_per_chunk
  // videos or would grow past bytes_per_chunk. With false the writer never
  // rolls over on its own: a new chunk starts only at Writer::StartChunk(),
  // when the dataset has no chunk yet, or when the last chunk takes no more
  // appends. That is GulpIO's writer, which puts into one chunk exactly the
  // videos it is given.
  bool rollover = true;
  // Small commits (up to 512 KiB of frames, no split changes) take the
  // index's journal: one durable write per commit instead of three
  // (docs/reliability.md, "One durable write per small commit"). With false
  // every commit syncs its chunks and the index directly.
  bool journal = true;
};

// The digest Dataset::IdsDigest returns, of `ids` in their order. Throws
// InvalidArgumentError for an id of 2^32 bytes or more.
GULPDB_EXPORT std::string IdsDigestOf(const std::vector<std::string>& ids);

// Where the index of the dataset in `dir` lives: `index_dir` when it is not
// empty, else <dir>/gulpdb.index (the name every open, create and import
// uses). Pure string work: nothing is looked up on disk.
GULPDB_EXPORT std::string IndexDirectory(const std::string& dir, const std::string& index_dir = "");

class GULPDB_EXPORT Dataset {
 public:
  // Creates a new dataset in `dir` (created if missing; it may already hold
  // other files but no gulpdb index). Throws InvalidArgumentError if a
  // dataset is already there, or if `dir` holds GulpIO chunks (a
  // data*.gulp / meta*.gmeta pair: an empty index would hide them; index them
  // with ImportGulpio, interop.h); nothing is written then. Returns it opened
  // read-write.
  static std::unique_ptr<Dataset> Create(const std::string& dir, const CreateOptions& options = {});
  // Opens an existing dataset. O(1) in the number of videos. Throws
  // NotFoundError if `dir` holds no gulpdb index. An imported dataset also
  // costs one stat per imported file and one listing of `dir`: it throws
  // StaleIndexError (a CorruptionError), naming the files and `gulpdb import
  // DIR --reindex`, when GulpIO files changed since they were indexed
  // (interop.h).
  //
  // `dir` may also be the URL "s3://bucket/prefix" of a dataset published
  // with Push (gulpdb/remote.h): opened read-only (read_only = false is an
  // InvalidArgumentError), its index snapshot cached on this machine, its
  // frames read with HTTP range requests. See remote.h for what that costs
  // and how failures are reported.
  static std::unique_ptr<Dataset> Open(const std::string& dir, const OpenOptions& options = {});
  // True if `dir` (or `index_dir`, when given) holds a gulpdb index; for an
  // "s3://" URL, if a dataset was published there (one HEAD request).
  static bool Exists(const std::string& dir, const std::string& index_dir = "");

  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  const std::string& dir() const;
  bool read_only() const;
  // How this dataset stores its frames (fixed at Create).
  Codec codec() const;

  bool Contains(std::string_view id) const;
  uint64_t Count() const;
  // Names the snapshot of the index that a read started now sees: it
  // changes with every commit to the dataset (by this process or another)
  // and stays while nothing is committed, so that a caller can keep what it
  // computed from the dataset until it changes. A dataset read through a
  // published index (an s3:// URL, a network file system's snapshot) does
  // not change while it is open: its id is fixed. Cheap: one read
  // transaction begun and ended.
  uint64_t SnapshotId() const;
  // The video's index entry, or nullopt if `id` is absent.
  std::optional<VideoInfo> Find(std::string_view id) const;
  // Like Find, but throws NotFoundError naming the id and dataset.
  VideoInfo Get(std::string_view id) const;
  uint32_t FrameCount(std::string_view id) const;

  // JPEG bytes of the selected frames: one pread per run of adjacent frames,
  // each frame checked against its CRC-32C (OpenOptions::verify_checksums).
  // On an h264 dataset: InvalidArgumentError (its frames are not JPEGs; use
  // ReadFrames).
  StoredFrames ReadJpegs(std::string_view id, const Selection& selection = Selection::All()) const;

  // Decoded pixels of the selected frames (see jpeg.h for formats, DCT
  // methods and scaling). The frames are decoded in parallel on the dataset's
  // decode threads. A frame that fails to decode throws CorruptionError naming
  // the id, the frame index and where it lives. With an output size in
  // `options` (jpeg.h, "Fixed-size output") every frame is resized and
  // cropped or padded to it on those threads, so frames of any sizes come
  // back as one uniform N×H×W×C buffer.
  //
  // On an h264 dataset frame k is decoded from the packets of the keyframe at
  // or before k through k (a clip decodes each group of pictures it touches
  // once), as RGB; resize, crop and output layout are as for JPEG. Options
  // that only mean something for JPEG (a DCT method other than the default, a
  // decode-time downscale) are an InvalidArgumentError there.
  DecodedFrames ReadFrames(std::string_view id, const Selection& selection = Selection::All(),
                           const DecodeOptions& options = {}) const;
  // Reads and decodes many (id, selection) requests at once, decoding all their
  // frames in parallel; results are in request order. Errors are as ReadFrames.
  // A random crop takes one window position per request (jpeg.h).
  std::vector<DecodedFrames> ReadBatch(const std::vector<FrameRequest>& requests,
                                       const DecodeOptions& options = {}) const;
  // JPEG bytes of many requests at once, in request order. On an h264
  // dataset: InvalidArgumentError, as ReadJpegs.
  std::vector<StoredFrames> ReadJpegBatch(const std::vector<FrameRequest>& requests) const;
  // Read-ahead (docs/frame_cache.md): starts fetching, in the background,
  // the bytes a read of `requests` will need, and returns; a later read of
  // them takes them from the node's frame cache (or, with the cache off,
  // from memory bounded by GULPDB_PREFETCH_BYTES). Adjacent ranges of a
  // chunk are fetched in one request. Nothing for a local dataset. Throws as
  // ReadJpegBatch for a missing id or a bad selection, before anything is
  // fetched; failures of the fetch itself are left for the read to meet.
  void Prefetch(const std::vector<FrameRequest>& requests) const;

  // Throws, before reading anything, the InvalidArgumentError ReadFrames and
  // ReadBatch would throw for `options` on this dataset: options its codec
  // cannot honour (on an h264 dataset a DCT method other than the default, a
  // decode-time downscale, grayscale output) and bad output sizes. For
  // callers that take options now and read later (a PyTorch dataset whose
  // reads run in DataLoader workers). Reads no index or frame.
  void CheckDecodeOptions(const DecodeOptions& options) const;

  // The stored H.264 stream of video `id` on an h264 dataset: its packets
  // back to back (Annex-B, the first carrying SPS/PPS as the encoder wrote
  // them), readable by ffmpeg (`-f h264`) and muxable with
  // `ffmpeg -f h264 -r R -i - -c copy out.mp4`. Every packet's CRC-32C is
  // checked (CorruptionError naming the id and frame). InvalidArgumentError on
  // a JPEG dataset; IdNotFoundError for a missing id.
  std::string ReadH264Stream(std::string_view id) const;

  // The selected frames as JPEG images no larger than options.max_side on
  // either side, for showing them (a grid of thumbnails, a player), in
  // selection order, with their indices. A JPEG dataset's frame that fits
  // is its stored bytes, unchanged and not decoded; a larger one is decoded
  // with libjpeg's DCT scaling at the largest of 1/2, 1/4 and 1/8 that fits
  // (ReadFrames' pixels with DecodeOptions::scale_denom), or,
  // for a frame more than 8 times too large, at 1/8 and then resized to fit
  // (bilinear, as jpeg.h resizes), and encoded at options.quality (4:4:4; a
  // grayscale frame stays grayscale). An h264 dataset's frames are decoded
  // (as ReadFrames), resized to fit when larger, and encoded. The aspect
  // ratio is kept: the longer side becomes max_side, the other is rounded
  // (at least 1). Errors as ReadFrames (a frame that does not decode:
  // CorruptionError naming the id and frame); InvalidArgumentError for
  // max_side outside 0..65500 or quality outside 1..100.
  StoredFrames ReadThumbnails(std::string_view id, const Selection& selection,
                              const ThumbnailOptions& options) const;
  // Thumbnails of many requests at once, in request order: every frame read
  // at once (ReadJpegBatch's one pread per run, or concurrent range requests
  // for a dataset in an object store; ReadBatch on an h264 dataset), every
  // thumbnail made in parallel on the decode threads. Errors as
  // ReadThumbnails, for the first request that fails.
  std::vector<StoredFrames> ReadThumbnailBatch(const std::vector<FrameRequest>& requests,
                                               const ThumbnailOptions& options) const;

  // Every id in (chunk, insertion) order. Memory grows with the dataset; for
  // large ones prefer ForEach.
  std::vector<std::string> Ids() const;
  // Calls `fn` for every video in (chunk, insertion) order until it returns
  // false. Runs in batches of short read transactions, so it sees each
  // committed batch whole but may see batches committed while it runs.
  void ForEach(const std::function<bool(const VideoInfo&)>& fn) const;
  void ForEachInChunk(uint32_t chunk, const std::function<bool(const VideoInfo&)>& fn) const;

  // Positional access to the order Ids() lists, without loading every id.
  // The id at `position` (0 <= position < Count()); OutOfRangeError past the
  // end. A local dataset finds it from the chunk records' live counts and a
  // short walk inside one chunk (O(chunks) record reads plus O(videos per
  // chunk)); a partitioned snapshot reads one order partition.
  std::string IdAt(uint64_t position) const;
  // The ids at positions [start, start + count), clipped at the end (empty
  // past it), from one snapshot.
  std::vector<std::string> IdsAt(uint64_t start, uint64_t count) const;
  // The first position of each block of the order that is stored together
  // (a partition of a partitioned snapshot; fixed blocks of 2048 positions
  // for a local dataset), ascending, starting with 0 ({0} when empty).
  std::vector<uint64_t> OrderBlocks() const;

  // Names the first `count` videos of the order Ids() lists, for a reader
  // that must later tell whether a dataset still starts with the videos it
  // counted (a training sampler's saved position, docs/training.md): the
  // SHA-256, as 64 lowercase hex digits, of the ids at positions
  // [0, count), each as its length (4 bytes, little-endian) followed by its
  // bytes (IdsDigestOf gives the same for any list). Only ids and their
  // order take part: editing meta, or a compaction that keeps the order,
  // keeps the digest; removing or replacing a video (a replaced id moves to
  // the end of the order) changes it, appending does not. Reads one
  // snapshot, O(count): one read transaction of a local index; the order
  // partitions holding those positions of a partitioned snapshot. Throws
  // OutOfRangeError when count > Count().
  std::string IdsDigest(uint64_t count) const;
  // The dataset's identity, DatasetStats::uuid (empty for an index made
  // before gulpdb recorded one, until its first push), without the walk over
  // the chunks that Stats makes.
  std::string Uuid() const;

  std::vector<ChunkInfo> Chunks() const;
  DatasetStats Stats() const;

  // Starts a write transaction (see Writer for its lifetime). Needs a
  // dataset opened read-write. Throws
  // BusyError when another writer (in any process) is active and does not
  // finish within options.lock_timeout.
  std::unique_ptr<Writer> NewWriter(const WriterOptions& options = {});

  // Convenience: removes `ids` in one transaction; returns how many existed.
  size_t Remove(const std::vector<std::string>& ids);

  // ---- Metadata queries and named splits (query.h says what equality means) ----

  // Ids of the videos that satisfy `query` (the query language,
  // docs/query.md), in (chunk, insertion) order like Ids(); Query(): every
  // id. Terms on keys with a meta index (CreateMetaIndex) are answered from
  // the index (`=`, `in`, `has`, and with an index of the ordered key form
  // `!=` and ranges), in time proportional to the entries read; an `and`
  // narrows by its smallest indexed part and checks the rest per candidate;
  // the rest is one scan of every record in C++. Reads one snapshot (one
  // read transaction for the whole call). Throws CorruptionError naming the
  // id for a record whose meta is not JSON.
  std::vector<std::string> Select(const Query& query) const;
  // Select(Query::Parse(expression)), e.g.
  // Select("frames >= 16 and label in ('a', 'b')"). Throws QuerySyntaxError
  // (an InvalidArgumentError) for text that is not a query.
  std::vector<std::string> Select(std::string_view expression) const;
  // The videos whose meta (first meta_data entry) satisfies every condition
  // (query.h: a condition's values match exactly as given); no condition:
  // every id. Throws InvalidArgumentError naming the key for a value that
  // is not JSON.
  std::vector<std::string> Select(const std::vector<MetaCondition>& conditions) const;
  // Select({MetaCondition::Equals(key, json_value)}).
  std::vector<std::string> Select(std::string_view key, std::string_view json_value) const;

  // Builds a secondary index of meta key `key` over every video, in one write
  // transaction under the writer lock (BusyError when another writer does not
  // finish within `lock_timeout`); every later write keeps it in the
  // transaction that changes the videos. Returns false, changing nothing,
  // when `key` is indexed already; an index of the first key form (made
  // before indexes were ordered: MetaIndexInfo::ordered) is rebuilt in the
  // ordered form, in one transaction, and true returned. Throws InvalidArgumentError for a key that
  // is empty, longer than 255 bytes or not UTF-8, and CorruptionError for a
  // record whose meta is not JSON (nothing is then indexed).
  bool CreateMetaIndex(std::string_view key,
                       std::chrono::milliseconds lock_timeout = std::chrono::milliseconds(0));
  // Drops the meta index of `key` (one write transaction); false if it had none.
  bool DropMetaIndex(std::string_view key,
                     std::chrono::milliseconds lock_timeout = std::chrono::milliseconds(0));
  // The keys that have a meta index, sorted by their bytes.
  std::vector<std::string> MetaIndexes() const;
  // The same, with the key form of each index.
  std::vector<MetaIndexInfo> MetaIndexDetails() const;

  // How many videos have each value of meta key `key` (first meta_data
  // entry; values counted as equal as query.h says, so 1 and 1.0 count
  // together), read from the key's meta index: nullopt when `key` has none
  // (MetaValueTally counts from the records instead). Most frequent first
  // (ties in the index's order). Reads one snapshot, every entry of the key
  // (the index's keys only) and one record per distinct value (for its
  // text), so memory grows with the distinct values, not the videos.
  // Throws CorruptionError naming the id for a record whose meta is not JSON.
  std::optional<std::vector<MetaValueCount>> CountMetaValues(std::string_view key) const;

  // The keys among `keys` (in their order) that no video's meta (first
  // meta_data entry) has at all, whatever the value: a query or a meta index
  // of such a key can only ever be empty, usually because of a misspelt key.
  // Reads one snapshot; a key with a meta index is answered from it (one
  // seek), the others by reading records until each is seen (every record
  // when one is absent: the cost of a Select scan). Throws
  // InvalidArgumentError for a key that is not UTF-8, CorruptionError
  // naming the id for a record whose meta is not JSON.
  std::vector<std::string> AbsentMetaKeys(const std::vector<std::string>& keys) const;

  // Every named split (Writer::SetSplit) with its size, sorted by name. A
  // partitioned index snapshot of an older format may have left the splits
  // out: on a dataset read through one, Splits and Split throw
  // InvalidArgumentError saying so.
  std::vector<SplitInfo> Splits() const;
  // The ids of split `name`, in the order Writer::SetSplit was given them
  // (removed videos leave it). Throws NameNotFoundError naming the known
  // splits when there is no such split.
  std::vector<std::string> Split(std::string_view name) const;

  // Versions (docs/versions.md; engine/version). Tag records the dataset as
  // it is now under `name` (1 to 255 bytes of A-Z a-z 0-9 . _ -, not "." or
  // "..", not "HEAD"): an immutable snapshot of the index in
  // <dir>/gulpdb.versions that shares unchanged partitions with earlier
  // tags. Only on a local dataset opened for writing; takes the writer lock
  // while it builds. InvalidArgumentError for a bad or used name (naming
  // it), a read-only or remote dataset; IoError for the file system.
  VersionInfo Tag(const std::string& name, const std::string& message = "");
  // The dataset's tags, oldest first (works on a version, too; on a dataset
  // opened from a URL, the tags its push published).
  std::vector<VersionInfo> Versions() const;
  // Deletes tag `name`: new opens no longer find it at once; what only it
  // holds (index objects, chunk files compaction kept for it) is freed by
  // the first ReclaimVersions after `grace` (readers that opened it keep
  // reading until then). NameNotFoundError for an unknown tag.
  void DeleteTag(const std::string& name, std::chrono::seconds grace = std::chrono::minutes(10));
  // Frees what deleted tags whose grace has passed held; returns the bytes
  // freed. Run by Tag and DeleteTag too.
  uint64_t ReclaimVersions();
  // Bytes the tags hold: their index objects and the chunk files kept for
  // them out of the dataset directory.
  uint64_t VersionBytes() const;
  // What changed from version `a` to version `b` (tag names, or "HEAD" for
  // the live dataset). NameNotFoundError for an unknown name.
  VersionDiff Diff(const std::string& a, const std::string& b) const;

 private:
  struct GULPDB_NO_EXPORT Impl;
  // The engine's own modules (interop, maintenance, check) reach the
  // internals through engine::DatasetAccess, which is not installed.
  friend class engine::DatasetAccess;
  explicit Dataset(std::shared_ptr<Impl> impl);
  // ReadBatch; with `always_verify` every frame's CRC-32C is checked whatever
  // OpenOptions::verify_checksums said (export's transcoding reads so).
  std::vector<DecodedFrames> ReadDecoded(const std::vector<FrameRequest>& requests,
                                         const DecodeOptions& options, bool always_verify) const;
  // Shared with the Writers of this Dataset, which may outlive it.
  std::shared_ptr<Impl> impl_;
};

// A write transaction: Append and Remove any number of times, then Commit
// (all of the batch becomes visible at once) or Rollback (none of it does).
// A Writer destroyed without Commit rolls back. After Commit or Rollback the
// Writer may start another batch. A crash at any point loses nothing
// committed and leaves nothing uncommitted visible.
//
// Lifetime: a Writer shares ownership of its dataset's internals (the index
// environment, the writer lock, open files), so it stays fully usable when
// the Dataset that made it is destroyed first; the dataset is closed when
// the last of them goes.
class GULPDB_EXPORT Writer {
 public:
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Appends a video: its frames as JPEG bytes (stored as they are) and its
  // meta as the JSON text of one object. Returns false if the id exists and
  // the writer skips duplicates. Throws InvalidArgumentError for an empty or
  // too long id (LMDB keys hold at most 511 bytes), an empty frame, a frame
  // that is not JPEG (when markers are checked), bad JSON, or a duplicate id
  // under OnDuplicate::kError (also within one batch).
  bool Append(std::string_view id, const std::vector<std::string_view>& jpegs,
              std::string_view meta_json = "{}");
  // As Append, with the video's whole GulpIO meta_data list (the JSON text of
  // a list of objects, one per append in GulpIO's terms) instead of one object.
  bool AppendEntry(std::string_view id, const std::vector<std::string_view>& jpegs,
                   std::string_view meta_data_list);
  // Appends a video given as a raw Annex-B H.264 elementary stream (ffmpeg
  // `-f h264`, libx264, no B-frames), split into one packet per frame
  // (frame count = packets) and stored as the frames of a JPEG video are:
  // back to back in the chunk, 4-byte padded, one CRC-32C per packet, plus
  // the keyframe flags and the decoder parameters in the record. Only on an
  // h264 dataset: InvalidArgumentError on a JPEG one (and Append/AppendEntry
  // on an h264 dataset are InvalidArgumentErrors). A stream that does not
  // parse is an InvalidArgumentError naming the id. Returns false when
  // skipped as a duplicate (the policy of Append); other errors as Append.
  bool AppendH264(std::string_view id, std::string_view annexb_stream,
                  std::string_view meta_json = "{}");
  // Removes a committed or pending video; returns false if it does not exist.
  bool Remove(std::string_view id);
  // Meta edits (docs/edits.md). A video's meta is the first entry of its
  // meta_data list (what GulpIO2 returns); its frames never move for an
  // edit. UpdateMeta merges `patch_json`, a JSON object, into it: each key
  // is set (in place when present, else added at the end), and a key whose
  // value is null is deleted. SetMeta replaces it with `meta_json`, a JSON
  // object. Both take part in the batch like an append: the meta indexes
  // follow in the same transaction, a journaled commit's record carries the
  // edit, and a rollback forgets it. An id appended earlier in the batch has
  // its pending meta changed; an edit of an id the batch then removes or
  // replaces is dropped with it; edits of one id apply in call order.
  // Throws IdNotFoundError when the id is neither committed nor appended in
  // the batch (or was removed in it) — and then rolls the whole batch back,
  // so that nothing of it lands. Throws InvalidArgumentError, leaving the
  // batch as it was, for JSON that is not an object, or (UpdateMeta) a video
  // whose first meta entry is not an object (GulpIO allows any JSON there:
  // SetMeta replaces it). Both return false, recording nothing, when the
  // meta already is what the edit makes it (byte for byte).
  bool UpdateMeta(std::string_view id, std::string_view patch_json);
  bool SetMeta(std::string_view id, std::string_view meta_json);
  // Creates a new, empty chunk now (its data_<N>.gulp file, registered in the
  // index at once, outside the batch) and sends the next appends to it;
  // returns its number N, the next free one. The chunk stays, empty, if
  // nothing is appended to it or the batch rolls back, as GulpIO leaves the
  // data file of a chunk it opened for writing. Throws IoError or
  // ResourceExhaustedError when the file cannot be created.
  uint32_t StartChunk();

  // Makes split `name` hold `ids`, in that order, when the batch commits
  // (replacing a split of that name; all of it or, on rollback, nothing).
  // Every id must exist now, committed or appended earlier in this batch:
  // otherwise IdNotFoundError lists the missing ones and this call changes
  // nothing. A video removed later (in this batch or another) leaves the
  // split. Throws InvalidArgumentError for an id listed twice, or a name that
  // is empty, longer than 255 bytes or not UTF-8.
  void SetSplit(std::string_view name, const std::vector<std::string>& ids);
  // Removes split `name` when the batch commits. Returns false, changing
  // nothing, when there is no such split (committed, or set in this batch).
  bool RemoveSplit(std::string_view name);

  // Makes the batch durable and visible: frames are fdatasync'd before the
  // index transaction commits.
  void Commit();
  // Commit, for a batch after which this Writer commits nothing more (it is
  // about to be destroyed): the same guarantees, written the way that costs
  // the fewest durable writes when the Writer ends next. A small batch then
  // syncs its chunk and commits the index durably (three durable writes)
  // instead of taking the journal, whose record and the checkpoint that
  // destroying the Writer needs cost four (docs/reliability.md, "Opening a
  // writer per commit"). The Writer stays usable: a commit after it costs a
  // checkpoint more.
  void CommitLast();
  // Discards the batch: chunk files are truncated back to their committed length.
  void Rollback();

  size_t pending_videos() const;

 private:
  struct GULPDB_NO_EXPORT Impl;
  friend class Dataset;
  friend class engine::DatasetAccess;  // replays the journal (engine/core/journal.h)
  explicit Writer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gulpdb

#endif  // GULPDB_DATASET_H_
