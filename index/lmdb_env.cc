#include "index/lmdb_env.h"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "index/change_record.h"
#include "util/file_io.h"
#include "util/sys_error.h"
#include "util/test_bug.h"

namespace gulpdb::index {
namespace {

MDB_val ToVal(std::string_view s) {
  // LMDB takes a non-const pointer but never writes through it for keys and
  // for values of Put without MDB_RESERVE.
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view FromVal(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// LMDB reports a page write that the file system cut short as EIO ("short
// write, filesystem full?"), which is what a full disk does to a write of
// several pages. When the file system holding `path` is indeed (nearly)
// full, throw the ENOSPC error the caller needs to see instead.
void ThrowIfFileSystemFull(const std::string& operation, const std::string& path) {
  constexpr uint64_t kNearlyFull = 1 << 20;
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0) return;
  const uint64_t blocks = ::geteuid() == 0 ? st.f_bfree : st.f_bavail;
  const uint64_t free_bytes = blocks * st.f_frsize;
  if (free_bytes >= kNearlyFull) return;
  throw ResourceExhaustedError(operation + " " + path + ": " + std::strerror(ENOSPC) + " (" +
                               std::to_string(free_bytes) +
                               " bytes free; LMDB reported a short write as an I/O error)");
}

}  // namespace

void ThrowLmdb(int rc, const std::string& operation, const std::string& what) {
  const std::string message = operation + " " + what + ": " + mdb_strerror(rc);
  switch (rc) {
    case MDB_NOTFOUND:
      throw NotFoundError(message);
    case MDB_MAP_FULL:
      throw MapFullError(message);
    case MDB_READERS_FULL:
    case MDB_TXN_FULL:
    case MDB_DBS_FULL:
      throw ResourceExhaustedError(message);
    case MDB_BAD_VALSIZE:
    case MDB_INCOMPATIBLE:
      throw InvalidArgumentError(message);
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH:
      throw CorruptionError(message);
    case EAGAIN:
    case EBUSY:
      throw BusyError(message);
    default:
      if (rc > 0) util::ThrowErrno(operation, what, rc);
      throw IoError(message);
  }
}

// ---- Txn -------------------------------------------------------------------

Txn::Txn(Env* env, MDB_txn* txn, bool read_only, std::shared_lock<std::shared_mutex> lock)
    : env_(env), txn_(txn), read_only_(read_only), lock_(std::move(lock)) {}

Txn::Txn(Txn&& other) : env_(other.env_), txn_(nullptr), read_only_(other.read_only_) {
  if (other.open_cursors_ != 0) {
    throw InvalidArgumentError("move a transaction on " + env_->path() + " with " +
                               std::to_string(other.open_cursors_) +
                               " open cursors (they would point to the moved-from object)");
  }
  txn_ = std::exchange(other.txn_, nullptr);
  lock_ = std::move(other.lock_);
  changes_ = other.changes_;
  changes_overflowed_ = other.changes_overflowed_;
  change_budget_ = other.change_budget_;
}

Txn::~Txn() { Abort(); }

bool Txn::Get(Dbi dbi, std::string_view key, std::string_view* value) const {
  // LMDB cannot hold such a key (mdb_get would fail with MDB_BAD_VALSIZE), so
  // it is absent: a lookup of a user's empty or over-long id is a miss.
  if (!KeyFits(key)) return false;
  MDB_val k = ToVal(key);
  MDB_val v{0, nullptr};
  const int rc = mdb_get(txn_, dbi, &k, &v);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != 0) ThrowLmdb(rc, "mdb_get", env_->path());
  *value = FromVal(v);
  return true;
}

int Txn::RecordedPut(Dbi dbi, std::string_view key, std::string_view value, unsigned int flags) {
  // The record's write may move pages `key` and `value` point into.
  std::string key_copy, value_copy;
  if (IsTracked(dbi)) {
    key_copy.assign(key);
    value_copy.assign(value);
    key = key_copy;
    value = value_copy;
    RecordChange(dbi, key);
  }
  MDB_val k = ToVal(key);
  MDB_val v = ToVal(value);
  return mdb_put(txn_, dbi, &k, &v, flags);
}

void Txn::Put(Dbi dbi, std::string_view key, std::string_view value) {
  const int rc = RecordedPut(dbi, key, value, 0);
  if (rc != 0) ThrowLmdb(rc, "mdb_put", env_->path());
}

void Txn::Append(Dbi dbi, std::string_view key, std::string_view value) {
  const int rc = RecordedPut(dbi, key, value, MDB_APPEND);
  if (rc == MDB_KEYEXIST) {
    throw InvalidArgumentError("mdb_put " + env_->path() + ": append of a key out of order");
  }
  if (rc != 0) ThrowLmdb(rc, "mdb_put", env_->path());
}

bool Txn::Del(Dbi dbi, std::string_view key) {
  if (!KeyFits(key)) return false;  // as in Get: LMDB cannot hold it
  std::string key_copy;
  if (IsTracked(dbi)) {
    key_copy.assign(key);
    key = key_copy;
    RecordChange(dbi, key);
  }
  MDB_val k = ToVal(key);
  const int rc = mdb_del(txn_, dbi, &k, nullptr);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != 0) ThrowLmdb(rc, "mdb_del", env_->path());
  return true;
}

