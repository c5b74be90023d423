#include "engine/remote/partition_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/remote/manifest.h"
#include "engine/remote/verified_fetch.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "util/env.h"
#include "util/file_io.h"
#include "util/hex.h"
#include "util/sha256.h"

namespace gulpdb::engine {
namespace {

// Marks a partition as used now (LRU order). Best effort.
void Touch(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

// ---- small objects: roots and chunk pages ---------------------------------------

// CacheDirectory()/objects/<sha256>: a root or a chunk page (content-
// addressed like partitions), kept so that re-opening a dataset does not GET
// them again. They are small (a page is at most ~80 kB; a root 26 kB per
// 10^5 videos) and not counted in GULPDB_CACHE_BYTES; at most kKeptObjects
// are kept (a 10^7-video dataset has ~400 chunk pages), the least
// recently used deleted first. Each is verified
// (size, SHA-256) on every use; one that fails is removed and fetched again.
constexpr size_t kKeptObjects = 1024;

std::string ObjectCacheDirectory() { return CacheDirectory() + "/objects"; }

// The cached object named `sha256` of `size` bytes, or nullopt (not cached,
// or damaged: then removed). Never throws: the cache is only a cache.
std::optional<std::string> CachedObject(const std::string& sha256, uint64_t size) noexcept {
  try {
    const std::string path = ObjectCacheDirectory() + "/" + sha256;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == size) {
      std::string bytes = util::ReadFile(path);
      if (bytes.size() == size && util::Sha256Hex(bytes) == sha256) {
        Touch(path);
        return bytes;
      }
    }
    util::RemoveFileQuietly(path);
  } catch (...) {
  }
  return std::nullopt;
}

}  // namespace

// Keeps `bytes` (verified: their SHA-256 is `sha256`) in the cache, then
// deletes the least recently used objects past kKeptObjects. Best effort.
void KeepObject(const std::string& sha256, std::string_view bytes) noexcept {
  try {
    const std::string dir = ObjectCacheDirectory();
    util::MakeDirectories(dir);
    util::WriteFileAtomically(dir + "/" + sha256, bytes);
    std::vector<std::pair<int64_t, std::string>> kept;  // (last use, name)
    for (const std::string& name : util::ListDirectory(dir)) {
      struct stat st {};
      if (!util::IsSha256Hex(name) || ::stat((dir + "/" + name).c_str(), &st) != 0) continue;
      kept.emplace_back(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                        name);
    }
    if (kept.size() <= kKeptObjects) return;
    std::sort(kept.begin(), kept.end());
    for (size_t i = 0; i + kKeptObjects < kept.size(); ++i) {
      if (kept[i].second != sha256) util::RemoveFileQuietly(dir + "/" + kept[i].second);
    }
  } catch (...) {
  }
}

namespace {

// An open descriptor of `path` holding a shared flock, or an invalid one
// when there is no such file (or it was evicted or set aside meanwhile: the
// descriptor must still be the file under the name once the lock is held).
util::UniqueFd Lease(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return util::UniqueFd();
  util::UniqueFd owner(fd);
  while (::flock(fd, LOCK_SH) != 0) {
    if (errno != EINTR) return util::UniqueFd();
  }
  struct stat held {
  }, named{};
  if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &named) != 0 || held.st_dev != named.st_dev ||
      held.st_ino != named.st_ino) {
    return util::UniqueFd();
  }
  return owner;
}

// "" when the file is the partition `entry` names; what is wrong otherwise.
std::string Problem(const std::string& path, const index::PartitionEntry& entry) {
  try {
    VerifyPartitionFile(path, entry);
  } catch (const CorruptionError& e) {
    return e.what();
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

// Removes downloads left by processes that are gone.
void RemoveDeadDownloads(const std::string& dir) {
  for (const std::string& name : util::ListDirectory(dir)) {
    if (!IsDownloadName(name) && !IsDamagedName(name)) continue;
    const long pid = std::strtol(name.c_str() + name.find('.', 1) + 1, nullptr, 10);
    if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) == 0) continue;
    if (pid == ::getpid() && IsDownloadName(name)) continue;  // another thread's
    util::RemoveFileQuietly(dir + "/" + name);
  }
}

