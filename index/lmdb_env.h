// RAII owners for an LMDB environment, its transactions and cursors.
//
// This is the only part of gulpdb that talks to LMDB; lmdb_env.cc is the only
// file that includes <lmdb.h>. Every LMDB return code becomes a typed
// gulpdb::Error in one function (ThrowLmdb) that names the failing call.
//
// Fork: an Env must not be used in a child process; its destructor does not
// close the environment there (the parent's reader slots stay intact).
//
// Thread safety: an Env may be shared by any number of threads. A Txn or a
// Cursor belongs to one thread at a time. The environment is opened with
// MDB_NOTLS, so a read transaction is not tied to the thread that began it.
//
// Map size: the map starts at EnvOptions::initial_map_size and doubles
// whenever a write transaction runs out of room (Update retries the
// transaction). A process that sees another process's larger map adopts it
// when it next begins a transaction. Resizing needs every transaction of this
// process to be finished, so transactions take a shared lock on the Env for
// their lifetime: keep them short.
#ifndef GULPDB_INDEX_LMDB_ENV_H_
#define GULPDB_INDEX_LMDB_ENV_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gulpdb/error.h"
#include "index/lmdb_verify.h"

struct MDB_env;
struct MDB_txn;
struct MDB_cursor;

namespace gulpdb::index {

using Dbi = unsigned int;  // an MDB_dbi

// Thrown when a write transaction runs out of map space; Env::Update catches
// it, grows the map and retries.
class MapFullError : public LimitExceededError {
 public:
  using LimitExceededError::LimitExceededError;
  [[noreturn]] void ThrowWithMessage(const std::string& message) const override {
    throw MapFullError(message);
  }
};

struct EnvOptions {
  bool read_only = false;
  size_t initial_map_size = size_t{1} << 30;  // 1 GiB of address space; the file grows as used
  size_t max_map_size = size_t{1} << 40;      // growth stops here with ResourceExhaustedError
  unsigned max_dbs = 16;  // named databases this process may open (index_format.md lists them)
  unsigned max_readers = 1022;
  // Open without LMDB's lock file (MDB_NOLOCK), read-only only: for index
  // files nobody writes, such as the snapshots remote datasets download.
  bool no_lock = false;
  // `path` is the data file itself, not a directory (MDB_NOSUBDIR): for
  // read-only index files kept as single files, such as snapshot partitions.
  bool no_subdir = false;
};

class Env;

// A transaction. Move-only; the destructor aborts it unless committed.
// Values returned by Get and cursors are views into the map, valid until the
// transaction ends (or, in a write transaction, until the next write).
class Txn {
 public:
  // Cursors point to the Txn they were opened on, so a Txn with open cursors
  // cannot move: that throws InvalidArgumentError and leaves both as they were.
  Txn(Txn&& other);
  Txn& operator=(Txn&&) = delete;
  Txn(const Txn&) = delete;
  ~Txn();

  bool read_only() const { return read_only_; }

  // Returns false if `key` is absent, including keys LMDB cannot hold (empty,
  // or longer than Env::max_key_size()): those are never stored.
  bool Get(Dbi dbi, std::string_view key, std::string_view* value) const;
  // Inserts or overwrites. Throws MapFullError when the map is full, and
  // InvalidArgumentError (MDB_BAD_VALSIZE) for a key LMDB cannot hold.
  void Put(Dbi dbi, std::string_view key, std::string_view value);
  // Put of a key greater than every key of `dbi` (MDB_APPEND): leaf pages
  // are then filled completely instead of split in half, so a database
  // written in key order takes about half the pages. InvalidArgumentError
  // (MDB_KEYEXIST) for a key out of order.
  void Append(Dbi dbi, std::string_view key, std::string_view value);
  // Returns false if `key` was absent (as Get, for keys LMDB cannot hold).
  bool Del(Dbi dbi, std::string_view key);
  // Number of entries in `dbi` as seen by this transaction.
  uint64_t Count(Dbi dbi) const;
  // LMDB's id of the snapshot this transaction sees.
  uint64_t id() const;

  // A full file system is a ResourceExhaustedError ("No space left on
  // device"), also when LMDB reports it as a short write (EIO).
  void Commit();
  void Abort() noexcept;

