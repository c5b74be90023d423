// Publishing (gulpdb/remote.h): Push, a dataset to an object store, and
// PublishSnapshot, a snapshot of its index beside it for readers on a shared
// file system. One Publisher does both against engine/object_store.h; the
// layout it writes is docs/format/remote_format.md.
//
// A push, in order:
//   1. copy the index (one read transaction, compacted: the copy of an
//      unchanged index is the same bytes, so an unchanged dataset publishes
//      nothing) and open the copy: everything below reads that one state;
//   2. GET the published manifest and LIST the prefix;
//   3. upload every chunk object that is new or grew (jobs at a time, large
//      ones in parallel parts). Before replacing an object that a published
//      manifest (or an obsolete entry still in its grace period) promised
//      L bytes of, check that the CRC-32C of the local file's first L bytes
//      is the promised one: a chunk rewritten locally is refused, so no
//      reader of an older manifest ever reads changed bytes;
//   4. write and upload the .gmeta of every chunk whose videos changed, and
//      label2idx.json; empty the .gmeta of chunks that are gone (a GulpIO
//      reader then sees their videos once, in their new chunk);
//   5. upload the snapshot (content-addressed: skipped when present);
//   6. check that nobody published meanwhile, then PUT the manifest's copy
//      for its generation and the manifest itself: the one step that makes
//      the new state visible;
//   7. delete what older pushes made obsolete and whose grace period is over.
// A failure at any step leaves the published manifest, and every byte its
// readers may read, as they were.
#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "engine/dataset_impl.h"
#include "engine/file_util.h"
#include "engine/gmeta.h"
#include "engine/manifest.h"
#include "engine/object_store.h"
#include "engine/obsolete_files.h"
#include "engine/snapshot_cache.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "index/crc32c.h"
#include "remote/payload_hash.h"
#include "remote/s3_config.h"
#include "remote/s3_url.h"

namespace gulpdb {

std::chrono::seconds ParseDuration(std::string_view text) {
  const auto bad = [&](const char* why) {
    return InvalidArgumentError("duration '" + std::string(text) + "': " + why +
                                " (e.g. 3600, 90s, 30m, 24h, 7d)");
  };
  if (text.empty()) throw bad("empty");
  uint64_t value = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (value > (uint64_t{1} << 40)) throw bad("too large");
    value = value * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i == 0) throw bad("not a number");
  const std::string_view unit = text.substr(i);
  uint64_t scale = 1;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else if (unit == "d") {
    scale = 86400;
  } else {
    throw bad("unknown unit");
  }
  return std::chrono::seconds(static_cast<int64_t>(value * scale));
}

std::chrono::seconds DefaultGracePeriod() {
  const char* value = std::getenv("GULPDB_PUSH_GRACE");
  if (value == nullptr || value[0] == '\0') return std::chrono::hours(24);
  try {
    return ParseDuration(value);
  } catch (const InvalidArgumentError& e) {
    e.ThrowWithContext("GULPDB_PUSH_GRACE: ");
  }
}

