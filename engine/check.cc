// The dataset health check (interop.h): everything GulpIO2's sanity check
// looks at, plus record verification, JPEG markers, pad bytes, index
// consistency and, in deep mode, decoding and checksums. It looks into every
// room (the core's chunks and records, the GulpIO sources, a published
// manifest, the query databases), so it lives beside the front door.
#include <fcntl.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "engine/core/chunk_bytes.h"
#include "engine/core/dataset_view.h"
#include "engine/core/index_source.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/open.h"
#include "engine/query/query_txn.h"
#include "engine/remote/remote_dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/jpeg.h"
#include "index/query_keys.h"
#include "util/crc32c.h"
#include "util/file_io.h"
#include "util/thread_pool.h"
#ifdef GULPDB_HAVE_H264
#include "engine/video/gop_decoder.h"
#endif

namespace gulpdb {
namespace {

constexpr size_t kBatch = 512;
constexpr uint64_t kMaxRunBytes = 16 << 20;  // adjacent frames read in one request

struct ChunkState {
  index::ChunkRecord record;
  // The file, or the object of a remote dataset; null when it cannot be opened.
  std::shared_ptr<const engine::ChunkBytes> file;
  uint64_t size = 0;
  uint32_t live_videos = 0;  // recomputed from the video records
  uint64_t live_bytes = 0;
  uint32_t unverified_videos = 0;  // videos with frames but no CRC-32C
};

class Checker {
 public:
  Checker(const Dataset& ds, const CheckOptions& options, CheckReport* report)
      : ds_(ds),
        remote_(engine::RemoteSourceOf(ds)),
        source_(engine::IndexSourceOf(ds)),
        options_(options),
        report_(report) {}

  void Run() {
    if (source_ != nullptr) {
      RunOnIndexSource();
      return;
    }
    CheckSources();
    CheckChunks();
    CheckChunkNumbers();
    CheckManifest();
    CheckVideos();
    CheckTotals();
    engine::CheckQueryDatabases(engine::IndexOf(ds_), [&](std::string where, std::string what) {
      Problem(std::move(where), std::move(what));
    });
  }

  // Checks the frames of video `id` alone, deep, as Run checks each video
  // (CheckVideo, interop.h): problems of its frames by frame, the others
  // (its record, its chunk) as the video's.
  VideoCheckReport RunOneVideo(std::string_view id) {
    VideoCheckReport out;
    out.id = std::string(id);
    frame_problems_ = &out.frame_problems;
    std::optional<index::VideoRecord> record;
    std::optional<index::ChunkRecord> chunk;
    try {
      if (source_ != nullptr) {
        record = source_->FindVideo(id);
        if (record) chunk = source_->Chunk(record->chunk);
      } else {
        const engine::IndexTxn txn(ds_);
        record = txn.FindVideo(id);
        if (record && txn.HasChunk(record->chunk)) chunk = txn.Chunk(record->chunk);
      }
    } catch (const CorruptionError& e) {
      out.problems.push_back(e.what());
      return out;
    }
    if (!record) {
      throw IdNotFoundError("check id '" + std::string(id) + "' in " + ds_.dir() +
                            ": no such video");
    }
    out.frames = static_cast<uint32_t>(record->frames.size());
    out.checksums = !record->crc32c.empty();
    if (!chunk) {
      out.problems.push_back("id '" + out.id + "' points to chunk " +
                             std::to_string(record->chunk) + " which the index does not have");
      return out;
    }
    AddChunk(record->chunk, std::move(*chunk));
    CheckFrames(out.id, *record, chunks_.at(record->chunk));
    for (const CheckProblem& p : report_->problems) out.problems.push_back(p.where + ": " + p.what);
    std::stable_sort(
        out.frame_problems.begin(), out.frame_problems.end(),
        [](const FrameProblem& a, const FrameProblem& b) { return a.frame < b.frame; });
    return out;
  }

 private:
  // A problem with the dataset; `frame`, when it is one frame's, is kept by
  // frame for RunOneVideo.
  void Problem(std::string where, std::string what, std::optional<size_t> frame = std::nullopt) {
    std::lock_guard<std::mutex> lock(mu_);
    if (frame_problems_ != nullptr && frame) {
      frame_problems_->push_back({static_cast<uint32_t>(*frame), std::move(what)});
      return;
    }
    report_->problems.push_back({std::move(where), std::move(what)});
  }