bool Txn::KeyFits(std::string_view key) const {
  return !key.empty() && key.size() <= env_->max_key_size();
}

uint64_t Txn::Count(Dbi dbi) const {
  MDB_stat stat;
  const int rc = mdb_stat(txn_, dbi, &stat);
  if (rc != 0) ThrowLmdb(rc, "mdb_stat", env_->path());
  return stat.ms_entries;
}

uint64_t Txn::id() const { return mdb_txn_id(txn_); }

void Txn::Commit() { CommitWith(/*sync=*/true); }

void Txn::CommitWith(bool sync) {
  if (txn_ == nullptr) throw InvalidArgumentError("commit " + env_->path() + ": transaction ended");
  if (open_cursors_ != 0) {
    throw InvalidArgumentError("commit " + env_->path() + ": cursors still open");
  }
  if (!read_only_) {
    try {
      StampChanges();
    } catch (...) {
      Abort();
      throw;
    }
  }
  int rc = 0;
  {
    std::lock_guard<std::mutex> guard(env_->commit_mutex_);
    const bool skip_sync = !sync && env_->durable_;
    if (skip_sync) {
      rc = mdb_env_set_flags(env_->env_, MDB_NOSYNC, 1);
      if (rc != 0) {
        Abort();
        ThrowLmdb(rc, "mdb_env_set_flags", env_->path());
      }
    }
    // LMDB frees the transaction whether or not the commit succeeds.
    rc = mdb_txn_commit(std::exchange(txn_, nullptr));
    if (skip_sync) mdb_env_set_flags(env_->env_, MDB_NOSYNC, 0);
  }
  if (lock_.owns_lock()) lock_.unlock();
  if (rc == EIO) ThrowIfFileSystemFull("mdb_txn_commit", env_->path());
  if (rc != 0) ThrowLmdb(rc, "mdb_txn_commit", env_->path());
}

void Txn::Abort() noexcept {
  if (txn_ != nullptr) {
    MDB_txn* txn = std::exchange(txn_, nullptr);
    if (read_only_) {
      env_->ReleaseReader(txn);
    } else {
      mdb_txn_abort(txn);
    }
  }
  if (lock_.owns_lock()) lock_.unlock();
}

// ---- Cursor ----------------------------------------------------------------

Cursor::Cursor(Txn& txn, Dbi dbi) : txn_(&txn), cursor_(nullptr) {
  const int rc = mdb_cursor_open(txn.txn_, dbi, &cursor_);
  if (rc != 0) ThrowLmdb(rc, "mdb_cursor_open", txn.env_->path());
  ++txn_->open_cursors_;
}

