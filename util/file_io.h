// The file layer, and the file-I/O seam of gulpdb: every read, write, sync,
// truncate, rename and removal of a durable file (chunks, .gmeta files,
// manifests, snapshots, the cache, index directories) goes through the
// functions here, and each of them passes util::fault::Inject first, so that
// a test (tests/reliability) or a power-loss simulator can fail it, cut it
// short or record it. Nothing else in gulpdb calls read/write/fsync/rename/
// unlink on a durable file itself; LMDB's own writes of data.mdb are LMDB's.
//
// Also here: an owning file descriptor, whole-buffer pread/pwrite with EINTR
// and short-transfer handling, whole-file reads, atomic file replacement and
// copies, directory fsync, mkdir -p, recursive removal and advisory locks.
//
// Every failure throws a gulpdb::Error naming the operation and the path
// (util/sys_error.h). Thread safety: UniqueFd and AtomicFile are move-only
// and not synchronised; the free functions are safe from any thread. The I/O
// hook is process-wide: install it before the threads that should see it
// start, and remove it (pass nullptr) before its `context` dies.
#ifndef GULPDB_UTIL_FILE_IO_H_
#define GULPDB_UTIL_FILE_IO_H_

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gulpdb::util {

namespace fault {

// The I/O operations of this file layer that a hook sees.
enum class Op : uint8_t {
  kRead,
  kWrite,
  kSync,  // fdatasync of a file
  kTruncate,
  kRename,         // path: the old name
  kRemove,         // unlink or rmdir
  kSyncDirectory,  // fsync of a directory (its created, renamed or removed entries)
};
const char* OpName(Op op);

// What a hook asks for one system call: fail it with `error` (an errno
// value), or let at most `max_bytes` of it through (a short transfer; only
// reads and writes can be short).
struct Injection {
  int error = 0;
  size_t max_bytes = SIZE_MAX;
};
using IoHook = Injection (*)(Op op, const std::string& path, uint64_t offset, size_t size,
                             void* context);
void SetIoHook(IoHook hook, void* context);

namespace detail {
extern std::atomic<IoHook> io_hook;
Injection CallIoHook(Op op, const std::string& path, uint64_t offset, size_t size);
}  // namespace detail

// With no hook installed this costs one relaxed atomic load.
inline Injection Inject(Op op, const std::string& path, uint64_t offset, size_t size) {
  if (detail::io_hook.load(std::memory_order_relaxed) == nullptr) return {};
  return detail::CallIoHook(op, path, offset, size);
}

}  // namespace fault

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// open(2) with O_CLOEXEC; throws (NotFoundError for ENOENT).
UniqueFd OpenFile(const std::string& path, int flags, int mode = 0644);

// Reads up to `size` bytes at `offset`, retrying on EINTR and short reads;
// returns fewer only at end of file.
size_t PreadFull(int fd, void* dst, size_t size, uint64_t offset, const std::string& path);

// Writes every byte of `iov` at `offset` (pwritev, retrying on EINTR and
// partial writes).
void PwritevFull(int fd, struct iovec* iov, int iovcnt, uint64_t offset, const std::string& path);

// Writes every byte of `bytes` at the file offset of `fd` (write(2),
// retrying on EINTR and partial writes). Errors: "write <path>: <strerror>".
void WriteFull(int fd, std::string_view bytes, const std::string& path);

uint64_t FileSize(int fd, const std::string& path);

// The whole content of the regular file at `path`. Throws NotFoundError when
// it is missing, InvalidArgumentError when it is not a regular file, IoError
// when a read fails or the file shrinks while being read.
std::string ReadFile(const std::string& path);

// "<pid>.<n>": a suffix no other call in any running process returns (n
// counts up from 0 in each process), for the names of temporary files and
// directories, which cleaning recognises by the pid.
std::string UniqueFileSuffix();

// A file that replaces `path` atomically: bytes go to a temporary file beside
// it ("<path>.tmp." + UniqueFileSuffix(), created with O_EXCL and `mode` minus the
// umask); Commit() fdatasyncs it, renames it over `path` and fsyncs the
// directory. Until Commit() renames, a file already at `path` is untouched;
// on every failure before the rename, and when the object is destroyed
// without Commit(), the temporary file is removed. If only the final
// directory fsync fails, the new file is in place but its rename may not
// survive a crash.
class AtomicFile {
 public:
  // Creates the temporary file. Throws NotFoundError when the directory does
  // not exist, IoError or ResourceExhaustedError otherwise.
  explicit AtomicFile(std::string path, int mode = 0644);
  ~AtomicFile();
  AtomicFile(AtomicFile&&) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends `bytes` to the temporary file. Throws IoError or
  // ResourceExhaustedError; the temporary file is then removed and the
  // object unusable (further calls throw InvalidArgumentError).
  void Append(std::string_view bytes);
  // Syncs, renames over path() and syncs the directory; see above.
  void Commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  void Fail() noexcept;  // closes and removes the temporary file

  std::string path_;
  std::string temp_path_;
  UniqueFd fd_;
  uint64_t size_ = 0;
  bool done_ = false;  // committed, or failed and cleaned up
};

// Replaces `path` with `data` through an AtomicFile.
void WriteFileAtomically(const std::string& path, std::string_view data, int mode = 0644);

// Copies the regular file `from` to `to` through an AtomicFile, in blocks
// (memory does not grow with the file). Throws as ReadFile and AtomicFile.
void CopyFile(const std::string& from, const std::string& to);
void DataSync(int fd, const std::string& path);
void Truncate(int fd, uint64_t size, const std::string& path);
// fsync on a directory, so that created, renamed or removed entries are durable.
void SyncDirectory(const std::string& path);
bool PathExists(const std::string& path);

// rename(2) `from` to `to`. Throws as util::ThrowErrno ("rename <from>").
void Rename(const std::string& from, const std::string& to);
// rename(2) for a caller that handles some failures itself: 0, or the errno
// value (nothing is thrown).
int RenameOrErrno(const std::string& from, const std::string& to);
// renameat2(RENAME_EXCHANGE): swaps `a` and `b` atomically. 0, or the errno
// value (EINVAL or ENOSYS where the file system cannot exchange); nothing is
// thrown.
int ExchangePathsOrErrno(const std::string& a, const std::string& b);
// unlink(2). Returns false when `path` does not exist; throws otherwise.
bool RemoveFile(const std::string& path);
// unlink(2) for cleanup on a path that is already failing: errors are ignored.
void RemoveFileQuietly(const std::string& path) noexcept;
// rmdir(2) of an empty directory. Returns false when `path` does not exist.
bool RemoveDirectory(const std::string& path);
// Removes `path` and everything below it (symbolic links are removed, never
// followed); a missing path is not an error. Throws the first failure.
void RemoveTree(const std::string& path);
// Removes a directory and the plain files in it (not recursive); a missing
// directory is not an error.
void RemoveFlatDirectory(const std::string& path);
// mkdir(2) with `mode`. Returns false when something is already at `path`
// (of any kind: the caller decides whether that is fine); other failures
// throw "<operation> <path>: <strerror>".
bool MakeDirectory(const std::string& path, int mode = 0755,
                   const std::string& operation = "create");
// Creates `path` and its missing parents (mkdir -p); existing ones are kept.
// Each directory it creates is synced into its parent before the next step,
// so what is later put in it and synced survives a power cut.
void MakeDirectories(const std::string& path);
// Names of the entries of `dir` (not "." or ".."), sorted.
std::vector<std::string> ListDirectory(const std::string& dir);
bool IsDirectory(const std::string& path);

// Why the entry at `path` can be neither read as a regular file nor listed as
// a directory, symbolic links followed: "a dangling symbolic link (to T)",
// "a symbolic link loop (T)", "a character device", "a symbolic link to
// /dev/zero, a character device", "a FIFO", ... Empty for a regular file or
// a directory (after links), and for a path that cannot be examined (missing,
// no permission): opening it says why.
std::string DescribeUnusableEntry(const std::string& path);
// Throws when DescribeUnusableEntry(path) has a reason: "<operation> <path>:
// <reason>", NotFoundError for a dangling link (nothing is there), else
// InvalidArgumentError. Reading such an entry would fail unclearly, or, for
// a device such as /dev/zero or a FIFO, never end.
void RequireUsableEntry(const std::string& path, const std::string& operation);

// An exclusive advisory lock (flock) on a lock file, held while the object
// lives. Works across processes; within one process a second FileLock on the
// same file also conflicts (each opens its own file description).
class FileLock {
 public:
  // Tries for up to `wait` (zero: once). Throws BusyError naming `what` when
  // another holder keeps the lock.
  FileLock(const std::string& path, std::chrono::milliseconds wait, const std::string& what);
  FileLock(FileLock&&) = default;
  ~FileLock() = default;  // closing the descriptor releases the lock

 private:
  UniqueFd fd_;
};

// Fills `out` with `size` bytes from the kernel's random source
// (getrandom(2), a CSPRNG; it blocks only until the pool is first seeded at
// boot). Throws IoError if the random source fails.
void RandomBytes(void* out, size_t size);

// A random UUID (version 4, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", lowercase
// hex) from the kernel's random source: a dataset's identity, a push's id.
// Throws IoError if the random source fails.
std::string RandomUuid();

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_FILE_IO_H_
