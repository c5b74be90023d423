// Indexing an existing GulpIO directory in place (interop.h).
//
// The index is built in a temporary directory next to its final place, in
// batches of LMDB transactions (so that memory stays bounded however large
// the .gmeta files are), and renamed into place only when every chunk has
// been read and validated: the import as a whole either succeeds or leaves
// no index behind.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "engine/core/dataset_view.h"
#include "engine/gulpio/gmeta.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/gulpio/verified_sources.h"
#include "engine/json/json_text.h"
#include "engine/query/query_txn.h"
#include "engine/query/splits_file.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "util/crc32c.h"
#include "util/file_io.h"
#include "util/path.h"
#include "util/sys_error.h"
#include "util/test_bug.h"

namespace gulpdb {
namespace {

constexpr size_t kVideosPerTransaction = 4096;
constexpr size_t kDuplicatesListed = 20;
constexpr uint32_t kMaxPad = 4;  // GulpIO writes 0..3; 4 is tolerated as GulpIO2 reads it

using ChunkFiles = engine::GulpioChunkFiles;

// The data/meta pairs to import. A data file without its .gmeta is an
// error, or skipped with a warning under skip_missing_meta or when it is in
// `gulpdb_chunks` (a re-index: chunks gulpdb wrote, checked separately).
std::vector<ChunkFiles> FindChunks(const std::string& dir, const ImportOptions& options,
                                   const std::set<std::string>& gulpdb_chunks,
                                   ImportReport* report) {
  std::vector<ChunkFiles> out;
  for (auto& [n, c] : engine::FindGulpioFiles(dir, "import")) {
    if (c.meta.empty()) {
      if (gulpdb_chunks.count(c.data) != 0) {
        report->warnings.push_back("skipped " + c.data + ": written by gulpdb, no .gmeta file");
        continue;
      }
      if (!options.skip_missing_meta) {
        throw InvalidArgumentError("import " + dir + ": " + c.data + " has no meta file meta_" +
                                   std::to_string(n) +
                                   ".gmeta (skip such chunks with the "
                                   "skip-missing-meta option)");
      }
      report->warnings.push_back("skipped " + c.data + ": no meta file");
      continue;
    }
    if (c.data.empty()) {
      throw InvalidArgumentError("import " + dir + ": " + c.meta + " has no data file");
    }
    out.push_back(std::move(c));
  }
  if (out.empty())
    throw InvalidArgumentError("import " + dir + ": no data*.gulp / meta*.gmeta pairs");
  return out;
}

// One video read from a .gmeta, on its way into the index.
struct Pending {
  std::string id;
  index::VideoRecord record;
  uint64_t offset = 0;  // of the entry in its .gmeta, for messages
  // A re-index: why a frame of this video may not be indexed (its bytes
  // differ from those the index being replaced checksummed), or empty.
  std::string changed_frame;
};

// Re-index: the CRC-32C the index being replaced stores for each frame of one
// chunk file, by the exact bytes it covers (offset and size, padding
// excluded). A frame of the new index at the same place must have the same
// checksum: a different one means the bytes rotted on disk, and computing
// a fresh checksum would make the damage read as clean. Memory is one
// chunk's frames, as the overlap check's.
class KnownChecksums {
 public:
  struct Frame {
    uint64_t offset;
    uint64_t size;
    uint32_t crc32c;
    bool operator<(const Frame& o) const { return offset < o.offset; }
  };

  // Loads the frames the old index's chunk `file_name` holds, or none when
  // `old` is null (a first import) or has no such chunk. A damaged record
  // of the old index gives no checksums (re-indexing is how such an index
  // is replaced); the rest still count.
  void Load(const Dataset* old, const std::string& file_name) {
    frames_.clear();
    if (old == nullptr) return;
    const engine::IndexTxn txn(*old);
    if (!chunks_) {
      chunks_.emplace();
      for (engine::IndexTxn::ChunkCursor c = txn.Chunks(); c.Valid(); c.Next()) {
        try {
          chunks_->emplace(c.record().file_name, c.number());
        } catch (const CorruptionError&) {
        }
      }
    }
    const auto chunk = chunks_->find(file_name);
    if (chunk == chunks_->end()) return;
    const std::string prefix = index::OrderKey(chunk->second, 0).substr(0, sizeof(uint32_t));
    for (engine::IndexTxn::OrderCursor o = txn.Order(prefix); o.Valid(); o.Next()) {
      if (o.key().substr(0, prefix.size()) != prefix) break;
      std::optional<index::VideoRecord> record;
      try {
        record = txn.FindVideo(o.id());
      } catch (const CorruptionError&) {
        continue;
      }
      if (!record || record->chunk != chunk->second ||
          record->crc32c.size() != record->frames.size()) {
        continue;
      }
      for (size_t i = 0; i < record->frames.size(); ++i) {
        const FrameInfo& f = record->frames[i];
        if (f.pad <= f.length)
          frames_.push_back(Frame{f.offset, f.length - f.pad, record->crc32c[i]});
      }
    }
    std::sort(frames_.begin(), frames_.end());
  }

