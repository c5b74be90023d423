#include "index/records.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cstring>

#include "gulpdb/error.h"
#include "index/records_generated.h"
#include "util/coding.h"
#include "util/relative_name.h"

namespace gulpdb::index {
namespace {

namespace fbs = gulpdb::index::fb;

[[noreturn]] void ThrowCorrupt(std::string_view kind, std::string_view what,
                               const std::string& detail) {
  throw CorruptionError("decode " + std::string(kind) + " " + std::string(what) + ": " + detail);
}

// FlatBuffers reads scalars in place and needs the buffer aligned; LMDB only
// guarantees 2-byte alignment of values. Misaligned records are copied into
// a per-thread buffer, valid until the next decode on the same thread.
const uint8_t* Aligned(std::string_view bytes) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) == 0) {
    return reinterpret_cast<const uint8_t*>(bytes.data());
  }
  thread_local std::vector<uint64_t> storage;
  storage.resize(bytes.size() / sizeof(uint64_t) + 1);
  std::memcpy(storage.data(), bytes.data(), bytes.size());
  return reinterpret_cast<const uint8_t*>(storage.data());
}

template <typename T>
const T* VerifiedRoot(std::string_view bytes, std::string_view kind, std::string_view what,
                      const char* identifier) {
  const uint8_t* data = Aligned(bytes);
  flatbuffers::Verifier verifier(data, bytes.size());
  if (!verifier.VerifyBuffer<T>(identifier)) {
    ThrowCorrupt(
        kind, what,
        "record fails FlatBuffers verification (" + std::to_string(bytes.size()) + " bytes)");
  }
  return flatbuffers::GetRoot<T>(data);
}

template <typename T>
size_t SizeOf(const flatbuffers::Vector<T>* v) {
  return v == nullptr ? 0 : v->size();
}

// Checks the shape invariants of a verified VideoRecord and returns its frame
// count. The forms a record may take are in docs/format/index_format.md.
uint32_t CheckVideoShape(const fbs::VideoRecord& r, std::string_view what) {
  if ((r.jpeg_sizes() == nullptr) == (r.jpeg_sizes16() == nullptr)) {
    ThrowCorrupt("video", what, "exactly one of jpeg_sizes and jpeg_sizes16 must be stored");
  }
  const size_t sizes =
      r.jpeg_sizes() != nullptr ? r.jpeg_sizes()->size() : r.jpeg_sizes16()->size();
  uint64_t frames = sizes;
  if (r.run_offsets() == nullptr) {
    if (r.run_frames() != nullptr) ThrowCorrupt("video", what, "run_frames without run_offsets");
  } else {
    if (r.run_offset() != 0) ThrowCorrupt("video", what, "both run_offset and run_offsets");
    // The Verifier checks that a vector's length field is 4-byte aligned, not
    // that 8-byte elements are 8-byte aligned, and reading misaligned ones is
    // undefined behaviour. Builders always align them (the buffer is aligned,
    // see Aligned()), so a misaligned vector is corruption.
    if (reinterpret_cast<uintptr_t>(r.run_offsets()->Data()) % alignof(uint64_t) != 0) {
      ThrowCorrupt("video", what, "run_offsets are misaligned");
    }
    const size_t runs = r.run_offsets()->size();
    if (SizeOf(r.run_frames()) != runs) {
      ThrowCorrupt("video", what, "run_offsets and run_frames differ in length");
    }
    frames = 0;
    for (size_t i = 0; i < runs; ++i) frames += r.run_frames()->Get(static_cast<uint32_t>(i));
    if (frames != sizes) {
      ThrowCorrupt("video", what,
                   "runs hold " + std::to_string(frames) + " frames but " + std::to_string(sizes) +
                       " sizes are stored");
    }
  }
  if (r.pads() != nullptr && r.pads()->size() != frames) {
    ThrowCorrupt("video", what, "pads do not match the frame count");
  }
  if (r.crc32c() != nullptr && r.crc32c()->size() != frames) {
    ThrowCorrupt("video", what, "checksums do not match the frame count");
  }
  if (r.meta_data() == nullptr) ThrowCorrupt("video", what, "meta_data is missing");
  // An H.264 video: keyframes and parameters together, keyframes ascending
  // from frame 0 and inside the video (the decoder relies on them).
  if ((r.keyframes() == nullptr) != (r.h264() == nullptr)) {
    ThrowCorrupt("video", what, "exactly one of keyframes and h264 is stored");
  }
  if (const auto* keys = r.keyframes(); keys != nullptr) {
    if (frames == 0 || keys->size() == 0 || keys->Get(0) != 0) {
      ThrowCorrupt("video", what, "an H.264 video's first frame must be a keyframe");
    }
    for (uint32_t i = 1; i < keys->size(); ++i) {
      if (keys->Get(i) <= keys->Get(i - 1) || keys->Get(i) >= frames) {
        ThrowCorrupt("video", what, "keyframe indices are not ascending inside the video");
      }
    }
    const fbs::H264Params& p = *r.h264();
    if (p.extradata() == nullptr || p.extradata()->size() == 0 || p.width() == 0 ||
        p.height() == 0 || p.width() > 65536 || p.height() > 65536 || p.chroma() > 1) {
      ThrowCorrupt("video", what, "H.264 parameters are missing or out of range");
    }
  }
  // Each frame's length (JPEG size plus pad) must fit frame_info's 32 bits.
  // Only 4-byte sizes can overflow (a 2-byte size plus a pad of at most 255
  // cannot); checked here so that DecodeFrameCount rejects what
  // DecodeVideoRecord rejects.
  if (const auto* sizes32 = r.jpeg_sizes(); sizes32 != nullptr) {
    for (uint32_t i = 0; i < sizes32->size(); ++i) {
      const uint32_t size = sizes32->Get(i);
      const uint32_t pad = r.pads() != nullptr ? r.pads()->Get(i) : PadFor(size);
      if (size > UINT32_MAX - pad) ThrowCorrupt("video", what, "frame length overflows");
    }
  }
  return static_cast<uint32_t>(frames);
}

