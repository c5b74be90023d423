#include "engine/core/chunk_reader.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>

#include "engine/core/buffer_pool.h"
#include "engine/core/lmdb_snapshot.h"
#include "gulpdb/error.h"
#include "util/crc32c.h"

namespace gulpdb {

// JPEG bytes come from the read buffer pool (engine/core/buffer_pool.h), with the
// buffer's capacity in a header before them, for StoredFrames::Free.
char* engine::DatasetAccess::AllocateBuffer(StoredFrames& frames, size_t bytes) {
  size_t capacity = 0;
  uint8_t* block = BufferPool::Get().Take(kJpegBufferHeader + bytes, &capacity);
  if (block == nullptr) {
    frames.buffer_.reset();
    return nullptr;  // the caller reports it
  }
  std::memcpy(block, &capacity, sizeof(capacity));
  frames.buffer_.reset(reinterpret_cast<char*>(block + kJpegBufferHeader));
  return frames.buffer_.get();
}

namespace engine {
namespace {

// A run of frames adjacent in their chunk: one pread or one ranged GET. It
// holds the request's frames [first, end) (positions in its indices()).
struct Run {
  uint64_t offset;
  uint64_t size;
  size_t buffer_pos;
  size_t first;
  size_t end;
};

struct Plan {
  index::VideoRecord record;                      // frames and checksums only
  std::shared_ptr<const engine::ChunkFile> file;  // local datasets
  std::optional<ChunkSource::Object> object;      // remote datasets
  std::vector<Run> runs;
};

std::string Where(const DatasetImpl& impl, const Plan& plan) {
  if (plan.file) return plan.file->path();
  if (plan.object) return impl.remote->Name(plan.object->key);
  return impl.dir;
}

// Checks the frames at positions [first, end) of `frames` (request `id`,
// planned as `plan`) against their stored CRC-32C: a CorruptionError naming
// the video, the frame, the file and offset and both checksums at the first
// that differs. A record without checksums has nothing to check. `selected`
// (H.264 decoded reads) holds the frames asked for: a packet read only
// because decoding them starts at its keyframe is said to be one.
void CheckFrames(const DatasetImpl& impl, std::string_view id, const Plan& plan,
                 const StoredFrames& frames, size_t first, size_t end,
                 const std::vector<uint32_t>* selected) {
  const std::vector<uint32_t>& stored = plan.record.crc32c;
  if (stored.empty()) return;
  const std::vector<uint32_t>& indices = frames.indices();
  for (size_t k = first; k < end; ++k) {
    const std::string_view bytes = frames[k];
    const uint32_t index = indices[k];
    const uint32_t actual = util::Crc32c(bytes.data(), bytes.size());
    if (actual == stored[index]) continue;
    std::string lead_in;
    if (selected != nullptr &&
        std::find(selected->begin(), selected->end(), index) == selected->end()) {
      lead_in = " (a packet that decoding the frames asked for starts from)";
    }
    throw CorruptionError("read id '" + std::string(id) + "' frame " + std::to_string(index) +
                          lead_in + " in " + impl.dir + ": checksum mismatch: the " +
                          std::to_string(bytes.size()) + " bytes at offset " +
                          std::to_string(plan.record.frames[index].offset) + " of " +
                          Where(impl, plan) + " have CRC-32C " + util::Crc32cHex(actual) +
                          ", the index stores " + util::Crc32cHex(stored[index]) +
                          " (the frame is damaged; `gulpdb check --deep` lists every one)");
  }
}

}  // namespace

namespace {

// The indices of the packets decoding `selected` needs (kDecode): per group
// of pictures touched, its keyframe through the last frame selected in it;
// ascending, each once.
std::vector<uint32_t> PacketsToDecode(const index::VideoRecord& record,
                                      const std::vector<uint32_t>& selected) {
  const std::vector<uint32_t>& keys = record.keyframes;
  // last[g]: the last frame selected in GOP g, +1 (0: GOP untouched).
  std::vector<uint32_t> last(keys.size(), 0);
  for (uint32_t k : selected) {
    const size_t g =
        static_cast<size_t>(std::upper_bound(keys.begin(), keys.end(), k) - keys.begin()) - 1;
    last[g] = std::max(last[g], k + 1);
  }
  std::vector<uint32_t> out;
  for (size_t g = 0; g < keys.size(); ++g) {
    for (uint32_t k = keys[g]; k < last[g]; ++k) out.push_back(k);
  }
  return out;
}

enum class ReadKind { kJpeg, kDecode, kStream };

// 1. Lookup: every request's frames record, from one snapshot of the index,
// and where its chunk is read from (the local chunk file, through the
// dataset's cache, or the chunk source's object, checked against the
// snapshot's chunk record on first use).
std::vector<Plan> LookUp(const DatasetImpl& impl, const std::vector<StoredFramesRequest>& requests,
                         const ChunkSource* remote) {
  std::vector<Plan> plans(requests.size());
  const ReadSnapshot snapshot(impl);
  // A snapshot other threads may use lets a chunk source fetch the chunk's
  // object and record while the video's record is on its way (a fresh
  // node: one round trip instead of two more).
  const std::shared_ptr<const IndexSource> shared = snapshot.shared();
  const std::function<void(uint32_t)> prefetch = [&](uint32_t chunk) {
    remote->PrefetchChunk(chunk, [shared, chunk] { shared->Chunk(chunk); });
  };
  const std::function<void(uint32_t)>* chunk_known =
      remote != nullptr && shared != nullptr ? &prefetch : nullptr;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string_view id = requests[i].id;
    std::optional<index::VideoRecord> record = snapshot->FindFrames(id, chunk_known);
    if (!record) {
      throw IdNotFoundError("read id '" + std::string(id) + "' in " + impl.dir + ": no such video");
    }
    plans[i].record = std::move(*record);
    const uint32_t chunk = plans[i].record.chunk;
    const auto chunk_record = [&] { return impl.ChunkOf(*snapshot, chunk); };
    if (remote == nullptr) {
      plans[i].file = impl.ChunkForRead(chunk, chunk_record);
    } else {
      plans[i].object = remote->VerifiedChunk(chunk, id, impl.dir, chunk_record);
    }
  }
  return plans;
}

// 2. Layout: the frames (or packets) request `i` reads, grouped into runs
// adjacent in the chunk, and the buffer they are read into. A remote run
// past the chunk's committed length is a CorruptionError. `plan_only`: the
// runs alone (no buffer; null is returned).
char* LayOut(const DatasetImpl& impl, const StoredFramesRequest& request, ReadKind kind, Plan& plan,
             StoredFrames& frames, StoredPackets* packets, bool plan_only) {
  const std::string_view id = request.id;
  std::vector<uint32_t>& indices = DatasetAccess::Indices(frames);
  std::vector<std::pair<size_t, size_t>>& spans = DatasetAccess::Spans(frames);
  indices = request.selection->Resolve(static_cast<uint32_t>(plan.record.frames.size()), id);
  if (kind != ReadKind::kJpeg) {
    if (!plan.record.h264 || plan.record.keyframes.empty()) {
      throw CorruptionError("read id '" + std::string(id) + "' in " + impl.dir +
                            ": the record is not an H.264 video's (no keyframes or decoder "
                            "parameters) in an h264 dataset");
    }
    std::vector<uint32_t>& selected = packets->selected;
    selected = std::move(indices);
    if (kind == ReadKind::kDecode) {
      indices = PacketsToDecode(plan.record, selected);
    } else {
      indices.resize(plan.record.frames.size());
      for (uint32_t k = 0; k < indices.size(); ++k) indices[k] = k;
    }
  }
  size_t total = 0;
  spans.reserve(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    const FrameInfo& f = plan.record.frames[indices[k]];
    if (plan.runs.empty() || plan.runs.back().offset + plan.runs.back().size != f.offset) {
      plan.runs.push_back(Run{f.offset, 0, total, k, k});
    }
    spans.emplace_back(total, f.jpeg_size());
    plan.runs.back().size += f.length;
    plan.runs.back().end = k + 1;
    total += f.length;
  }
  if (plan.object) {
    for (const Run& run : plan.runs) {
      if (run.offset + run.size > plan.object->committed_length) {
        throw CorruptionError("read id '" + std::string(id) + "' in " + impl.dir + ": bytes " +
                              std::to_string(run.offset) + ".." +
                              std::to_string(run.offset + run.size) + " of " + Where(impl, plan) +
                              " lie past its committed length " +
                              std::to_string(plan.object->committed_length));
      }
    }
  }
  if (plan_only) return nullptr;
  char* buffer = DatasetAccess::AllocateBuffer(frames, total);
  if (buffer == nullptr) throw OutOfMemoryError("read id '" + std::string(id) + "': out of memory");
  return buffer;
}

// 3 and 4. Fetch and verify, from the chunk files: one pread per run, each
// checked (when `verify`) as soon as it is read, while its bytes are in
// cache. `selected(i)`: the frames asked for of request i (for messages).
void FetchLocal(const DatasetImpl& impl, const std::vector<StoredFramesRequest>& requests,
                const std::vector<Plan>& plans, const std::vector<char*>& buffers,
                std::vector<StoredFrames>& out, bool verify,
                const std::function<const std::vector<uint32_t>*(size_t)>& selected) {
  for (size_t i = 0; i < requests.size(); ++i) {
    for (const Run& run : plans[i].runs) {
      plans[i].file->ReadAt(run.offset, buffers[i] + run.buffer_pos, run.size);
      if (verify) {
        CheckFrames(impl, requests[i].id, plans[i], out[i], run.first, run.end, selected(i));
      }
    }
  }
}

// Whether every frame of `frames` matches the CRC-32C `record` gives (a
// record without checksums: true).
bool FramesIntact(const index::VideoRecord& record, const StoredFrames& frames) {
  if (record.crc32c.empty()) return true;
  const std::vector<uint32_t>& indices = frames.indices();
  for (size_t k = 0; k < indices.size(); ++k) {
    const std::string_view bytes = frames[k];
    if (util::Crc32c(bytes.data(), bytes.size()) != record.crc32c[indices[k]]) return false;
  }
  return true;
}

// The ranges of a plan's runs (`buffer` null: for read-ahead, nowhere
// to read them to).
void RangesOf(const Plan& plan, char* buffer, std::vector<ChunkSource::Range>* ranges) {
  for (const Run& run : plan.runs) {
    ranges->push_back(ChunkSource::Range{plan.object->key, run.offset, run.size,
                                         buffer != nullptr ? buffer + run.buffer_pos : nullptr});
  }
}

// 3 and 4. Fetch and verify, from a chunk source: every run of every
// request in one call (ranges read concurrently), then every frame checked
// (bytes that crossed a network always are). Frames that fail their
// checksums may have come from a copy the source keeps (the node's frame
// cache): dropped, and read again from the store once, before the check
// reports the first frame still damaged.
void FetchFromSource(const DatasetImpl& impl, const ChunkSource& source,
                     const std::vector<StoredFramesRequest>& requests,
                     const std::vector<Plan>& plans, const std::vector<char*>& buffers,
                     std::vector<StoredFrames>& out,
                     const std::function<const std::vector<uint32_t>*(size_t)>& selected) {
  std::vector<ChunkSource::Range> ranges;
  for (size_t i = 0; i < requests.size(); ++i) RangesOf(plans[i], buffers[i], &ranges);
  const std::string what =
      requests.size() == 1 ? "read id '" + std::string(requests[0].id) + "' in " + impl.dir
                           : "read " + std::to_string(requests.size()) + " videos in " + impl.dir;
  source.Read(ranges, what);
  // Each frame's CRC-32C is computed once when its video is intact (the
  // common case); a video that is not is read again and checked again.
  std::vector<size_t> damaged;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (FramesIntact(plans[i].record, out[i])) continue;
    damaged.push_back(i);
    std::vector<ChunkSource::Range> again;
    RangesOf(plans[i], buffers[i], &again);
    if (source.Forget(again)) source.Read(again, what);
  }
  for (size_t i : damaged) {
    CheckFrames(impl, requests[i].id, plans[i], out[i], 0, out[i].size(), selected(i));
  }
}

std::vector<StoredFrames> ReadStored(const DatasetImpl& impl,
                                     const std::vector<StoredFramesRequest>& requests,
                                     ReadKind kind, Verify verify_mode,
                                     std::vector<StoredPackets>* packets, bool plan_only = false) {
  const ChunkSource* remote =
      impl.remote && impl.remote->ServesChunks() ? impl.remote.get() : nullptr;
  if (plan_only && remote == nullptr) return {};
  std::vector<Plan> plans = LookUp(impl, requests, remote);
  std::vector<StoredFrames> out(requests.size());
  std::vector<char*> buffers(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    buffers[i] = LayOut(impl, requests[i], kind, plans[i], out[i],
                        packets != nullptr ? &(*packets)[i] : nullptr, plan_only);
  }
  const auto selected = [&](size_t i) -> const std::vector<uint32_t>* {
    return kind == ReadKind::kDecode ? &(*packets)[i].selected : nullptr;
  };
  if (remote == nullptr) {
    // A stream handed out whole is always checked; other local reads unless
    // the dataset was opened without checks.
    const bool verify = kind == ReadKind::kStream || verify_mode == Verify::kAlways ||
                        impl.options.verify_checksums;
    FetchLocal(impl, requests, plans, buffers, out, verify, selected);
  } else {
    if (plan_only) {
      // Read-ahead: the ranges go to the source's cache, nothing is read here.
      std::vector<ChunkSource::Range> ranges;
      for (size_t i = 0; i < requests.size(); ++i) RangesOf(plans[i], nullptr, &ranges);
      remote->Prefetch(ranges);
      return {};
    }
    FetchFromSource(impl, *remote, requests, plans, buffers, out, selected);
  }
  if (packets != nullptr) {
    for (size_t i = 0; i < requests.size(); ++i) (*packets)[i].record = std::move(plans[i].record);
  }
  return out;
}

}  // namespace