  // An imported dataset whose GulpIO files another program changed: the
  // index no longer describes them (Dataset::Open refuses it).
  void CheckSources() {
    // A published dataset's snapshot records the stamps of the pusher's
    // files; its readers read the objects the manifest names (CheckChunks).
    if (Published()) return;
    engine::SourceReport sources;
    try {
      sources = engine::CheckSources(ds_);
    } catch (const Error& e) {
      Problem("index", e.what());
      return;
    }
    for (const std::string& name : sources.missing_meta) {
      report_->notes.push_back(name +
                               ": missing; the index still describes its chunk (`gulpdb export " +
                               ds_.dir() + "` writes it again)");
    }
    for (const engine::SourceChange& c : sources.changes) {
      changed_.insert(c.file);
      Problem(c.file, "changed since it was indexed: " + c.what + "; run `" +
                          engine::ReindexCommand(ds_) + "` to index the directory again");
    }
  }

  void CheckChunks() {
    const engine::IndexTxn txn(ds_);
    for (engine::IndexTxn::ChunkCursor cursor = txn.Chunks(); cursor.Valid(); cursor.Next()) {
      uint32_t n = 0;
      try {
        n = cursor.number();
        AddChunk(n, cursor.record());
      } catch (const CorruptionError& e) {
        Problem("chunk record " + std::to_string(n), e.what());
      }
    }
  }

  // Opens chunk `n` (whose record is `record`) and reports what is wrong
  // with its file or object.
  void AddChunk(uint32_t n, index::ChunkRecord record) {
    ChunkState state;
    state.record = std::move(record);
    // A published dataset's chunk is the object its manifest names,
    // read as readers read it (engine::OpenChunkBytes).
    const engine::ManifestChunk* object = Published() ? remote_->Chunk(n) : nullptr;
    const std::string where =
        object != nullptr ? remote_->store().Name(object->key) : state.record.file_name;
    try {
      state.file = engine::OpenChunkBytes(ds_, n, state.record);
      state.size = state.file->Size();
    } catch (const Error& e) {
      Problem(where, std::string("cannot open: ") + e.what());
    }
    if (state.file && state.size < state.record.committed_length) {
      Problem(where, "truncated: " + std::to_string(state.size) + " bytes, the index " +
                         (Published() ? "and the manifest commit " : "committed ") +
                         std::to_string(state.record.committed_length));
    } else if (state.file && state.size > state.record.committed_length && !Published() &&
               changed_.count(state.record.file_name) == 0) {
      report_->notes.push_back(state.record.file_name + ": " +
                               std::to_string(state.size - state.record.committed_length) +
                               " uncommitted bytes past the committed length (removed by "
                               "the next writer)");
    }
    chunks_.emplace(n, std::move(state));
    ++report_->chunks;
  }

