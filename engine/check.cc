// The dataset health check (interop.h): everything GulpIO2's sanity check
// looks at, plus record verification, JPEG markers, pad bytes, index
// consistency and, in deep mode, decoding and checksums. It looks into every
// room (the core's chunks and records, the GulpIO sources, a published
// manifest, the query databases), so it lives beside the front door.
#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "engine/check_frames.h"
#include "engine/core/chunk_bytes.h"
#include "engine/core/dataset_view.h"
#include "engine/core/index_source.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/open.h"
#include "engine/remote/remote_dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "index/query_keys.h"
#include "util/crc32c.h"
#include "util/file_io.h"
#include "util/relative_name.h"
#include "util/thread_pool.h"

namespace gulpdb {
namespace {

constexpr size_t kBatch = 512;
constexpr uint64_t kObjectBlockBytes = 16 << 20;  // a chunk object read per request by --deep

// The checks only a published dataset has: its manifest's chunk list
// against the index snapshot's chunks, and (deep) each chunk object's bytes
// against the CRC-32C the manifest gives. Problems go to `problem`, which
// must be safe to call from the decode pool's threads.
class PublishedChecker {
 public:
  using Chunks = std::map<uint32_t, engine::CheckedChunk>;
  using ProblemFn = engine::IndexSource::Damaged;

  PublishedChecker(const engine::RemoteSource& remote, ProblemFn problem,
                   std::vector<std::string>* notes)
      : remote_(remote), problem_(std::move(problem)), notes_(notes) {}

  // A published dataset: every chunk of the manifest is one of the snapshot
  // (Checker::CheckChunks compared those), and no two chunks share an object.
  void CheckManifest(const Chunks& chunks) {
    const engine::Manifest& m = remote_.manifest();
    const std::string where = remote_.store().Name(engine::kManifestKey) + " (generation " +
                              std::to_string(m.generation) + ")";
    std::map<std::string, uint32_t> keys;
    std::vector<engine::ManifestChunk> listed;
    try {
      listed = remote_.AllChunks();
    } catch (const Error& e) {
      problem_(where, std::string("its chunk list: ") + e.what());
      return;
    }
    for (const engine::ManifestChunk& c : listed) {
      if (chunks.count(c.number) == 0) {
        problem_(where, "lists chunk " + std::to_string(c.number) + " ('" + c.key +
                            "'), which the index snapshot does not have");
      }
      // Every published data object has its .gmeta: GulpIO readers of the
      // bucket pair data_N.gulp with meta_N.gmeta, and refuse a directory
      // whose counts differ.
      if (c.gmeta_key.empty()) {
        problem_(where, "chunk " + std::to_string(c.number) + " ('" + c.key +
                            "') names no .gmeta object: GulpIO readers of the bucket would pair "
                            "its data file with no .gmeta");
      }
      if (!c.crc32c) {
        notes_->push_back(where + ": chunk " + std::to_string(c.number) +
                          " has no CRC-32C; --deep cannot check its object's bytes");
      }
      const auto [it, added] = keys.emplace(c.key, c.number);
      if (!added) {
        problem_(where, "names the object '" + c.key + "' for chunks " +
                            std::to_string(it->second) + " and " + std::to_string(c.number));
      }
    }
  }