// The shared locks one reader holds, released when the last copy of its
// fetch function goes.
class Leases {
 public:
  explicit Leases(std::string dir) : dir_(std::move(dir)) {}
  ~Leases() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_.clear();
    }
    uint64_t bound = 0;
    try {
      bound = CacheBytesBound();
    } catch (const Error&) {
      return;
    }
    if (bound != 0) EvictPartitions(dir_, bound);
  }
  Leases(const Leases&) = delete;
  Leases& operator=(const Leases&) = delete;

  bool Held(const std::string& sha256) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = held_.find(sha256);
    if (it == held_.end()) return false;
    it->second.used = ++clock_;
    return true;
  }
  // Keeps at most kMaxLeases: a reader that walks every partition of a
  // large snapshot (a publisher's diff, `check`) would otherwise hold a
  // descriptor per partition (17,600 at 10^7 videos: past the process's
  // limit). A partition whose lease is dropped may be evicted while the
  // reader still has it open, which keeps reading the unlinked file.
  void Add(const std::string& sha256, util::UniqueFd fd) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_[sha256] = Lease{std::move(fd), ++clock_};
    while (held_.size() > kMaxLeases) {
      auto oldest = held_.begin();
      for (auto it = held_.begin(); it != held_.end(); ++it) {
        if (it->second.used < oldest->second.used) oldest = it;
      }
      held_.erase(oldest);
    }
  }

 private:
  static constexpr size_t kMaxLeases = 256;
  struct Lease {
    util::UniqueFd fd;
    uint64_t used = 0;
  };
  const std::string dir_;
  mutable std::mutex mutex_;
  mutable uint64_t clock_ = 0;
  mutable std::map<std::string, Lease> held_;
};

class Fetcher {
 public:
  Fetcher(std::shared_ptr<ObjectStore> store, std::string what, std::chrono::milliseconds lock_wait,
          std::shared_ptr<PartitionCacheCounters> counters, std::optional<BadObjectScope> remember)
      : store_(std::move(store)),
        what_(std::move(what)),
        lock_wait_(lock_wait),
        counters_(counters ? std::move(counters) : std::make_shared<PartitionCacheCounters>()),
        remember_(std::move(remember)),
        dir_(PartitionCacheDirectory()),
        leases_(std::make_shared<Leases>(dir_)) {}

  // `entry` comes from a verified root or root page.
  std::string operator()(const index::PartitionEntry& entry) const {
    const std::string& sha256 = entry.sha256;
    if (!util::IsSha256Hex(sha256)) {
      throw CorruptionError(what_ + ": fetch partition '" + sha256 + "': not a SHA-256 name");
    }
    const std::string path = dir_ + "/" + sha256;
    if (leases_->Held(sha256)) {
      Touch(path);
      return path;
    }
    // The fast path: cached, and still the partition the root names.
    std::string damage;
    if (util::UniqueFd fd = Lease(path); fd.valid()) {
      damage = Problem(path, entry);
      if (damage.empty()) return Use(sha256, path, std::move(fd));
    }
    // Found damaged in the bucket before: no download, no wait for the lock.
    const NamedObject object = Named(entry);
    ThrowIfKnownBad(Remembering(), object);
    util::MakeDirectories(dir_);
    const std::string lock_path = dir_ + "/.lock." + sha256.substr(0, 2);
    std::optional<util::FileLock> lock;
    try {
      lock.emplace(lock_path, lock_wait_, store_->Name(PartitionKey(sha256)));
    } catch (const BusyError&) {
      throw BusyError(what_ + ": another process has been downloading partition " + sha256 +
                      " into " + dir_ + " for more than " +
                      std::to_string(lock_wait_.count() / 1000) + " s");
    }
    // Another process may have fetched (or repaired) it meanwhile.
    if (util::UniqueFd fd = Lease(path); fd.valid()) {
      damage = Problem(path, entry);
      if (damage.empty()) return Use(sha256, path, std::move(fd));
      // Damaged: out of the way (readers that hold it keep their copy).
      const std::string aside = dir_ + "/.damaged." + util::UniqueFileSuffix();
      util::Rename(path, aside);
      util::RemoveFileQuietly(aside);
    }
    RemoveDeadDownloads(dir_);
    util::UniqueFd fd;
    try {
      fd = Download(entry, object, path);
    } catch (const Error& e) {
      if (damage.empty()) throw;
      throw CorruptionError(what_ + ": the cached partition " + path + " is damaged (" + damage +
                            "); it was removed, and fetching it again failed: " + e.what());
    }
    lock.reset();
    counters_->downloads.fetch_add(1);
    counters_->bytes.fetch_add(entry.size);
    std::string out = Use(sha256, path, std::move(fd));
    if (const uint64_t bound = CacheBytesBound(); bound != 0) EvictPartitions(dir_, bound);
    return out;
  }