  // A dataset read through a partitioned snapshot (an index source): every
  // partition is fetched (and verified as it is opened) by walking every
  // kind; records are checked against the chunks as for a local dataset,
  // the order table and the meta index against the records. A partition
  // that fails ends the walk of its kind with a problem naming it.
  void RunOnIndexSource() {
    const std::string where = "partitioned index of " + ds_.dir();
    auto walk = [&](const char* what, const std::function<void()>& fn) {
      try {
        fn();
      } catch (const Error& e) {
        Problem(where, std::string(what) + ": " + e.what());
      }
    };
    walk("chunk list", [&] {
      source_->ScanChunks([&](uint32_t n, const index::ChunkRecord& record) {
        AddChunk(n, record);
        return true;
      });
    });
    const index::DatasetInfo& info = source_->info();
    for (uint32_t n : info.dirty_chunks) {
      if (chunks_.count(n) == 0) {
        Problem(where, "the dataset info lists chunk " + std::to_string(n) +
                           " as being written, but the index has no such chunk");
      }
    }
    std::vector<std::pair<std::string, index::VideoRecord>> batch;
    const uint64_t total = source_->OrderCount();
    auto check_batch = [&] {
      CheckBatch(batch);
      if (options_.progress) options_.progress(report_->videos, total);
      batch.clear();
    };
    walk("videos", [&] {
      source_->ScanVideos({}, {}, [&](std::string_view id, const index::VideoRecord& record) {
        batch.emplace_back(std::string(id), record);
        if (batch.size() >= kBatch) check_batch();
        return true;
      });
    });
    check_batch();
    uint64_t order = 0;
    walk("order table", [&] {
      source_->ScanOrder({}, {}, [&](std::string_view key, std::string_view id) {
        ++order;
        const std::optional<index::VideoRecord> record = source_->FindVideo(id);
        if (!record || index::OrderKey(record->chunk, record->seq) != key) {
          Problem("id '" + std::string(id) + "'",
                  record ? "the order table lists it at another place than its record"
                         : "the order table lists it but it has no record");
        }
        return true;
      });
    });
    if (order != report_->videos || order != total) {
      Problem(where, "the order table has " + std::to_string(order) + " entries (the root says " +
                         std::to_string(total) + ") for " + std::to_string(report_->videos) +
                         " videos");
    }
    walk("meta index", [&] {
      source_->ScanMeta({}, {}, [&](std::string_view key, std::string_view id) {
        uint32_t chunk = 0;
        uint64_t seq = 0;
        index::DecodeMetaEntryKey(key, &chunk, &seq);
        const std::optional<index::VideoRecord> record = source_->FindVideo(id);
        if (!record || record->chunk != chunk || record->seq != seq) {
          Problem("id '" + std::string(id) + "'",
                  "a meta index entry points to it at a place where its record is not");
        }
        return true;
      });
    });
    walk("splits", [&] {
      for (const auto& [name, header] : source_->SplitHeaders()) {
        for (const std::string& id : source_->SplitIds(header.number)) {
          if (!source_->FindVideo(id)) {
            Problem("split '" + name + "'", "lists id '" + id + "', not a video");
          }
        }
      }
    });
    if (info.total_videos != report_->videos || info.total_frames != report_->frames) {
      Problem(where, "dataset totals say " + std::to_string(info.total_videos) + " videos / " +
                         std::to_string(info.total_frames) + " frames, found " +
                         std::to_string(report_->videos) + " / " + std::to_string(report_->frames));
    }
    CheckChunkTotals();
  }

  // The dataset info's view of the chunks: every chunk listed dirty (being
  // written) exists, and no chunk has a number at or past next_chunk (a
  // writer would give that number to a new chunk). An older version's
  // compaction could leave the first broken (every video of the newest
  // chunk removed, then compacted); any writer repairs it.
  void CheckChunkNumbers() {
    const engine::IndexTxn txn(ds_);
    index::DatasetInfo info;
    try {
      info = txn.Info();
    } catch (const CorruptionError&) {
      return;  // CheckTotals reports it
    }
    for (uint32_t n : info.dirty_chunks) {
      if (txn.HasChunk(n)) continue;
      const std::string repair = engine::ChunkSourceOf(ds_) != nullptr
                                     ? "run `gulpdb compact` on the local dataset and "
                                       "push it again"
                                     : "run `gulpdb compact " + ds_.dir() + "`";
      Problem("index", "the dataset info lists chunk " + std::to_string(n) +
                           " as being written, but the index has no such chunk (an older "
                           "version's compaction deleted it); the next writer repairs this: " +
                           repair);
    }
    if (info.next_chunk != 0 && !chunks_.empty() && chunks_.rbegin()->first >= info.next_chunk) {
      Problem("index", "chunk " + std::to_string(chunks_.rbegin()->first) +
                           " is at or past the next chunk number " +
                           std::to_string(info.next_chunk) +
                           " the dataset info records: a writer would reuse a chunk number");
    }
  }

  // A published dataset: every chunk of the manifest is one of the snapshot
  // (CheckChunks compared those), and no two chunks share an object.
  void CheckManifest() {
    if (!Published()) return;
    const engine::Manifest& m = remote_->manifest();
    const std::string where = remote_->store().Name(engine::kManifestKey) + " (generation " +
                              std::to_string(m.generation) + ")";
    std::map<std::string, uint32_t> keys;
    for (const engine::ManifestChunk& c : remote_->AllChunks()) {
      if (chunks_.count(c.number) == 0) {
        Problem(where, "lists chunk " + std::to_string(c.number) + " ('" + c.key +
                           "'), which the index snapshot does not have");
      }
      const auto [it, added] = keys.emplace(c.key, c.number);
      if (!added) {
        Problem(where, "names the object '" + c.key + "' for chunks " + std::to_string(it->second) +
                           " and " + std::to_string(c.number));
      }
    }
  }

