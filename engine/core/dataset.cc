#include "gulpdb/dataset.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "engine/core/buffer_pool.h"
#include "engine/core/chunk_reader.h"
#include "engine/core/dataset_impl.h"
#include "engine/core/fault_injection.h"
#include "engine/core/gulpio_names.h"
#include "engine/core/h264_read.h"
#include "engine/core/ids_digest.h"
#include "engine/core/journal.h"
#include "engine/core/order_scan.h"
#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "index/seal.h"
#include "util/crc32c.h"
#include "util/path.h"
#include "util/relative_name.h"
#include "util/sys_error.h"
#include "util/test_bug.h"
#include "util/url_text.h"

namespace gulpdb {
namespace {

constexpr size_t kScanBatch = 256;  // videos per read transaction in scans

// Create builds an index in "<index dir>.building.<host>.<pid>.<n>" and
// renames it into place. (The host: on a shared file system another host's
// process ids mean nothing here.)
constexpr const char* kBuildingSuffix = ".building.";
std::atomic<uint64_t> g_builds{0};

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "host";
  std::string host(name);
  for (char& c : host) {
    if (c == '.' || c == '/') c = '_';
  }
  return host;
}

// Removes what creates killed before their rename left beside `index_dir`
// ("<index dir>.building.<host>.<pid>.<n>" of a process of this host that
// no longer runs).
void RemoveAbandonedIndexBuilds(const std::string& index_dir) {
  const std::string parent = util::ParentOf(index_dir);
  std::string base = index_dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const std::string prefix = base.substr(base.rfind('/') + 1) + kBuildingSuffix + HostName() + ".";
  std::vector<std::string> names;
  try {
    names = util::ListDirectory(parent);
  } catch (const Error&) {
    return;
  }
  for (const std::string& name : names) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (end == rest.c_str() || *end != '.' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running
    try {
      util::RemoveFlatDirectory(parent + "/" + name);
    } catch (const Error&) {
    }
  }
}

std::string IndexDir(const std::string& dir, const std::string& override_dir) {
  return override_dir.empty() ? dir + "/" + kIndexDirName : override_dir;
}

// LMDB forbids opening one environment twice in a process (closing either
// would drop the other's locks), so Datasets on the same directory share
// their Env. Entries are per process: a child after fork() opens its own. An
// entry is reused only while data.mdb is still the file it opened: a
// re-index replaces the whole index directory, and the next open must see
// the new index, not the environment of the old one.
std::shared_ptr<index::Env> AcquireEnv(const std::string& index_dir,
                                       const index::EnvOptions& opts) {
  struct Entry {
    std::weak_ptr<index::Env> env;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  static std::mutex mutex;
  static std::map<std::string, Entry> envs;
  char* real = ::realpath(index_dir.c_str(), nullptr);
  if (real == nullptr) util::ThrowErrno("open index", index_dir, errno);
  const std::string key = std::to_string(::getpid()) + ":" + real;
  std::free(real);
  struct stat st {};
  const std::string data_file = index_dir + "/data.mdb";
  const bool have_file = ::stat(data_file.c_str(), &st) == 0;

  std::lock_guard<std::mutex> lock(mutex);
  Entry& entry = envs[key];
  if (auto env = entry.env.lock()) {
    if (!have_file || (entry.dev == st.st_dev && entry.ino == st.st_ino)) {
      if (env->read_only() && !opts.read_only) {
        throw InvalidArgumentError("open " + index_dir +
                                   " for writing: this process has it open read-only; close "
                                   "that Dataset first");
      }
      return env;
    }
  }
  // Open read-write whenever the files allow it, even for a read-only
  // Dataset, so that a later read-write Dataset in this process can share it;
  // read-only Datasets never write through it.
  index::EnvOptions rw = opts;
  rw.read_only = false;
  std::shared_ptr<index::Env> env;
  try {
    env = index::Env::Open(index_dir, rw);
  } catch (const IoError&) {
    if (!opts.read_only) throw;
    env = index::Env::Open(index_dir, opts);  // read-only media or permissions
  }
  if (::stat(data_file.c_str(), &st) == 0) {
    entry.dev = st.st_dev;
    entry.ino = st.st_ino;
  }
  entry.env = env;
  return env;
}

}  // namespace

void JpegFrames::Free::operator()(char* p) const {
  if (p == nullptr) return;
  uint8_t* block = reinterpret_cast<uint8_t*>(p) - engine::kJpegBufferHeader;
  size_t capacity = 0;
  std::memcpy(&capacity, block, sizeof(capacity));
  engine::BufferPool::Get().Give(block, capacity);
}

// ---- ChunkFileCache ----------------------------------------------------------

std::shared_ptr<const engine::ChunkFile> ChunkFileCache::Get(uint32_t chunk) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(chunk);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ChunkFileCache::Put(uint32_t chunk, std::shared_ptr<const engine::ChunkFile> file) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(chunk);
  if (it != map_.end()) {
    it->second->second = std::move(file);
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(chunk, std::move(file));
  map_[chunk] = lru_.begin();
  while (lru_.size() > capacity_) {
    map_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void ChunkFileCache::Clear() const {
  std::lock_guard<std::mutex> lock(mutex_);
  map_.clear();
  lru_.clear();
}

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
      index_dir(IndexDir(dir, options_in.index_dir)),
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
  return index::DecodeChunkRecord(bytes, "chunk " + std::to_string(index::DecodeChunkKey(key)));
}

std::optional<index::VideoRecord> Dataset::Impl::FindRecord(const index::Txn& txn,
                                                            std::string_view id) const {
  std::string_view bytes;
  if (!txn.Get(videos, id, &bytes)) return std::nullopt;
  return index::DecodeVideoRecord(Unseal(id, bytes, RecordKind::kVideo), id);
}

std::string Dataset::Impl::ChunkPath(const std::string& file_name) const {
  return util::JoinRelative(dir, file_name, "use a file of dataset " + dir,
                            "the index names the file");
}

index::ChunkRecord Dataset::Impl::GetChunk(const index::Txn& txn, uint32_t chunk) const {
  std::string_view bytes;
  const std::string what = "chunk " + std::to_string(chunk) + " of " + dir;
  const std::string key = index::ChunkKey(chunk);
  if (!txn.Get(chunks, key, &bytes)) {
    throw CorruptionError("read " + what + ": a video points to a chunk the index lacks");
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

index::ChunkRecord Dataset::Impl::SourceChunk(uint32_t chunk) const {
  std::optional<index::ChunkRecord> record = index_source->Chunk(chunk);
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
  if (index_source) {
    index_source->ScanOrder(from_key, until_key, [&](std::string_view, std::string_view id) {
      std::optional<index::VideoRecord> record = index_source->FindVideo(id);
      if (!record) {
        throw CorruptionError("scan " + dir + ": the order table lists id '" + std::string(id) +
                              "' that has no record");
      }
      return fn(ToVideoInfo(id, std::move(*record)));
    });
    return;
  }
  std::string resume(from_key);
  std::vector<VideoInfo> batch;
  for (;;) {
    batch.clear();
    {
      index::Txn txn = env->BeginRead();
      index::Cursor cursor(txn, order);
      for (bool ok = resume.empty() ? cursor.First() : cursor.Seek(resume);
           ok && batch.size() < kScanBatch; ok = cursor.Next()) {
        if (!until_key.empty() && cursor.key() >= until_key) break;
        const std::string_view id = cursor.value();
        auto record = FindRecord(txn, id);
        if (!record) {
          throw CorruptionError("scan " + dir + ": the order table lists id '" + std::string(id) +
                                "' that has no record");
        }
        batch.push_back(ToVideoInfo(id, std::move(*record)));
        resume = std::string(cursor.key()) + '\0';  // the next key strictly after this one
      }
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
  return util::PathExists(IndexDir(dir, index_dir) + "/data.mdb");
}

std::string engine::IndexDirOf(const std::string& dir, const std::string& index_dir) {
  return IndexDir(dir, index_dir);
}

std::unique_ptr<Dataset> Dataset::Create(const std::string& dir, const CreateOptions& options) {
  return engine::CreateDataset(dir, options, /*allow_gulpio_files=*/false);
}

std::unique_ptr<Dataset> engine::CreateDataset(const std::string& dir, const CreateOptions& options,
                                               bool allow_gulpio_files) {
  if (dir.empty()) throw InvalidArgumentError("create dataset: the directory name is empty");
  if (IsRemoteUrl(dir)) {
    const std::string url = util::RedactUrl(dir);
    throw InvalidArgumentError("create dataset " + url +
                               ": datasets in object storage are read-only; create it locally "
                               "and publish it with `gulpdb push DIR " +
                               url + "`");
  }
  if (const std::string typo = util::S3UrlTypo(util::RedactUrl(dir));
      !typo.empty() && !util::PathExists(dir)) {
    throw InvalidArgumentError("create dataset " + util::RedactUrl(dir) +
                               ": looks like a mistyped S3 URL (" + typo +
                               "); a dataset in object storage is made locally and published "
                               "with `gulpdb push DIR s3://BUCKET/PREFIX`");
  }
  if (options.videos_per_chunk == 0) {
    throw InvalidArgumentError("create dataset " + dir + ": videos_per_chunk must be positive");
  }
  if (options.codec != Codec::kJpeg && options.codec != Codec::kH264) {
    throw InvalidArgumentError("create dataset " + dir + ": unknown codec " +
                               std::to_string(static_cast<unsigned>(options.codec)));
  }
  engine::RequireCodecSupport(options.codec, "create dataset " + dir);
  if (util::MakeDirectory(dir, 0755, "create dataset")) {
    util::SyncDirectory(util::ParentOf(dir));  // the new directory's entry, before what goes in it
  }
  if (!util::IsDirectory(dir)) {
    throw InvalidArgumentError("create dataset " + dir + ": exists and is not a directory");
  }
  if (engine::LocalDatasetExists(dir, options.index_dir)) {
    throw InvalidArgumentError("create dataset " + dir + ": a gulpdb dataset is already there");
  }
  if (!allow_gulpio_files) {
    if (const std::optional<engine::GulpioChunkFiles> pair = engine::FirstGulpioPair(dir)) {
      throw InvalidArgumentError("create dataset " + dir + ": the directory holds GulpIO chunks (" +
                                 pair->data + ", " + pair->meta +
                                 ", ...) that an empty index would hide; run `gulpdb import " +
                                 dir + "` to index them, then open the dataset");
    }
  }
  // The index is built whole beside its place and renamed into it, so that a
  // crash (or a failure) at any point leaves either no index or a complete
  // one: an index directory whose databases were never all made would be a
  // dataset that exists but that no open accepts, and that create refuses.
  std::string index_dir = IndexDir(dir, options.index_dir);
  while (index_dir.size() > 1 && index_dir.back() == '/') index_dir.pop_back();
  RemoveAbandonedIndexBuilds(index_dir);
  const std::string building = index_dir + kBuildingSuffix + HostName() + "." +
                               std::to_string(::getpid()) + "." +
                               std::to_string(g_builds.fetch_add(1));
  struct Building {
    const std::string& path;
    ~Building() {
      try {
        util::RemoveFlatDirectory(path);
      } catch (const Error&) {
      }
    }
  } cleanup{building};
  if (!util::MakeDirectory(building, 0755, "create dataset")) {
    util::ThrowErrno("create dataset", building, EEXIST);
  }
  index::EnvOptions env_options;
  env_options.initial_map_size = options.initial_map_size;
  {
    std::unique_ptr<index::Env> env = index::Env::Open(building, env_options);
    const index::Dbi info_db = env->OpenDb(index::kInfoDb, true);
    for (const char* name : {index::kVideosDb, index::kChunksDb, index::kOrderDb}) {
      env->OpenDb(name, true);
    }
    index::DatasetInfo info;
    info.creator = "gulpdb " GULPDB_VERSION;
    info.uuid = util::RandomUuid();
    info.videos_per_chunk = options.videos_per_chunk;
    info.bytes_per_chunk = options.bytes_per_chunk;
    info.checksums = options.checksums;
    info.codec = static_cast<uint8_t>(options.codec);
    env->Update([&](index::Txn& txn) {
      txn.Put(info_db, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
  }  // closed before it moves
  util::SyncDirectory(building);
  engine::fault::Reached(engine::fault::Point::kIndexBuilt);
  // Over a missing or empty directory only: another process's finished
  // index (a concurrent create) wins and stays.
  if (const int err = util::RenameOrErrno(building, index_dir); err != 0) {
    if (err != ENOTEMPTY && err != EEXIST) {
      util::ThrowErrno("create dataset: move index into place", index_dir, err);
    }
    if (engine::LocalDatasetExists(dir, options.index_dir)) {
      throw InvalidArgumentError("create dataset " + dir + ": a gulpdb dataset is already there");
    }
    std::string names;
    for (const std::string& name : util::ListDirectory(index_dir)) {
      names += (names.empty() ? "" : ", ") + engine::PrintableBytes(name);
    }
    throw InvalidArgumentError("create dataset " + dir + ": the index directory " + index_dir +
                               " holds files but no index (" + names +
                               "); remove it, or choose another directory");
  }
  if (!util::TestBugEnabled("no-dir-sync-create")) util::SyncDirectory(util::ParentOf(index_dir));
  // Kept until Open has shared it, so that the returned Dataset uses the
  // environment opened with options.initial_map_size.
  const std::shared_ptr<index::Env> env = AcquireEnv(index_dir, env_options);
  OpenOptions open_options;
  open_options.read_only = false;
  open_options.index_dir = options.index_dir;
  return OpenLocalDataset(dir, open_options);
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
                        IndexDir(dir, options.index_dir) +
                        ") found; create a dataset or import a GulpIO directory");
  }
  auto impl = std::make_shared<engine::DatasetImpl>(dir, options);
  index::EnvOptions env_options;
  env_options.read_only = options.read_only;
  // Before the index is opened: a journal left by a power cut (journal.h).
  std::optional<util::FileLock> recovery = engine::PrepareJournalRecovery(dir, impl->index_dir);
  std::shared_ptr<index::Env> env = AcquireEnv(impl->index_dir, env_options);
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
  if (impl_->index_source) return impl_->index_source->FindVideo(id).has_value();
  index::Txn txn = impl_->env->BeginRead();
  std::string_view bytes;
  return txn.Get(impl_->videos, id, &bytes);
}

uint64_t Dataset::Count() const {
  if (impl_->index_source) return impl_->index_source->OrderCount();
  index::Txn txn = impl_->env->BeginRead();
  return txn.Count(impl_->videos);
}

uint64_t Dataset::SnapshotId() const {
  // A published index is not written while it is open.
  if (impl_->index_source) return 0;
  return impl_->env->BeginRead().id();
}

std::optional<VideoInfo> Dataset::Find(std::string_view id) const {
  std::optional<index::VideoRecord> record;
  if (impl_->index_source) {
    record = impl_->index_source->FindVideo(id);
  } else {
    index::Txn txn = impl_->env->BeginRead();
    record = impl_->FindRecord(txn, id);
  }
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
  if (impl_->index_source) return static_cast<uint32_t>(Get(id).frames.size());
  index::Txn txn = impl_->env->BeginRead();
  std::string_view bytes;
  if (!txn.Get(impl_->videos, id, &bytes)) {
    throw IdNotFoundError("look up id '" + std::string(id) + "' in " + impl_->dir +
                          ": no such video");
  }
  return index::DecodeFrameCount(impl_->Unseal(id, bytes, Impl::RecordKind::kVideo), id);
}

JpegFrames Dataset::ReadJpegs(std::string_view id, const Selection& selection) const {
  // One pread (or ranged GET) per run of adjacent frames: engine/core/chunk_reader.h.
  return std::move(engine::ReadJpegRequests(*impl_, {engine::JpegRequest{id, &selection}}).front());
}

std::string Dataset::ReadH264Stream(std::string_view id) const {
  return engine::ReadH264StreamOf(*impl_, id);
}

void Dataset::Impl::ScanOrderIds(uint64_t limit,
                                 const std::function<bool(std::string_view id)>& fn) const {
  if (index_source) {
    engine::ScanOrderIds(*index_source, limit, fn);
    return;
  }
  index::Txn txn = env->BeginRead();
  index::Cursor cursor(txn, order);
  uint64_t position = 0;
  for (bool ok = cursor.First(); ok && position < limit && fn(cursor.value()); ok = cursor.Next()) {
    ++position;
  }
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
  return c;
}

// Calls `fn` with every chunk record of one snapshot, in number order.
void ScanChunkRecords(const engine::DatasetImpl& impl,
                      const std::function<void(uint32_t, index::ChunkRecord&&)>& fn) {
  if (impl.index_source) {
    impl.index_source->ScanChunks([&](uint32_t number, const index::ChunkRecord& record) {
      fn(number, index::ChunkRecord(record));
      return true;
    });
    return;
  }
  index::Txn txn = impl.env->BeginRead();
  index::Cursor cursor(txn, impl.chunks);
  for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
    fn(index::DecodeChunkKey(cursor.key()), impl.DecodeChunkAt(cursor.key(), cursor.value()));
  }
}

}  // namespace

std::vector<ChunkInfo> Dataset::Chunks() const {
  std::vector<ChunkInfo> out;
  ScanChunkRecords(*impl_, [&](uint32_t number, index::ChunkRecord&& record) {
    out.push_back(ToChunkInfo(number, std::move(record)));
  });
  return out;
}

DatasetStats Dataset::Stats() const {
  DatasetStats stats;
  index::DatasetInfo info;
  if (impl_->index_source) {
    info = impl_->index_source->info();
    stats.videos = impl_->index_source->OrderCount();
  } else {
    index::Txn txn = impl_->env->BeginRead();
    info = impl_->GetInfo(txn);
    stats.videos = txn.Count(impl_->videos);
  }
  stats.format_version = info.format_version;
  stats.creator = info.creator;
  stats.frames = info.total_frames;
  stats.videos_per_chunk = info.videos_per_chunk;
  stats.bytes_per_chunk = info.bytes_per_chunk;
  stats.checksums = info.checksums;
  stats.uuid = info.uuid;
  stats.codec = static_cast<Codec>(info.codec);
  stats.committed_videos = info.next_seq;  // one sequence number per committed video
  // Every video of the dataset's own chunks was written under its checksums
  // setting; chunks merged in place kept their shard's (counted by Check).
  bool attached = false;
  uint64_t live_chunks = 0;
  ScanChunkRecords(*impl_, [&](uint32_t, index::ChunkRecord&& c) {
    ++stats.chunks;
    stats.committed_bytes += c.committed_length;
    stats.live_bytes += c.live_bytes;
    attached = attached || c.attached();
    if (c.live_videos != 0) ++live_chunks;
  });
  if (!attached) {
    stats.unverified_videos = info.checksums ? 0 : stats.videos;
    stats.unverified_chunks = info.checksums ? 0 : live_chunks;
  }
  stats.garbage_bytes = stats.committed_bytes - stats.live_bytes;
  stats.index_bytes =
      impl_->index_source ? impl_->index_source->IndexBytes() : impl_->env->used_bytes();
  return stats;
}

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
  std::vector<std::string> ids;
  if (impl_->index_source) {
    const engine::IndexSource& source = *impl_->index_source;
    const uint64_t end =
        start + std::min(count, source.OrderCount() - std::min(start, source.OrderCount()));
    ids.reserve(end - start);
    for (uint64_t position = start; position < end; ++position) {
      std::optional<std::string> id = source.OrderAt(position);
      if (!id) break;
      ids.push_back(std::move(*id));
    }
    return ids;
  }
  index::Txn txn = impl_->env->BeginRead();
  const uint64_t total = txn.Count(impl_->order);
  if (start >= total || count == 0) return ids;
  count = std::min(count, total - start);
  ids.reserve(count);
  index::Cursor cursor(txn, impl_->order);
  // Straight to the chunk holding `start`, then a walk inside it. The live
  // counts of the chunk records add up to the order table's size unless the
  // index is damaged (check reports it); then a walk from the first entry.
  bool ok = false;
  const std::shared_ptr<const Impl::OrderStarts> starts = impl_->OrderStartsOf(txn);
  if (starts->total == total) {
    const size_t i =
        static_cast<size_t>(std::upper_bound(starts->first.begin(), starts->first.end(), start) -
                            starts->first.begin() - 1);
    const uint32_t chunk = starts->chunks[i];
    ok = cursor.Seek(index::OrderKey(chunk, 0));
    for (uint64_t skip = start - starts->first[i]; ok && skip > 0; --skip) ok = cursor.Next();
    if (ok && chunk != UINT32_MAX && cursor.key() >= index::OrderKey(chunk + 1, 0)) ok = false;
  }
  if (!ok) {
    ok = cursor.First();
    for (uint64_t skip = start; ok && skip > 0; --skip) ok = cursor.Next();
  }
  for (; ok && ids.size() < count; ok = cursor.Next()) ids.emplace_back(cursor.value());
  return ids;
}

std::vector<uint64_t> Dataset::OrderBlocks() const {
  if (impl_->index_source) return impl_->index_source->OrderBoundaries();
  constexpr uint64_t kLocalOrderBlock = 2048;
  std::vector<uint64_t> blocks{0};
  const uint64_t count = Count();
  for (uint64_t p = kLocalOrderBlock; p < count; p += kLocalOrderBlock) blocks.push_back(p);
  return blocks;
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

std::string Dataset::Uuid() const {
  if (impl_->index_source) return impl_->index_source->info().uuid;
  index::Txn txn = impl_->env->BeginRead();
  return impl_->GetInfo(txn).uuid;
}

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
  impl->source = impl->index_source.get();
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

size_t Dataset::Remove(const std::vector<std::string>& ids) {
  std::unique_ptr<Writer> writer = NewWriter();
  size_t removed = 0;
  for (const std::string& id : ids)
    if (writer->Remove(id)) ++removed;
  writer->CommitLast();
  return removed;
}

// The query room's view of a dataset (engine/query/index_handles.h).
const engine::IndexHandles& engine::IndexOf(const Dataset& dataset) {
  return engine::DatasetAccess::Of(dataset);
}

}  // namespace gulpdb