Cursor::Cursor(Cursor&& other) noexcept
    : txn_(other.txn_),
      cursor_(std::exchange(other.cursor_, nullptr)),
      key_(other.key_),
      value_(other.value_) {}

Cursor::~Cursor() {
  if (cursor_ != nullptr) {
    mdb_cursor_close(cursor_);
    --txn_->open_cursors_;
  }
}

bool Cursor::Move(int op, std::string_view seek_key) {
  MDB_val k = ToVal(seek_key);
  MDB_val v{0, nullptr};
  const int rc = mdb_cursor_get(cursor_, &k, &v, static_cast<MDB_cursor_op>(op));
  if (rc == MDB_NOTFOUND) {
    key_ = value_ = {};
    return false;
  }
  if (rc != 0) ThrowLmdb(rc, "mdb_cursor_get", txn_->env_->path());
  key_ = FromVal(k);
  value_ = FromVal(v);
  return true;
}

bool Cursor::First() { return Move(MDB_FIRST); }
bool Cursor::Last() { return Move(MDB_LAST); }
bool Cursor::Next() { return Move(MDB_NEXT); }
bool Cursor::Seek(std::string_view key) { return Move(MDB_SET_RANGE, key); }

// ---- Env -------------------------------------------------------------------

Env::Env(std::string path, bool read_only, const EnvOptions& options)
    : path_(std::move(path)), read_only_(read_only), options_(options), owner_pid_(getpid()) {
  for (std::atomic<int>& kind : tracked_kind_) kind.store(-1);
}

void Env::NoteOpened(const std::string& name, Dbi dbi) {
  opened_.emplace_back(name, dbi);
  if (name == changes_name_ && !changes_name_.empty()) changes_dbi_.store(dbi);
  for (size_t i = 0; i < tracked_names_.size(); ++i) {
    if (tracked_names_[i].first != name) continue;
    if (dbi >= kMaxTrackedDbi) {
      throw InvalidArgumentError("track changes of " + name + " in " + path_ +
                                 ": database handle out of range");
    }
    tracked_kind_[dbi].store(tracked_names_[i].second);
    if (i == 0) bounding_dbi_.store(dbi);
  }
}

void Env::TrackChanges(const std::vector<std::pair<std::string, uint8_t>>& tracked,
                       const std::string& changes_db) {
  if (read_only_) return;
  std::lock_guard<std::mutex> serialise(open_db_mutex_);
  tracked_names_ = tracked;
  changes_name_ = changes_db;
  const std::vector<std::pair<std::string, Dbi>> opened = opened_;
  opened_.clear();
  for (const auto& [name, dbi] : opened) NoteOpened(name, dbi);
  // Only an existing record is kept: a read-only Dataset never creates it.
  if (changes_dbi_.load() == 0) FindChangesDb();
}

bool Txn::IsTracked(Dbi dbi) const {
  return !read_only_ && changes_ != Changes::kOff && dbi < Env::kMaxTrackedDbi &&
         env_->tracked_kind_[dbi].load(std::memory_order_relaxed) >= 0;
}