  // Deep, for a published dataset: each chunk object's committed bytes have
  // the CRC-32C the manifest gives (the pusher's, of its local file). Finds
  // bytes a store kept damaged (a body changed on the way to a store that
  // checked no hash), also where no frame checksum or decoder would: pads,
  // the bytes of removed videos, a dataset without checksums.
  void CheckChunkObjects(const Chunks& chunks, util::ThreadPool& pool) {
    std::vector<std::pair<const engine::CheckedChunk*, engine::ManifestChunk>> todo;
    for (const auto& [n, state] : chunks) {
      const engine::ManifestChunk* c = nullptr;
      try {
        c = remote_.Chunk(n);
      } catch (const Error&) {
        continue;  // CheckManifest reports the chunk list
      }
      if (c != nullptr && c->crc32c && state.file && state.size >= c->committed_length) {
        todo.emplace_back(&state, *c);
      }
    }
    pool.ParallelFor(todo.size(), [&](size_t i) {
      const engine::CheckedChunk& state = *todo[i].first;
      const engine::ManifestChunk& c = todo[i].second;
      const std::string name = remote_.store().Name(c.key);
      std::string block(
          static_cast<size_t>(std::min<uint64_t>(kObjectBlockBytes, c.committed_length)), '\0');
      uint32_t crc = 0;
      try {
        for (uint64_t done = 0; done < c.committed_length;) {
          const size_t n =
              static_cast<size_t>(std::min<uint64_t>(block.size(), c.committed_length - done));
          state.file->ReadAt(done, block.data(), n);
          crc = util::Crc32c(block.data(), n, crc);
          done += n;
        }
      } catch (const Error& e) {
        problem_(name, std::string("cannot read its committed bytes: ") + e.what());
        return;
      }
      if (crc != *c.crc32c) {
        char have[9], want[9];
        std::snprintf(have, sizeof have, "%08x", crc);
        std::snprintf(want, sizeof want, "%08x", *c.crc32c);
        problem_(name, "its first " + std::to_string(c.committed_length) + " bytes have CRC-32C " +
                           have + ", the manifest (generation " +
                           std::to_string(remote_.manifest().generation) + ") says " + want +
                           ": the object holds other bytes than were pushed (damaged on the way "
                           "to a store that checked no hash, or in the store)");
      }
    });
  }

 private:
  const engine::RemoteSource& remote_;
  const ProblemFn problem_;
  std::vector<std::string>* notes_;
};

class Checker {
 public:
  Checker(const Dataset& ds, const CheckOptions& options, CheckReport* report)
      : ds_(ds),
        remote_(engine::RemoteSourceOf(ds)),
        options_(options),
        report_(report),
        problem_([this](std::string where, std::string what) {
          Problem(std::move(where), std::move(what));
        }),
        frames_(ds.codec(), options.deep,
                [this](std::string where, std::string what, std::optional<size_t> frame) {
                  Problem(std::move(where), std::move(what), frame);
                }) {}

  // One walk for every kind of index (engine/core/index_source.h): the
  // dataset's LMDB index, or a partitioned snapshot, every partition of
  // which is fetched (and verified as it is opened). Records are checked
  // against the chunks, the order table against the records both ways, the
  // meta index and the splits against the records. A damaged record is a
  // problem and the walk goes on where the index can (LMDB); a partition
  // that fails ends the walk of its kind with a problem naming it.
  void Run() {
    CheckSources();
    Walk("chunk list", [&] { CheckChunks(); });
    CheckChunkNumbers();
    if (Published()) {
      PublishedChecker published(*remote_, problem_, &report_->notes);
      published.CheckManifest(chunks_);
      if (options_.deep) published.CheckChunkObjects(chunks_, engine::DecodePoolOf(ds_));
    }
    Walk("videos", [&] { CheckVideos(); });
    Walk("order table", [&] { CheckOrder(); });
    CheckTotals();
    Walk("query data", [&] { engine::SnapshotOf(ds_)->CheckQueryData(problem_); });
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
      const std::shared_ptr<const engine::IndexSource> snapshot = engine::SnapshotOf(ds_);
      record = snapshot->FindFrames(id, nullptr);
      if (record) chunk = snapshot->Chunk(record->chunk);
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
    frames_.Check(out.id, *record, chunks_.at(record->chunk));
    for (const CheckProblem& p : report_->problems) out.problems.push_back(p.where + ": " + p.what);
    std::stable_sort(
        out.frame_problems.begin(), out.frame_problems.end(),
        [](const FrameProblem& a, const FrameProblem& b) { return a.frame < b.frame; });
    return out;
  }

 private:
  // A problem with the dataset; `frame`, when it is one frame's, is kept by
  // frame for RunOneVideo.
  // Runs one walk of the index; an error that ends it is a problem.
  void Walk(const char* what, const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      Problem("index", std::string(what) + ": " + e.what());
    }
  }

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
    // A dataset read through a partitioned snapshot has no LMDB index whose
    // source stamps an import wrote.
    if (Published() || engine::IndexSourceOf(ds_) != nullptr) return;
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
    engine::SnapshotOf(ds_)->ScanChunksChecked(
        [&](uint32_t n, const index::ChunkRecord& record) {
          AddChunk(n, record);
          return true;
        },
        problem_);
  }