  bool Published() const { return remote_ != nullptr && remote_->manifest().chunks_published; }

  // Checks one video's frames against its chunk file. Runs on pool threads.
  // Adjacent frames are read together (one pread, or one range GET for a
  // remote dataset, per run of up to kMaxRunBytes); a run that fails to read
  // is read again frame by frame, so the error names the frame.
  void CheckFrames(const std::string& id, const index::VideoRecord& record,
                   const ChunkState& chunk) {
    const std::string where_video = chunk.record.file_name + " id '" + id + "'";
    const auto where = [&](size_t i) {
      return where_video + " frame " + std::to_string(i) + " (offset " +
             std::to_string(record.frames[i].offset) + ")";
    };
    const auto readable = [&](size_t i) {
      const FrameInfo& f = record.frames[i];
      return chunk.file && f.offset + f.length <= chunk.record.committed_length &&
             f.offset + f.length <= chunk.size;
    };
    const bool h264 = record.h264.has_value();
    if (h264 != (ds_.codec() == Codec::kH264)) {
      Problem("id '" + id + "'", h264 ? "is an H.264 video in a dataset whose codec is " +
                                            std::string(CodecName(ds_.codec()))
                                      : "is not an H.264 video (no keyframes or decoder "
                                        "parameters) in an h264 dataset");
      return;
    }
    // H.264 (deep): the packets whose bytes are whole, for the GOP decode.
    std::vector<std::string> packets(h264 && options_.deep ? record.frames.size() : 0);
    std::vector<bool> packet_ok(packets.size(), false);
    std::string run;
    for (size_t i = 0; i < record.frames.size();) {
      const FrameInfo& first = record.frames[i];
      if (first.offset + first.length > chunk.record.committed_length) {
        Problem(where(i),
                "extends past the committed length " +
                    std::to_string(chunk.record.committed_length) + " of its chunk",
                i);
        ++i;
        continue;
      }
      if (!readable(i)) {  // reported with the chunk
        ++i;
        continue;
      }
      size_t end = i + 1;
      uint64_t bytes = first.length;
      while (end < record.frames.size() && readable(end) &&
             record.frames[end].offset == first.offset + bytes &&
             bytes + record.frames[end].length <= kMaxRunBytes) {
        bytes += record.frames[end].length;
        ++end;
      }
      run.resize(bytes);
      bool whole = true;
      try {
        chunk.file->ReadAt(first.offset, run.data(), bytes);
      } catch (const Error&) {
        whole = false;
      }
      for (size_t k = i; k < end; ++k) {
        const FrameInfo& f = record.frames[k];
        std::string single;
        std::string_view frame;
        if (whole) {
          frame = std::string_view(run).substr(f.offset - first.offset, f.length);
        } else {
          single.resize(f.length);
          try {
            chunk.file->ReadAt(f.offset, single.data(), f.length);
          } catch (const Error& e) {
            Problem(where(k), e.what(), k);
            continue;
          }
          frame = single;
        }
        const bool ok = CheckFrame(where(k), k, frame, f,
                                   record.crc32c.empty() ? nullptr : &record.crc32c[k], h264);
        if (!packets.empty() && ok) {
          packets[k] = std::string(frame.substr(0, f.jpeg_size()));
          packet_ok[k] = true;
        }
      }
      i = end;
    }
    if (!packets.empty()) CheckGops(where, id, record, packets, packet_ok);
  }

