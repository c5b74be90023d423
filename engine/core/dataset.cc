// The storage core's hub (dataset_impl.h, Dataset::Impl: its index
// handles and records) and Dataset's lookup API: ids, records, chunks,
// stats, positions and walks, each answered on one snapshot of the index
// (lmdb_snapshot.h, ReadSnapshot), whatever the index is; opening a local
// dataset or one on an index source. Creating one is dataset_create.cc, the
// registry of open environments env_registry.h, the reads of frames
// decoded_read.cc and the calls about meta and splits dataset_query.cc.
#include "gulpdb/dataset.h"

#include <sys/resource.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/env_registry.h"
#include "engine/core/ids_digest.h"
#include "engine/core/journal.h"
#include "engine/core/lmdb_snapshot.h"
#include "engine/core/order_scan.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "index/seal.h"
#include "util/file_io.h"
#include "util/relative_name.h"
#include "util/test_bug.h"
#include "util/url_text.h"

namespace gulpdb {
namespace {

constexpr size_t kScanBatch = 256;  // videos per read transaction in scans

}  // namespace

// ---- Dataset::Impl -------------------------------------------------------------

namespace {

size_t OpenFileBudget(size_t asked) {
  if (asked != 0) return asked;
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1024;
  return std::clamp<size_t>(static_cast<size_t>(limit.rlim_cur) / 2, 64, 4096);
}

}  // namespace

Dataset::Impl::Impl(std::string dir_in, const OpenOptions& options_in)
    : engine::IndexHandles(std::move(dir_in)),
      index_dir(engine::IndexDirOf(dir, options_in.index_dir)),
      options(options_in),
      files(OpenFileBudget(options_in.max_open_chunk_files)) {
  // (GULPDB_TEST_BUG=unverified-reads: local reads check no CRC unless
  // asked, as before; the command never asked.)
  if (util::TestBugEnabled("unverified-reads")) options.verify_checksums = false;
}

void Dataset::Impl::PutVideo(index::Txn& txn, std::string_view id,
                             const index::VideoRecord& record) const {
  txn.Put(videos, id, Seal(id, index::EncodeVideoRecord(record)));
}

void Dataset::Impl::PutChunk(index::Txn& txn, uint32_t chunk,
                             const index::ChunkRecord& record) const {
  const std::string key = index::ChunkKey(chunk);
  txn.Put(chunks, key, Seal(key, index::EncodeChunkRecord(record)));
}

index::ChunkRecord Dataset::Impl::DecodeChunkAt(std::string_view key,
                                                std::string_view value) const {
  const std::string_view bytes = Unseal(key, value, RecordKind::kChunk);
  return index::DecodeChunkRecord(bytes, std::to_string(index::DecodeChunkKey(key)) + " of " + dir);
}

std::optional<index::VideoRecord> Dataset::Impl::FindRecord(const index::Txn& txn,
                                                            std::string_view id) const {
  std::string_view bytes;
  if (!txn.Get(videos, id, &bytes)) return std::nullopt;
  return index::DecodeVideoRecord(Unseal(id, bytes, RecordKind::kVideo), id);
}

std::string Dataset::Impl::ChunkPath(const std::string& file_name) const {
  std::string path = util::JoinRelative(dir, file_name, "use a file of dataset " + dir,
                                        "the index names the file");
  // Chunk numbers are never reused, so a file compaction moved out of `dir`
  // for the tags holds the bytes a version's record names.
  if (!retained_chunks.empty() && !util::PathExists(path)) {
    std::string kept = util::JoinRelative(
        retained_chunks, file_name, "use a file of dataset " + dir, "the index names the file");
    if (util::PathExists(kept)) return kept;
  }
  return path;
}

index::ChunkRecord Dataset::Impl::GetChunk(const index::Txn& txn, uint32_t chunk) const {
  std::string_view bytes;
  const std::string what = std::to_string(chunk) + " of " + dir;
  const std::string key = index::ChunkKey(chunk);
  if (!txn.Get(chunks, key, &bytes)) {
    throw CorruptionError("read chunk " + what + ": a video points to a chunk the index lacks");
  }
  return index::DecodeChunkRecord(Unseal(key, bytes, RecordKind::kChunk), what);
}

index::DatasetInfo Dataset::Impl::GetInfo(const index::Txn& txn) const {
  std::string_view bytes;
  if (!txn.Get(info, index::kDatasetInfoKey, &bytes)) {
    throw CorruptionError("read dataset info of " + dir + ": the record is missing");
  }
  return index::DecodeDatasetInfo(bytes, dir);
}

std::shared_ptr<const engine::ChunkFile> Dataset::Impl::ChunkForRead(const index::Txn& txn,
                                                                     uint32_t chunk) const {
  return ChunkForRead(chunk, [&] { return GetChunk(txn, chunk); });
}

std::shared_ptr<const engine::ChunkFile> Dataset::Impl::ChunkForRead(
    uint32_t chunk, const std::function<index::ChunkRecord()>& record) const {
  if (auto file = files.Get(chunk)) return file;
  auto file = std::make_shared<const engine::ChunkFile>(ChunkPath(record().file_name),
                                                        engine::ChunkFile::Mode::kRead);
  files.Put(chunk, file);
  return file;
}

index::ChunkRecord Dataset::Impl::ChunkOf(const engine::IndexSource& snapshot,
                                          uint32_t chunk) const {
  std::optional<index::ChunkRecord> record = snapshot.Chunk(chunk);
  if (!record) {
    throw CorruptionError("read chunk " + std::to_string(chunk) + " of " + dir +
                          ": a video points to a chunk the index lacks");
  }
  return std::move(*record);
}

VideoInfo Dataset::Impl::ToVideoInfo(std::string_view id, index::VideoRecord&& record) const {
  VideoInfo video;
  video.id = std::string(id);
  video.chunk = record.chunk;
  video.seq = record.seq;
  video.frames = std::move(record.frames);
  video.checksums = std::move(record.crc32c);
  video.meta_data = std::move(record.meta_data);
  video.keyframes = std::move(record.keyframes);
  return video;
}

void Dataset::Impl::ScanOrder(std::string_view from_key, std::string_view until_key,
                              const std::function<bool(const VideoInfo&)>& fn) const {
  // A snapshot per batch: `fn` runs with none held.
  std::string resume(from_key);
  std::vector<VideoInfo> batch;
  for (;;) {
    batch.clear();
    {
      const engine::ReadSnapshot snapshot(*this);
      const std::string from = resume;  // the walk moves `resume` on
      snapshot->ScanOrder(from, until_key, [&](std::string_view key, std::string_view id) {
        std::optional<index::VideoRecord> record = snapshot->FindVideo(id);
        if (!record) {
          throw CorruptionError("scan " + dir + ": the order table lists id '" + std::string(id) +
                                "' that has no record");
        }
        batch.push_back(ToVideoInfo(id, std::move(*record)));
        resume = std::string(key) + '\0';  // the next key strictly after this one
        return batch.size() < kScanBatch;
      });
    }
    for (const VideoInfo& video : batch) {
      if (!fn(video)) return;
    }
    if (batch.size() < kScanBatch) return;
  }
}

// Public (gulpdb/remote.h), here because Create and the front door ask it
// before anything of the remote room runs.
bool IsRemoteUrl(std::string_view path) { return util::IsS3Url(path); }

// ---- Dataset -------------------------------------------------------------------

Dataset::Dataset(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dataset::~Dataset() = default;

bool engine::LocalDatasetExists(const std::string& dir, const std::string& index_dir) {
  return util::PathExists(IndexDirOf(dir, index_dir) + "/data.mdb");
}

std::string engine::IndexDirOf(const std::string& dir, const std::string& index_dir) {
  return IndexDirectory(dir, index_dir);
}

index::DatasetInfo Dataset::Impl::AttachEnv(std::shared_ptr<index::Env> env_in) {
  env = std::move(env_in);
  // Create() makes every database, so an index file without them is damaged:
  // say so (creating them empty would hide every video).
  try {
    videos = env->OpenDb(index::kVideosDb, false);
    chunks = env->OpenDb(index::kChunksDb, false);
    order = env->OpenDb(index::kOrderDb, false);
    info = env->OpenDb(index::kInfoDb, false);
  } catch (const NotFoundError& e) {
    throw CorruptionError("open dataset " + dir + ": the index " + env->path() + " is damaged (" +
                          e.what() + "); run `gulpdb check " + dir + "`");
  }
  index::Txn txn = env->BeginRead();
  index::DatasetInfo info_record = GetInfo(txn);  // also verifies it
  sealed = info_record.format_version >= index::kFirstSealedFormat;
  codec = static_cast<Codec>(info_record.codec);
  engine::RequireCodecSupport(codec, "open dataset " + dir);
  return info_record;
}

std::unique_ptr<Dataset> engine::OpenLocalDataset(const std::string& dir,
                                                  const OpenOptions& options,
                                                  index::DatasetInfo* info_out) {
  if (!engine::LocalDatasetExists(dir, options.index_dir)) {
    throw NotFoundError("open dataset " + dir + ": no gulpdb index (" +
                        engine::IndexDirOf(dir, options.index_dir) +
                        ") found; create a dataset or import a GulpIO directory");
  }
  auto impl = std::make_shared<engine::DatasetImpl>(dir, options);
  index::EnvOptions env_options;
  env_options.read_only = options.read_only;
  // Before the index is opened: a journal left by a power cut (journal.h).
  std::optional<util::FileLock> recovery = engine::PrepareJournalRecovery(dir, impl->index_dir);
  std::shared_ptr<index::Env> env = engine::AcquireEnv(impl->index_dir, env_options);
  if (options.verify_index) {
    const index::IndexFileReport report = env->VerifyFile();
    if (!report.healthy()) {
      throw CorruptionError("open dataset " + dir +
                            ": the index is damaged: " + report.problems[0] +
                            (report.problems.size() > 1
                                 ? " (and " + std::to_string(report.problems.size() - 1) + " more)"
                                 : std::string()));
    }
  }
  index::DatasetInfo info = impl->AttachEnv(std::move(env));
  if (recovery) {
    engine::DatasetAccess::ReplayJournal(impl, std::move(*recovery));
    index::Txn txn = impl->env->BeginRead();
    info = impl->GetInfo(txn);
  }
  if (info_out != nullptr) *info_out = info;
  return engine::DatasetAccess::Make(std::move(impl));
}

const std::string& Dataset::dir() const { return impl_->dir; }
bool Dataset::read_only() const { return impl_->options.read_only; }
Codec Dataset::codec() const { return impl_->codec; }

const char* CodecName(Codec codec) {
  switch (codec) {
    case Codec::kJpeg:
      return "jpeg";
    case Codec::kH264:
      return "h264";
  }
  return "unknown";
}

std::optional<Codec> CodecFromName(std::string_view name) {
  if (name == "jpeg") return Codec::kJpeg;
  if (name == "h264") return Codec::kH264;
  return std::nullopt;
}

bool CodecSupported(Codec codec) {
#ifdef GULPDB_HAVE_H264
  return codec == Codec::kJpeg || codec == Codec::kH264;
#else
  return codec == Codec::kJpeg;
#endif
}

void engine::RequireCodecSupport(Codec codec, const std::string& operation) {
#ifndef GULPDB_HAVE_H264
  if (codec == Codec::kH264) {
    throw InvalidArgumentError(operation +
                               ": the dataset's codec is h264 and this build of gulpdb has no "
                               "H.264 support (build with -DGULPDB_WITH_H264=ON)");
  }
#else
  (void)codec;
  (void)operation;
#endif
}

bool Dataset::Contains(std::string_view id) const {
  return engine::ReadSnapshot(*impl_)->HasVideo(id);
}

uint64_t Dataset::Count() const { return engine::ReadSnapshot(*impl_)->VideoCount(); }

uint64_t Dataset::SnapshotId() const { return engine::ReadSnapshot(*impl_)->SnapshotId(); }

std::optional<VideoInfo> Dataset::Find(std::string_view id) const {
  std::optional<index::VideoRecord> record = engine::ReadSnapshot(*impl_)->FindVideo(id);
  if (!record) return std::nullopt;
  return impl_->ToVideoInfo(id, std::move(*record));
}

VideoInfo Dataset::Get(std::string_view id) const {
  std::optional<VideoInfo> info = Find(id);
  if (!info) {
    throw IdNotFoundError("look up id '" + std::string(id) + "' in " + impl_->dir +
                          ": no such video");
  }
  return std::move(*info);
}

uint32_t Dataset::FrameCount(std::string_view id) const {
  const std::optional<uint32_t> count = engine::ReadSnapshot(*impl_)->FrameCount(id);
  if (!count) {
    throw IdNotFoundError("look up id '" + std::string(id) + "' in " + impl_->dir +
                          ": no such video");
  }
  return *count;
}

void Dataset::Impl::ScanOrderIds(uint64_t limit,
                                 const std::function<bool(std::string_view id)>& fn) const {
  engine::ScanOrderIds(*engine::ReadSnapshot(*this), limit, fn);
}

std::vector<std::string> Dataset::Ids() const {
  std::vector<std::string> ids;
  ids.reserve(Count());
  impl_->ScanOrderIds(UINT64_MAX, [&](std::string_view id) {
    ids.emplace_back(id);
    return true;
  });
  return ids;
}

void Dataset::ForEach(const std::function<bool(const VideoInfo&)>& fn) const {
  impl_->ScanOrder({}, {}, fn);
}

void Dataset::ForEachInChunk(uint32_t chunk,
                             const std::function<bool(const VideoInfo&)>& fn) const {
  const std::string until = chunk == UINT32_MAX ? std::string() : index::OrderKey(chunk + 1, 0);
  impl_->ScanOrder(index::OrderKey(chunk, 0), until, fn);
}

namespace {

ChunkInfo ToChunkInfo(uint32_t number, index::ChunkRecord&& r) {
  ChunkInfo c;
  c.number = number;
  c.file_name = std::move(r.file_name);
  c.committed_length = r.committed_length;
  c.appended_videos = r.appended_videos;
  c.live_videos = r.live_videos;
  c.live_bytes = r.live_bytes;
  c.full = r.state == index::ChunkState::kFull;
  c.meta_file = std::move(r.meta_file);
  c.owner = std::move(r.owner);
  c.meta_edits = r.meta_edits;
  return c;
}

}  // namespace

std::vector<ChunkInfo> Dataset::Chunks() const {
  std::vector<ChunkInfo> out;
  engine::ReadSnapshot(*impl_)->ScanChunks([&](uint32_t number, const index::ChunkRecord& record) {
    out.push_back(ToChunkInfo(number, index::ChunkRecord(record)));
    return true;
  });
  return out;
}

DatasetStats Dataset::Stats() const { return engine::SnapshotStats(*engine::ReadSnapshot(*impl_)); }

// ---- Positional access ---------------------------------------------------------

std::shared_ptr<const Dataset::Impl::OrderStarts> Dataset::Impl::OrderStartsOf(
    index::Txn& txn) const {
  {
    std::lock_guard<std::mutex> lock(order_starts_mutex_);
    if (order_starts_ && order_starts_->txn_id == txn.id()) return order_starts_;
  }
  auto starts = std::make_shared<OrderStarts>();
  starts->txn_id = txn.id();
  index::Cursor cursor(txn, chunks);
  for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
    const index::ChunkRecord record = DecodeChunkAt(cursor.key(), cursor.value());
    if (record.live_videos == 0) continue;
    starts->chunks.push_back(index::DecodeChunkKey(cursor.key()));
    starts->first.push_back(starts->total);
    starts->total += record.live_videos;
  }
  std::lock_guard<std::mutex> lock(order_starts_mutex_);
  order_starts_ = starts;
  return starts;
}

std::string Dataset::IdAt(uint64_t position) const {
  std::vector<std::string> ids = IdsAt(position, 1);
  if (ids.empty()) {
    throw OutOfRangeError("read position " + std::to_string(position) + " of " + impl_->dir +
                          ": past the end (" + std::to_string(Count()) + " videos)");
  }
  return std::move(ids.front());
}

std::vector<std::string> Dataset::IdsAt(uint64_t start, uint64_t count) const {
  return engine::ReadSnapshot(*impl_)->OrderRange(start, count);
}

std::vector<uint64_t> Dataset::OrderBlocks() const {
  return engine::ReadSnapshot(*impl_)->OrderBoundaries();
}

std::string Dataset::IdsDigest(uint64_t count) const {
  engine::IdsDigester digest;
  impl_->ScanOrderIds(count, [&](std::string_view id) {
    digest.Add(id);
    return true;
  });
  if (digest.count() < count) {
    throw OutOfRangeError("digest the first " + std::to_string(count) + " ids of " + impl_->dir +
                          ": past the end (" + std::to_string(digest.count()) + " videos)");
  }
  return digest.FinishHex();
}

std::string Dataset::Uuid() const { return engine::ReadSnapshot(*impl_)->info().uuid; }

// ---- Datasets on an index source ----------------------------------------------------

std::unique_ptr<Dataset> engine::OpenOnIndexSource(const std::string& name,
                                                   const OpenOptions& options,
                                                   std::shared_ptr<const IndexSource> index,
                                                   std::shared_ptr<const ChunkSource> source) {
  if (!index) throw InvalidArgumentError("open dataset " + name + ": no index source");
  OpenOptions read_only = options;
  read_only.read_only = true;
  auto impl = std::make_shared<engine::DatasetImpl>(name, read_only);
  impl->index_source = std::move(index);
  impl->remote = std::move(source);
  const index::DatasetInfo& info = impl->index_source->info();
  impl->sealed = info.format_version >= index::kFirstSealedFormat;
  // As AttachEnv: the codec decides how frames are read (h264 packets read
  // as JPEG would be an error at best).
  impl->codec = static_cast<Codec>(info.codec);
  engine::RequireCodecSupport(impl->codec, "open dataset " + name);
  return engine::DatasetAccess::Make(std::move(impl));
}

const engine::IndexSource* engine::IndexSourceOf(const Dataset& dataset) {
  return engine::DatasetAccess::Of(dataset).index_source.get();
}

// The query room's view of a dataset (engine/query/index_handles.h).
const engine::IndexHandles& engine::IndexOf(const Dataset& dataset) {
  return engine::DatasetAccess::Of(dataset);
}

}  // namespace gulpdb