// Video records are verified without a file identifier: records written
// before the identifier was dropped still carry "GDBV" (the root offset skips
// it), newer ones do not. The shape checks (one size vector, consistent runs,
// meta_data present) stand in for it against bytes that are not a VideoRecord.
const fbs::VideoRecord& VerifiedVideo(std::string_view bytes, std::string_view what) {
  return *VerifiedRoot<fbs::VideoRecord>(bytes, "video", what, nullptr);
}

VideoRecord DecodeVideo(std::string_view bytes, std::string_view what, bool with_meta) {
  const fbs::VideoRecord& r = VerifiedVideo(bytes, what);
  const uint32_t frame_count = CheckVideoShape(r, what);
  const auto* sizes32 = r.jpeg_sizes();
  const auto* sizes16 = r.jpeg_sizes16();
  const auto* run_offsets = r.run_offsets();
  const uint32_t runs = run_offsets != nullptr ? run_offsets->size() : 1;
  VideoRecord out;
  out.chunk = r.chunk();
  out.seq = r.seq();
  if (with_meta) out.meta_data = r.meta_data()->str();
  out.frames.reserve(frame_count);
  uint32_t frame = 0;
  for (uint32_t run = 0; run < runs; ++run) {
    uint64_t offset = run_offsets != nullptr ? run_offsets->Get(run) : r.run_offset();
    const uint32_t run_frames = run_offsets != nullptr ? r.run_frames()->Get(run) : frame_count;
    for (uint32_t i = 0; i < run_frames; ++i, ++frame) {
      const uint32_t size = sizes16 != nullptr ? sizes16->Get(frame) : sizes32->Get(frame);
      const uint32_t pad = r.pads() != nullptr ? r.pads()->Get(frame) : PadFor(size);
      out.frames.push_back(FrameInfo{offset, pad, size + pad});
      offset += size + pad;
    }
  }
  if (r.crc32c() != nullptr) out.crc32c.assign(r.crc32c()->begin(), r.crc32c()->end());
  if (r.keyframes() != nullptr) {
    out.keyframes.assign(r.keyframes()->begin(), r.keyframes()->end());
    const fbs::H264Params& p = *r.h264();
    H264Params params;
    params.extradata.assign(reinterpret_cast<const char*>(p.extradata()->data()),
                            p.extradata()->size());
    params.width = p.width();
    params.height = p.height();
    params.chroma = p.chroma();
    out.h264 = std::move(params);
  }
  return out;
}

}  // namespace

uint64_t VideoRecord::frame_bytes() const {
  uint64_t total = 0;
  for (const FrameInfo& f : frames) total += f.length;
  return total;
}