  // Deep check of an H.264 video: decodes every group of pictures whose
  // packets all read whole and matched their CRCs (the others are reported
  // already), reporting the first frame that does not decode.
  void CheckGops(const std::function<std::string(size_t)>& where, const std::string& id,
                 const index::VideoRecord& record, const std::vector<std::string>& packets,
                 const std::vector<bool>& packet_ok) {
#ifdef GULPDB_HAVE_H264
    video::VideoParams params;
    params.extradata = record.h264->extradata;
    params.width = static_cast<int>(record.h264->width);
    params.height = static_cast<int>(record.h264->height);
    params.chroma =
        record.h264->chroma == 1 ? video::ChromaFormat::k444 : video::ChromaFormat::k420;
    video::VideoPackets video;
    video.id = id;
    video.params = &params;
    video.frames.resize(packets.size());
    for (size_t k = 0; k < packets.size(); ++k) video.frames[k].bytes = packets[k];
    for (uint32_t k : record.keyframes) video.frames[k].keyframe = true;
    std::vector<uint8_t> scratch(static_cast<size_t>(params.width) *
                                 static_cast<size_t>(params.height) * 3);
    for (size_t g = 0; g < record.keyframes.size(); ++g) {
      const size_t first = record.keyframes[g];
      const size_t end = g + 1 < record.keyframes.size() ? record.keyframes[g + 1] : packets.size();
      bool whole = true;
      for (size_t k = first; k < end; ++k) whole = whole && packet_ok[k];
      if (!whole) continue;
      // The GOP's last frame decodes every packet of the GOP.
      const int64_t last = static_cast<int64_t>(end - 1);
      uint8_t* out = scratch.data();
      try {
        video::GopDecoder::ForThisThread().DecodeInto(video, &last, 1, &out);
      } catch (const Error& e) {
        Problem(where(first), std::string("the group of pictures does not decode: ") + e.what(),
                first);
      }
    }
#else
    (void)where;
    (void)id;
    (void)record;
    (void)packets;
    (void)packet_ok;
#endif
  }

  // One frame's bytes (JPEG and pad) as read from its chunk.
  // An H.264 packet (`h264`) gets the same checks but the JPEG ones (markers,
  // decode): its decode is by group of pictures (CheckGops). Returns false
  // when the deep check found the bytes changed.
  bool CheckFrame(const std::string& where, size_t frame, std::string_view bytes,
                  const FrameInfo& f, const uint32_t* crc32c, bool h264) {
    const std::string_view jpeg = bytes.substr(0, f.jpeg_size());
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(jpeg[k]); };
    if (h264) {
      // No markers to check: an Annex-B packet starts with a start code.
    } else if (jpeg.size() < 4 || byte(0) != 0xff || byte(1) != 0xd8) {
      Problem(where, "does not start with the JPEG SOI marker FFD8", frame);
    } else if (byte(jpeg.size() - 2) != 0xff || byte(jpeg.size() - 1) != 0xd9) {
      Problem(where, "does not end with the JPEG EOI marker FFD9", frame);
    }
    for (size_t k = f.jpeg_size(); k < f.length; ++k) {
      if (bytes[k] != 0) {
        Problem(where, "pad byte " + std::to_string(k - f.jpeg_size()) + " is not zero", frame);
        break;
      }
    }
    if (!options_.deep) return true;
    if (crc32c && util::Crc32c(jpeg.data(), jpeg.size()) != *crc32c) {
      Problem(where, "CRC-32C mismatch: the frame's bytes changed since they were written", frame);
      return false;
    }
    if (h264) return true;
    try {
      ThreadLocalDecoder().Decode(reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size());
    } catch (const Error& e) {
      Problem(where, e.what(), frame);
    }
    return true;
  }

  void CheckVideos() {
    std::string resume;
    std::vector<std::pair<std::string, index::VideoRecord>> batch;
    const uint64_t total = engine::IndexTxn(ds_).VideoCount();
    for (bool exhausted = false; !exhausted;) {
      batch.clear();
      {
        const engine::IndexTxn txn(ds_);
        engine::IndexTxn::VideoCursor cursor = txn.Videos(resume);
        for (; cursor.Valid() && batch.size() < kBatch; cursor.Next()) {
          const std::string id(cursor.id());
          resume = id + '\0';
          index::VideoRecord record;
          try {
            record = cursor.record();
          } catch (const CorruptionError& e) {
            Problem("id '" + id + "'", e.what());
            continue;
          }
          const std::optional<std::string_view> order_id = txn.OrderAt(record.chunk, record.seq);
          if (!order_id || *order_id != id)
            Problem("id '" + id + "'", "missing from the order table");
          batch.emplace_back(id, std::move(record));
        }
        exhausted = !cursor.Valid();
      }
      CheckBatch(batch);
      if (options_.progress) options_.progress(report_->videos, total);
    }
  }