void Txn::RecordChange(Dbi dbi, std::string_view key) {
  if (read_only_ || changes_ == Changes::kOff || dbi >= Env::kMaxTrackedDbi) return;
  const int kind = env_->tracked_kind_[dbi].load();
  const Dbi changes = env_->changes_dbi_.load();
  if (kind < 0) return;
  if (changes == 0) {
    changes_ = Changes::kOff;  // no record (yet): nothing to keep in this transaction
    return;
  }
  if (changes_ == Changes::kUnknown) {
    const std::optional<ChangeHeader> header = ReadChangeHeader(*this, changes);
    if (!header || header->overflowed || header->base.empty()) {
      changes_ = Changes::kOff;
      return;
    }
    changes_ = Changes::kOn;
    const Dbi bounding = env_->bounding_dbi_.load();
    const uint64_t bound = 4096 + (bounding != 0 ? Count(bounding) / 4 : 0);
    const uint64_t held = Count(changes);
    change_budget_ = held < bound ? bound - held : 0;
  }
  std::string change_key(1, static_cast<char>(kind));
  change_key.append(key);
  if (util::TestBugEnabled("change-record-skips-meta") && kind == kChangedVideo) return;
  if (change_budget_ == 0 || !KeyFits(change_key)) {
    std::string_view existing;
    if (Get(changes, change_key, &existing)) return;  // recorded since the start
    changes_overflowed_ = true;
    changes_ = Changes::kOff;
    return;
  }
  std::string_view before;
  const bool existed = Get(dbi, key, &before);
  std::string value(1, existed ? '\1' : '\0');
  if (existed) value.append(before);
  MDB_val k = ToVal(change_key);
  MDB_val v = ToVal(value);
  // One descent both finds a key recorded since the start (kept: its value
  // is the one before the first change) and records a new one.
  const int rc = mdb_put(txn_, changes, &k, &v, MDB_NOOVERWRITE);
  if (rc == MDB_KEYEXIST) return;
  if (rc != 0) ThrowLmdb(rc, "mdb_put", env_->path());
  --change_budget_;
}

void Txn::StampChanges() {
  const Dbi changes = env_->changes_dbi_.load();
  if (read_only_ || changes == 0) return;
  std::optional<ChangeHeader> header = ReadChangeHeader(*this, changes);
  if (!header) return;
  header->stamp = id();
  header->overflowed = header->overflowed || changes_overflowed_;
  if (header->overflowed) {
    // An overflowed record is not used: its entries go, so that it costs
    // nothing until the next tag starts it again.
    StartChangeRecord(*this, changes, "");
    header->base.clear();
  }
  const std::string bytes = EncodeChangeHeader(*header);
  MDB_val k = ToVal(kChangeHeaderKey);
  MDB_val v = ToVal(bytes);
  const int rc = mdb_put(txn_, changes, &k, &v, 0);
  if (rc != 0) ThrowLmdb(rc, "mdb_put", env_->path());
}

Env::~Env() {
  // A child process must not close its parent's environment: the handle's
  // reader slots and locks belong to the parent. The child's copy of the
  // mapping goes away when the child exits.
  if (env_ != nullptr && getpid() == owner_pid_) {
    DropIdleReaders();
    Unpin();
    mdb_env_close(env_);
  }
}

void Env::ReleaseReader(MDB_txn* txn) noexcept {
  // A reset transaction keeps its reader slot, so renewing it later skips
  // the search for a free slot under LMDB's inter-process mutex.
  mdb_txn_reset(txn);
  std::lock_guard<std::mutex> lock(idle_mutex_);
  if (idle_readers_.size() < kMaxIdleReaders) {
    idle_readers_.push_back(txn);
  } else {
    mdb_txn_abort(txn);
  }
}

void Env::DropIdleReaders() noexcept {
  std::lock_guard<std::mutex> lock(idle_mutex_);
  for (MDB_txn* txn : idle_readers_) mdb_txn_abort(txn);
  idle_readers_.clear();
}