  // Opens chunk `n` (whose record is `record`) and reports what is wrong
  // with its file or object.
  void AddChunk(uint32_t n, index::ChunkRecord record) {
    engine::CheckedChunk state;
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
    if (!state.record.meta_file.empty()) {
      const std::string problem = util::RelativeNameProblem(state.record.meta_file);
      if (!problem.empty()) {
        Problem(where, "chunk " + std::to_string(n) + "'s .gmeta name '" +
                           util::EscapeBytes(state.record.meta_file) +
                           "' is not a safe relative name: " + problem + " (export refuses it)");
      }
    }
    chunks_.emplace(n, std::move(state));
    ++report_->chunks;
  }

  // The dataset info's view of the chunks: every chunk listed dirty (being
  // written) exists, and no chunk has a number at or past next_chunk (a
  // writer would give that number to a new chunk). An older version's
  // compaction could leave the first broken (every video of the newest
  // chunk removed, then compacted); any writer repairs it.
  void CheckChunkNumbers() {
    index::DatasetInfo info;
    try {
      info = engine::SnapshotOf(ds_)->info();
    } catch (const Error&) {
      return;  // CheckTotals reports it
    }
    for (uint32_t n : info.dirty_chunks) {
      if (chunks_.count(n) != 0) continue;
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

  bool Published() const { return remote_ != nullptr && remote_->manifest().chunks_published; }

  // Every video record, a batch from each snapshot (none is held while
  // the batch's frames are read), each found in the order table at its place.
  void CheckVideos() {
    std::string resume;
    std::vector<std::pair<std::string, index::VideoRecord>> batch;
    const uint64_t total = engine::SnapshotOf(ds_)->VideoCount();
    for (bool exhausted = false; !exhausted;) {
      batch.clear();
      exhausted = true;
      {
        const std::shared_ptr<const engine::IndexSource> snapshot = engine::SnapshotOf(ds_);
        const std::string from = resume;  // the walk moves `resume` on
        snapshot->ScanVideosChecked(
            from, {},
            [&](std::string_view id, const index::VideoRecord& record) {
              if (batch.size() >= kBatch) {
                exhausted = false;
                return false;
              }
              resume = std::string(id) + '\0';
              const std::optional<std::string> order_id =
                  snapshot->OrderIdAt(index::OrderKey(record.chunk, record.seq));
              if (!order_id || *order_id != id) {
                Problem("id '" + std::string(id) + "'", "missing from the order table");
              }
              batch.emplace_back(std::string(id), record);
              return true;
            },
            problem_);
      }
      CheckBatch(batch);
      if (options_.progress) options_.progress(report_->videos, total);
    }
  }

  // Every entry of the order table names a video whose record is at that place.
  void CheckOrder() {
    const std::shared_ptr<const engine::IndexSource> snapshot = engine::SnapshotOf(ds_);
    snapshot->ScanOrder({}, {}, [&](std::string_view key, std::string_view id) {
      const std::optional<index::VideoRecord> record = snapshot->FindFrames(id, nullptr);
      if (!record || index::OrderKey(record->chunk, record->seq) != key) {
        Problem("id '" + std::string(id) + "'",
                record ? "the order table lists it at another place than its record"
                       : "the order table lists it but it has no record");
      }
      return true;
    });
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
      frames_.Check(id, record, it->second);
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
    const std::shared_ptr<const engine::IndexSource> snapshot = engine::SnapshotOf(ds_);
    const uint64_t videos = snapshot->VideoCount();
    const uint64_t order = snapshot->OrderCount();
    if (videos != order) {
      Problem("index", "the order table has " + std::to_string(order) + " entries for " +
                           std::to_string(videos) + " videos");
    }
    try {
      const index::DatasetInfo& info = snapshot->info();
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
  const CheckOptions& options_;
  CheckReport* report_;
  const PublishedChecker::ProblemFn problem_;  // Problem, for a walk's callbacks
  std::mutex mu_;
  std::map<uint32_t, engine::CheckedChunk> chunks_;
  std::set<std::string> changed_;                        // files reported by CheckSources
  std::vector<FrameProblem>* frame_problems_ = nullptr;  // RunOneVideo's
  const engine::FrameChecker frames_;
};

}  // namespace

CheckReport Check(const std::string& dir, const CheckOptions& options) {
  OpenOptions open;
  open.index_dir = options.index_dir;
  open.version = options.version;
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