  // Checks a batch of videos against their chunks (on the decode pool) and
  // counts them.
  void CheckBatch(const std::vector<std::pair<std::string, index::VideoRecord>>& batch) {
    engine::DecodePoolOf(ds_).ParallelFor(batch.size(), [&](size_t i) {
      const auto& [id, record] = batch[i];
      auto it = chunks_.find(record.chunk);
      if (it == chunks_.end()) {
        Problem("id '" + id + "'", "points to chunk " + std::to_string(record.chunk) +
                                       " which the index does not have");
        return;
      }
      CheckFrames(id, record, it->second);
    });
    for (const auto& [id, record] : batch) {
      auto it = chunks_.find(record.chunk);
      if (it != chunks_.end()) {
        ++it->second.live_videos;
        it->second.live_bytes += record.frame_bytes();
        if (record.crc32c.empty() && !record.frames.empty()) ++it->second.unverified_videos;
      }
      ++report_->videos;
      report_->frames += record.frames.size();
    }
  }

  // Each chunk record's counts against its videos, and the videos read
  // unverified (no CRC-32C), counted and noted.
  void CheckChunkTotals() {
    for (const auto& [n, c] : chunks_) {
      if (c.unverified_videos != 0) {
        report_->unverified_videos += c.unverified_videos;
        ++report_->unverified_chunks;
      }
      if (c.live_videos != c.record.live_videos || c.live_bytes != c.record.live_bytes) {
        Problem(c.record.file_name,
                "the chunk record counts " + std::to_string(c.record.live_videos) + " videos / " +
                    std::to_string(c.record.live_bytes) + " bytes but the videos add up to " +
                    std::to_string(c.live_videos) + " / " + std::to_string(c.live_bytes));
      }
      if (c.file && c.size == 0 && c.live_videos > 0) Problem(c.record.file_name, "is empty");
    }
    if (report_->unverified_videos != 0) {
      report_->notes.push_back(
          std::to_string(report_->unverified_videos) + " of " + std::to_string(report_->videos) +
          " videos, in " + std::to_string(report_->unverified_chunks) + " of " +
          std::to_string(chunks_.size()) +
          " chunks, have no CRC-32C: their frames are read unverified" +
          (options_.deep ? " (deep: decoded, but damage that still decodes cannot be seen)" : "") +
          " (stored without checksums: created or imported with --no-checksums)");
    }
  }

  void CheckTotals() {
    CheckChunkTotals();
    const engine::IndexTxn txn(ds_);
    const uint64_t videos = txn.VideoCount();
    const uint64_t order = txn.OrderCount();
    if (videos != order) {
      Problem("index", "the order table has " + std::to_string(order) + " entries for " +
                           std::to_string(videos) + " videos");
    }
    try {
      const index::DatasetInfo info = txn.Info();
      if (info.total_videos != videos || info.total_frames != report_->frames) {
        Problem("index", "dataset totals say " + std::to_string(info.total_videos) + " videos / " +
                             std::to_string(info.total_frames) + " frames, found " +
                             std::to_string(videos) + " / " + std::to_string(report_->frames));
      }
    } catch (const CorruptionError& e) {
      Problem("index", e.what());
    }
  }

  const Dataset& ds_;
  const engine::RemoteSource* remote_;  // null unless opened from a published manifest
  const engine::IndexSource* source_;   // null unless read through a partitioned snapshot
  const CheckOptions& options_;
  CheckReport* report_;
  std::mutex mu_;
  std::map<uint32_t, ChunkState> chunks_;
  std::set<std::string> changed_;                        // files reported by CheckSources
  std::vector<FrameProblem>* frame_problems_ = nullptr;  // RunOneVideo's
};

}  // namespace

CheckReport Check(const std::string& dir, const CheckOptions& options) {
  OpenOptions open;
  open.index_dir = options.index_dir;
  open.verify_index = true;  // LMDB must not walk a damaged tree
  CheckReport report;
  std::unique_ptr<Dataset> ds;
  try {
    ds = engine::OpenDataset(dir, open, /*check_sources=*/false);  // CheckSources reports it
  } catch (const CorruptionError& e) {
    report.problems.push_back(CheckProblem{"index", e.what()});
    return report;
  }
  Checker(*ds, options, &report).Run();
  return report;
}

VideoCheckReport CheckVideo(const Dataset& dataset, std::string_view id) {
  CheckOptions options;
  options.deep = true;
  CheckReport report;
  return Checker(dataset, options, &report).RunOneVideo(id);
}

CheckReport engine::CheckOpenDataset(Dataset& dataset, const CheckOptions& options) {
  CheckReport report;
  Checker(dataset, options, &report).Run();
  return report;
}

}  // namespace gulpdb