 private:
  friend class Env;
  friend class Cursor;
  void CommitWith(bool sync);
  // The change record's hooks (Env::TrackChanges, change_record.h): records
  // `key` of `dbi` before its first change, and stamps the header at commit.
  void RecordChange(Dbi dbi, std::string_view key);
  bool IsTracked(Dbi dbi) const;
  // mdb_put with `flags`, `key` recorded first when `dbi` is tracked; LMDB's
  // return code, for Put and Append to translate.
  int RecordedPut(Dbi dbi, std::string_view key, std::string_view value, unsigned int flags);
  void StampChanges();
  // True if LMDB can hold `key`: 1 to Env::max_key_size() bytes.
  bool KeyFits(std::string_view key) const;
  Txn(Env* env, MDB_txn* txn, bool read_only, std::shared_lock<std::shared_mutex> lock);

  Env* env_;
  MDB_txn* txn_;
  bool read_only_;
  int open_cursors_ = 0;  // Commit refuses while cursors are open: LMDB frees them at commit
  std::shared_lock<std::shared_mutex> lock_;
  // The change record in this write transaction: not looked at yet, not
  // kept (no record, or it overflowed), kept; entries it may still add.
  enum class Changes : uint8_t { kUnknown, kOff, kOn };
  Changes changes_ = Changes::kUnknown;
  bool changes_overflowed_ = false;
  uint64_t change_budget_ = 0;
};

// A cursor over one database, bounded by its transaction: it must be
// destroyed before the transaction commits or aborts. Move-only.
class Cursor {
 public:
  Cursor(Txn& txn, Dbi dbi);
  Cursor(Cursor&& other) noexcept;
  Cursor& operator=(Cursor&&) = delete;
  Cursor(const Cursor&) = delete;
  ~Cursor();

  // Positioning; each returns false when there is no such entry.
  bool First();
  bool Last();
  bool Next();
  bool Seek(std::string_view key);  // the first key >= `key`

  // The current entry; views valid while the cursor stays put and the txn lives.
  std::string_view key() const { return key_; }
  std::string_view value() const { return value_; }

 private:
  bool Move(int op, std::string_view seek_key = {});

  Txn* txn_;
  MDB_cursor* cursor_;
  std::string_view key_;
  std::string_view value_;
};

class Env {
 public:
  // Opens (creating if needed and not read-only) the environment in directory
  // `path`. A read-only open of an environment on a read-only file system
  // falls back to MDB_NOLOCK, which is safe only when no process writes.
  static std::unique_ptr<Env> Open(const std::string& path, const EnvOptions& options);
  ~Env();
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }

  // Opens a named database, creating it when `create` (needs a writable env).
  // Throws NotFoundError if absent and not created. Thread-safe: LMDB allows
  // one transaction at a time to open databases, so calls are serialised.
  // The handle is valid in transactions begun after this returns; a
  // transaction begun earlier must not use it (LMDB fails with EINVAL).
  Dbi OpenDb(const std::string& name, bool create);

  // Keeps the change record (change_record.h) in database `changes_db`
  // once it exists: writes to the databases `tracked` names (name -> kind
  // byte, below 0x80; the first is the one whose size bounds the record)
  // record the keys they touch. Databases opened later are tracked too.
  // Call once, before this process writes.
  void TrackChanges(const std::vector<std::pair<std::string, uint8_t>>& tracked,
                    const std::string& changes_db);

  Txn BeginRead();
  Txn BeginWrite();

  // Runs `body` in a write transaction and commits it. When the map is full
  // the transaction is aborted, the map doubled and `body` run again, so
  // `body` must have no effects outside the transaction.
  void Update(const std::function<void(Txn&)>& body);
  // As Update, but the commit does not sync (MDB_NOSYNC for this commit
  // only): the caller has made the change durable elsewhere (the writer's
  // journal, engine/core/journal.h). A power cut may lose or tear this
  // commit's pages; Sync() makes them durable. Other commits stay durable.
  void UpdateNoSync(const std::function<void(Txn&)>& body);

  size_t map_size() const;
  // Bytes of the map in use (last page number times page size).
  size_t used_bytes() const;
  // Flushes the data file to disk (for environments opened without sync).
  void Sync();
  // With `durable` false, commits do not sync the data file (MDB_NOSYNC): a
  // crash may lose the latest transactions but never corrupts the
  // environment. Sync() makes everything durable.
  void SetDurable(bool durable);
  // Pinning: holds a read transaction on the current snapshot, so that LMDB
  // reuses none of the pages reachable from it until Unpin (LMDB reuses a
  // freed page only below the oldest reader's snapshot). Pin replaces an
  // earlier pin. The pin takes no lock against map growth: it never reads.
  void Pin();
  void Unpin() noexcept;
  // Bytes of the pages LMDB freed since the pin began, which it cannot reuse
  // while the pin holds: what the pin costs in file size, since every commit
  // copies the pages it changes (0 without a pin). Reads only the free-page
  // records committed since the last call, so calling it after every commit
  // costs O(1) per commit.
  uint64_t PinnedFreeBytes();
  // The bytes of LMDB's two meta pages as they are in the data file now
  // (pread; call after Sync() for their durable form). Their restoration
  // (RestoreMetaPages) returns the environment to that snapshot, provided
  // the snapshot's pages were pinned since.
  std::string ReadMetaPages() const;
  // Writes `pages` (from ReadMetaPages) over the meta pages of the data file
  // in directory `path` and fdatasyncs it. No process may have the
  // environment open (LMDB caches the newest snapshot id in its lock file):
  // the caller holds the dataset's writer lock before anyone opens it.
  static void RestoreMetaPages(const std::string& path, std::string_view pages);

