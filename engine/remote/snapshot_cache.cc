#include "engine/remote/snapshot_cache.h"

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

#include "engine/remote/verified_fetch.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "util/file_identity.h"
#include "util/file_io.h"
#include "util/hex.h"
#include "util/relative_name.h"
#include "util/sha256.h"
#include "util/sys_error.h"

namespace gulpdb {

namespace engine {
namespace {

constexpr auto kStaleSnapshotAge = std::chrono::hours(1);
// Marks the snapshot as used now (its folder's mtime), so that cleaning does
// not take a snapshot in use. Best effort: a read-only cache still works.
void Touch(const std::string& dir) { ::utimensat(AT_FDCWD, dir.c_str(), nullptr, 0); }

// Removes the snapshots of one store, other than `keep`, that nobody opened
// for kStaleSnapshotAge.
void RemoveStaleSnapshots(const std::string& base, const std::string& keep) {
  const auto now = std::chrono::system_clock::now();
  for (const std::string& name : util::ListDirectory(base)) {
    const std::string path = base + "/" + name;
    if (path == keep || !util::IsSha256Hex(name)) continue;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;
    const auto used = std::chrono::system_clock::from_time_t(st.st_mtime);
    if (now - used < kStaleSnapshotAge) continue;
    try {
      util::RemoveTree(path);
    } catch (const Error&) {
      // Another process may be removing it too; it is only a cache.
    }
  }
}

// The cache lock of one store, waiting up to `wait` for another process.
util::FileLock LockCache(const std::string& path, std::chrono::milliseconds wait,
                         const std::string& object) {
  try {
    return util::FileLock(path, wait, object);
  } catch (const BusyError&) {
    throw BusyError("download " + object + ": another process has been downloading it into " +
                    path.substr(0, path.rfind('/')) + " for more than " +
                    std::to_string(wait.count() / 1000) + " s");
  }
}

// ---- what was verified --------------------------------------------------------
//
// Beside each verified data.mdb, `verified` records the file that was
// verified: its SHA-256 and its identity (util/file_identity.h). A snapshot
// whose record matches is trusted as verified (O(1) per open); any other is
// verified again (SHA-256 and a page walk) before it is opened.

constexpr const char* kStampName = "verified";
constexpr size_t kMaxStampBytes = 4096;

// The record `verified` must hold for the data.mdb in `dir` (as it is
// now), or "" when it cannot be stat'ed.
std::string StampText(const std::string& dir, const std::string& sha256) {
  struct stat st;
  if (::stat((dir + "/data.mdb").c_str(), &st) != 0) return "";
  const util::FileIdentity id = util::IdentityOfStat(st);
  return "gulpdb verified snapshot\nsha256 " + sha256 + "\nsize " + std::to_string(id.size) +
         "\ndev " + std::to_string(id.device) + "\nino " + std::to_string(id.inode) +
         "\nmtime_ns " + std::to_string(id.mtime_ns) + "\nctime_ns " + std::to_string(id.ctime_ns) +
         "\n";
}

bool StampMatches(const std::string& dir, const std::string& sha256) {
  const std::string expected = StampText(dir, sha256);
  if (expected.empty()) return false;
  const int fd = ::open((dir + "/" + kStampName).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  util::UniqueFd owner(fd);
  std::string text(kMaxStampBytes, '\0');
  size_t got = 0;
  try {
    got = util::PreadFull(fd, text.data(), text.size(), 0, dir + "/" + kStampName);
  } catch (const Error&) {
    return false;
  }
  text.resize(got);
  return text == expected;
}

// Best effort: a cache that cannot be written still works (every open then
// verifies again).
void WriteStamp(const std::string& dir, const std::string& sha256) {
  const std::string text = StampText(dir, sha256);
  if (text.empty()) return;
  const std::string path = dir + "/" + kStampName;
  try {
    // A folder (or anything but a file) in its place would make every open
    // verify the snapshot again.
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) util::RemoveTree(path);
    util::WriteFileAtomically(path, text);
  } catch (const Error&) {
  }
}

// "" when `dir`/data.mdb is the snapshot `manifest` names, a sound index
// file; otherwise what is wrong with it. Reads the whole file.
std::string CheckSnapshotFile(const std::string& dir, const Manifest& manifest) {
  const std::string file = dir + "/data.mdb";
  try {
    util::UniqueFd fd = util::OpenFile(file, O_RDONLY);
    const uint64_t size = util::FileSize(fd.get(), file);
    if (size != manifest.snapshot_size) {
      return std::to_string(size) + " bytes, the manifest says " +
             std::to_string(manifest.snapshot_size);
    }
    const std::string sha = util::Sha256HexOfFile(fd.get(), file, 0, size);
    if (sha != manifest.snapshot_sha256) {
      return "SHA-256 " + sha + ", the manifest says " + manifest.snapshot_sha256;
    }
    index::EnvOptions options;
    options.read_only = true;
    options.no_lock = true;
    const index::IndexFileReport report = index::Env::Open(dir, options)->VerifyFile();
    if (!report.healthy()) return "not a sound index file: " + report.problems[0];
  } catch (const CorruptionError& e) {
    return e.what();
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

// Downloads the snapshot into a new folder (FetchVerified: damage on the
// way is fetched again; the same wrong bytes twice are a damaged object,
// remembered in `remember`), walks it, and renames it to `target`. Never
// fetches more bytes than the manifest's size.
void Download(ObjectStore& store, const NamedObject& object, const std::string& base,
              const std::string& target, const BadObjectScope& remember) {
  std::string tmp;
  util::UniqueFd fd;
  try {
    FetchVerifiedToNewName(
        object, base, &tmp,
        [&](const std::string& old) {
          fd = util::UniqueFd();
          util::RemoveTree(old);
        },
        [&](const std::string& to) {
          if (!util::MakeDirectory(to)) util::ThrowErrno("create", to, EEXIST);
          return DownloadToFile(store, object, to + "/data.mdb", &fd);
        },
        [&] {
          index::EnvOptions options;
          options.read_only = true;
          options.no_lock = true;
          const index::IndexFileReport report = index::Env::Open(tmp, options)->VerifyFile();
          if (!report.healthy()) {
            throw CorruptionError("not a sound index file: " + report.problems[0]);
          }
        },
        &remember);
    util::DataSync(fd.get(), tmp + "/data.mdb");
    util::SyncDirectory(tmp);
    util::Rename(tmp, target);
    util::SyncDirectory(base);
  } catch (...) {
    try {
      if (!tmp.empty()) util::RemoveTree(tmp);
    } catch (const Error&) {
      // The next download removes it.
    }
    throw;
  }
  WriteStamp(target, object.sha256);
}

}  // namespace

CachedSnapshot EnsureSnapshot(ObjectStore& store, const Manifest& manifest,
                              std::chrono::milliseconds lock_wait) {
  const std::string base =
      CacheDirectory() + "/remote/" + util::Sha256Hex(store.Identity()).substr(0, 32);
  const std::string target =
      util::JoinRelative(base, manifest.snapshot_sha256, "open dataset " + store.url(),
                         "the manifest's snapshot SHA-256");
  const std::string data = target + "/data.mdb";
  const NamedObject object = NameObject(
      store, manifest.snapshot_key, manifest.snapshot_size, manifest.snapshot_sha256,
      "open dataset " + store.url() + ": the index snapshot " + store.Name(manifest.snapshot_key) +
          " (manifest generation " + std::to_string(manifest.generation) + ")",
      "the manifest");
  const BadObjectScope remember = ScopeOf(store, manifest.generation);
  CachedSnapshot out{target, false, false};
  // Whether the cached file is the snapshot: the one verified when it was
  // stored (its record matches: O(1)), or verified again now (and recorded);
  // otherwise `damage` says what is wrong with a file that is there.
  std::string damage;
  const auto cached = [&] {
    damage.clear();
    if (StampMatches(target, manifest.snapshot_sha256)) {
      Touch(target);
      return true;
    }
    if (!util::PathExists(data)) return false;
    damage = CheckSnapshotFile(target, manifest);
    if (!damage.empty()) return false;
    WriteStamp(target, manifest.snapshot_sha256);
    Touch(target);
    out.reverified = true;
    return true;
  };
  // Without the lock first (it only reads).
  if (cached()) return out;
  // Found damaged in the bucket before: not downloaded again.
  ThrowIfKnownBad(&remember, object);
  util::MakeDirectories(base);
  util::FileLock lock = LockCache(base + "/.lock", lock_wait, store.Name(manifest.snapshot_key));
  struct stat st;
  if (::lstat(target.c_str(), &st) == 0) {
    // Another process may have repaired or verified it meanwhile.
    if (cached()) return out;
    if (damage.empty()) damage = S_ISDIR(st.st_mode) ? "it has no data.mdb" : "it is not a folder";
    // Damaged, or a folder without its file (a `verified` record or other
    // files left in it): out of the way, whole, so that the download's
    // folder can take its name; then fetched again. Processes that map it
    // keep their mapping (unlinking a mapped file is safe).
    const std::string aside = NewDamagedName(base);
    util::Rename(target, aside);
  }
  // Only the lock holder downloads: any other download folder is left over
  // by a process that died, and damaged snapshots set aside are removed.
  for (const std::string& name : util::ListDirectory(base)) {
    if (IsDownloadName(name) || IsDamagedName(name)) {
      util::RemoveTree(base + "/" + name);
    }
  }
  try {
    Download(store, object, base, target, remember);
  } catch (const Error& e) {
    if (damage.empty()) throw;
    throw CorruptionError("open dataset " + store.url() + ": the cached index snapshot " + data +
                          " is damaged (" + damage +
                          "); it was removed, and fetching it again failed: " + e.what());
  }
  out.downloaded = true;
  out.reverified = !damage.empty();
  RemoveStaleSnapshots(base, target);
  return out;
}

std::shared_ptr<index::Env> OpenSnapshotEnv(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<index::Env>> envs;
  // Keyed by the file too: a snapshot fetched again after damage is a new
  // file in the same folder, and must not be served from the old mapping.
  const std::string data = dir + "/data.mdb";
  struct stat st;
  std::string key = std::to_string(::getpid()) + ":" + dir;
  if (::stat(data.c_str(), &st) == 0) {
    key += ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (auto env = envs[key].lock()) return env;
  index::EnvOptions options;
  options.read_only = true;
  options.no_lock = true;
  std::shared_ptr<index::Env> env = index::Env::Open(dir, options);
  envs[key] = env;
  return env;
}

CacheTempDir::CacheTempDir() {
  const std::string root = CacheDirectory() + "/tmp";
  util::MakeDirectories(root);
  // Folders of processes that died are left over: remove them.
  for (const std::string& name : util::ListDirectory(root)) {
    const long pid = std::strtol(name.c_str(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      try {
        util::RemoveTree(root + "/" + name);
      } catch (const Error&) {
        // Another process is removing it.
      }
    }
  }
  for (;;) {
    path_ = root + "/" + util::UniqueFileSuffix();
    if (util::MakeDirectory(path_, 0700)) return;
  }
}

CacheTempDir::~CacheTempDir() {
  try {
    util::RemoveTree(path_);
  } catch (const Error&) {
    // Removed with the process's next CacheTempDir.
  }
}

}  // namespace engine
}  // namespace gulpdb