namespace engine {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Runs fn(0..n-1) on up to `jobs` threads (this one included); rethrows the
// first failure after the others have stopped taking work.
template <typename Fn>
void RunTasks(size_t n, uint32_t jobs, Fn fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr failure;
  const auto worker = [&] {
    while (!failed.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t extra = std::min<size_t>(jobs == 0 ? 1 : jobs, n == 0 ? 1 : n) - 1;
  for (size_t t = 0; t < extra; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

// CRC-32C of the first `length` bytes of the file `path`, and of its first
// `checkpoint` bytes (checkpoint <= length).
struct PrefixCrc {
  uint32_t at_checkpoint = 0;
  uint32_t whole = 0;
};

PrefixCrc CrcOfFile(const std::string& path, uint64_t length, uint64_t checkpoint) {
  UniqueFd fd = OpenFile(path, O_RDONLY);
  std::string block(static_cast<size_t>(std::min<uint64_t>(length, uint64_t{4} << 20)), '\0');
  PrefixCrc out;
  uint32_t crc = 0;
  for (uint64_t done = 0; done < length;) {
    uint64_t want = std::min<uint64_t>(block.size(), length - done);
    if (done < checkpoint) want = std::min(want, checkpoint - done);  // stop at the checkpoint
    const size_t got = PreadFull(fd.get(), block.data(), static_cast<size_t>(want), done, path);
    if (got != want) {
      throw CorruptionError("read " + path + ": the file ends at " + std::to_string(done + got) +
                            ", before its committed length " + std::to_string(length));
    }
    crc = index::Crc32c(block.data(), got, crc);
    done += got;
    if (done == checkpoint) out.at_checkpoint = crc;
  }
  if (checkpoint == 0) out.at_checkpoint = 0;
  out.whole = crc;
  return out;
}

std::string Sha256OfFile(const std::string& path, uint64_t* size) {
  UniqueFd fd = OpenFile(path, O_RDONLY);
  *size = FileSize(fd.get(), path);
  return remote::Sha256HexOfFile(fd.get(), path, 0, *size);
}

// What a published manifest promised about an object's first bytes.
struct Promise {
  uint64_t length = 0;
  std::optional<uint32_t> crc32c;
  std::string from;  // "generation N" or "an obsolete entry kept until ..."
};

class Publisher {
 public:
  Publisher(std::string dir, ObjectStore& store, bool publish_chunks, const PushOptions& options)
      : dir_(std::move(dir)),
        store_(store),
        publish_chunks_(publish_chunks),
        options_(options),
        grace_(options.grace ? *options.grace : DefaultGracePeriod()),
        jobs_(options.jobs == 0 ? 1 : options.jobs) {
    if (grace_.count() < 0) throw InvalidArgumentError("push: the grace period is negative");
  }

  PushReport Run() {
    const auto start = Clock::now();
    now_ = NowUnix();
    TempDir tmp;
    CopyIndex(tmp.path());
    ReadPublished();
    Manifest next;
    next.generation = old_ ? old_->generation + 1 : 1;
    next.created_unix = now_;
    next.creator = "gulpdb " GULPDB_VERSION;
    next.chunks_published = publish_chunks_;
    next.snapshot_key = SnapshotKey(snapshot_sha256_);
    next.snapshot_size = snapshot_size_;
    next.snapshot_sha256 = snapshot_sha256_;
    const DatasetStats stats = snapshot_->Stats();
    next.videos = stats.videos;
    next.frames = stats.frames;
    next.grace_seconds = grace_.count();
    next.chunks = PlanChunks();
    report_.chunks = next.chunks.size();
    if (publish_chunks_) {
      UploadChunks(&next.chunks);
      UploadGmeta(tmp.path(), &next.chunks);
      UploadLabels(&next);
    }
    if (listing_.count(next.snapshot_key) == 0) {
      store_.PutFile(next.snapshot_key, snapshot_file_, snapshot_size_, 0);
      report_.snapshot_uploaded = true;
    }
    report_.snapshot_bytes = snapshot_size_;
    std::vector<std::string> expired;
    next.obsolete = Obsolete(next, &expired);
    if (!old_ || Changed(next) || !expired.empty()) {
      Publish(next);
      report_.published = true;
      report_.generation = next.generation;
      // What older pushes made obsolete and whose grace period is over. The
      // new manifest no longer lists them.
      if (!expired.empty()) {
        store_.Delete(expired);
        report_.objects_deleted = expired.size();
      }
    } else {
      report_.generation = old_->generation;
    }
    report_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return report_;
  }

 private:
  // 1. A consistent, compacted copy of the index, opened as a dataset.
  void CopyIndex(const std::string& tmp) {
    OpenOptions live_options;
    live_options.allow_network_index = true;  // the pusher runs where the dataset is written
    live_options.index_dir = options_.index_dir;
    const std::unique_ptr<Dataset> live = Dataset::Open(dir_, live_options);
    const std::string index_dir = tmp + "/index";
    MakeDirectories(index_dir);
    snapshot_file_ = index_dir + "/data.mdb";
    DatasetAccess::Of(*live).env->CopyTo(snapshot_file_, /*compact=*/true);
    snapshot_sha256_ = Sha256OfFile(snapshot_file_, &snapshot_size_);
    OpenOptions options;
    auto impl = std::make_shared<DatasetImpl>(dir_, options);
    impl->AttachEnv(OpenSnapshotEnv(index_dir));
    snapshot_ = DatasetAccess::Make(std::move(impl));
  }

  // 2. What is published.
  void ReadPublished() {
    try {
      const std::string text = store_.Get(kManifestKey, kMaxManifestBytes);
      old_ = ParseManifest(text, store_.Name(kManifestKey));
    } catch (const NotFoundError&) {
      old_.reset();
    }
    if (old_ && old_->chunks_published != publish_chunks_) {
      throw InvalidArgumentError("push " + dir_ + " to " + store_.url() + ": " +
                                 store_.Name(kManifestKey) + " is the manifest of a " +
                                 (old_->chunks_published ? "pushed dataset" : "local snapshot") +
                                 "; publish to another place");
    }
    for (StoreObject& o : store_.List()) listing_.emplace(o.key, std::move(o));
    if (!old_) return;
    for (const ManifestChunk& c : old_->chunks) old_chunks_.emplace(c.key, c);
    for (const ManifestObsolete& o : old_->obsolete) old_obsolete_.emplace(o.key, o);
  }

  bool Expired(int64_t since) const { return since + grace_.count() <= now_; }

  // The promise an object `key` is under: a chunk of the published manifest,
  // or an obsolete data object whose grace period is not over.
  std::optional<Promise> PromiseFor(const std::string& key) const {
    if (auto it = old_chunks_.find(key); it != old_chunks_.end()) {
      return Promise{it->second.committed_length, it->second.crc32c,
                     "generation " + std::to_string(old_->generation)};
    }
    if (auto it = old_obsolete_.find(key); it != old_obsolete_.end() &&
                                           it->second.committed_length > 0 &&
                                           !Expired(it->second.since_unix)) {
      return Promise{it->second.committed_length, it->second.crc32c,
                     "an older generation; it is kept for its readers until " +
                         IsoTime(it->second.since_unix + grace_.count())};
    }
    return std::nullopt;
  }

  // 3a. Every chunk of the snapshot; which objects need uploading.
  //
  // Keys: a chunk file directly in the dataset directory keeps its name. A
  // chunk in a sub-directory (a shard attached by `merge` or by the
  // distributed ingest) is published as data_<N>.gulp beside meta_<N>.gmeta,
  // so that the bucket is one flat GulpIO directory whose every data file has
  // its .gmeta; it keeps its path only if either name is taken by another
  // chunk's file.
  std::vector<ManifestChunk> PlanChunks() {
    std::vector<ManifestChunk> chunks;
    const std::vector<ChunkInfo> infos = snapshot_->Chunks();
    std::set<std::string> top_level;
    for (const ChunkInfo& c : infos) {
      if (c.file_name.find('/') == std::string::npos) top_level.insert(c.file_name);
      if (!c.meta_file.empty() && c.meta_file.find('/') == std::string::npos) {
        top_level.insert(c.meta_file);
      }
    }
    for (const ChunkInfo& c : infos) {
      if (!IsInsideDataset(c.file_name) ||
          (!c.meta_file.empty() && !IsInsideDataset(c.meta_file))) {
        throw CorruptionError("push " + dir_ + ": chunk " + std::to_string(c.number) +
                              " names a file outside the dataset ('" + c.file_name + "')");
      }
      ManifestChunk m;
      m.number = c.number;
      m.key = c.file_name;
      std::string gmeta_key =
          c.meta_file.empty() ? "meta_" + std::to_string(c.number) + ".gmeta" : c.meta_file;
      if (publish_chunks_ && c.file_name.find('/') != std::string::npos) {
        const std::string data = "data_" + std::to_string(c.number) + ".gulp";
        const std::string meta = "meta_" + std::to_string(c.number) + ".gmeta";
        if (top_level.count(data) == 0 && top_level.count(meta) == 0) {
          m.key = data;
          gmeta_key = meta;
          top_level.insert(data);
          top_level.insert(meta);
        }
      }
      remote::JoinKey("", m.key);  // a key the store accepts
      local_files_[m.key] = c.file_name;
      m.committed_length = c.committed_length;
      m.live_videos = c.live_videos;
      m.live_bytes = c.live_bytes;
      if (publish_chunks_) {
        m.gmeta_key = gmeta_key;
        const auto old = old_chunks_.find(m.key);
        const auto object = listing_.find(m.key);
        const bool unchanged =
            old != old_chunks_.end() && old->second.committed_length == m.committed_length &&
            old->second.crc32c.has_value() && object != listing_.end() &&
            object->second.size == m.committed_length &&
            (object->second.etag.empty() || object->second.etag == old->second.etag);
        if (unchanged) {
          m.etag = old->second.etag;
          m.crc32c = old->second.crc32c;
        } else {
          uploads_.push_back(chunks.size());
        }
      }
      chunks.push_back(std::move(m));
    }
    return chunks;
  }

  // 3b. Uploads new and grown chunk objects, never changing a promised prefix.
  void UploadChunks(std::vector<ManifestChunk>* chunks) {
    uint64_t total = 0;
    for (size_t i : uploads_) total += (*chunks)[i].committed_length;
    std::atomic<uint64_t> done{0};
    std::mutex progress_mutex;
    RunTasks(uploads_.size(), jobs_, [&](size_t k) {
      ManifestChunk& c = (*chunks)[uploads_[k]];
      const std::string path = dir_ + "/" + local_files_.at(c.key);
      const std::optional<Promise> promise = PromiseFor(c.key);
      if (promise && promise->length > c.committed_length) {
        throw CorruptionError(
            "push " + dir_ + " to " + store_.url() + ": chunk " + c.key + " has " +
            std::to_string(c.committed_length) + " committed bytes, but " + promise->from +
            " promised its readers " + std::to_string(promise->length) +
            ": the local chunk was rewritten, and the push will not change bytes those readers "
            "may read; publish to a new prefix");
      }
      const PrefixCrc crc = CrcOfFile(path, c.committed_length, promise ? promise->length : 0);
      if (promise && promise->crc32c && crc.at_checkpoint != *promise->crc32c) {
        throw CorruptionError(
            "push " + dir_ + " to " + store_.url() + ": the first " +
            std::to_string(promise->length) + " bytes of chunk " + c.key + " differ from what " +
            promise->from +
            " published (CRC-32C mismatch): the local chunk was rewritten, and the push will not "
            "change bytes readers of the published dataset may read; publish to a new prefix");
      }
      c.crc32c = crc.whole;
      c.etag = store_.PutFile(c.key, path, c.committed_length, 0);
      const uint64_t now_done = done.fetch_add(c.committed_length) + c.committed_length;
      if (options_.progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        options_.progress(now_done, total);
      }
    });
    report_.chunks_uploaded = uploads_.size();
    report_.bytes_uploaded = total;
  }

  // 4a. The .gmeta of every chunk whose videos changed since the last push.
  void UploadGmeta(const std::string& tmp, std::vector<ManifestChunk>* chunks) {
    const std::string gmeta_dir = tmp + "/gmeta";
    MakeDirectories(gmeta_dir);
    std::vector<size_t> todo;
    for (size_t i = 0; i < chunks->size(); ++i) {
      ManifestChunk& c = (*chunks)[i];
      const auto old = old_chunks_.find(c.key);
      const bool same = old != old_chunks_.end() && old->second.gmeta_key == c.gmeta_key &&
                        !old->second.gmeta_sha256.empty() &&
                        old->second.committed_length == c.committed_length &&
                        old->second.live_videos == c.live_videos &&
                        old->second.live_bytes == c.live_bytes && listing_.count(c.gmeta_key) != 0;
      if (same) {
        c.gmeta_sha256 = old->second.gmeta_sha256;
      } else {
        todo.push_back(i);
      }
    }
    std::atomic<uint64_t> uploaded{0};
    RunTasks(todo.size(), jobs_, [&](size_t k) {
      ManifestChunk& c = (*chunks)[todo[k]];
      const std::string path = gmeta_dir + "/" + std::to_string(c.number) + ".gmeta";
      GmetaWriter writer(path);
      snapshot_->ForEachInChunk(c.number, [&](const VideoInfo& v) {
        writer.Add(v.id, v.frames, v.meta_data);
        return true;
      });
      writer.Commit();
      uint64_t size = 0;
      c.gmeta_sha256 = Sha256OfFile(path, &size);
      const auto old = old_chunks_.find(c.key);
      if (old != old_chunks_.end() && old->second.gmeta_key == c.gmeta_key &&
          old->second.gmeta_sha256 == c.gmeta_sha256 && listing_.count(c.gmeta_key) != 0) {
        return;  // the same text
      }
      store_.PutFile(c.gmeta_key, path, size, 0);
      uploaded.fetch_add(1);
    });
    report_.gmeta_uploaded = uploaded.load();
  }

  // 4b. label2idx.json, when the dataset has one.
  void UploadLabels(Manifest* next) {
    const std::string path = dir_ + "/label2idx.json";
    if (!PathExists(path)) return;
    uint64_t size = 0;
    next->label2idx_key = "label2idx.json";
    next->label2idx_sha256 = Sha256OfFile(path, &size);
    if (old_ && old_->label2idx_sha256 == next->label2idx_sha256 &&
        listing_.count(next->label2idx_key) != 0) {
      return;
    }
    store_.PutFile(next->label2idx_key, path, size, 0);
  }

  // The obsolete list of `next`: the published one without what `next`
  // names again and without what expired (returned in `expired`, to delete
  // after publishing), plus what `next` supersedes now.
  std::vector<ManifestObsolete> Obsolete(const Manifest& next, std::vector<std::string>* expired) {
    std::set<std::string> named = {next.snapshot_key};
    for (const ManifestChunk& c : next.chunks) {
      named.insert(c.key);
      if (!c.gmeta_key.empty()) named.insert(c.gmeta_key);
    }
    if (!next.label2idx_key.empty()) named.insert(next.label2idx_key);
    std::vector<ManifestObsolete> out;
    if (!old_) return out;
    for (const ManifestObsolete& o : old_->obsolete) {
      if (named.count(o.key) != 0) continue;
      if (Expired(o.since_unix)) {
        expired->push_back(o.key);
        if (!o.gmeta_key.empty() && named.count(o.gmeta_key) == 0) expired->push_back(o.gmeta_key);
      } else {
        out.push_back(o);
      }
    }
    // Chunks that are gone (emptied by compaction): their data objects stay
    // for the grace period; their .gmeta is emptied now, so that GulpIO
    // readers see each video once (and every data file keeps its .gmeta).
    for (const ManifestChunk& c : old_->chunks) {
      // A local snapshot's chunks are the dataset's own files, not objects.
      if (named.count(c.key) != 0 || !old_->chunks_published) continue;
      ManifestObsolete o;
      o.key = c.key;
      o.since_unix = now_;
      o.committed_length = c.committed_length;
      o.crc32c = c.crc32c;
      if (!c.gmeta_key.empty() && named.count(c.gmeta_key) == 0) {
        o.gmeta_key = c.gmeta_key;
        if (listing_.count(c.gmeta_key) != 0) store_.Put(c.gmeta_key, "{}");
      }
      out.push_back(std::move(o));
      ++removed_chunks_;
    }
    const auto supersede = [&](const std::string& key) {
      if (named.count(key) != 0) return;
      ManifestObsolete o;
      o.key = key;
      o.since_unix = now_;
      out.push_back(std::move(o));
    };
    supersede(old_->snapshot_key);
    if (!old_->label2idx_key.empty()) supersede(old_->label2idx_key);
    report_.objects_obsoleted = removed_chunks_ + (named.count(old_->snapshot_key) == 0 ? 1 : 0);
    return out;
  }

  // Whether `next` says anything the published manifest does not.
  bool Changed(const Manifest& next) const {
    if (next.snapshot_sha256 != old_->snapshot_sha256 || removed_chunks_ != 0) return true;
    if (next.chunks.size() != old_->chunks.size()) return true;
    for (size_t i = 0; i < next.chunks.size(); ++i) {
      const ManifestChunk& a = next.chunks[i];
      const ManifestChunk& b = old_->chunks[i];
      if (a.key != b.key || a.committed_length != b.committed_length || a.etag != b.etag ||
          a.crc32c != b.crc32c || a.gmeta_key != b.gmeta_key || a.gmeta_sha256 != b.gmeta_sha256) {
        return true;
      }
    }
    return next.label2idx_sha256 != old_->label2idx_sha256 ||
           next.grace_seconds != old_->grace_seconds;
  }

  // 6. The manifest, last.
  void Publish(Manifest& next) {
    // One pusher at a time: refuse to overwrite a generation published while
    // this push ran (the window left is the two PUTs below).
    std::optional<uint64_t> current;
    try {
      current =
          ParseManifest(store_.Get(kManifestKey, kMaxManifestBytes), store_.Name(kManifestKey))
              .generation;
    } catch (const NotFoundError&) {
    }
    const std::optional<uint64_t> expected =
        old_ ? std::optional<uint64_t>(old_->generation) : std::nullopt;
    if (current != expected) {
      throw BusyError("push " + dir_ + " to " + store_.url() + ": another push published " +
                      (current ? "generation " + std::to_string(*current) : "a change") +
                      " while this one ran; run it again");
    }
    if (old_) {
      ManifestObsolete o;  // the previous generation's copy, for pinned readers
      o.key = ManifestHistoryKey(old_->generation);
      o.since_unix = now_;
      next.obsolete.push_back(std::move(o));
    }
    const std::string text = SerializeManifest(next);
    store_.Put(ManifestHistoryKey(next.generation), text);
    store_.Put(kManifestKey, text);
  }

  std::string dir_;
  ObjectStore& store_;
  bool publish_chunks_;
  const PushOptions& options_;
  std::chrono::seconds grace_;
  uint32_t jobs_;
  int64_t now_ = 0;

  std::string snapshot_file_;
  std::string snapshot_sha256_;
  uint64_t snapshot_size_ = 0;
  std::unique_ptr<Dataset> snapshot_;

  std::optional<Manifest> old_;
  std::map<std::string, ManifestChunk> old_chunks_;
  std::map<std::string, ManifestObsolete> old_obsolete_;
  std::map<std::string, StoreObject> listing_;
  std::vector<size_t> uploads_;                     // indices into the new chunk list
  std::map<std::string, std::string> local_files_;  // chunk key -> its file in the dataset
  uint64_t removed_chunks_ = 0;
  PushReport report_;
};

void RequireLocalDataset(const std::string& dir, const char* operation) {
  if (IsRemoteUrl(dir)) {
    throw InvalidArgumentError(std::string(operation) + " " + dir +
                               ": the dataset to publish must be a local directory");
  }
  if (!IsDirectory(dir))
    throw NotFoundError(std::string(operation) + " " + dir + ": no such directory");
}

}  // namespace
}  // namespace engine

PushReport Push(const std::string& dir, const std::string& url, const PushOptions& options) {
  engine::RequireLocalDataset(dir, "push");
  if (!IsRemoteUrl(url)) {
    throw InvalidArgumentError("push " + dir + " to '" + url +
                               "': the destination must be an s3://bucket/prefix URL");
  }
  std::unique_ptr<engine::ObjectStore> store =
      engine::OpenS3Store(url, remote::S3Config::FromEnvironment());
  return engine::Publisher(dir, *store, /*publish_chunks=*/true, options).Run();
}

PushReport PublishSnapshot(const std::string& dir, const PushOptions& options) {
  engine::RequireLocalDataset(dir, "snapshot");
  std::unique_ptr<engine::ObjectStore> store =
      engine::OpenLocalStore(dir + "/" + engine::kLocalSnapshotStore);
  return engine::Publisher(dir, *store, /*publish_chunks=*/false, options).Run();
}

}  // namespace gulpdb
