// Writing .gmeta files that unmodified GulpIO2 reads (interop.h), and whole
// GulpIO directories of JPEG frames from h264 datasets.
//
// Snapshot: the export reads the index in batches of short read
// transactions, not in one long one, because a read transaction that stays
// open keeps a writer in this process from growing the LMDB map (resizing
// needs every transaction of the process to end). Each batch checks that its
// transaction sees the same snapshot (LMDB's transaction id) as the first; if
// a writer committed in between, the export starts again from the first
// chunk, so that the files always describe one committed state. After
// kMaxRestarts restarts it reads the rest in one transaction, as a last
// resort against a writer that commits faster than a pass takes.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/chunk_bytes.h"
#include "engine/core/chunk_source.h"
#include "engine/core/dataset_view.h"
#include "engine/core/index_source.h"
#include "engine/gulpio/gmeta.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/query/splits_file.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/jpeg.h"
#include "util/file_io.h"
#include "util/relative_name.h"

namespace gulpdb {
namespace {

constexpr size_t kExportBatch = 1024;  // videos per read transaction
constexpr int kMaxRestarts = 3;

// A .gmeta file the export wrote: its chunk, name and content.
struct Written {
  uint32_t chunk = 0;
  std::string name;
  engine::GmetaContent content;
  uint64_t meta_edits = 0;  // the chunk's count of meta edits in the snapshot written
};

struct Entry {
  std::string id;
  std::vector<FrameInfo> frames;
  std::string meta_data;
};

// Whether a batch of chunk `n` (whose order keys end before `end`) goes on
// to order key `key`.
bool InChunk(uint32_t n, std::string_view key, std::string_view end, size_t batch_size) {
  return (n == UINT32_MAX || key < end) && batch_size < kExportBatch;
}

// What an export reads: the chunk list, each chunk's videos in order, and
// the splits, all of one snapshot of the index (engine/core/index_source.h:
// the LMDB index, or a partitioned snapshot, which never changes), read in
// batches of short snapshots unless `one_transaction` (the file comment
// says why). Each call returns false when the snapshot changed since the
// first (a writer committed in between).
class SnapshotReader {
 public:
  SnapshotReader(const Dataset& dataset, bool one_transaction) : dataset_(dataset) {
    if (one_transaction) held_ = engine::SnapshotOf(dataset);
  }

  // The chunks, and the number of videos.
  bool Chunks(std::vector<std::pair<uint32_t, index::ChunkRecord>>* chunks, uint64_t* videos) {
    return InSnapshot([&](const engine::IndexSource& snapshot) {
      snapshot.ScanChunks([&](uint32_t n, const index::ChunkRecord& record) {
        chunks->emplace_back(n, record);
        return true;
      });
      *videos = snapshot.OrderCount();
    });
  }

  // Up to kExportBatch videos of chunk `n` from order key `*resume` on,
  // advancing `*resume` past the last one.
  bool Batch(uint32_t n, std::string* resume, std::vector<Entry>* batch) {
    const std::string end = index::OrderKey(n + 1, 0);
    return InSnapshot([&](const engine::IndexSource& snapshot) {
      const std::string from = *resume;  // the walk moves `*resume` on
      snapshot.ScanOrder(from, {}, [&](std::string_view key, std::string_view id) {
        if (!InChunk(n, key, end, batch->size())) return false;
        std::optional<index::VideoRecord> video = snapshot.FindVideo(id);
        if (!video) {
          throw CorruptionError("export " + dataset_.dir() + ": the order table lists id '" +
                                std::string(id) + "' that has no record");
        }
        batch->push_back(
            Entry{std::string(id), std::move(video->frames), std::move(video->meta_data)});
        *resume = std::string(key) + '\0';  // the next key strictly after this one
        return true;
      });
    });
  }

  // The splits, without the videos of chunks in `left_out`: an import of
  // the directory refuses a split naming a video it does not have. A
  // snapshot that left the dataset's splits out is an error saying so,
  // never an export that silently lacks them.
  bool Splits(const std::set<uint32_t>& left_out, engine::NamedSplits* splits) {
    return InSnapshot([&](const engine::IndexSource& snapshot) {
      for (const auto& [name, header] :
           engine::SnapshotSplitHeaders(snapshot, dataset_.dir(), "export splits")) {
        std::vector<std::string> ids = snapshot.SplitIds(header.number);
        ids.erase(std::remove_if(ids.begin(), ids.end(),
                                 [&](const std::string& id) {
                                   if (left_out.empty()) return false;
                                   const std::optional<index::VideoRecord> video =
                                       snapshot.FindFrames(id, nullptr);
                                   return video && left_out.count(video->chunk) != 0;
                                 }),
                  ids.end());
        splits->emplace_back(name, std::move(ids));
      }
    });
  }

