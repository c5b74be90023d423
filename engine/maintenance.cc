// Compaction and merging (maintenance.h).
#include "gulpdb/maintenance.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>

#include "engine/dataset_impl.h"
#include "engine/file_util.h"
#include "engine/obsolete_files.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "index/crc32c.h"
#include "index/sys_error.h"

namespace gulpdb {
namespace {

constexpr size_t kCompactBatchVideos = 256;

std::string RealPath(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) ThrowErrno("resolve", path, errno);
  std::string out(real);
  std::free(real);
  return out;
}

std::unique_ptr<Dataset> OpenReadWrite(const std::string& dir) {
  OpenOptions o;
  o.read_only = false;
  return Dataset::Open(dir, o);
}

}  // namespace

CompactReport Compact(Dataset& dataset, const CompactOptions& options) {
  if (options.min_garbage_fraction < 0 || options.min_garbage_fraction > 1) {
    throw InvalidArgumentError("compact " + dataset.dir() +
                               ": the garbage fraction must be in [0, 1]");
  }
  WriterOptions wo;
  wo.on_duplicate = OnDuplicate::kReplace;
  wo.lock_timeout = options.lock_timeout;
  wo.start_new_chunk = true;
  wo.check_jpeg_markers = false;                           // move bytes exactly as they are
  std::unique_ptr<Writer> writer = dataset.NewWriter(wo);  // the lock, and crash recovery
  engine::DatasetImpl& ds = engine::DatasetAccess::Of(dataset);
  CompactReport report;

  std::vector<ChunkInfo> todo;
  for (const ChunkInfo& c : dataset.Chunks()) {
    const uint64_t garbage = c.committed_length - c.live_bytes;
    if (c.committed_length == 0 || garbage == 0) continue;
    if (static_cast<double>(garbage) <
        options.min_garbage_fraction * static_cast<double>(c.committed_length)) {
      continue;
    }
    // The file will be listed as obsolete and deleted: its name, read from
    // the index, must not lead outside the dataset (checked before anything
    // moves).
    engine::CheckInsideDataset(ds, "compact", "chunk " + std::to_string(c.number) + " has the file",
                               c.file_name);
    if (!c.meta_file.empty()) {
      engine::CheckInsideDataset(
          ds, "compact", "chunk " + std::to_string(c.number) + " has the .gmeta file", c.meta_file);
    }
    todo.push_back(c);
  }
  for (size_t k = 0; k < todo.size(); ++k) {
    const ChunkInfo& c = todo[k];
    std::vector<std::string> ids;
    dataset.ForEachInChunk(c.number, [&](const VideoInfo& v) {
      ids.push_back(v.id);
      return true;
    });
    for (const std::string& id : ids) {
      const VideoInfo video = dataset.Get(id);
      const JpegFrames jpegs = dataset.ReadJpegs(id);
      std::vector<std::string_view> views;
      for (size_t i = 0; i < jpegs.size(); ++i) {
        // A damaged frame must not be copied under a fresh checksum.
        if (!video.checksums.empty() &&
            index::Crc32c(jpegs[i].data(), jpegs[i].size()) != video.checksums[i]) {
          throw CorruptionError(
              "compact " + dataset.dir() + ": id '" + id + "' frame " + std::to_string(i) + " in " +
              c.file_name + " at offset " + std::to_string(video.frames[i].offset) +
              ": checksum mismatch (compaction stopped; the frame was not copied)");
        }
        views.push_back(jpegs[i]);
      }
      writer->AppendEntry(id, views, video.meta_data);
      ++report.videos_moved;
      if (writer->pending_videos() >= kCompactBatchVideos) writer->Commit();
    }
    writer->Commit();
    report.bytes_reclaimed += c.committed_length - c.live_bytes;
    ++report.chunks_rewritten;
    if (options.progress) options.progress(k + 1, todo.size());
  }

  // Drop the emptied chunks: first from the index (their files listed as
  // obsolete in the same transaction), then from the disk.
  std::set<uint32_t> emptied;
  for (const ChunkInfo& c : todo) emptied.insert(c.number);
  if (!emptied.empty()) {
    ds.env->Update([&](index::Txn& txn) {
      index::DatasetInfo info = ds.GetInfo(txn);
      for (uint32_t n : emptied) {
        const index::ChunkRecord record = ds.GetChunk(txn, n);
        if (record.live_videos != 0) continue;
        txn.Del(ds.chunks, index::ChunkKey(n));
        info.obsolete_files.push_back(record.file_name);
        if (!record.meta_file.empty() && engine::PathExists(ds.ChunkPath(record.meta_file))) {
          info.obsolete_files.push_back(record.meta_file);
        }
      }
      txn.Put(ds.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
    ds.files.Clear();
    engine::RemoveObsoleteFiles(ds, "compact", &report.files_removed);
  }
  return report;
}

namespace {

// Attaches the chunks of `shard` (which lives at `relative` inside the output
// directory) to `out` in one transaction. The caller holds out's writer lock.
void AttachShard(engine::DatasetImpl& out, const Dataset& shard, const std::string& relative,
                 const MergeOptions& options, MergeReport* report) {
  const engine::DatasetImpl& in = engine::DatasetAccess::Of(shard);
  MergeReport delta;
  out.query.Refresh(*out.env);  // before the transaction; the caller holds the lock
  const engine::QueryDbHandles query_dbs = out.query.Load();
  out.env->Update([&](index::Txn& txn) {
    delta = MergeReport();
    index::DatasetInfo info = out.GetInfo(txn);
    engine::QueryTxn query(out, txn, query_dbs);  // the output's meta index
    // Chunks already attached (a re-run) and the next free chunk number.
    std::set<std::string> attached;
    uint32_t next_chunk = 0;
    {
      index::Cursor cursor(txn, out.chunks);
      for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        const uint32_t n = index::DecodeChunkKey(cursor.key());
        attached.insert(out.DecodeChunkAt(cursor.key(), cursor.value()).file_name);
        next_chunk = n + 1;
      }
    }
    index::Txn shard_txn = in.env->BeginRead();
    std::map<uint32_t, uint32_t> chunk_map;          // shard chunk -> out chunk
    std::map<uint32_t, index::ChunkRecord> records;  // out chunks touched
    {
      index::Cursor cursor(shard_txn, in.chunks);
      for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        const uint32_t n = index::DecodeChunkKey(cursor.key());
        const index::ChunkRecord c = in.DecodeChunkAt(cursor.key(), cursor.value());
        const std::string name = relative + "/" + c.file_name;
        if (c.committed_length == 0 || attached.count(name) != 0) continue;
        index::ChunkRecord r;
        r.file_name = name;
        r.committed_length = c.committed_length;
        r.state = index::ChunkState::kFull;
        chunk_map[n] = next_chunk;
        records[next_chunk] = r;
        ++next_chunk;
        ++delta.chunks_attached;
      }
    }
    auto chunk_ref = [&](uint32_t n) -> index::ChunkRecord& {
      auto it = records.find(n);
      if (it == records.end()) it = records.emplace(n, out.GetChunk(txn, n)).first;
      return it->second;
    };
    index::Cursor cursor(shard_txn, in.order);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
      const std::string id(cursor.value());
      auto video = in.FindRecord(shard_txn, id);
      if (!video) throw CorruptionError("merge " + shard.dir() + ": id '" + id + "' has no record");
      auto mapped = chunk_map.find(video->chunk);
      if (mapped == chunk_map.end()) continue;  // chunk attached by an earlier run
      if (auto old = out.FindRecord(txn, id)) {
        if (options.on_duplicate == OnDuplicate::kError) {
          throw InvalidArgumentError("merge " + shard.dir() + " into " + out.dir + ": id '" + id +
                                     "' is already there");
        }
        if (options.on_duplicate == OnDuplicate::kSkip) {
          ++delta.skipped;
          continue;
        }
        index::ChunkRecord& oc = chunk_ref(old->chunk);
        oc.live_videos -= 1;
        oc.live_bytes -= old->frame_bytes();
        txn.Del(out.order, index::OrderKey(old->chunk, old->seq));
        info.total_videos -= 1;
        info.total_frames -= old->frames.size();
        query.Unindex(id, *old);
      }
      index::VideoRecord record = std::move(*video);
      record.chunk = mapped->second;
      record.seq = info.next_seq++;
      out.PutVideo(txn, id, record);
      txn.Put(out.order, index::OrderKey(record.chunk, record.seq), id);
      query.Index(id, record);
      index::ChunkRecord& c = chunk_ref(record.chunk);
      ++c.appended_videos;
      ++c.live_videos;
      c.live_bytes += record.frame_bytes();
      info.total_videos += 1;
      info.total_frames += record.frames.size();
      ++delta.videos;
    }
    for (const auto& [n, c] : records) out.PutChunk(txn, n, c);
    txn.Put(out.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
  });
  report->chunks_attached += delta.chunks_attached;
  report->videos += delta.videos;
  report->skipped += delta.skipped;
}

void CopyShard(Writer& writer, const Dataset& shard, MergeReport* report) {
  try {
    shard.ForEach([&](const VideoInfo& video) {
      const JpegFrames jpegs = shard.ReadJpegs(video.id);
      std::vector<std::string_view> views;
      for (size_t i = 0; i < jpegs.size(); ++i) views.push_back(jpegs[i]);
      if (writer.AppendEntry(video.id, views, video.meta_data)) {
        ++report->videos_copied;
        ++report->videos;
      } else {
        ++report->skipped;
      }
      return true;
    });
    writer.Commit();
  } catch (const Error& e) {
    writer.Rollback();
    e.ThrowWithContext("merge " + shard.dir() + ": ");
  }
}

}  // namespace

MergeReport Merge(const std::string& out, const std::vector<std::string>& shards,
                  const MergeOptions& options) {
  std::unique_ptr<Dataset> ds = Dataset::Exists(out) ? OpenReadWrite(out) : Dataset::Create(out);
  const std::string out_real = RealPath(out);
  std::vector<std::pair<std::unique_ptr<Dataset>, std::string>> attach, copy;
  for (const std::string& shard : shards) {
    const std::string real = RealPath(shard);
    if (real == out_real) throw InvalidArgumentError("merge " + shard + ": is the output itself");
    auto shard_ds = Dataset::Open(shard);
    if (real.compare(0, out_real.size() + 1, out_real + "/") == 0) {
      attach.emplace_back(std::move(shard_ds), real.substr(out_real.size() + 1));
    } else {
      copy.emplace_back(std::move(shard_ds), "");
    }
  }
  MergeReport report;
  uint64_t done = 0;
  if (!attach.empty()) {
    engine::FileLock lock(engine::DatasetAccess::Of(*ds).index_dir + "/" + kWriterLockName,
                          options.lock_timeout, out);
    for (auto& [shard, relative] : attach) {
      AttachShard(engine::DatasetAccess::Of(*ds), *shard, relative, options, &report);
      ++report.shards;
      if (options.progress) options.progress(++done, shards.size());
    }
  }
  if (!copy.empty()) {
    WriterOptions wo;
    wo.on_duplicate = options.on_duplicate;
    wo.lock_timeout = options.lock_timeout;
    wo.check_jpeg_markers = false;
    std::unique_ptr<Writer> writer = ds->NewWriter(wo);
    for (auto& entry : copy) {
      CopyShard(*writer, *entry.first, &report);
      ++report.shards;
      if (options.progress) options.progress(++done, shards.size());
    }
  }
  return report;
}

}  // namespace gulpdb