std::vector<StoredFrames> ReadJpegRequests(const DatasetImpl& impl,
                                           const std::vector<StoredFramesRequest>& requests,
                                           Verify verify) {
  if (impl.codec != Codec::kJpeg) {
    throw InvalidArgumentError(
        std::string(requests.size() == 1 ? "read jpegs of id '" + std::string(requests[0].id) + "'"
                                         : "read jpegs") +
        " in " + impl.dir + ": the dataset's codec is " + CodecName(impl.codec) +
        ", its frames are not JPEG bytes; read decoded frames with ReadFrames/ReadBatch "
        "(Python: read, read_batch)");
  }
  return ReadStored(impl, requests, ReadKind::kJpeg, verify, nullptr);
}

void PrefetchRequests(const DatasetImpl& impl, const std::vector<StoredFramesRequest>& requests) {
  // An h264 read fetches the packets decoding needs: from each keyframe on.
  std::vector<StoredPackets> packets(requests.size());
  ReadStored(impl, requests, impl.codec == Codec::kH264 ? ReadKind::kDecode : ReadKind::kJpeg,
             Verify::kAsOpened, &packets, /*plan_only=*/true);
}

std::vector<StoredPackets> ReadPacketRequests(const DatasetImpl& impl,
                                              const std::vector<StoredFramesRequest>& requests,
                                              PacketScope scope, Verify verify) {
  if (impl.codec != Codec::kH264) {
    throw InvalidArgumentError(
        std::string(requests.size() == 1
                        ? "read h264 packets of id '" + std::string(requests[0].id) + "'"
                        : "read h264 packets") +
        " in " + impl.dir + ": the dataset's codec is " + CodecName(impl.codec) + ", not h264");
  }
  std::vector<StoredPackets> out(requests.size());
  std::vector<StoredFrames> bytes = ReadStored(
      impl, requests, scope == PacketScope::kDecode ? ReadKind::kDecode : ReadKind::kStream, verify,
      &out);
  for (size_t i = 0; i < out.size(); ++i) out[i].bytes = std::move(bytes[i]);
  return out;
}

// ---- ChunkBytes ------------------------------------------------------------------

namespace {

class LocalChunkBytes : public ChunkBytes {
 public:
  explicit LocalChunkBytes(const std::string& path) : file_(path, ChunkFile::Mode::kRead) {}
  uint64_t Size() const override { return file_.Size(); }
  void ReadAt(uint64_t offset, void* dst, size_t size) const override {
    file_.ReadAt(offset, dst, size);
  }
  const std::string& name() const override { return file_.path(); }

 private:
  ChunkFile file_;
};

}  // namespace

std::shared_ptr<const ChunkBytes> OpenChunkBytes(const Dataset& dataset, uint32_t number,
                                                 const index::ChunkRecord& record) {
  const DatasetImpl& impl = DatasetAccess::Of(dataset);
  if (!impl.remote || !impl.remote->ServesChunks()) {
    return std::make_shared<LocalChunkBytes>(impl.ChunkPath(record.file_name));
  }
  // The object readers read: the source's, checked against the record.
  return impl.remote->OpenChunk(number, record, impl.dir);
}

}  // namespace engine
}  // namespace gulpdb