std::unique_ptr<Env> Env::Open(const std::string& path, const EnvOptions& options) {
  if (options.no_lock && !options.read_only) {
    throw InvalidArgumentError("open index " + path + ": no_lock needs read_only");
  }
  // LMDB maps the file and trusts it: a truncated data.mdb would end the
  // process with SIGBUS at the first read past its end. Two page reads rule
  // that out (and a file that is not LMDB's) before it is mapped.
  const std::string data_file = options.no_subdir ? path : path + "/data.mdb";
  if (::access(data_file.c_str(), F_OK) == 0) CheckIndexFileHeader(data_file);
  std::unique_ptr<Env> env(new Env(path, options.read_only, options));
  auto try_open = [&](unsigned extra_flags) -> int {
    if (env->env_ != nullptr) {
      mdb_env_close(env->env_);
      env->env_ = nullptr;
    }
    int rc = mdb_env_create(&env->env_);
    if (rc != 0) ThrowLmdb(rc, "mdb_env_create", path);
    if ((rc = mdb_env_set_maxdbs(env->env_, options.max_dbs)) != 0 ||
        (rc = mdb_env_set_maxreaders(env->env_, options.max_readers)) != 0 ||
        (rc = mdb_env_set_mapsize(env->env_, options.initial_map_size)) != 0) {
      ThrowLmdb(rc, "mdb_env_set", path);
    }
    unsigned flags = MDB_NOTLS | extra_flags;
    if (options.read_only) flags |= MDB_RDONLY;
    if (options.no_lock) flags |= MDB_NOLOCK;
    if (options.no_subdir) flags |= MDB_NOSUBDIR;
    return mdb_env_open(env->env_, path.c_str(), flags, 0644);
  };
  int rc = try_open(0);
  if (options.read_only && (rc == EACCES || rc == EROFS)) {
    // The lock file cannot be written (read-only media or permissions):
    // readers may still share the data file as long as nobody writes.
    rc = try_open(MDB_NOLOCK);
  }
  if (rc != 0) ThrowLmdb(rc, "open index", path);
  return env;
}

IndexFileReport Env::VerifyFile() {
  // LMDB keeps two meta pages: once two commits follow the read transaction
  // begun here, its meta page is gone (VerifyIndexFile throws BusyError) although
  // its pages stay put. A writer committing as fast as that is no reason to
  // fail an open: begin again with a newer snapshot, a bounded number of times.
  constexpr int kAttempts = 20;
  for (int attempt = 1;; ++attempt) {
    Txn txn = BeginRead();
    try {
      return VerifyIndexFile(path_ + "/data.mdb", txn.id());
    } catch (const BusyError&) {
      if (attempt >= kAttempts) throw;
    }
  }
}

void Env::CopyTo(const std::string& path, bool compact) {
  util::UniqueFd fd;
  try {
    fd = util::OpenFile(path, O_WRONLY | O_CREAT | O_EXCL);
  } catch (const Error& e) {
    e.ThrowWithContext("create index copy: ");
  }
  // LMDB writes the copy itself; its sync and, on failure, its removal go
  // through the file layer.
  const int rc = mdb_env_copyfd2(env_, fd.get(), compact ? MDB_CP_COMPACT : 0u);
  try {
    if (rc != 0) ThrowLmdb(rc, "copy index " + path_ + " to", path);
    util::DataSync(fd.get(), path);
  } catch (...) {
    fd = util::UniqueFd();
    util::RemoveFileQuietly(path);
    throw;
  }
}

Dbi Env::OpenDb(const std::string& name, bool create) {
  std::lock_guard<std::mutex> serialise(open_db_mutex_);
  Txn txn = create ? BeginWrite() : BeginRead();
  MDB_dbi dbi = 0;
  const int rc = mdb_dbi_open(txn.txn_, name.c_str(), create ? MDB_CREATE : 0u, &dbi);
  if (rc != 0) ThrowLmdb(rc, "open index database '" + name + "' in", path_);
  txn.Commit();
  NoteOpened(name, dbi);
  return dbi;
}

Txn Env::Begin(bool read_only) {
  if (!read_only && read_only_) {
    throw InvalidArgumentError("write " + path_ + ": the index is open read-only");
  }
  for (int attempt = 0;; ++attempt) {
    std::shared_lock<std::shared_mutex> lock(resize_mutex_);
    MDB_txn* txn = nullptr;
    if (read_only) {
      {
        std::lock_guard<std::mutex> idle(idle_mutex_);
        if (!idle_readers_.empty()) {
          txn = idle_readers_.back();
          idle_readers_.pop_back();
        }
      }
      if (txn != nullptr) {
        const int rc = mdb_txn_renew(txn);
        if (rc == 0) return Txn(this, txn, true, std::move(lock));
        mdb_txn_abort(txn);
        txn = nullptr;
        if (rc != MDB_MAP_RESIZED) ThrowLmdb(rc, "mdb_txn_renew", path_);
        lock.unlock();
        AdoptNewMapSize();
        continue;
      }
    }
    const int rc = mdb_txn_begin(env_, nullptr, read_only ? MDB_RDONLY : 0u, &txn);
    if (rc == 0) return Txn(this, txn, read_only, std::move(lock));
    if (rc != MDB_MAP_RESIZED || attempt > 8) ThrowLmdb(rc, "mdb_txn_begin", path_);
    lock.unlock();
    AdoptNewMapSize();
  }
}