 private:
  std::string Use(const std::string& sha256, const std::string& path, util::UniqueFd fd) const {
    Touch(path);
    leases_->Add(sha256, std::move(fd));
    return path;
  }

  NamedObject Named(const index::PartitionEntry& entry) const {
    const std::string key = PartitionKey(entry.sha256);
    return NameObject(*store_, key, entry.size, entry.sha256,
                      what_ + ": partition " + store_->Name(key), "the root");
  }
  const BadObjectScope* Remembering() const { return remember_ ? &*remember_ : nullptr; }

  // Downloads the partition into a temporary file, verifies it
  // (FetchVerified, then VerifyPartitionFile) and renames it to `path`;
  // returns a descriptor of it holding a shared lock (taken before the
  // rename, so that no evictor can take it first).
  util::UniqueFd Download(const index::PartitionEntry& entry, const NamedObject& object,
                          const std::string& path) const {
    std::string tmp;
    util::UniqueFd fd;
    try {
      FetchVerifiedToNewName(
          object, dir_, &tmp,
          [&](const std::string& old) {
            fd = util::UniqueFd();
            util::RemoveFileQuietly(old);
          },
          [&](const std::string& to) { return DownloadToFile(*store_, object, to, &fd); },
          [&] { VerifyPartitionFile(tmp, entry); }, Remembering());
      util::DataSync(fd.get(), tmp);
      while (::flock(fd.get(), LOCK_SH) != 0) {
        if (errno != EINTR) break;
      }
      util::Rename(tmp, path);
      util::SyncDirectory(dir_);
      return fd;
    } catch (...) {
      if (!tmp.empty()) util::RemoveFileQuietly(tmp);
      throw;
    }
  }

  std::shared_ptr<ObjectStore> store_;
  std::string what_;
  std::chrono::milliseconds lock_wait_;
  std::shared_ptr<PartitionCacheCounters> counters_;
  std::optional<BadObjectScope> remember_;
  std::string dir_;
  std::shared_ptr<Leases> leases_;
};

}  // namespace

std::string PartitionCacheDirectory() { return CacheDirectory() + "/partitions"; }

uint64_t CacheBytesBound() { return util::EnvBytes("GULPDB_CACHE_BYTES").value_or(0); }

uint64_t EvictPartitions(const std::string& dir, uint64_t bound) noexcept {
  struct File {
    std::string name;
    uint64_t size;
    int64_t used_ns;
  };
  uint64_t removed = 0;
  try {
    std::vector<File> files;
    uint64_t total = 0;
    for (const std::string& name : util::ListDirectory(dir)) {
      if (!util::IsSha256Hex(name)) continue;
      struct stat st {};
      if (::stat((dir + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      const int64_t used =
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      files.push_back(File{name, static_cast<uint64_t>(st.st_size), used});
      total += static_cast<uint64_t>(st.st_size);
    }
    if (total <= bound) return 0;
    std::sort(files.begin(), files.end(),
              [](const File& a, const File& b) { return a.used_ns < b.used_ns; });
    for (const File& f : files) {
      if (total <= bound) break;
      const std::string path = dir + "/" + f.name;
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      util::UniqueFd owner(fd);
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) continue;  // an open reader uses it
      struct stat held {
      }, named{};
      if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &named) != 0 ||
          held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
        continue;
      }
      if (::unlink(path.c_str()) != 0) continue;
      total -= f.size;
      removed += f.size;
    }
  } catch (...) {
    // Only a cache: a failure leaves it larger.
  }
  return removed;
}

