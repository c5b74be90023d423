// Compaction and merging (maintenance.h).
#include "gulpdb/maintenance.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "engine/core/chunk_reader.h"
#include "engine/core/dataset_impl.h"
#include "engine/core/dataset_view.h"
#include "engine/core/gulpio_names.h"
#include "engine/core/label_map.h"
#include "engine/core/obsolete_files.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "util/file_io.h"
#include "util/relative_name.h"
#include "util/sys_error.h"
#include "util/test_bug.h"

namespace gulpdb {
namespace {

constexpr size_t kCompactBatchVideos = 256;

std::string RealPath(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) util::ThrowErrno("resolve", path, errno);
  std::string out(real);
  std::free(real);
  return out;
}

std::unique_ptr<Dataset> OpenReadWrite(const engine::DatasetOpener& opener, const std::string& dir,
                                       const std::string& index_dir = "") {
  OpenOptions o;
  o.read_only = false;
  o.index_dir = index_dir;
  return opener.open(dir, o);
}

// A chunk whose file belongs to an attached shard (index::ChunkRecord::attached).
bool IsAttached(const ChunkInfo& c) {
  return !c.owner.empty() || c.file_name.find('/') != std::string::npos;
}

// Appends the H.264 video `id` of `from` to `writer` as it is stored: its
// packets moved exactly (every CRC-32C checked), with its keyframes and
// decoder parameters and the meta_data list `meta_data`. Returns what
// Writer::AppendEntry returns.
bool AppendStoredH264(Writer& writer, const Dataset& from, const std::string& id,
                      const std::string& meta_data) {
  const Selection all = Selection::All();
  const std::vector<engine::StoredPackets> read = engine::ReadPacketRequests(
      engine::DatasetAccess::Of(from), {engine::StoredFramesRequest{id, &all}},
      engine::PacketScope::kStream);
  const StoredFrames& packets = read.front().bytes;
  std::vector<std::string_view> views;
  views.reserve(packets.size());
  for (size_t i = 0; i < packets.size(); ++i) views.push_back(packets[i]);
  return engine::DatasetAccess::AppendStored(writer, id, views, meta_data, read.front().record);
}

// Every frame of JPEG video `id` of `from`, each checked against its CRC-32C
// whatever `from` was opened with: what merge and compaction copy under new
// checksums.
StoredFrames ReadVerifiedJpegs(const Dataset& from, const std::string& id) {
  const Selection all = Selection::All();
  return std::move(engine::ReadJpegRequests(engine::DatasetAccess::Of(from),
                                            {engine::StoredFramesRequest{id, &all}},
                                            engine::Verify::kAlways)
                       .front());
}

std::unique_ptr<Dataset> CreateWithIndexDir(const std::string& dir, const std::string& index_dir,
                                            Codec codec = Codec::kJpeg) {
  CreateOptions o;
  o.codec = codec;
  o.index_dir = index_dir;
  return Dataset::Create(dir, o);
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
  // Its own index updates follow the writer's commits, and the files it
  // deletes need them durable: no journal.
  wo.journal = false;
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
    if (!c.meta_file.empty() && !IsAttached(c)) {
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
      if (dataset.codec() == Codec::kH264) {
        // Every packet's CRC-32C is checked on the way (a damaged packet
        // stops it, as a damaged JPEG frame does below).
        const VideoInfo video = dataset.Get(id);
        AppendStoredH264(*writer, dataset, id, video.meta_data);
        ++report.videos_moved;
        if (writer->pending_videos() >= kCompactBatchVideos) writer->Commit();
        continue;
      }
      const VideoInfo video = dataset.Get(id);
      // A damaged frame must not be copied under a fresh checksum.
      StoredFrames jpegs;
      try {
        jpegs = ReadVerifiedJpegs(dataset, id);
      } catch (const CorruptionError& e) {
        e.ThrowWithContext("compact " + dataset.dir() +
                           " (stopped; the damaged video was not copied): ");
      }
      std::vector<std::string_view> views;
      for (size_t i = 0; i < jpegs.size(); ++i) views.push_back(jpegs[i]);
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
  // obsolete in the same transaction), then from the disk. An attached
  // chunk's file belongs to its shard: its record goes, its file stays.
  std::set<uint32_t> emptied;
  for (const ChunkInfo& c : todo) emptied.insert(c.number);
  if (!emptied.empty()) {
    ds.env->Update([&](index::Txn& txn) {
      index::DatasetInfo info = ds.GetInfo(txn);
      for (uint32_t n : emptied) {
        const index::ChunkRecord record = ds.GetChunk(txn, n);
        if (record.live_videos != 0) continue;
        txn.Del(ds.chunks, index::ChunkKey(n));
        // A deleted chunk is no longer "being written" (the writer's current
        // chunk is when nothing was moved: every video of the newest chunk
        // removed), and its number stays used.
        // (GULPDB_TEST_BUG=compact-newest: left in the list, as before.)
        if (!util::TestBugEnabled("compact-newest")) {
          info.dirty_chunks.erase(
              std::remove(info.dirty_chunks.begin(), info.dirty_chunks.end(), n),
              info.dirty_chunks.end());
        }
        info.next_chunk = std::max<uint64_t>(info.next_chunk, uint64_t{n} + 1);
        if (record.attached()) continue;
        info.obsolete_files.push_back(record.file_name);
        // Its .gmeta goes too: the imported one, or the meta_N.gmeta an
        // in-place export wrote for a chunk gulpdb created (left behind, it
        // would describe a missing data file to GulpIO readers).
        const std::string meta =
            record.meta_file.empty() ? "meta_" + std::to_string(n) + ".gmeta" : record.meta_file;
        if (util::PathExists(ds.ChunkPath(meta))) info.obsolete_files.push_back(meta);
      }
      txn.Put(ds.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
    ds.files.Clear();
    engine::RemoveObsoleteFiles(ds, "compact", &report.files_removed);
  }
  return report;
}

namespace {

constexpr size_t kConflictsListed = 20;

// A shard to merge, checked before anything is written.
struct Shard {
  std::string path;  // as given
  std::unique_ptr<Dataset> ds;
  std::string relative;          // inside the output: attached at this path; empty: copied
  bool attached_before = false;  // its info already names the output (an earlier run)
  std::map<std::string, int64_t> new_idx;  // labels whose index changes in the output
};

std::string Label2IdxPath(const std::string& dir) { return dir + "/label2idx.json"; }

// The output's real path, also when it does not exist yet.
std::string OutputRealPath(std::string out) {
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (util::PathExists(out)) return RealPath(out);
  const size_t slash = out.find_last_of('/');
  const std::string parent =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : out.substr(0, slash));
  if (!util::IsDirectory(parent)) {
    throw NotFoundError("merge into " + out + ": no such directory " + parent);
  }
  const std::string real = RealPath(parent);
  return (real == "/" ? "" : real) + "/" + out.substr(slash == std::string::npos ? 0 : slash + 1);
}

// The label indices the videos of `ds` use, with `file` (its label2idx.json,
// `has_file` when it exists): every video must agree with the file; without
// one, the videos must agree with each other. Adds "<dir>: <what>" to
// `conflicts` for each disagreement.
std::map<std::string, int64_t> DatasetLabels(const Dataset& ds, const engine::LabelEntries& file,
                                             bool has_file, std::vector<std::string>* conflicts) {
  const std::string dir = ds.dir();
  const auto conflict = [&](const std::string& what) {
    if (conflicts->size() < kConflictsListed) conflicts->push_back(dir + ": " + what);
  };
  std::map<std::string, int64_t> map;
  std::map<int64_t, std::string> by_idx;
  for (const auto& [label, idx] : file) {
    auto it = map.find(label);
    if (it != map.end()) {
      if (it->second != idx) {
        conflict("label2idx.json gives '" + label + "' two indices, " + std::to_string(it->second) +
                 " and " + std::to_string(idx));
      }
      continue;
    }
    auto [other, fresh] = by_idx.emplace(idx, label);
    if (!fresh) {
      conflict("label2idx.json gives index " + std::to_string(idx) + " to both '" + other->second +
               "' and '" + label + "'");
    }
    map.emplace(label, idx);
  }
  ds.ForEach([&](const VideoInfo& v) {
    std::vector<engine::MetaLabel> labels;
    try {
      labels = engine::MetaLabels(v.meta_data);
    } catch (const InvalidArgumentError&) {
      return true;  // not a list: no labels (the writer stores lists only)
    }
    for (const engine::MetaLabel& m : labels) {
      if (!m.idx) continue;  // a label without an index: nothing to keep consistent
      const std::string where = "id '" + v.id + "': label '" + m.label + "'";
      if (!m.idx_ok) {
        conflict(where + " has an idx that is not a small non-negative integer");
        continue;
      }
      const std::string idx = std::to_string(*m.idx);
      auto it = map.find(m.label);
      if (has_file) {
        if (it == map.end()) {
          conflict(where + " (idx " + idx + ") is not in its label2idx.json");
        } else if (it->second != *m.idx) {
          conflict(where + " has idx " + idx + " but its label2idx.json gives " +
                   std::to_string(it->second));
        }
      } else if (it != map.end()) {
        if (it->second != *m.idx) {
          conflict(where + " has idx " + idx + " but other videos give it " +
                   std::to_string(it->second));
        }
      } else {
        auto [other, fresh] = by_idx.emplace(*m.idx, m.label);
        if (!fresh) {
          conflict(where + " has idx " + idx + ", which other videos give to '" + other->second +
                   "'");
        } else {
          map.emplace(m.label, *m.idx);
        }
      }
    }
    return conflicts->size() < kConflictsListed;
  });
  return map;
}

// One label map for the output: its own indices kept (from its
// label2idx.json, or from its videos when it has none), the shards' other
// labels sorted and numbered after them, as ingest numbers new labels. Sets
// each shard's `new_idx`. Throws InvalidArgumentError listing the conflicts,
// before anything is written. Returns the entries label2idx.json must hold,
// or nullopt when it is to stay as it is (or there are no labels at all).
std::optional<engine::LabelEntries> PlanLabels(const std::string& out, const Dataset* out_ds,
                                               std::vector<Shard>& shards) {
  std::vector<std::string> conflicts;
  const bool out_has_file = out_ds != nullptr && util::PathExists(Label2IdxPath(out));
  engine::LabelEntries entries;
  if (out_has_file) {
    entries = engine::ReadLabel2Idx(Label2IdxPath(out));
    DatasetLabels(*out_ds, entries, true, &conflicts);
  } else if (out_ds != nullptr && out_ds->Count() != 0) {
    for (const auto& [label, idx] : DatasetLabels(*out_ds, {}, false, &conflicts)) {
      entries.emplace_back(label, idx);
    }
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
  }
  std::vector<std::map<std::string, int64_t>> shard_maps;
  for (Shard& shard : shards) {
    const std::string path = Label2IdxPath(shard.ds->dir());
    const bool has_file = util::PathExists(path);
    shard_maps.push_back(
        DatasetLabels(*shard.ds, has_file ? engine::ReadLabel2Idx(path) : engine::LabelEntries(),
                      has_file, &conflicts));
  }
  if (!conflicts.empty()) {
    std::string list;
    for (const std::string& c : conflicts) list += (list.empty() ? "" : "; ") + c;
    throw InvalidArgumentError("merge into " + out + ": inconsistent labels, nothing was merged: " +
                               list + (conflicts.size() >= kConflictsListed ? "; ..." : ""));
  }
  std::map<std::string, int64_t> merged;
  int64_t next = 0;
  for (const auto& [label, idx] : entries) {
    merged.emplace(label, idx);  // a repeated key: the first one counts, as ingest reads it
    next = std::max(next, idx + 1);
  }
  std::set<std::string> fresh;
  for (const auto& map : shard_maps) {
    for (const auto& entry : map) {
      if (merged.count(entry.first) == 0) fresh.insert(entry.first);
    }
  }
  for (const std::string& label : fresh) {
    entries.emplace_back(label, next);
    merged.emplace(label, next++);
  }
  for (size_t i = 0; i < shards.size(); ++i) {
    for (const auto& [label, idx] : shard_maps[i]) {
      const int64_t want = merged.at(label);
      if (want != idx) shards[i].new_idx.emplace(label, want);
    }
  }
  if (entries.empty() || (out_has_file && fresh.empty())) return std::nullopt;
  return entries;
}

// Applies a shard's label renumbering to one video's meta.
void RenumberLabels(const Shard& shard, std::string* meta) {
  if (shard.new_idx.empty()) return;
  if (std::optional<std::string> rewritten = engine::RewriteMetaIdx(*meta, shard.new_idx)) {
    *meta = std::move(*rewritten);
  }
}

// Attaches the chunks of `shard` (which lives at `shard.relative` inside the
// output directory) to `out` in one transaction. The caller holds out's
// writer lock and the shard's.
void AttachShard(engine::DatasetImpl& out, const Shard& shard, const MergeOptions& options,
                 MergeReport* report) {
  const engine::DatasetImpl& in = engine::DatasetAccess::Of(*shard.ds);
  const std::string& relative = shard.relative;
  const std::string attached_key = index::kAttachedShardKeyPrefix + relative;
  MergeReport delta;
  out.query.Refresh(*out.env);  // before the transaction; the caller holds the lock
  const engine::QueryDbHandles query_dbs = out.query.Load();
  out.env->Update([&](index::Txn& txn) {
    delta = MergeReport();
    std::string_view done;
    if (txn.Get(out.info, attached_key, &done)) return;  // attached by an earlier run
    index::DatasetInfo info = out.GetInfo(txn);
    engine::QueryTxn query(out, txn, query_dbs);  // the output's meta index
    // Chunks already attached (a re-run of a merge that predates the attached
    // keys) and the next free chunk number.
    std::set<std::string> attached;
    std::optional<uint32_t> last;
    {
      index::Cursor cursor(txn, out.chunks);
      for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        last = index::DecodeChunkKey(cursor.key());
        attached.insert(out.DecodeChunkAt(cursor.key(), cursor.value()).file_name);
      }
    }
    // Never a number a deleted chunk had (docs/format/index_format.md).
    uint64_t next_chunk = index::NextChunkNumber(info, last);
    index::Txn shard_txn = in.env->BeginRead();
    std::map<uint32_t, uint32_t> chunk_map;          // shard chunk -> out chunk
    std::map<uint32_t, index::ChunkRecord> records;  // out chunks touched
    {
      index::Cursor cursor(shard_txn, in.chunks);
      for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        const uint32_t n = index::DecodeChunkKey(cursor.key());
        const index::ChunkRecord c = in.DecodeChunkAt(cursor.key(), cursor.value());
        util::CheckRelativeName(c.file_name, "merge " + shard.ds->dir(),
                                "chunk " + std::to_string(n) + "'s file name");
        const std::string name = relative + "/" + c.file_name;
        if (c.committed_length == 0 || attached.count(name) != 0) continue;
        if (next_chunk >= index::kNoChunkNumberLeft) {
          throw ResourceExhaustedError("merge " + shard.ds->dir() + " into " + out.dir +
                                       ": every chunk number up to 2^32 - 1 has been used");
        }
        index::ChunkRecord r;
        r.file_name = name;
        r.committed_length = c.committed_length;
        r.state = index::ChunkState::kFull;
        r.owner = c.owner.empty() ? relative : relative + "/" + c.owner;
        chunk_map[n] = static_cast<uint32_t>(next_chunk);
        records[static_cast<uint32_t>(next_chunk)] = r;
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
      if (!video) {
        throw CorruptionError("merge " + shard.ds->dir() + ": id '" + id + "' has no record");
      }
      auto mapped = chunk_map.find(video->chunk);
      if (mapped == chunk_map.end()) continue;  // chunk attached by an earlier run
      if (auto old = out.FindRecord(txn, id)) {
        if (options.on_duplicate == OnDuplicate::kError) {
          throw InvalidArgumentError("merge " + shard.ds->dir() + " into " + out.dir + ": id '" +
                                     id + "' is already there");
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
      RenumberLabels(shard, &record.meta_data);
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
    info.next_chunk = next_chunk;
    txn.Put(out.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    txn.Put(out.info, attached_key, shard.ds->dir());
  });
  report->chunks_attached += delta.chunks_attached;
  report->videos += delta.videos;
  report->skipped += delta.skipped;
}

// Closes `shard` to writers of its own, then attaches it. The shard's writer
// first finishes what a crashed writer of the shard left (bytes past
// committed lengths, obsolete files); then its info names the output, in the
// shard's own index, before the output's index refers to any of its files:
// a crash in between leaves a shard that refuses writers, and re-running the
// merge completes the attach.
void AttachOne(engine::DatasetImpl& out, const std::string& out_real, Shard& shard,
               const MergeOptions& options, MergeReport* report) {
  engine::DatasetImpl& in = engine::DatasetAccess::Of(*shard.ds);
  std::unique_ptr<Writer> writer;
  std::optional<util::FileLock> lock;
  const auto mark = [&](const std::string& owner) {
    in.env->Update([&](index::Txn& txn) {
      index::DatasetInfo info = in.GetInfo(txn);
      info.attached_to = owner;
      txn.Put(in.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
  };
  if (shard.attached_before) {
    lock.emplace(in.index_dir + "/" + kWriterLockName, options.lock_timeout, shard.ds->dir());
    engine::DatasetAccess::SettleJournal(in);
    AttachShard(out, shard, options, report);
    return;
  }
  WriterOptions wo;
  wo.lock_timeout = options.lock_timeout;
  wo.journal = false;  // held for the lock: the merge's own updates are direct
  writer = shard.ds->NewWriter(wo);
  mark(out_real);
  try {
    AttachShard(out, shard, options, report);
  } catch (const Error&) {
    // The output did not take the shard (a duplicate id, say): it is the
    // shard's own again. Should this fail too, re-running the merge (or
    // fixing its cause and re-running) completes the attach.
    try {
      mark("");
    } catch (const Error&) {
    }
    throw;
  }
}

void CopyShard(Writer& writer, const Shard& shard, MergeReport* report) {
  try {
    shard.ds->ForEach([&](const VideoInfo& video) {
      if (shard.ds->codec() == Codec::kH264) {
        std::string meta = video.meta_data;
        RenumberLabels(shard, &meta);
        if (AppendStoredH264(writer, *shard.ds, video.id, meta)) {
          ++report->videos_copied;
          ++report->videos;
        } else {
          ++report->skipped;
        }
        return true;
      }
      // A damaged frame must not be copied under a fresh checksum.
      const StoredFrames jpegs = ReadVerifiedJpegs(*shard.ds, video.id);
      std::vector<std::string_view> views;
      for (size_t i = 0; i < jpegs.size(); ++i) views.push_back(jpegs[i]);
      std::string meta = video.meta_data;
      RenumberLabels(shard, &meta);
      if (writer.AppendEntry(video.id, views, meta)) {
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
    e.ThrowWithContext("merge " + shard.ds->dir() + ": ");
  }
}

std::string AttachedTo(const Dataset& dataset) {
  const engine::DatasetImpl& impl = engine::DatasetAccess::Of(dataset);
  index::Txn txn = impl.env->BeginRead();
  return impl.GetInfo(txn).attached_to;
}

// Merges the checked shards into `ds` (the output at `out`): the attached
// ones under the output's writer lock, then the copied ones through one
// writer. Each shard is one transaction; report->shards counts those merged.
void MergeShards(Dataset& ds, const std::string& out, const std::string& out_real,
                 std::vector<Shard>& shards, const MergeOptions& options, MergeReport* report) {
  uint64_t done = 0;
  bool any_attached = false;
  for (const Shard& shard : shards) any_attached = any_attached || !shard.relative.empty();
  if (any_attached) {
    util::FileLock lock(engine::DatasetAccess::Of(ds).index_dir + "/" + kWriterLockName,
                        options.lock_timeout, out);
    engine::DatasetAccess::SettleJournal(engine::DatasetAccess::Of(ds));
    for (Shard& shard : shards) {
      if (shard.relative.empty()) continue;
      AttachOne(engine::DatasetAccess::Of(ds), out_real, shard, options, report);
      ++report->shards;
      if (options.progress) options.progress(++done, shards.size());
    }
  }
  if (done < shards.size()) {
    WriterOptions wo;
    wo.on_duplicate = options.on_duplicate;
    wo.lock_timeout = options.lock_timeout;
    wo.check_jpeg_markers = false;
    wo.journal = false;  // merge commits large batches and updates the index itself
    std::unique_ptr<Writer> writer = ds.NewWriter(wo);
    for (const Shard& shard : shards) {
      if (!shard.relative.empty()) continue;
      CopyShard(*writer, shard, report);
      ++report->shards;
      if (options.progress) options.progress(++done, shards.size());
    }
  }
}

// Puts label2idx.json back as it was before a merge that merged nothing:
// `before` holds its bytes, or nullopt when there was none. Never throws (the
// merge's own error is the one to report).
void RestoreLabelMap(const std::string& path, const std::optional<std::string>& before) {
  try {
    if (before) {
      util::WriteFileAtomically(path, *before);
    } else {
      util::RemoveFileQuietly(path);
    }
  } catch (const Error&) {
  }
}

}  // namespace

MergeReport engine::MergeDatasets(const std::string& out,
                                  const std::vector<std::string>& shard_paths,
                                  const MergeOptions& options, const DatasetOpener& opener) {
  // Every shard is checked before the output is created or anything is written.
  const std::string out_real = OutputRealPath(out);
  std::unique_ptr<Dataset> ds;
  if (opener.exists(out, options.index_dir)) {
    ds = OpenReadWrite(opener, out, options.index_dir);
    const std::string owner = AttachedTo(*ds);
    if (!owner.empty()) {
      throw InvalidArgumentError("merge into " + out + ": the dataset is attached to " + owner +
                                 " (merged in place) and takes no more writes; merge into " +
                                 owner + " instead");
    }
  }
  std::vector<Shard> shards;
  std::set<std::string> seen;
  for (const std::string& path : shard_paths) {
    if (!util::PathExists(path)) throw NotFoundError("merge " + path + ": no such directory");
    const std::string real = RealPath(path);
    if (real == out_real) throw InvalidArgumentError("merge " + path + ": is the output itself");
    if (!seen.insert(real).second) {
      throw InvalidArgumentError("merge " + path + ": the shard is listed twice");
    }
    if (!opener.exists(path, "")) {
      const bool gulpio = util::IsDirectory(path) && engine::FirstGulpioPair(path).has_value();
      throw NotFoundError("merge " + path + ": not a gulpdb dataset (no index)" +
                          (gulpio
                               ? "; it holds GulpIO chunks: run `gulpdb import " + path + "` first"
                               : std::string()));
    }
    Shard shard;
    shard.path = path;
    const bool inside = real.compare(0, out_real.size() + 1, out_real + "/") == 0;
    // A shard attached in place is closed to its own writers, so it must be writable.
    shard.ds = inside ? OpenReadWrite(opener, path) : opener.open(path, OpenOptions());
    const std::string owner = AttachedTo(*shard.ds);
    if (!owner.empty() && owner != out_real) {
      throw InvalidArgumentError("merge " + path + ": the shard is attached to " + owner +
                                 " already; a shard can be attached to one dataset only");
    }
    shard.attached_before = !owner.empty();
    if (inside) shard.relative = real.substr(out_real.size() + 1);
    shards.push_back(std::move(shard));
  }
  // One codec per dataset: every shard's must be the output's (or, for a new
  // output, the first shard's, which it takes).
  const Codec codec = ds ? ds->codec() : shards.empty() ? Codec::kJpeg : shards[0].ds->codec();
  for (const Shard& shard : shards) {
    if (shard.ds->codec() != codec) {
      throw InvalidArgumentError(
          "merge " + shard.path + " into " + out + ": the shard's codec is " +
          CodecName(shard.ds->codec()) + " but " +
          (ds ? std::string("the output's is ")
              : "the first shard's (" + shards[0].path + ") is ") +
          CodecName(codec) + "; datasets of different codecs cannot be merged");
    }
  }
  const std::optional<engine::LabelEntries> labels = PlanLabels(out, ds.get(), shards);

  // From here on the output changes.
  if (!ds) ds = CreateWithIndexDir(out, options.index_dir, codec);
  // The map first: it only adds labels to what the output had, so every
  // video committed below, and every one already there, agrees with it.
  // Should the merge fail before any shard is merged, it is put back.
  std::optional<std::string> map_before;  // the old file's bytes, if there was one
  if (labels) {
    if (util::PathExists(Label2IdxPath(out))) map_before = util::ReadFile(Label2IdxPath(out));
    engine::WriteLabel2Idx(Label2IdxPath(out), *labels);
  }
  MergeReport report;
  try {
    MergeShards(*ds, out, out_real, shards, options, &report);
  } catch (...) {
    if (labels && report.shards == 0) RestoreLabelMap(Label2IdxPath(out), map_before);
    throw;
  }
  return report;
}

}  // namespace gulpdb