  // The stored checksum of exactly the `size` bytes at `offset`, if any.
  std::optional<uint32_t> Find(uint64_t offset, uint64_t size) const {
    auto it = std::lower_bound(frames_.begin(), frames_.end(), Frame{offset, 0, 0});
    if (it == frames_.end() || it->offset != offset || it->size != size) return std::nullopt;
    return it->crc32c;
  }

 private:
  std::optional<std::map<std::string, uint32_t>> chunks_;  // the old index's, by file name
  std::vector<Frame> frames_;
};

// Reads the chunks one after another and writes their videos in batches of
// kVideosPerTransaction, whatever the chunk boundaries. The temporary index
// is not synced per transaction (see ImportGulpio): the import is all or
// nothing, so only its end needs to be durable.
class Importer {
 public:
  // `old`: the index a re-index replaces (null for a first import), whose
  // frame checksums the new ones must match.
  Importer(Dataset& ds, const std::string& dir, const ImportOptions& options, const Dataset* old,
           ImportReport* report)
      : ds_(ds), dir_(dir), options_(options), old_(old), report_(report) {}

  void ImportChunk(const ChunkFiles& files) {
    const std::string data_path = dir_ + "/" + files.data;
    const std::string meta_path = dir_ + "/" + files.meta;
    // Stamped before anything is read: a change made while the import reads
    // shows at the next open.
    const std::optional<index::FileStamp> data_stamp = engine::StampOf(data_path);
    const std::optional<index::FileStamp> meta_stamp = engine::StampOf(meta_path);
    const std::optional<util::FileIdentity> meta_before = util::IdentityOf(meta_path);
    data_fd_ = util::OpenFile(data_path, O_RDONLY);
    const uint64_t data_size = util::FileSize(data_fd_.get(), data_path);
    report_->gmeta_bytes += util::FileSize(util::OpenFile(meta_path, O_RDONLY).get(), meta_path);

    const uint32_t chunk = files.number;
    index::ChunkRecord& record = unflushed_[chunk];
    record.file_name = files.data;
    record.meta_file = files.meta;
    record.committed_length = data_size;
    record.state = index::ChunkState::kFull;
    record.data_stamp = data_stamp;
    record.meta_stamp = meta_stamp;
    meta_paths_[chunk] = meta_path;
    extents_.clear();
    // GULPDB_TEST_BUG=reindex-blesses-rot: the old checksums are not looked
    // at, so a frame damaged on disk gets a fresh one (util/test_bug.h).
    if (options_.checksums && !util::TestBugEnabled("reindex-blesses-rot")) {
      known_.Load(old_, files.data);
    }
    uint64_t videos_in_chunk = 0;

    const engine::GmetaContent content = engine::ReadGmeta(meta_path, [&](engine::GmetaEntry&& e) {
      // Messages are built only when a check fails: this runs for every video.
      const auto fail = [&](const std::string& what) {
        throw CorruptionError("import " + meta_path + ": byte " + std::to_string(e.offset) +
                              ": id '" + e.id + "'" + what);
      };
      if (e.id.empty()) fail(": empty id");
      if (e.id.size() > max_key_size_) {
        fail(": id longer than " + std::to_string(max_key_size_) + " bytes");
      }
      for (size_t i = 0; i < e.frame_info.size(); ++i) {
        const FrameInfo& f = e.frame_info[i];
        // Cheap checks first; the message is built only for a bad frame.
        const bool bad_pad = f.pad > kMaxPad;
        const bool bad_length = f.length < f.pad;
        const bool past_end = f.offset > data_size || f.length > data_size - f.offset;
        if (bad_pad || bad_length || past_end) {
          fail(" frame " + std::to_string(i) + " [" + std::to_string(f.offset) + ", " +
               std::to_string(f.pad) + ", " + std::to_string(f.length) + "]: " +
               (bad_pad      ? std::string("pad is over 4")
                : bad_length ? std::string("length is smaller than pad")
                             : "ends past the end of " + files.data + " (" +
                                   std::to_string(data_size) + " bytes)"));
        }
        extents_.emplace_back(f.offset, f.offset + f.length);
      }
      Pending p;
      try {
        p.record.meta_data = engine::NormalizeJson(e.meta_data);
      } catch (const InvalidArgumentError& err) {
        fail(std::string(": meta_data: ") + err.what());
      }
      if (options_.checksums) {
        p.record.crc32c = FrameChecksums(data_path, e.frame_info);
        p.changed_frame = ChangedFrame(data_path, e.id, e.frame_info, p.record.crc32c);
      }
      p.id = std::move(e.id);
      p.offset = e.offset;
      p.record.chunk = chunk;
      p.record.frames = std::move(e.frame_info);
      pending_.push_back(std::move(p));
      ++videos_in_chunk;
      if (pending_.size() >= kVideosPerTransaction) Flush();
    });

    // The fingerprint of exactly the bytes parsed; a later open compares it
    // with the file (a copy of the directory keeps it, an edit does not).
    // `record` may have been replaced by a flush meanwhile; the chunk being
    // read always stays in unflushed_.
    unflushed_.at(chunk).meta_content = index::ContentStamp{content.size, content.crc32c};
    const std::optional<util::FileIdentity> meta_after = util::IdentityOf(meta_path);
    if (meta_before && meta_after && *meta_before == *meta_after &&
        meta_after->size == content.size) {
      verified_[chunk] = engine::VerifiedSource{{content.size, content.crc32c}, *meta_after};
    }
    next_chunk_ = std::max<uint64_t>(next_chunk_, uint64_t{chunk} + 1);

    // GulpIO writes frames in file order, so this is almost always sorted already.
    if (!std::is_sorted(extents_.begin(), extents_.end()))
      std::sort(extents_.begin(), extents_.end());
    for (size_t i = 1; i < extents_.size(); ++i) {
      if (extents_[i].first < extents_[i - 1].second) {
        throw CorruptionError("import " + meta_path + ": frames overlap in " + files.data +
                              " at offset " + std::to_string(extents_[i].first));
      }
    }
    max_videos_in_chunk_ = std::max(max_videos_in_chunk_, videos_in_chunk);
    ++report_->chunks;
  }