std::string EncodeVideoRecord(const VideoRecord& record) {
  if (!record.crc32c.empty() && record.crc32c.size() != record.frames.size()) {
    throw InvalidArgumentError("encode video record: checksum count differs from frame count");
  }
  if (record.h264.has_value() != !record.keyframes.empty()) {
    throw InvalidArgumentError(
        "encode video record: keyframes without H.264 parameters or the "
        "other way round");
  }
  std::vector<uint64_t> run_offsets;
  std::vector<uint32_t> run_frames;
  std::vector<uint8_t> pads;
  bool canonical_pads = true;
  bool small_sizes = true;
  pads.reserve(record.frames.size());
  uint64_t next_offset = 0;
  for (const FrameInfo& f : record.frames) {
    if (f.length < f.pad || f.pad > 255) {
      throw InvalidArgumentError("encode video record: frame length " + std::to_string(f.length) +
                                 " with pad " + std::to_string(f.pad));
    }
    if (run_offsets.empty() || f.offset != next_offset) {
      run_offsets.push_back(f.offset);
      run_frames.push_back(0);
    }
    ++run_frames.back();
    next_offset = f.offset + f.length;
    pads.push_back(static_cast<uint8_t>(f.pad));
    canonical_pads = canonical_pads && f.pad == PadFor(f.jpeg_size());
    small_sizes = small_sizes && f.jpeg_size() <= UINT16_MAX;
  }
  // The one-run form: no run vectors, the run's start in the run_offset scalar.
  const bool one_run = run_offsets.size() <= 1;

  flatbuffers::FlatBufferBuilder builder(128 + 4 * record.frames.size() + record.meta_data.size());
  // Built back to front: the meta string first so that the 4-byte-aligned
  // vectors pack against it with the least padding.
  const auto meta = builder.CreateString(record.meta_data);
  flatbuffers::Offset<fbs::H264Params> h264 = 0;
  flatbuffers::Offset<flatbuffers::Vector<uint32_t>> keyframes_vec = 0;
  if (record.h264) {
    const auto extradata =
        builder.CreateVector(reinterpret_cast<const uint8_t*>(record.h264->extradata.data()),
                             record.h264->extradata.size());
    h264 = fbs::CreateH264Params(builder, extradata, record.h264->width, record.h264->height,
                                 record.h264->chroma);
    keyframes_vec = builder.CreateVector(record.keyframes);
  }
  const auto crc_vec = record.crc32c.empty() ? 0 : builder.CreateVector(record.crc32c);
  const auto pads_vec = canonical_pads ? 0 : builder.CreateVector(pads);
  flatbuffers::Offset<flatbuffers::Vector<uint16_t>> sizes16_vec = 0;
  flatbuffers::Offset<flatbuffers::Vector<uint32_t>> sizes32_vec = 0;
  if (small_sizes) {
    std::vector<uint16_t> sizes;
    sizes.reserve(record.frames.size());
    for (const FrameInfo& f : record.frames) sizes.push_back(static_cast<uint16_t>(f.jpeg_size()));
    sizes16_vec = builder.CreateVector(sizes);
  } else {
    std::vector<uint32_t> sizes;
    sizes.reserve(record.frames.size());
    for (const FrameInfo& f : record.frames) sizes.push_back(f.jpeg_size());
    sizes32_vec = builder.CreateVector(sizes);
  }
  const auto frames_vec = one_run ? 0 : builder.CreateVector(run_frames);
  const auto offsets_vec = one_run ? 0 : builder.CreateVector(run_offsets);
  fbs::VideoRecordBuilder b(builder);
  b.add_seq(record.seq);
  if (one_run) {
    b.add_run_offset(run_offsets.empty() ? 0 : run_offsets[0]);
  } else {
    b.add_run_offsets(offsets_vec);
    b.add_run_frames(frames_vec);
  }
  b.add_chunk(record.chunk);
  if (small_sizes) {
    b.add_jpeg_sizes16(sizes16_vec);
  } else {
    b.add_jpeg_sizes(sizes32_vec);
  }
  if (!canonical_pads) b.add_pads(pads_vec);
  if (!record.crc32c.empty()) b.add_crc32c(crc_vec);
  b.add_meta_data(meta);
  if (record.h264) {
    b.add_keyframes(keyframes_vec);
    b.add_h264(h264);
  }
  builder.Finish(b.Finish());
  return std::string(reinterpret_cast<const char*>(builder.GetBufferPointer()), builder.GetSize());
}

VideoRecord DecodeVideoRecord(std::string_view bytes, std::string_view what) {
  return DecodeVideo(bytes, what, /*with_meta=*/true);
}

VideoRecord DecodeVideoFrames(std::string_view bytes, std::string_view what) {
  return DecodeVideo(bytes, what, /*with_meta=*/false);
}

uint32_t DecodeFrameCount(std::string_view bytes, std::string_view what) {
  return CheckVideoShape(VerifiedVideo(bytes, what), what);
}