Txn Env::BeginRead() { return Begin(true); }
Txn Env::BeginWrite() {
  // A change record another process started since this one looked: found
  // before the write begins, so that the write keeps it. Not while this
  // thread opens a database (OpenDb holds the mutex and begins a write).
  if (!changes_name_.empty() && changes_dbi_.load() == 0) {
    std::unique_lock<std::mutex> serialise(open_db_mutex_, std::try_to_lock);
    if (serialise.owns_lock()) FindChangesDb();
  }
  return Begin(false);
}

void Env::FindChangesDb() {
  Txn txn = Begin(true);
  MDB_dbi dbi = 0;
  if (mdb_dbi_open(txn.txn_, changes_name_.c_str(), 0u, &dbi) != 0) return;
  txn.Commit();  // the handle joins the environment at commit (an abort would close it)
  NoteOpened(changes_name_, dbi);
}

void Env::AdoptNewMapSize() {
  std::unique_lock<std::shared_mutex> lock(resize_mutex_);
  DropIdleReaders();
  // Size 0 makes LMDB adopt the size another process recorded.
  const int rc = mdb_env_set_mapsize(env_, 0);
  if (rc != 0) ThrowLmdb(rc, "mdb_env_set_mapsize", path_);
}

void Env::Grow(size_t current) {
  std::unique_lock<std::shared_mutex> lock(resize_mutex_);
  DropIdleReaders();
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  if (info.me_mapsize > current) return;  // another thread grew it already
  if (current >= options_.max_map_size) {
    throw LimitExceededError("grow index " + path_ + ": map size limit of " +
                             std::to_string(options_.max_map_size) + " bytes reached");
  }
  const size_t next = std::min(current * 2, options_.max_map_size);
  const int rc = mdb_env_set_mapsize(env_, next);
  if (rc != 0) ThrowLmdb(rc, "mdb_env_set_mapsize", path_);
}

void Env::Update(const std::function<void(Txn&)>& body) { UpdateWith(body, /*sync=*/true); }

void Env::UpdateNoSync(const std::function<void(Txn&)>& body) { UpdateWith(body, /*sync=*/false); }

void Env::UpdateWith(const std::function<void(Txn&)>& body, bool sync) {
  for (;;) {
    const size_t size_before = map_size();
    try {
      Txn txn = BeginWrite();
      body(txn);
      txn.CommitWith(sync);
      return;
    } catch (const MapFullError&) {
      // The transaction is gone (aborted by ~Txn or freed by the failed
      // commit) and with it our shared lock, so the map can be resized.
    }
    Grow(size_before);
  }
}

void Env::Pin() {
  std::lock_guard<std::mutex> guard(pin_mutex_);
  MDB_txn* txn = nullptr;
  const int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
  if (rc != 0) ThrowLmdb(rc, "mdb_txn_begin (pin)", path_);
  if (pin_ != nullptr) mdb_txn_abort(pin_);
  pin_ = txn;
  uncounted_ = mdb_txn_id(txn);
  pinned_free_pages_ = 0;
}

void Env::Unpin() noexcept {
  std::lock_guard<std::mutex> guard(pin_mutex_);
  if (pin_ != nullptr && owner_pid_ == ::getpid()) mdb_txn_abort(pin_);
  pin_ = nullptr;
}