 private:
  // Runs `fn` on a snapshot of the export's index; false if a writer
  // committed since the first batch.
  bool InSnapshot(const std::function<void(const engine::IndexSource&)>& fn) {
    if (held_) {
      fn(*held_);
      return true;
    }
    const std::shared_ptr<const engine::IndexSource> snapshot = engine::SnapshotOf(dataset_);
    if (!first_id_) first_id_ = snapshot->SnapshotId();
    if (snapshot->SnapshotId() != *first_id_) return false;
    fn(*snapshot);
    return true;
  }

  const Dataset& dataset_;
  std::shared_ptr<const engine::IndexSource> held_;
  std::optional<uint64_t> first_id_;
};

bool ExportSnapshot(const Dataset& dataset, const std::string& out_dir, bool one_transaction,
                    ExportReport* report, std::vector<Written>* written) {
  const std::unique_ptr<SnapshotReader> reader =
      std::make_unique<SnapshotReader>(dataset, one_transaction);
  std::vector<std::pair<uint32_t, index::ChunkRecord>> chunks;
  uint64_t videos = 0;
  if (!reader->Chunks(&chunks, &videos)) return false;
  // Every name first: a bad one (from a damaged index or a hostile bucket's
  // snapshot) fails the export before a file is written.
  for (const auto& [n, chunk] : chunks) {
    if (!chunk.meta_file.empty()) {
      util::CheckRelativeName(chunk.meta_file, "export " + dataset.dir(),
                              "chunk " + std::to_string(n) + "'s .gmeta name");
    }
  }
  *report = ExportReport();
  written->clear();
  std::set<uint32_t> left_out;  // chunks no .gmeta here describes
  for (const auto& [n, chunk] : chunks) {
    // A chunk of a shard attached in place lives in the shard's
    // sub-directory, which GulpIO's readers do not look into: a .gmeta for it
    // here would pair with no data file, and GulpIO2 refuses a directory
    // whose .gmeta and .gulp files differ in number. (A push publishes such
    // chunks flat, as data_<N>.gulp, so the .gmeta of a remote one is written.)
    if (engine::ChunkSourceOf(dataset) == nullptr &&
        chunk.file_name.find('/') != std::string::npos) {
      left_out.insert(n);
      continue;
    }
    // Every chunk gets its .gmeta, an empty one ("{}") included: GulpIO2
    // pairs each data*.gulp with a meta*.gmeta and refuses a directory where
    // they differ in number (Writer::StartChunk leaves empty chunks, as
    // GulpIO2's writer does).
    const std::string name =
        chunk.meta_file.empty() ? "meta_" + std::to_string(n) + ".gmeta" : chunk.meta_file;
    // The name comes from the index (or a bucket's snapshot): never a path
    // outside the output directory.
    const std::string path = util::JoinRelative(out_dir, name, "export " + dataset.dir(),
                                                "chunk " + std::to_string(n) + "'s .gmeta name");
    engine::GmetaWriter writer(path);
    std::string resume = index::OrderKey(n, 0);
    std::vector<Entry> batch;
    do {
      batch.clear();
      if (!reader->Batch(n, &resume, &batch))
        return false;  // the temporary file goes with `writer`
      // Written outside the transaction: a slow disk holds no snapshot.
      for (const Entry& e : batch) writer.Add(e.id, e.frames, e.meta_data);
      report->videos += batch.size();
    } while (batch.size() == kExportBatch);
    writer.Commit();
    written->push_back(Written{n, name, writer.content(), chunk.meta_edits});
    report->bytes_written += util::FileSize(util::OpenFile(path, O_RDONLY).get(), path);
    ++report->chunks;
  }
  // The splits of the same snapshot, beside the .gmeta files.
  engine::NamedSplits splits;
  if (!reader->Splits(left_out, &splits)) return false;
  engine::WriteSplitsFile(out_dir, splits);
  report->splits = splits.size();
  return true;
}

// An export into the dataset directory rewrote .gmeta files that an import
// stamped: record their new content (and stamp), so that open does not take
// gulpdb's own rewrite for a change by another program. A rewrite that
// left the bytes as they were (an unchanged chunk, or a .gmeta that was
// missing) needs no index write. (A crash between the rename and this update
// leaves the old fingerprint: the next open asks for a re-index, which
// rebuilds the same index from these files.)
//
// It also records, for each chunk whose meta was edited, how many of its
// edits the .gmeta written holds (ChunkRecord::meta_edits_exported), so that
// a re-index from these files knows it loses no edit.
void RestampMetaFiles(const Dataset& dataset, const std::vector<Written>& written) {
  if (engine::IndexReadOnly(dataset)) return;
  // Most datasets stamp nothing: they cost one read transaction here, and no
  // write transaction that a concurrent writer would have to wait for.
  std::map<uint32_t, std::pair<index::ContentStamp, std::optional<index::FileStamp>>> updates;
  std::map<uint32_t, uint64_t> exported_edits;
  {
    const engine::IndexTxn txn(dataset);
    const bool stamped = txn.Info().source_stamps;
    for (const Written& w : written) {
      if (!txn.HasChunk(w.chunk)) continue;
      const index::ChunkRecord record = txn.Chunk(w.chunk);
      if (record.meta_edits_exported < w.meta_edits) exported_edits[w.chunk] = w.meta_edits;
      if (!stamped) continue;
      if ((!record.meta_stamp && !record.meta_content) || record.meta_file != w.name) continue;
      const index::ContentStamp content{w.content.size, w.content.crc32c};
      if (record.meta_content == content) continue;
      updates[w.chunk] = {content, engine::StampOf(engine::ChunkPathOf(dataset, w.name))};
    }
  }
  if (updates.empty() && exported_edits.empty()) return;
  engine::IndexTxn::Update(dataset, [&](engine::IndexTxn& txn) {
    for (const auto& [n, update] : updates) {
      if (!txn.HasChunk(n)) continue;  // compacted meanwhile
      index::ChunkRecord record = txn.Chunk(n);
      if (!record.meta_stamp && !record.meta_content) continue;
      record.meta_content = update.first;
      // Kept for older versions, which compare the stamp only.
      if (update.second) record.meta_stamp = update.second;
      txn.PutChunk(n, record);
    }
    for (const auto& [n, edits] : exported_edits) {
      if (!txn.HasChunk(n)) continue;
      index::ChunkRecord record = txn.Chunk(n);
      // Edits committed after the snapshot written stay unexported.
      record.meta_edits_exported = std::max(record.meta_edits_exported, edits);
      txn.PutChunk(n, record);
    }
  });
}

bool SameDirectory(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Removes, unless Keep() was called, the files an export of an h264 dataset
// wrote into the output directory (and only those: the directory held no
// GulpIO files before, and a label2idx.json or gulpdb_splits.json that was
// there is left as it was).
class WrittenFiles {
 public:
  explicit WrittenFiles(std::string dir) : dir_(std::move(dir)) {
    for (const char* name : {"label2idx.json", "gulpdb_splits.json"}) {
      if (util::PathExists(dir_ + "/" + name)) existed_.insert(name);
    }
  }
  ~WrittenFiles() {
    if (kept_) return;
    for (const std::string& name : names_) util::RemoveFileQuietly(dir_ + "/" + name);
    for (const char* name : {"label2idx.json", "gulpdb_splits.json"}) {
      if (existed_.count(name) == 0) util::RemoveFileQuietly(dir_ + "/" + name);
    }
  }
  WrittenFiles(const WrittenFiles&) = delete;
  WrittenFiles& operator=(const WrittenFiles&) = delete;
  void Add(const std::string& name) { names_.push_back(name); }
  void Keep() { kept_ = true; }

 private:
  std::string dir_;
  std::set<std::string> existed_;
  std::vector<std::string> names_;
  bool kept_ = false;
};

// Writes the videos of `dataset` (an h264 one) as a GulpIO directory into
// `out_dir`: per chunk, data_<N>.gulp of JPEG frames (decoded by ReadFrames,
// encoded at options.quality, 4:4:4, each padded to 4 bytes as GulpIO pads)
// and meta_<N>.gmeta. See ExportGulpioDirectory.
ExportReport ExportTranscoded(const Dataset& dataset, const std::string& out_dir,
                              const ExportOptions& options) {
  if (options.quality < 1 || options.quality > 100) {
    throw InvalidArgumentError("export " + dataset.dir() + ": JPEG quality " +
                               std::to_string(options.quality) + " is not in 1..100");
  }
  if (SameDirectory(out_dir, dataset.dir())) {
    throw InvalidArgumentError("export " + dataset.dir() +
                               ": an h264 dataset is exported into another directory (its own "
                               "chunk files are not GulpIO's): give an output directory");
  }
  for (const std::string& name : util::ListDirectory(out_dir)) {
    if (IsGulpioDataFileName(name) || IsGulpioMetaFileName(name)) {
      throw InvalidArgumentError("export " + dataset.dir() + " to " + out_dir +
                                 ": the directory already holds GulpIO files (" + name +
                                 "): export into an empty directory");
    }
  }
  // One snapshot throughout: a writer that commits meanwhile fails the
  // export (and it removes what it wrote) rather than mixing two states.
  const auto reader = std::make_unique<SnapshotReader>(dataset, /*one_transaction=*/false);
  const auto changed = [&] {
    return BusyError("export " + dataset.dir() +
                     ": a writer committed during the export; run it again");
  };
  std::vector<std::pair<uint32_t, index::ChunkRecord>> chunks;
  uint64_t total = 0;
  if (!reader->Chunks(&chunks, &total)) throw changed();
  WrittenFiles files(out_dir);
  ExportReport report;
  EncodeOptions encode;
  encode.quality = options.quality;
  encode.subsampling = Subsampling::k444;
  JpegEncoder& encoder = ThreadLocalEncoder();
  uint64_t done = 0;
  if (options.progress) options.progress(0, total);
  for (const auto& chunk : chunks) {
    const uint32_t n = chunk.first;
    const std::string data_name = GulpioDataFileName(n);
    const std::string meta_name = GulpioMetaFileName(n);
    // Both files are written whole beside their final names and renamed at
    // the end of the chunk; every chunk gets both, an empty one included
    // (GulpIO2 pairs each data*.gulp with a meta*.gmeta).
    util::AtomicFile data(out_dir + "/" + data_name);
    engine::GmetaWriter meta(out_dir + "/" + meta_name);
    uint64_t offset = 0;
    std::string resume = index::OrderKey(n, 0);
    std::vector<Entry> batch;
    do {
      batch.clear();
      if (!reader->Batch(n, &resume, &batch)) throw changed();
      // Decoded and encoded outside any transaction: a long export holds no
      // snapshot that would keep a writer from growing the index.
      for (const Entry& e : batch) {
        // Every packet checked, whatever the dataset was opened with: a
        // damaged one must not come out as a clean-looking JPEG.
        DecodedFrames frames;
        try {
          frames = engine::ReadFramesVerified(dataset, e.id);
        } catch (const Error& err) {
          err.ThrowWithContext("export " + dataset.dir() + " to " + out_dir + ": ");
        }
        std::vector<FrameInfo> infos;
        infos.reserve(frames.size());
        for (size_t i = 0; i < frames.size(); ++i) {
          const ImageShape& shape = frames.shape(i);
          std::string jpeg =
              encoder.Encode(frames.data(i), shape.width, shape.height, shape.channels, encode);
          FrameInfo info;
          info.offset = offset;
          info.pad = static_cast<uint32_t>((4 - jpeg.size() % 4) % 4);
          info.length = static_cast<uint32_t>(jpeg.size()) + info.pad;
          jpeg.append(info.pad, '\0');
          data.Append(jpeg);
          offset += info.length;
          infos.push_back(info);
        }
        meta.Add(e.id, infos, e.meta_data);
        report.frames += frames.size();
        ++report.videos;
        if (options.progress) options.progress(++done, std::max(total, done));
      }
    } while (batch.size() == kExportBatch);
    files.Add(data_name);
    data.Commit();
    files.Add(meta_name);
    meta.Commit();
    report.data_bytes += offset;
    report.bytes_written += util::FileSize(
        util::OpenFile(out_dir + "/" + meta_name, O_RDONLY).get(), out_dir + "/" + meta_name);
    ++report.chunks;
  }
  engine::NamedSplits splits;
  if (!reader->Splits({}, &splits)) throw changed();
  engine::WriteSplitsFile(out_dir, splits);
  report.splits = splits.size();
  if (const engine::ChunkSource* source = engine::ChunkSourceOf(dataset)) {
    source->CopyLabelMap(out_dir + "/label2idx.json");
  } else if (util::PathExists(dataset.dir() + "/label2idx.json")) {
    util::CopyFile(dataset.dir() + "/label2idx.json", out_dir + "/label2idx.json");
  }
  files.Keep();
  return report;
}

}  // namespace

ExportReport ExportGulpioDirectory(const Dataset& dataset, const std::string& out_dir,
                                   const ExportOptions& options) {
  if (dataset.codec() != Codec::kH264) return ExportGmeta(dataset, out_dir);
  if (out_dir.empty()) {
    throw InvalidArgumentError("export " + dataset.dir() +
                               ": an h264 dataset is exported into another directory: give one");
  }
  if (!util::IsDirectory(out_dir)) {
    throw NotFoundError("export " + dataset.dir() + ": no such directory " + out_dir);
  }
  return ExportTranscoded(dataset, out_dir, options);
}

ExportReport ExportGmeta(const Dataset& dataset, const std::string& out_dir_in) {
  if (dataset.codec() == Codec::kH264) {
    throw InvalidArgumentError("export " + dataset.dir() +
                               ": an h264 dataset's chunk files are not GulpIO data files, so "
                               ".gmeta files alone would describe nothing: export it as a whole "
                               "GulpIO directory (ExportGulpioDirectory, gulpdb export -o)");
  }
  const std::string out_dir = out_dir_in.empty() ? dataset.dir() : out_dir_in;
  if (!util::IsDirectory(out_dir)) {
    throw NotFoundError("export " + dataset.dir() + ": no such directory " + out_dir);
  }
  ExportReport report;
  std::vector<Written> written;
  for (int attempt = 0;; ++attempt) {
    if (ExportSnapshot(dataset, out_dir, attempt >= kMaxRestarts, &report, &written)) break;
  }
  if (const engine::ChunkSource* source = engine::ChunkSourceOf(dataset)) {
    source->CopyLabelMap(out_dir + "/label2idx.json");
    return report;
  }
  if (SameDirectory(out_dir, dataset.dir())) RestampMetaFiles(dataset, written);
  const std::string labels = dataset.dir() + "/label2idx.json";
  if (out_dir != dataset.dir() && util::PathExists(labels)) {
    util::CopyFile(labels, out_dir + "/label2idx.json");
  }
  return report;
}

ExportReport ExportVersion(const Dataset& version, const std::string& out_dir) {
  if (version.codec() == Codec::kH264) return ExportGulpioDirectory(version, out_dir);
  if (!util::IsDirectory(out_dir)) {
    throw NotFoundError("export " + version.dir() + ": no such directory " + out_dir);
  }
  if (SameDirectory(out_dir, version.dir())) {
    throw InvalidArgumentError("export a version of " + version.dir() +
                               ": its GulpIO directory goes into another directory (the "
                               "dataset's own .gmeta files describe the live dataset)");
  }
  for (const std::string& name : util::ListDirectory(out_dir)) {
    if (IsGulpioDataFileName(name) || IsGulpioMetaFileName(name)) {
      throw InvalidArgumentError("export " + version.dir() + " to " + out_dir +
                                 ": the directory already holds GulpIO files (" + name +
                                 "): export into an empty directory");
    }
  }
  const ExportReport report = ExportGmeta(version, out_dir);
  // Each data file the .gmeta files name, up to the version's committed
  // length (the live file may have grown since).
  const std::shared_ptr<const engine::IndexSource> index_source = engine::SnapshotOf(version);
  for (const ChunkInfo& chunk : version.Chunks()) {
    const std::string meta =
        IsGulpioDataFileName(chunk.file_name)
            ? "meta" + chunk.file_name.substr(4, chunk.file_name.size() - 9) + ".gmeta"
            : std::string();
    if (meta.empty() || !util::PathExists(out_dir + "/" + meta)) continue;
    // The chunk's file, or (a version of a dataset in a bucket) its object.
    const std::optional<index::ChunkRecord> record = index_source->Chunk(chunk.number);
    if (!record) {
      throw CorruptionError("export " + version.dir() + ": the version lists chunk " +
                            std::to_string(chunk.number) + " but has no record of it");
    }
    const std::shared_ptr<const engine::ChunkBytes> in =
        engine::OpenChunkBytes(version, chunk.number, *record);
    if (in->Size() < chunk.committed_length) {
      throw CorruptionError("export " + version.dir() + ": " + in->name() +
                            " is shorter than the " + std::to_string(chunk.committed_length) +
                            " committed bytes the version names");
    }
    util::AtomicFile out(util::JoinRelative(out_dir, chunk.file_name, "export " + version.dir(),
                                            "the index names the file"));
    std::string block;
    for (uint64_t done = 0; done < chunk.committed_length;) {
      block.resize(static_cast<size_t>(std::min<uint64_t>(chunk.committed_length - done, 1 << 20)));
      in->ReadAt(done, block.data(), block.size());
      out.Append(block);
      done += block.size();
    }
    out.Commit();
  }
  return report;
}

}  // namespace gulpdb