VideoMetaView DecodeVideoMeta(std::string_view bytes, std::string_view what) {
  const fbs::VideoRecord& r = VerifiedVideo(bytes, what);
  VideoMetaView out;
  out.frames = CheckVideoShape(r, what);
  out.chunk = r.chunk();
  out.seq = r.seq();
  out.meta_data = std::string_view(r.meta_data()->c_str(), r.meta_data()->size());
  return out;
}

std::string EncodeChunkRecord(const ChunkRecord& record) {
  flatbuffers::FlatBufferBuilder builder(128);
  const auto name = builder.CreateString(record.file_name);
  const auto meta_file = builder.CreateString(record.meta_file);
  // Fields added later are stored only when set, so that a record without
  // them has exactly the bytes older versions wrote.
  const auto owner = record.owner.empty() ? flatbuffers::Offset<flatbuffers::String>()
                                          : builder.CreateString(record.owner);
  fbs::ChunkRecordBuilder b(builder);
  b.add_file_name(name);
  b.add_committed_length(record.committed_length);
  b.add_appended_videos(record.appended_videos);
  b.add_live_videos(record.live_videos);
  b.add_live_bytes(record.live_bytes);
  b.add_state(static_cast<fbs::ChunkState>(record.state));
  b.add_meta_file(meta_file);
  fbs::FileStamp data_stamp, meta_stamp;
  if (record.data_stamp) {
    data_stamp = fbs::FileStamp(record.data_stamp->size, record.data_stamp->mtime_ns);
    b.add_data_stamp(&data_stamp);
  }
  if (record.meta_stamp) {
    meta_stamp = fbs::FileStamp(record.meta_stamp->size, record.meta_stamp->mtime_ns);
    b.add_meta_stamp(&meta_stamp);
  }
  if (!owner.IsNull()) b.add_owner(owner);
  fbs::ContentStamp meta_content;
  if (record.meta_content) {
    meta_content = fbs::ContentStamp(record.meta_content->size, record.meta_content->crc32c);
    b.add_meta_content(&meta_content);
  }
  if (record.meta_edits != 0) b.add_meta_edits(record.meta_edits);
  if (record.meta_edits_exported != 0) b.add_meta_edits_exported(record.meta_edits_exported);
  builder.Finish(b.Finish());
  return std::string(reinterpret_cast<const char*>(builder.GetBufferPointer()), builder.GetSize());
}

ChunkRecord DecodeChunkRecord(std::string_view bytes, std::string_view what) {
  const auto* r = VerifiedRoot<fbs::ChunkRecord>(bytes, "chunk", what, nullptr);
  if (r->file_name() == nullptr || r->file_name()->size() == 0) {
    ThrowCorrupt("chunk", what, "file name is missing");
  }
  // The record names its file from here on: so does the message.
  const std::string of_file =
      std::string(what) + " (its file '" + util::EscapeBytes(r->file_name()->string_view()) + "')";
  if (r->live_bytes() > r->committed_length()) {
    ThrowCorrupt("chunk", of_file,
                 "live bytes exceed the committed length (" + std::to_string(r->live_bytes()) +
                     " > " + std::to_string(r->committed_length()) + ")");
  }
  // An unknown state would read as open, and a writer would append to it.
  if (r->state() != fbs::ChunkState::Open && r->state() != fbs::ChunkState::Full) {
    ThrowCorrupt("chunk", of_file,
                 "unknown state " + std::to_string(static_cast<unsigned>(r->state())));
  }
  ChunkRecord out;
  out.file_name = r->file_name()->str();
  out.committed_length = r->committed_length();
  out.appended_videos = r->appended_videos();
  out.live_videos = r->live_videos();
  out.live_bytes = r->live_bytes();
  out.state = static_cast<ChunkState>(r->state());
  if (r->meta_file() != nullptr) out.meta_file = r->meta_file()->str();
  if (const fbs::FileStamp* d = r->data_stamp())
    out.data_stamp = FileStamp{d->size(), d->mtime_ns()};
  if (const fbs::FileStamp* m = r->meta_stamp())
    out.meta_stamp = FileStamp{m->size(), m->mtime_ns()};
  if (r->owner() != nullptr) out.owner = r->owner()->str();
  if (const fbs::ContentStamp* c = r->meta_content()) {
    out.meta_content = ContentStamp{c->size(), c->crc32c()};
  }
  out.meta_edits = r->meta_edits();
  out.meta_edits_exported = r->meta_edits_exported();
  return out;
}

