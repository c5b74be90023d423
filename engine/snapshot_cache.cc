#include "engine/snapshot_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "engine/file_util.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "index/sys_error.h"
#include "remote/payload_hash.h"

namespace gulpdb {

std::string CacheDirectory() {
  for (const char* name : {"GULPDB_CACHE", "GULPDB_CACHE_DIR"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] != '\0') return value;
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] != '\0') return std::string(xdg) + "/gulpdb";
  const char* home = std::getenv("HOME");
  if (home == nullptr || home[0] == '\0') {
    throw InvalidArgumentError(
        "find the gulpdb cache: none of GULPDB_CACHE, XDG_CACHE_HOME or HOME is set");
  }
  return std::string(home) + "/.cache/gulpdb";
}

namespace engine {
namespace {

constexpr auto kStaleSnapshotAge = std::chrono::hours(1);
std::atomic<uint64_t> g_counter{0};

// Removes `path` and everything below it; a missing path is not an error.
void RemoveTree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    for (const std::string& name : ListDirectory(path)) RemoveTree(path + "/" + name);
    if (::rmdir(path.c_str()) != 0 && errno != ENOENT) ThrowErrno("remove", path, errno);
  } else if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    ThrowErrno("remove", path, errno);
  }
}

bool IsHexName(const std::string& name, size_t length) {
  if (name.size() != length) return false;
  for (char c : name) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Marks the snapshot as used now (its folder's mtime), so that cleaning does
// not take a snapshot in use. Best effort: a read-only cache still works.
void Touch(const std::string& dir) { ::utimensat(AT_FDCWD, dir.c_str(), nullptr, 0); }

// Removes the snapshots of one store, other than `keep`, that nobody opened
// for kStaleSnapshotAge.
void RemoveStaleSnapshots(const std::string& base, const std::string& keep) {
  const auto now = std::chrono::system_clock::now();
  for (const std::string& name : ListDirectory(base)) {
    const std::string path = base + "/" + name;
    if (path == keep || !IsHexName(name, 64)) continue;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;
    const auto used = std::chrono::system_clock::from_time_t(st.st_mtime);
    if (now - used < kStaleSnapshotAge) continue;
    try {
      RemoveTree(path);
    } catch (const Error&) {
      // Another process may be removing it too; it is only a cache.
    }
  }
}

// The cache lock of one store, waiting up to `wait` for another process.
FileLock LockCache(const std::string& path, std::chrono::milliseconds wait,
                   const std::string& object) {
  try {
    return FileLock(path, wait, object);
  } catch (const BusyError&) {
    throw BusyError("download " + object + ": another process has been downloading it into " +
                    path.substr(0, path.rfind('/')) + " for more than " +
                    std::to_string(wait.count() / 1000) + " s");
  }
}

}  // namespace

void MakeDirectories(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string part = slash == std::string::npos ? path : path.substr(0, slash);
    if (!part.empty() && ::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      ThrowErrno("create", part, errno);
    }
    if (slash == std::string::npos) return;
  }
}

CachedSnapshot EnsureSnapshot(ObjectStore& store, const Manifest& manifest,
                              std::chrono::milliseconds lock_wait) {
  const std::string base =
      CacheDirectory() + "/remote/" + remote::Sha256Hex(store.Identity()).substr(0, 32);
  const std::string target = base + "/" + manifest.snapshot_sha256;
  CachedSnapshot out{target, false};
  if (PathExists(target + "/data.mdb")) {
    Touch(target);
    return out;
  }
  const std::string object = store.Name(manifest.snapshot_key);
  MakeDirectories(base);
  FileLock lock = LockCache(base + "/.lock", lock_wait, object);
  if (PathExists(target + "/data.mdb")) {  // another process downloaded it meanwhile
    Touch(target);
    return out;
  }
  // Only the lock holder downloads: any other download folder is left over
  // by a process that died.
  for (const std::string& name : ListDirectory(base)) {
    if (name.rfind(".download.", 0) == 0) RemoveTree(base + "/" + name);
  }
  const std::string tmp = base + "/.download." + std::to_string(::getpid()) + "." +
                          std::to_string(g_counter.fetch_add(1));
  if (::mkdir(tmp.c_str(), 0755) != 0) ThrowErrno("create", tmp, errno);
  const std::string what = "open dataset " + store.url() + ": the index snapshot " + object +
                           " (manifest generation " + std::to_string(manifest.generation) + ")";
  try {
    const std::string file = tmp + "/data.mdb";
    try {
      store.GetToFile(manifest.snapshot_key, file);
    } catch (const NotFoundError& e) {
      throw CorruptionError(what + " is missing: it was deleted behind the manifest's back (" +
                            e.what() + ")");
    }
    UniqueFd fd = OpenFile(file, O_RDONLY);
    const uint64_t size = FileSize(fd.get(), file);
    if (size != manifest.snapshot_size) {
      throw CorruptionError(what + " is " + std::to_string(size) + " bytes, the manifest says " +
                            std::to_string(manifest.snapshot_size) +
                            ": it was replaced behind the manifest's back");
    }
    const std::string sha = remote::Sha256HexOfFile(fd.get(), file, 0, size);
    if (sha != manifest.snapshot_sha256) {
      throw CorruptionError(what + " has SHA-256 " + sha + ", the manifest says " +
                            manifest.snapshot_sha256 +
                            ": it was changed behind the manifest's back");
    }
    {
      index::EnvOptions options;
      options.read_only = true;
      options.no_lock = true;
      const index::IndexFileReport report = index::Env::Open(tmp, options)->VerifyFile();
      if (!report.healthy()) {
        throw CorruptionError(what + " is not a sound index file: " + report.problems[0]);
      }
    }
    DataSync(fd.get(), file);
    SyncDirectory(tmp);
    if (::rename(tmp.c_str(), target.c_str()) != 0) ThrowErrno("rename", tmp, errno);
    SyncDirectory(base);
  } catch (...) {
    try {
      RemoveTree(tmp);
    } catch (const Error&) {
      // The next download removes it.
    }
    throw;
  }
  out.downloaded = true;
  RemoveStaleSnapshots(base, target);
  return out;
}

std::shared_ptr<index::Env> OpenSnapshotEnv(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<index::Env>> envs;
  const std::string key = std::to_string(::getpid()) + ":" + dir;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto env = envs[key].lock()) return env;
  index::EnvOptions options;
  options.read_only = true;
  options.no_lock = true;
  std::shared_ptr<index::Env> env = index::Env::Open(dir, options);
  envs[key] = env;
  return env;
}

TempDir::TempDir() {
  const std::string root = CacheDirectory() + "/tmp";
  MakeDirectories(root);
  // Folders of processes that died are left over: remove them.
  for (const std::string& name : ListDirectory(root)) {
    const long pid = std::strtol(name.c_str(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      try {
        RemoveTree(root + "/" + name);
      } catch (const Error&) {
        // Another process is removing it.
      }
    }
  }
  for (;;) {
    path_ = root + "/" + std::to_string(::getpid()) + "." + std::to_string(g_counter.fetch_add(1));
    if (::mkdir(path_.c_str(), 0700) == 0) return;
    if (errno != EEXIST) ThrowErrno("create", path_, errno);
  }
}

TempDir::~TempDir() {
  try {
    RemoveTree(path_);
  } catch (const Error&) {
    // Removed with the process's next TempDir.
  }
}

}  // namespace engine
}  // namespace gulpdb