uint64_t Env::PinnedFreeBytes() {
  std::lock_guard<std::mutex> guard(pin_mutex_);
  if (pin_ == nullptr) return 0;
  // LMDB's free-page database (FREE_DBI, 0): key = the id of the transaction
  // that freed the pages (a size_t), value = their list, whose first word is
  // its length. LMDB reuses the pages of a record only when its key is below
  // every reader's snapshot, so the records from the pin's snapshot on are
  // the pages the pin holds; they never change once committed.
  Txn txn = BeginRead();
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(txn.txn_, 0, &cursor);
  if (rc != 0) ThrowLmdb(rc, "mdb_cursor_open (free pages)", path_);
  size_t from = static_cast<size_t>(uncounted_);
  MDB_val key{sizeof(from), &from};
  MDB_val value{0, nullptr};
  for (rc = mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
    size_t freed_by = 0;
    size_t pages = 0;
    if (key.mv_size != sizeof(freed_by) || value.mv_size < sizeof(pages)) {
      mdb_cursor_close(cursor);
      throw CorruptionError("read free pages of " + path_ + ": a record is malformed");
    }
    std::memcpy(&freed_by, key.mv_data, sizeof(freed_by));
    std::memcpy(&pages, value.mv_data, sizeof(pages));
    pinned_free_pages_ += pages;
    uncounted_ = uint64_t{freed_by} + 1;
  }
  mdb_cursor_close(cursor);
  if (rc != MDB_NOTFOUND) ThrowLmdb(rc, "mdb_cursor_get (free pages)", path_);
  MDB_stat stat;
  mdb_env_stat(env_, &stat);
  return pinned_free_pages_ * stat.ms_psize;
}

std::string Env::ReadMetaPages() const {
  MDB_stat stat;
  mdb_env_stat(env_, &stat);
  const std::string file = path_ + "/data.mdb";
  util::UniqueFd fd = util::OpenFile(file, O_RDONLY);
  std::string pages(size_t{2} * stat.ms_psize, '\0');
  if (util::PreadFull(fd.get(), pages.data(), pages.size(), 0, file) != pages.size()) {
    throw CorruptionError("read meta pages " + file + ": the file is shorter than two pages");
  }
  return pages;
}

void Env::RestoreMetaPages(const std::string& path, std::string_view pages) {
  const std::string file = path + "/data.mdb";
  util::UniqueFd fd = util::OpenFile(file, O_WRONLY);
  struct iovec iov {
    const_cast<char*>(pages.data()), pages.size()
  };
  util::PwritevFull(fd.get(), &iov, 1, 0, file);
  util::DataSync(fd.get(), file);
}

size_t Env::map_size() const {
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  return info.me_mapsize;
}

size_t Env::used_bytes() const {
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  MDB_stat stat;
  mdb_env_stat(env_, &stat);
  return (info.me_last_pgno + 1) * stat.ms_psize;
}

void Env::SetDurable(bool durable) {
  std::lock_guard<std::mutex> guard(commit_mutex_);
  const int rc = mdb_env_set_flags(env_, MDB_NOSYNC, durable ? 0 : 1);
  if (rc != 0) ThrowLmdb(rc, "mdb_env_set_flags", path_);
  durable_ = durable;
}

void Env::ReleaseMappedPages() {
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  const size_t used = std::min(used_bytes(), info.me_mapsize);
  if (info.me_mapaddr != nullptr && used > 0) {
    // The map is a shared read-only file mapping: MADV_DONTNEED only unmaps
    // the pages from this process; the next access faults them back in.
    ::madvise(info.me_mapaddr, used, MADV_DONTNEED);
  }
}

size_t Env::max_key_size() const { return static_cast<size_t>(mdb_env_get_maxkeysize(env_)); }

void Env::Sync() {
  const int rc = mdb_env_sync(env_, 1);
  if (rc != 0) ThrowLmdb(rc, "mdb_env_sync", path_);
}

}  // namespace gulpdb::index