std::string EncodeDatasetInfo(const DatasetInfo& info) {
  flatbuffers::FlatBufferBuilder builder(128);
  const auto creator = builder.CreateString(info.creator);
  const auto dirty = builder.CreateVector(info.dirty_chunks);
  const auto obsolete = builder.CreateVectorOfStrings(info.obsolete_files);
  const auto attached_to = info.attached_to.empty() ? flatbuffers::Offset<flatbuffers::String>()
                                                    : builder.CreateString(info.attached_to);
  const auto uuid = info.uuid.empty() ? flatbuffers::Offset<flatbuffers::String>()
                                      : builder.CreateString(info.uuid);
  fbs::DatasetInfoBuilder b(builder);
  b.add_format_version(info.format_version);
  b.add_creator(creator);
  b.add_videos_per_chunk(info.videos_per_chunk);
  b.add_bytes_per_chunk(info.bytes_per_chunk);
  b.add_checksums(info.checksums);
  b.add_next_seq(info.next_seq);
  b.add_total_videos(info.total_videos);
  b.add_total_frames(info.total_frames);
  b.add_dirty_chunks(dirty);
  b.add_obsolete_files(obsolete);
  if (info.source_stamps) b.add_source_stamps(true);
  if (!attached_to.IsNull()) b.add_attached_to(attached_to);
  if (info.next_chunk != 0) b.add_next_chunk(info.next_chunk);
  if (!uuid.IsNull()) b.add_uuid(uuid);
  if (info.codec != kCodecJpeg) b.add_codec(info.codec);
  builder.Finish(b.Finish());
  return std::string(reinterpret_cast<const char*>(builder.GetBufferPointer()), builder.GetSize());
}

DatasetInfo DecodeDatasetInfo(std::string_view bytes, std::string_view what) {
  const auto* r = VerifiedRoot<fbs::DatasetInfo>(bytes, "dataset info", what, nullptr);
  DatasetInfo out;
  out.format_version = r->format_version();
  if (out.format_version == 0 || out.format_version > kFormatVersion) {
    ThrowCorrupt("dataset info", what,
                 "format version " + std::to_string(out.format_version) +
                     " is not supported (this build reads up to " + std::to_string(kFormatVersion) +
                     ")");
  }
  if (r->creator() != nullptr) out.creator = r->creator()->str();
  out.videos_per_chunk = r->videos_per_chunk();
  out.bytes_per_chunk = r->bytes_per_chunk();
  out.checksums = r->checksums();
  out.next_seq = r->next_seq();
  out.total_videos = r->total_videos();
  out.total_frames = r->total_frames();
  if (r->dirty_chunks() != nullptr) {
    out.dirty_chunks.assign(r->dirty_chunks()->begin(), r->dirty_chunks()->end());
  }
  if (r->obsolete_files() != nullptr) {
    for (const auto* name : *r->obsolete_files()) {
      if (name != nullptr) out.obsolete_files.push_back(name->str());
    }
  }
  out.source_stamps = r->source_stamps();
  if (r->attached_to() != nullptr) out.attached_to = r->attached_to()->str();
  out.next_chunk = r->next_chunk();
  if (out.next_chunk > kNoChunkNumberLeft) {
    ThrowCorrupt("dataset info", what,
                 "next chunk number " + std::to_string(out.next_chunk) + " is past 2^32");
  }
  if (r->uuid() != nullptr) out.uuid = r->uuid()->str();
  out.codec = r->codec();
  if (out.codec != kCodecJpeg && out.codec != kCodecH264) {
    ThrowCorrupt(
        "dataset info", what,
        "codec " + std::to_string(out.codec) + " is not known to this build (0: jpeg, 1: h264)");
  }
  return out;
}

uint64_t NextChunkNumber(const DatasetInfo& info, std::optional<uint32_t> last_chunk) {
  uint64_t next = info.next_chunk;
  if (last_chunk) next = std::max<uint64_t>(next, uint64_t{*last_chunk} + 1);
  for (uint32_t n : info.dirty_chunks) next = std::max<uint64_t>(next, uint64_t{n} + 1);
  return next;
}

std::string ChunkKey(uint32_t chunk) { return util::FixedBig(chunk, 4); }

uint32_t DecodeChunkKey(std::string_view key) {
  if (key.size() != 4) throw CorruptionError("decode chunk key: expected 4 bytes");
  return static_cast<uint32_t>(util::GetFixedBig(key, 0, 4));
}

std::string OrderKey(uint32_t chunk, uint64_t seq) {
  std::string key;
  key.reserve(12);
  util::PutFixedBig(&key, chunk, 4);
  util::PutFixedBig(&key, seq, 8);
  return key;
}

}  // namespace gulpdb::index