  // Drops this process's mappings of index pages (they stay in the page
  // cache), so that writing a large index does not grow the resident set.
  void ReleaseMappedPages();
  // The longest key LMDB accepts (511 bytes in Debian's build).
  size_t max_key_size() const;

  // Walks the data file of the current snapshot with bounds-checked reads
  // (lmdb_verify.h), holding a read transaction so that its pages stay put.
  // Call it before anything walks a tree of an index that is not trusted.
  // Safe while another process commits (it retries with a newer snapshot
  // when commits overwrite both meta pages during the walk's start).
  IndexFileReport VerifyFile();

  // Writes a consistent copy of the current snapshot to the new file `path`
  // (created, mode 0644; an existing file is an error) and fsyncs it. With
  // `compact`, free pages are left out and the tree is renumbered
  // (mdb_env_copyfd2 with MDB_CP_COMPACT): the copy of an unchanged
  // environment is then the same bytes every time. Holds a read transaction
  // while it runs; writers go on. On failure the partial file is removed.
  void CopyTo(const std::string& path, bool compact);

 private:
  Env(std::string path, bool read_only, const EnvOptions& options);
  Txn Begin(bool read_only);
  friend class Txn;
  void ReleaseReader(MDB_txn* txn) noexcept;
  void DropIdleReaders() noexcept;
  static constexpr size_t kMaxIdleReaders = 64;
  void UpdateWith(const std::function<void(Txn&)>& body, bool sync);
  void Grow(size_t current);
  void AdoptNewMapSize();

  std::string path_;
  bool read_only_;
  EnvOptions options_;
  int owner_pid_;  // the process that opened the environment
  MDB_env* env_ = nullptr;
  std::shared_mutex resize_mutex_;  // shared: live transactions; exclusive: resizing
  std::mutex idle_mutex_;
  std::mutex open_db_mutex_;            // mdb_dbi_open: one transaction at a time
  std::vector<MDB_txn*> idle_readers_;  // reset read transactions, ready to renew
  std::mutex pin_mutex_;
  MDB_txn* pin_ = nullptr;  // Pin's read transaction
  // PinnedFreeBytes' running sum: pages in the free-page records of the
  // transactions from the pin's snapshot up to (not including) uncounted_.
  uint64_t uncounted_ = 0;
  uint64_t pinned_free_pages_ = 0;
  // One commit at a time in this process: a commit without the sync sets
  // the environment's MDB_NOSYNC and clears it again, and no durable commit
  // may run between the two.
  std::mutex commit_mutex_;
  bool durable_ = true;  // SetDurable
  // TrackChanges: names and kinds, the databases opened so far (both under
  // open_db_mutex_), and what a transaction reads without a lock.
  std::vector<std::pair<std::string, uint8_t>> tracked_names_;
  std::string changes_name_;
  std::vector<std::pair<std::string, Dbi>> opened_;
  void NoteOpened(const std::string& name, Dbi dbi);  // open_db_mutex_ held
  void FindChangesDb();                               // open_db_mutex_ held
  static constexpr Dbi kMaxTrackedDbi = 64;
  std::atomic<Dbi> changes_dbi_{0};
  std::atomic<Dbi> bounding_dbi_{0};
  std::atomic<int> tracked_kind_[kMaxTrackedDbi];
};

// Translates a non-zero LMDB return code into a typed error naming `operation`
// and `what` (a path or key). MDB_NOTFOUND is NotFoundError, MDB_MAP_FULL is
// MapFullError, MDB_CORRUPTED/MDB_PAGE_NOTFOUND/MDB_INVALID are
// CorruptionError, system errors keep their errno meaning.
[[noreturn]] void ThrowLmdb(int rc, const std::string& operation, const std::string& what);

}  // namespace gulpdb::index

#endif  // GULPDB_INDEX_LMDB_ENV_H_