index::PartitionRoot FetchRoot(ObjectStore& store, const Manifest& manifest,
                               const std::string& what, const BadObjectScope* remember) {
  const std::string name = store.Name(manifest.root_key);
  if (std::optional<std::string> cached = CachedObject(manifest.root_sha256, manifest.root_size)) {
    return index::DecodePartitionRoot(*cached, name);
  }
  const NamedObject object =
      NameObject(store, manifest.root_key, manifest.root_size, manifest.root_sha256,
                 what + ": the root " + name + " that the manifest (generation " +
                     std::to_string(manifest.generation) + ") names",
                 "the manifest");
  index::PartitionRoot root;
  const std::string bytes = GetVerified(store, object, remember, [&](std::string_view fetched) {
    root = index::DecodePartitionRoot(fetched, name);
  });
  KeepObject(manifest.root_sha256, bytes);
  return root;
}

std::vector<ManifestChunk> FetchChunkPage(ObjectStore& store, const Manifest& manifest,
                                          const ManifestChunkPage& page, const std::string& what,
                                          const BadObjectScope* remember) {
  const std::string name = store.Name(page.key);
  std::optional<std::string> text = CachedObject(page.sha256, page.size);
  const bool fetched = !text;
  if (fetched) {
    const NamedObject object =
        NameObject(store, page.key, page.size, page.sha256,
                   what + ": the chunk page " + name + " that the manifest (generation " +
                       std::to_string(manifest.generation) + ") names",
                   "the manifest");
    // Parsed below: a page that is the named bytes and not a sound page
    // was published so, and is not fetched again either.
    text = GetVerified(store, object, remember,
                       [&](std::string_view bytes) { ParseChunkPage(bytes, page, name); });
  }
  std::vector<ManifestChunk> chunks;
  try {
    chunks = ParseChunkPage(*text, page, name);
  } catch (const Error& e) {
    e.ThrowWithContext(what + ": ");
  }
  if (fetched) KeepObject(page.sha256, *text);
  return chunks;
}

void LoadChunkPages(ObjectStore& store, Manifest* manifest, const std::string& what) {
  if (!manifest->paged()) return;
  std::vector<ManifestChunk> chunks;
  chunks.reserve(manifest->chunk_count);
  for (const ManifestChunkPage& page : manifest->chunk_pages) {
    for (ManifestChunk& c : FetchChunkPage(store, *manifest, page, what)) {
      chunks.push_back(std::move(c));
    }
  }
  manifest->chunks = std::move(chunks);
}

PartitionFetch NodeCacheFetch(std::shared_ptr<ObjectStore> store, std::string what,
                              std::chrono::milliseconds lock_wait,
                              std::shared_ptr<PartitionCacheCounters> counters,
                              std::optional<BadObjectScope> remember) {
  // Checked at every open, not only by the first download: a malformed bound
  // must not pass while the cache happens to be warm.
  try {
    CacheBytesBound();
  } catch (const Error& e) {
    e.ThrowWithContext(what + ": ");
  }
  auto fetcher = std::make_shared<const Fetcher>(std::move(store), std::move(what), lock_wait,
                                                 std::move(counters), std::move(remember));
  return [fetcher](const index::PartitionEntry& entry) { return (*fetcher)(entry); };
}

PageFetch NodeCachePageFetch(std::shared_ptr<ObjectStore> store, std::string what,
                             std::optional<BadObjectScope> remember) {
  return [store, what, remember](const index::RootPage& page) -> std::string {
    if (std::optional<std::string> cached = CachedObject(page.sha256, page.size)) return *cached;
    const std::string key = RootPageKey(page.sha256);
    const NamedObject object = NameObject(*store, key, page.size, page.sha256,
                                          what + ": the root page " + store->Name(key), "the root");
    const std::string bytes = GetVerified(*store, object, remember ? &*remember : nullptr);
    KeepObject(page.sha256, bytes);
    return bytes;
  };
}

}  // namespace gulpdb::engine