  // `next_chunk`: at least this for DatasetInfo::next_chunk (a re-index
  // carries the old index's, so that no chunk number is ever reused).
  void Finish(uint64_t next_chunk) {
    Flush();
    if (!duplicates_.empty()) {
      std::string list;
      for (const std::string& id : duplicates_) list += (list.empty() ? "" : ", ") + id;
      throw InvalidArgumentError("import " + dir_ + ": " + std::to_string(duplicate_count_) +
                                 " ids appear in more than one chunk: " + list +
                                 (duplicate_count_ > duplicates_.size() ? ", ..." : "") +
                                 " (choose skip to keep the first, or replace to keep the last)");
    }
    engine::IndexTxn::Update(ds_, [&](engine::IndexTxn& txn) {
      index::DatasetInfo info = txn.Info();
      info.creator += " (imported from GulpIO)";
      info.checksums = options_.checksums;
      info.videos_per_chunk = static_cast<uint32_t>(std::max<uint64_t>(max_videos_in_chunk_, 1));
      info.next_seq = next_seq_;
      info.total_videos = txn.VideoCount();
      info.total_frames = total_frames_;
      info.dirty_chunks.clear();
      info.source_stamps = true;
      info.next_chunk = std::max(next_chunk_, next_chunk);
      txn.PutInfo(info);
    });
    // The .gmeta files just read, for the fast path of the next open
    // (engine/gulpio/verified_sources.h). Best effort: without it, that open
    // reads them once more.
    try {
      util::WriteFileAtomically(engine::IndexDirOf(ds_) + "/" + engine::kVerifiedSourcesName,
                                engine::EncodeVerifiedSources(verified_));
    } catch (const Error&) {
    }
    report_->videos = videos_;
    report_->frames = total_frames_;
  }

