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
#include <cctype>
#include <cstdio>
#include <map>
#include <unordered_set>

#include "engine/dataset_impl.h"
#include "engine/file_util.h"
#include "engine/gmeta.h"
#include "engine/json_text.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"

namespace gulpdb {
namespace {

constexpr size_t kVideosPerTransaction = 4096;
constexpr size_t kDuplicatesListed = 20;
constexpr uint32_t kMaxPad = 4;  // GulpIO writes 0..3; 4 is tolerated as GulpIO2 reads it

struct ChunkFiles {
  uint32_t number = 0;
  std::string data;  // file names, relative to the directory
  std::string meta;
};

// The chunk number of a GulpIO file name: its first run of digits.
std::optional<uint32_t> ChunkNumber(const std::string& name) {
  const auto first = std::find_if(name.begin(), name.end(), ::isdigit);
  if (first == name.end()) return std::nullopt;
  uint64_t n = 0;
  for (auto it = first; it != name.end() && std::isdigit(static_cast<unsigned char>(*it)); ++it) {
    n = n * 10 + static_cast<uint64_t>(*it - '0');
    if (n > UINT32_MAX) return std::nullopt;
  }
  return static_cast<uint32_t>(n);
}

bool StartsEnds(const std::string& s, const char* prefix, const char* suffix) {
  const std::string p(prefix), x(suffix);
  return s.size() >= p.size() + x.size() && s.compare(0, p.size(), p) == 0 &&
         s.compare(s.size() - x.size(), x.size(), x) == 0;
}

std::vector<ChunkFiles> FindChunks(const std::string& dir, const ImportOptions& options,
                                   ImportReport* report) {
  std::map<uint32_t, ChunkFiles> chunks;
  for (const std::string& name : engine::ListDirectory(dir)) {
    const bool is_data = StartsEnds(name, "data", ".gulp");
    const bool is_meta = StartsEnds(name, "meta", ".gmeta");
    if (!is_data && !is_meta) continue;
    const std::optional<uint32_t> n = ChunkNumber(name);
    if (!n) {
      throw InvalidArgumentError("import " + dir + ": no chunk number in file name " + name);
    }
    ChunkFiles& c = chunks[*n];
    c.number = *n;
    std::string& slot = is_data ? c.data : c.meta;
    if (!slot.empty()) {
      throw InvalidArgumentError("import " + dir + ": " + slot + " and " + name +
                                 " both claim chunk " + std::to_string(*n));
    }
    slot = name;
  }
  std::vector<ChunkFiles> out;
  for (auto& [n, c] : chunks) {
    if (c.meta.empty()) {
      if (!options.skip_missing_meta) {
        throw InvalidArgumentError("import " + dir + ": " + c.data + " has no meta file meta_" +
                                   std::to_string(n) + ".gmeta (skip such chunks with the "
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
  if (out.empty()) throw InvalidArgumentError("import " + dir + ": no data*.gulp / meta*.gmeta pairs");
  return out;
}

// One video read from a .gmeta, on its way into the index.
struct Pending {
  std::string id;
  index::VideoRecord record;
};

class Importer {
 public:
  Importer(Dataset::Impl& ds, const std::string& dir, const ImportOptions& options,
           ImportReport* report)
      : ds_(ds), dir_(dir), options_(options), report_(report) {}

  void ImportChunk(const ChunkFiles& files) {
    const std::string data_path = dir_ + "/" + files.data;
    const std::string meta_path = dir_ + "/" + files.meta;
    engine::UniqueFd fd = engine::OpenFile(data_path, O_RDONLY);
    const uint64_t data_size = engine::FileSize(fd.get(), data_path);
    report_->gmeta_bytes += engine::FileSize(engine::OpenFile(meta_path, O_RDONLY).get(), meta_path);

    chunk_ = files.number;
    chunk_record_ = index::ChunkRecord();
    chunk_record_.file_name = files.data;
    chunk_record_.meta_file = files.meta;
    chunk_record_.committed_length = data_size;
    chunk_record_.state = index::ChunkState::kFull;
    ids_in_chunk_.clear();
    std::vector<std::pair<uint64_t, uint64_t>> extents;  // (offset, end) of every frame

    engine::ReadGmeta(meta_path, [&](engine::GmetaEntry&& e) {
      const std::string where = "import " + meta_path + ": byte " + std::to_string(e.offset) +
                                ": id '" + e.id + "'";
      if (e.id.empty()) throw CorruptionError(where + ": empty id");
      if (e.id.size() > ds_.env->max_key_size()) {
        throw CorruptionError(where + ": id longer than " +
                              std::to_string(ds_.env->max_key_size()) + " bytes");
      }
      if (!ids_in_chunk_.insert(e.id).second) throw CorruptionError(where + ": id appears twice");
      for (size_t i = 0; i < e.frame_info.size(); ++i) {
        const FrameInfo& f = e.frame_info[i];
        const std::string frame = where + " frame " + std::to_string(i) + " [" +
                                  std::to_string(f.offset) + ", " + std::to_string(f.pad) + ", " +
                                  std::to_string(f.length) + "]";
        if (f.pad > kMaxPad) throw CorruptionError(frame + ": pad is over " + std::to_string(kMaxPad));
        if (f.length < f.pad) throw CorruptionError(frame + ": length is smaller than pad");
        if (f.offset > data_size || f.length > data_size - f.offset) {
          throw CorruptionError(frame + ": ends past the end of " + files.data + " (" +
                                std::to_string(data_size) + " bytes)");
        }
        extents.emplace_back(f.offset, f.offset + f.length);
      }
      Pending p;
      p.id = std::move(e.id);
      p.record.chunk = chunk_;
      p.record.frames = std::move(e.frame_info);
      try {
        p.record.meta_data = engine::NormalizeJson(e.meta_data);
      } catch (const InvalidArgumentError& err) {
        throw CorruptionError(where + ": meta_data: " + err.what());
      }
      pending_.push_back(std::move(p));
      if (pending_.size() >= kVideosPerTransaction) Flush();
    });

    std::sort(extents.begin(), extents.end());
    for (size_t i = 1; i < extents.size(); ++i) {
      if (extents[i].first < extents[i - 1].second) {
        throw CorruptionError("import " + meta_path + ": frames overlap in " + files.data +
                              " at offset " + std::to_string(extents[i].first));
      }
    }
    max_videos_in_chunk_ = std::max<uint64_t>(max_videos_in_chunk_, ids_in_chunk_.size());
    Flush(/*chunk_done=*/true);
    ++report_->chunks;
  }

  void Finish() {
    if (!duplicates_.empty()) {
      std::string list;
      for (const std::string& id : duplicates_) list += (list.empty() ? "" : ", ") + id;
      throw InvalidArgumentError("import " + dir_ + ": " + std::to_string(duplicate_count_) +
                                 " ids appear in more than one chunk: " + list +
                                 (duplicate_count_ > duplicates_.size() ? ", ..." : "") +
                                 " (choose keep-first or keep-last)");
    }
    ds_.env->Update([&](index::Txn& txn) {
      index::DatasetInfo info = ds_.GetInfo(txn);
      info.creator += " (imported from GulpIO)";
      info.checksums = false;
      info.videos_per_chunk = static_cast<uint32_t>(std::max<uint64_t>(max_videos_in_chunk_, 1));
      info.next_seq = next_seq_;
      info.total_videos = txn.Count(ds_.videos);
      info.total_frames = total_frames_;
      info.dirty_chunks.clear();
      txn.Put(ds_.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
    report_->videos = videos_;
    report_->frames = total_frames_;
  }

 private:
  // Writes the pending videos (and the current chunk's record) in one transaction.
  void Flush(bool chunk_done = false) {
    if (pending_.empty() && !chunk_done) return;
    uint64_t videos = videos_, frames = total_frames_, seq = next_seq_;
    index::ChunkRecord chunk_record = chunk_record_;
    std::vector<std::string> duplicates;
    uint64_t duplicate_count = 0;
    ds_.env->Update([&](index::Txn& txn) {
      videos = videos_, frames = total_frames_, seq = next_seq_;
      chunk_record = chunk_record_;
      duplicates.clear();
      duplicate_count = 0;
      std::map<uint32_t, index::ChunkRecord> older;  // chunks that lose a video to keep-last
      for (const Pending& p : pending_) {
        if (auto old = ds_.FindRecord(txn, p.id)) {
          ++duplicate_count;
          if (duplicates_.size() + duplicates.size() < kDuplicatesListed) duplicates.push_back(p.id);
          if (options_.on_duplicate != DuplicatePolicy::kKeepLast) continue;
          auto it = older.find(old->chunk);
          if (it == older.end()) it = older.emplace(old->chunk, ds_.GetChunk(txn, old->chunk)).first;
          it->second.live_videos -= 1;
          it->second.live_bytes -= old->frame_bytes();
          txn.Del(ds_.order, index::OrderKey(old->chunk, old->seq));
          frames -= old->frames.size();
          --videos;
        }
        index::VideoRecord record = p.record;
        record.seq = seq++;
        txn.Put(ds_.videos, p.id, index::EncodeVideoRecord(record));
        txn.Put(ds_.order, index::OrderKey(chunk_, record.seq), p.id);
        ++chunk_record.appended_videos;
        ++chunk_record.live_videos;
        chunk_record.live_bytes += record.frame_bytes();
        ++videos;
        frames += record.frames.size();
      }
      for (const auto& [n, c] : older) txn.Put(ds_.chunks, index::ChunkKey(n), index::EncodeChunkRecord(c));
      txn.Put(ds_.chunks, index::ChunkKey(chunk_), index::EncodeChunkRecord(chunk_record));
    });
    videos_ = videos;
    total_frames_ = frames;
    next_seq_ = seq;
    chunk_record_ = chunk_record;
    duplicate_count_ += duplicate_count;
    if (options_.on_duplicate == DuplicatePolicy::kError) {
      duplicates_.insert(duplicates_.end(), duplicates.begin(), duplicates.end());
    } else {
      duplicate_count_ = 0;
    }
    pending_.clear();
  }

  Dataset::Impl& ds_;
  const std::string& dir_;
  const ImportOptions& options_;
  ImportReport* report_;

  uint32_t chunk_ = 0;
  index::ChunkRecord chunk_record_;
  std::unordered_set<std::string> ids_in_chunk_;
  std::vector<Pending> pending_;
  uint64_t next_seq_ = 0, videos_ = 0, total_frames_ = 0, max_videos_in_chunk_ = 0;
  std::vector<std::string> duplicates_;
  uint64_t duplicate_count_ = 0;
};

std::string ParentDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

ImportReport ImportGulpio(const std::string& dir, const ImportOptions& options) {
  if (!engine::IsDirectory(dir)) throw NotFoundError("import " + dir + ": no such directory");
  const std::string final_index =
      options.index_dir.empty() ? dir + "/" + kIndexDirName : options.index_dir;
  if (Dataset::Exists(dir, options.index_dir) || engine::PathExists(final_index)) {
    throw InvalidArgumentError("import " + dir + ": already indexed (" + final_index +
                               " exists); open it as a dataset instead");
  }
  ImportReport report;
  const std::vector<ChunkFiles> chunks = FindChunks(dir, options, &report);

  // One import at a time per index location; the lock file goes when we do.
  const std::string temp_index = final_index + ".importing";
  const std::string lock_path = final_index + ".import.lock";
  engine::FileLock lock(lock_path, std::chrono::milliseconds(0), dir);
  struct Cleanup {
    const std::string& temp;
    const std::string& lock;
    bool keep_temp = false;
    ~Cleanup() {
      try {
        if (!keep_temp) engine::RemoveFlatDirectory(temp);
      } catch (const Error&) {
      }
      ::unlink(lock.c_str());
    }
  } cleanup{temp_index, lock_path};
  engine::RemoveFlatDirectory(temp_index);  // left by an import that died

  {
    CreateOptions create;
    create.index_dir = temp_index;
    create.checksums = false;
    std::unique_ptr<Dataset> ds = Dataset::Create(dir, create);
    Importer importer(ds->impl(), dir, options, &report);
    for (size_t i = 0; i < chunks.size(); ++i) {
      importer.ImportChunk(chunks[i]);
      if (options.progress) options.progress(i + 1, chunks.size());
    }
    importer.Finish();
    ds->impl().env->Sync();
  }  // the environment is closed before it moves
  if (::rename(temp_index.c_str(), final_index.c_str()) != 0) {
    ThrowErrno("import " + dir + ": move index into place", final_index, errno);
  }
  cleanup.keep_temp = true;
  engine::SyncDirectory(ParentDir(final_index));
  return report;
}

}  // namespace gulpdb
