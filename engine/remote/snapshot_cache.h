// The machine-local cache of index snapshots of published datasets.
//
// Layout (under CacheDirectory(), gulpdb/remote.h):
//
//   remote/<32 hex digits of SHA-256(store identity)>/
//     .lock                    flock: one process downloads, the others wait
//     <snapshot sha256>/data.mdb   a verified snapshot (the folder appears by rename)
//     <snapshot sha256>/verified   what was verified: the SHA-256 and the
//                                  file's size, device, inode, mtime, ctime
//     .download.<pid>.<n>/     a download in progress (removed under the lock)
//     .damaged.<pid>.<n>/      a damaged snapshot set aside (removed under the lock)
//
// A snapshot is downloaded at most once per machine: the first opener takes
// the lock, downloads into a temporary folder (never more bytes than the
// manifest's size), checks the size and SHA-256 the manifest gives
// (FetchVerified, verified_fetch.h: a byte damaged on the way is fetched
// again, the same wrong bytes twice are a damaged object, which this
// process then does not download again for that manifest generation) and
// walks the file with bounds-checked reads (index/lmdb_verify.h), fsyncs it,
// renames the folder into place and records what it verified in `verified`;
// the others wait for the lock and find it there. Snapshots are immutable and opened without
// LMDB's lock file (MDB_NOLOCK), nothing is shared between machines.
//
// Bytes on disk are not trusted blindly: an open whose `verified` record
// does not match the file as stat(2) sees it now (a byte written, the file
// replaced or truncated, another dataset's snapshot copied over it, a cache
// restored from elsewhere, a cache of an older gulpdb) verifies it again
// (SHA-256 and page walk) before LMDB maps it; a file that fails is set
// aside and downloaded again, and if that fails too, the open is a
// CorruptionError naming the cache file. A folder without its data.mdb (a
// `verified` record or other files left behind) is set aside whole the same
// way; a `verified` record that is not a file is replaced. A matching
// record makes the open O(1); files other than data.mdb and `verified` in
// the folder are ignored. Every open touches its folder; when a new snapshot of the same store
// arrives, those not opened for an hour are removed (processes that still
// map one keep reading it: unlinking a mapped file is safe).
//
// Thread safety: every function may be called from any thread and process.
#ifndef GULPDB_ENGINE_REMOTE_SNAPSHOT_CACHE_H_
#define GULPDB_ENGINE_REMOTE_SNAPSHOT_CACHE_H_

#include <chrono>
#include <memory>
#include <string>

#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "index/lmdb_env.h"

namespace gulpdb::engine {

struct CachedSnapshot {
  std::string dir;  // holds data.mdb
  bool downloaded = false;
  // The cached file was not the one recorded as verified: it was verified
  // again (and downloaded again if it failed).
  bool reverified = false;
};

// The verified snapshot `manifest` names, from the cache or downloaded from
// `store` now. Waits up to `lock_wait` for another process downloading it.
// Throws CorruptionError when the object is missing (named by the manifest),
// damaged in the store (larger than the manifest's size, the same other
// bytes in two downloads, or not a sound index file; then every later open
// of this manifest generation in this process fails at once), and when a
// damaged cached copy cannot be fetched again (naming the cache file);
// IoError when every download was damaged on the way; the store's errors
// otherwise; BusyError when the wait runs out.
CachedSnapshot EnsureSnapshot(ObjectStore& store, const Manifest& manifest,
                              std::chrono::milliseconds lock_wait);

// The snapshot in `dir` as a read-only environment without a lock file,
// shared by every Dataset of this process that opens the same file (the
// same folder, device and inode).
std::shared_ptr<index::Env> OpenSnapshotEnv(const std::string& dir);

// A new empty folder for temporary files under the cache
// (CacheDirectory()/tmp/<pid>.<n>), removed with its files on destruction.
class CacheTempDir {
 public:
  CacheTempDir();
  ~CacheTempDir();
  CacheTempDir(const CacheTempDir&) = delete;
  CacheTempDir& operator=(const CacheTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_SNAPSHOT_CACHE_H_