 private:
  // The CRC-32C of each frame's JPEG bytes (padding excluded, as the writer
  // computes it). The frames were checked to lie inside the file.
  std::vector<uint32_t> FrameChecksums(const std::string& data_path,
                                       const std::vector<FrameInfo>& frames) {
    std::vector<uint32_t> crcs;
    crcs.reserve(frames.size());
    for (const FrameInfo& f : frames) {
      const size_t size = f.length - f.pad;
      if (read_buffer_.size() < size) read_buffer_.resize(size);
      if (util::PreadFull(data_fd_.get(), read_buffer_.data(), size, f.offset, data_path) != size) {
        throw CorruptionError("import " + data_path + ": the file ended while reading " +
                              std::to_string(size) + " bytes at offset " +
                              std::to_string(f.offset));
      }
      crcs.push_back(util::Crc32c(read_buffer_.data(), size));
    }
    return crcs;
  }

  // Re-index: the message for the first frame of video `id` whose bytes
  // differ from those the old index checksummed at the same place, or empty.
  // Said when the video is indexed (Flush), not for one a duplicate skips.
  std::string ChangedFrame(const std::string& data_path, const std::string& id,
                           const std::vector<FrameInfo>& frames,
                           const std::vector<uint32_t>& crcs) const {
    for (size_t i = 0; i < frames.size(); ++i) {
      const uint64_t size = frames[i].length - frames[i].pad;
      const std::optional<uint32_t> known = known_.Find(frames[i].offset, size);
      if (!known || *known == crcs[i]) continue;
      return "import " + dir_ + " --reindex: id '" + id + "' frame " + std::to_string(i) +
             ": the " + std::to_string(size) + " bytes at offset " +
             std::to_string(frames[i].offset) + " of " + data_path + " have CRC-32C " +
             util::Crc32cHex(crcs[i]) + ", the index being replaced stores " +
             util::Crc32cHex(*known) +
             ": the frame is damaged on disk, and a re-index would make it read as clean. "
             "Restore the file from a copy (`gulpdb check --deep " +
             dir_ +
             "` lists every damaged frame), or, to drop the video, remove it (gulpdb "
             "remove) and export (gulpdb export) before re-indexing. The index was left as "
             "it was";
    }
    return {};
  }

  // Writes the pending videos and the records of the chunks they belong to in
  // one transaction. Runs again from the start if the map has to grow, so it
  // keeps its results in locals until the transaction has committed.
  void Flush() {
    if (pending_.empty() && unflushed_.empty()) return;
    uint64_t videos = 0, frames = 0, seq = 0, duplicate_count = 0;
    std::vector<std::string> duplicates;
    std::map<uint32_t, index::ChunkRecord> records;
    engine::IndexTxn::Update(ds_, [&](engine::IndexTxn& txn) {
      videos = videos_, frames = total_frames_, seq = next_seq_;
      duplicates.clear();
      duplicate_count = 0;
      records = unflushed_;
      auto chunk_ref = [&](uint32_t n) -> index::ChunkRecord& {
        auto it = records.find(n);
        if (it == records.end()) it = records.emplace(n, txn.Chunk(n)).first;
        return it->second;
      };
      for (Pending& p : pending_) {
        if (auto old = txn.FindVideo(p.id)) {
          if (old->chunk == p.record.chunk) {
            throw CorruptionError("import " + meta_paths_.at(p.record.chunk) + ": byte " +
                                  std::to_string(p.offset) + ": id '" + p.id + "' appears twice");
          }
          ++duplicate_count;
          if (duplicates_.size() + duplicates.size() < kDuplicatesListed)
            duplicates.push_back(p.id);
          if (options_.on_duplicate != OnDuplicate::kReplace) continue;
          index::ChunkRecord& c = chunk_ref(old->chunk);
          c.live_videos -= 1;
          c.live_bytes -= old->frame_bytes();
          txn.DeleteOrder(old->chunk, old->seq);
          frames -= old->frames.size();
          --videos;
        }
        if (!p.changed_frame.empty()) throw CorruptionError(p.changed_frame);
        p.record.seq = seq++;
        txn.PutVideo(p.id, p.record);
        txn.PutOrder(p.record.chunk, p.record.seq, p.id);
        index::ChunkRecord& c = chunk_ref(p.record.chunk);
        ++c.appended_videos;
        ++c.live_videos;
        c.live_bytes += p.record.frame_bytes();
        ++videos;
        frames += p.record.frames.size();
      }
      for (const auto& [n, c] : records) {
        txn.PutChunk(n, c);
      }
    });
    videos_ = videos;
    total_frames_ = frames;
    next_seq_ = seq;
    duplicate_count_ += duplicate_count;
    if (options_.on_duplicate == OnDuplicate::kError) {
      duplicates_.insert(duplicates_.end(), duplicates.begin(), duplicates.end());
    } else {
      duplicate_count_ = 0;
    }
    pending_.clear();
    // Only the chunk being read stays in memory; the others are in the index.
    const uint32_t current = unflushed_.empty() ? 0 : unflushed_.rbegin()->first;
    unflushed_.clear();
    if (!records.empty() && records.count(current) != 0) unflushed_[current] = records[current];
    // The pages just written stay in the page cache; they need not stay in
    // this process's resident set as well.
    engine::ReleaseIndexPages(ds_);
  }

  Dataset& ds_;
  const std::string& dir_;
  const ImportOptions& options_;
  const Dataset* old_;
  ImportReport* report_;
  const size_t max_key_size_ = engine::MaxIndexKeySize(ds_);
  util::UniqueFd data_fd_;   // the current chunk's data file
  std::string read_buffer_;  // one frame, for checksums
  KnownChecksums known_;     // the current chunk's, in the index being replaced

  std::map<uint32_t, index::ChunkRecord> unflushed_;    // chunk records not yet in the index
  std::map<uint32_t, std::string> meta_paths_;          // for messages
  std::vector<std::pair<uint64_t, uint64_t>> extents_;  // (offset, end) of the chunk's frames
  std::vector<Pending> pending_;
  uint64_t next_seq_ = 0, videos_ = 0, total_frames_ = 0, max_videos_in_chunk_ = 0;
  std::vector<std::string> duplicates_;
  uint64_t duplicate_count_ = 0;
  uint64_t next_chunk_ = 0;           // past every chunk imported
  engine::VerifiedSources verified_;  // .gmeta files unchanged while read
};

// The lowest number a new chunk of `ds` may take (DatasetInfo::next_chunk,
// or derived for an index older than it).
uint64_t NextChunkOf(const Dataset& ds) {
  const engine::IndexTxn txn(ds);
  return index::NextChunkNumber(txn.Info(), txn.LastChunk());
}

// Re-index: the ids of `old` that the new index lacks although the file
// holding them is still there (videos gulpdb wrote and no .gmeta describes).
// Up to `listed` of them in `*ids`; returns how many there are.
uint64_t FindUnexported(const Dataset& old, const Dataset& fresh, size_t listed,
                        std::vector<std::string>* ids) {
  uint64_t count = 0;
  std::map<uint32_t, bool> present;  // chunk -> its file still exists
  const engine::IndexTxn old_txn(old);
  const engine::IndexTxn new_txn(fresh);
  for (engine::IndexTxn::VideoCursor video = old_txn.Videos(); video.Valid(); video.Next()) {
    if (new_txn.HasVideo(video.id())) continue;
    const uint32_t chunk_number = video.record().chunk;
    auto it = present.find(chunk_number);
    if (it == present.end()) {
      const index::ChunkRecord chunk = old_txn.Chunk(chunk_number);
      it =
          present.emplace(chunk_number, util::PathExists(engine::ChunkPathOf(old, chunk.file_name)))
              .first;
    }
    if (!it->second) continue;  // its chunk was removed from the directory: meant to go
    if (ids->size() < listed) ids->emplace_back(video.id());
    ++count;
  }
  return count;
}

// Videos whose meta in `old` (the index being replaced) was edited after
// their chunk's .gmeta was last exported, and which `fresh` (read from the
// .gmeta files) describes with other meta: a re-index would revert their
// edits. Lists up to `listed` ids; returns how many.
uint64_t FindUnexportedEdits(const Dataset& old, const Dataset& fresh, size_t listed,
                             std::vector<std::string>* ids) {
  uint64_t count = 0;
  std::map<uint32_t, bool> edited;  // chunk -> it holds edits no export wrote
  const engine::IndexTxn old_txn(old);
  for (engine::IndexTxn::ChunkCursor c = old_txn.Chunks(); c.Valid(); c.Next()) {
    if (c.record().has_unexported_edits()) edited[c.number()] = true;
  }
  if (edited.empty()) return 0;
  const engine::IndexTxn new_txn(fresh);
  for (engine::IndexTxn::VideoCursor video = old_txn.Videos(); video.Valid(); video.Next()) {
    const index::VideoRecord record = video.record();
    if (edited.count(record.chunk) == 0) continue;
    const std::optional<index::VideoRecord> now = new_txn.FindVideo(video.id());
    if (!now || now->meta_data == record.meta_data) continue;  // (gone: FindUnexported's)
    if (ids->size() < listed) ids->emplace_back(video.id());
    ++count;
  }
  return count;
}

// Puts the index built at `temp` in the place of the one at `final_index`,
// atomically where the file system can exchange two directories; `temp` then
// holds the old index.
void SwapIndex(const std::string& dir, const std::string& temp, const std::string& final_index) {
  const int exchange = util::ExchangePathsOrErrno(temp, final_index);
  if (exchange == 0) return;
  if (exchange != EINVAL && exchange != ENOSYS) {
    util::ThrowErrno("import " + dir + " --reindex: replace the index", final_index, exchange);
  }
  // No exchange here: two renames. A crash between them leaves the old index
  // at <index>.old and none in place; importing again rebuilds it.
  const std::string old = final_index + ".old";
  util::RemoveFlatDirectory(old);
  if (const int err = util::RenameOrErrno(final_index, old); err != 0) {
    util::ThrowErrno("import " + dir + " --reindex: move the old index aside", final_index, err);
  }
  if (const int err = util::RenameOrErrno(temp, final_index); err != 0) {
    util::RenameOrErrno(old, final_index);
    util::ThrowErrno("import " + dir + " --reindex: move the index into place", final_index, err);
  }
  if (util::RenameOrErrno(old, temp) != 0) util::RemoveFlatDirectory(old);
}

// The splits of the index a re-index replaces, for the new one: a split
// whose ids are all still there is kept whole; one that lost ids (their
// .gmeta no longer lists them) is dropped, with a warning naming it.
engine::NamedSplits CarriedSplits(const Dataset& old, const Dataset& fresh, ImportReport* report) {
  engine::NamedSplits kept;
  for (const SplitInfo& info : old.Splits()) {
    std::vector<std::string> ids = old.Split(info.name);
    size_t missing = 0;
    for (const std::string& id : ids) missing += fresh.Contains(id) ? 0u : 1u;
    if (missing == 0) {
      kept.emplace_back(info.name, std::move(ids));
    } else {
      report->warnings.push_back("dropped split '" + engine::PrintableBytes(info.name) +
                                 "': " + std::to_string(missing) + " of its " +
                                 std::to_string(ids.size()) + " videos are in no .gmeta file");
    }
  }
  return kept;
}

// Re-index: the chunk files the old index created itself (data files
// without a .gmeta of their own) that the new index does not take. They hold
// only videos the re-index drops (removed ones, or unexported ones it was
// told to discard); once the old index is gone no index would know them, a
// later re-index would refuse them as files gulpdb did not write, and GulpIO2
// refuses a directory with a data file that no .gmeta pairs with. The new
// index lists them as obsolete files: deleted once it is in place
// (RemoveLeftBehind), or by its first writer should the import stop before.
void ListLeftBehind(const Dataset& fresh, const std::set<std::string>& gulpdb_chunks) {
  engine::IndexTxn::Update(fresh, [&](engine::IndexTxn& txn) {
    std::set<std::string> taken;
    for (engine::IndexTxn::ChunkCursor c = txn.Chunks(); c.Valid(); c.Next()) {
      taken.insert(c.record().file_name);
    }
    index::DatasetInfo info = txn.Info();
    const size_t listed = info.obsolete_files.size();
    for (const std::string& name : gulpdb_chunks) {
      if (taken.count(name) == 0 && util::PathExists(engine::ChunkPathOf(fresh, name))) {
        info.obsolete_files.push_back(name);
      }
    }
    if (info.obsolete_files.size() != listed) txn.PutInfo(info);
  });
}

// Deletes the files ListLeftBehind listed, now that the new index is in
// place. The re-index has succeeded: a failure here (another writer holds
// the lock, say) is a warning, and the next writer deletes them.
void RemoveLeftBehind(const std::string& dir, const ImportOptions& options, ImportReport* report) {
  try {
    OpenOptions open;
    open.read_only = false;
    open.index_dir = options.index_dir;
    std::unique_ptr<Dataset> fresh = engine::OpenLocalDataset(dir, open);
    util::FileLock lock(engine::WriterLockPathOf(*fresh), std::chrono::milliseconds(0), dir);
    engine::RemoveObsoleteFiles(*fresh, "import " + dir + " --reindex");
  } catch (const Error& e) {
    report->warnings.push_back(std::string("the chunk files of the dropped videos stay until "
                                           "the next write: ") +
                               e.what());
  }
}

}  // namespace

ImportReport ImportGulpio(const std::string& dir, const ImportOptions& options) {
  if (!util::IsDirectory(dir)) throw NotFoundError("import " + dir + ": no such directory");
  const std::string final_index = engine::IndexDirOf(dir, options.index_dir);
  const bool reindex = options.reindex && engine::LocalDatasetExists(dir, options.index_dir);
  if (!reindex &&
      (engine::LocalDatasetExists(dir, options.index_dir) || util::PathExists(final_index))) {
    throw InvalidArgumentError("import " + dir + ": already indexed (" + final_index +
                               " exists); open it as a dataset instead, or index it again "
                               "with the reindex option");
  }
  for (const std::string& key : options.meta_index_keys) {
    engine::ValidateQueryName(key, index::kMaxFieldNameBytes, "meta key", "import " + dir);
  }
  ImportReport report;
  // A re-index holds the old index's writer lock throughout, so that nothing
  // is written to it between the check for unexported videos and the swap.
  std::optional<util::FileLock> writer_lock;
  std::unique_ptr<Dataset> old;
  std::set<std::string> gulpdb_chunks;  // data files the old index created itself
  if (reindex) {
    writer_lock.emplace(final_index + "/" + kWriterLockName, std::chrono::milliseconds(0), dir);
    OpenOptions open;
    open.index_dir = options.index_dir;
    old = engine::OpenLocalDataset(dir, open);
    {
      const index::DatasetInfo info = engine::IndexTxn(*old).Info();
      if (!info.attached_to.empty()) {
        throw InvalidArgumentError("import " + dir + " --reindex: the dataset is attached to " +
                                   info.attached_to +
                                   ", whose index refers to its chunks; it cannot be re-indexed");
      }
    }
    for (const ChunkInfo& c : old->Chunks()) {
      if (c.meta_file.empty() && c.file_name.find('/') == std::string::npos) {
        gulpdb_chunks.insert(c.file_name);
      }
    }
  }
  const std::vector<ChunkFiles> chunks = FindChunks(dir, options, gulpdb_chunks, &report);

  // One import at a time per index location; the lock file goes when we do.
  const std::string temp_index = final_index + ".importing";
  const std::string lock_path = final_index + ".import.lock";
  util::FileLock lock(lock_path, std::chrono::milliseconds(0), dir);
  struct Cleanup {
    const std::string& temp;
    const std::string& lock;
    bool keep_temp = false;
    ~Cleanup() {
      try {
        if (!keep_temp) util::RemoveFlatDirectory(temp);
      } catch (const Error&) {
      }
      util::RemoveFileQuietly(lock);
    }
  } cleanup{temp_index, lock_path};
  util::RemoveFlatDirectory(temp_index);  // left by an import that died

  {
    CreateOptions create;
    create.index_dir = temp_index;
    create.checksums = options.checksums;
    std::unique_ptr<Dataset> ds = engine::CreateDataset(dir, create, /*allow_gulpio_files=*/true);
    // Nothing of the temporary index matters until it is renamed into place,
    // so its transactions skip the sync; one Sync below makes it durable.
    engine::SetIndexDurable(*ds, false);
    Importer importer(*ds, dir, options, old.get(), &report);
    for (size_t i = 0; i < chunks.size(); ++i) {
      importer.ImportChunk(chunks[i]);
      if (options.progress) options.progress(i + 1, chunks.size());
    }
    importer.Finish(old ? NextChunkOf(*old) : 0);
    if (old) {
      std::vector<std::string> ids;
      const uint64_t lost = FindUnexported(*old, *ds, kDuplicatesListed, &ids);
      if (lost != 0 && !options.discard_unexported) {
        std::string list;
        for (const std::string& id : ids) list += (list.empty() ? "'" : ", '") + id + "'";
        throw InvalidArgumentError(
            "import " + dir + " --reindex: " + std::to_string(lost) +
            " videos of the current index are in no .gmeta file (gulpdb wrote them and they "
            "were not exported): " +
            list + (lost > ids.size() ? ", ..." : "") + "; export them first (gulpdb export " +
            dir + "), or drop them with the discard-unexported option");
      }
      if (lost != 0) {
        report.warnings.push_back("dropped " + std::to_string(lost) +
                                  " videos that no .gmeta file describes");
      }
      ids.clear();
      const uint64_t reverted = FindUnexportedEdits(*old, *ds, kDuplicatesListed, &ids);
      if (reverted != 0 && !options.discard_unexported) {
        std::string list;
        for (const std::string& id : ids) list += (list.empty() ? "'" : ", '") + id + "'";
        throw InvalidArgumentError(
            "import " + dir + " --reindex: the meta of " + std::to_string(reverted) +
            (reverted == 1 ? " video was" : " videos were") +
            " edited after their .gmeta files were written, which would revert the edits: " + list +
            (reverted > ids.size() ? ", ..." : "") + "; export first (gulpdb export " + dir +
            "), or discard the edits with the discard-unexported option");
      }
      if (reverted != 0) {
        report.warnings.push_back("reverted the meta edits of " + std::to_string(reverted) +
                                  " videos that no .gmeta file holds");
      }
    }
    std::optional<engine::NamedSplits> splits = engine::ReadSplitsFile(dir);
    std::vector<std::string> meta_keys = options.meta_index_keys;
    if (old) {
      // A re-index keeps what the user made of the old index: its meta
      // indexes, and its splits unless a gulpdb_splits.json gives them.
      for (const std::string& key : old->MetaIndexes()) {
        if (std::find(meta_keys.begin(), meta_keys.end(), key) == meta_keys.end()) {
          meta_keys.push_back(key);
        }
      }
      if (!splits) splits = CarriedSplits(*old, *ds, &report);
      // ... and its identity: the re-indexed directory is the same dataset
      // (a push of it continues its published generations).
      const std::string uuid = engine::IndexTxn(*old).Info().uuid;
      if (!uuid.empty()) {
        engine::IndexTxn::Update(*ds, [&](engine::IndexTxn& txn) {
          index::DatasetInfo info = txn.Info();
          info.uuid = uuid;
          txn.PutInfo(info);
        });
      }
    }
    if (splits && !splits->empty()) {
      engine::StoreSplits(engine::IndexOf(*ds), *splits,
                          "import " + dir + "/" + engine::kSplitsFileName);
      report.splits = splits->size();
    }
    for (const std::string& key : meta_keys) engine::BuildMetaIndex(engine::IndexOf(*ds), key);
    if (old) ListLeftBehind(*ds, gulpdb_chunks);
    engine::SyncIndex(*ds);
  }  // the environment is closed before it moves
  if (old) {
    old.reset();  // closed before its directory moves
    SwapIndex(dir, temp_index, final_index);
    util::SyncDirectory(util::ParentOf(final_index));
    RemoveLeftBehind(dir, options, &report);
    return report;  // `cleanup` removes the old index, now at temp_index
  }
  if (const int err = util::RenameOrErrno(temp_index, final_index); err != 0) {
    util::ThrowErrno("import " + dir + ": move index into place", final_index, err);
  }
  cleanup.keep_temp = true;
  util::SyncDirectory(util::ParentOf(final_index));
  return report;
}

}  // namespace gulpdb
