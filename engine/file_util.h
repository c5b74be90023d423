// The file layer: an owning file descriptor, whole-buffer pread/pwrite with
// EINTR and short-transfer handling, whole-file reads, atomic file
// replacement and copies, directory fsync and advisory locks. Every read,
// write, sync and truncate goes through the fault-injection hooks
// (engine/fault_injection.h), so that the reliability suite can fail any of
// them; nothing else in gulpdb calls read/write/fsync on a data file itself.
//
// Every failure throws a gulpdb::Error naming the operation and the path.
// Thread safety: UniqueFd and AtomicFile are move-only and not synchronised;
// the free functions are safe from any thread.
#ifndef GULPDB_ENGINE_FILE_UTIL_H_
#define GULPDB_ENGINE_FILE_UTIL_H_

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gulpdb::engine {

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

uint64_t FileSize(int fd, const std::string& path);

// The whole content of the regular file at `path`. Throws NotFoundError when
// it is missing, InvalidArgumentError when it is not a regular file, IoError
// when a read fails or the file shrinks while being read.
std::string ReadFile(const std::string& path);

// A file that replaces `path` atomically: bytes go to a temporary file beside
// it ("<path>.tmp.<pid>.<n>", created with O_EXCL and `mode` minus the
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
// Removes a directory and the plain files in it (not recursive); a missing
// directory is not an error.
void RemoveFlatDirectory(const std::string& path);
// Names of the entries of `dir` (not "." or ".."), sorted.
std::vector<std::string> ListDirectory(const std::string& dir);
bool IsDirectory(const std::string& path);

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

// A random UUID (version 4, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", lowercase
// hex) from the kernel's random source: a dataset's identity, a push's id.
// Throws IoError if the random source fails.
std::string RandomUuid();

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_FILE_UTIL_H_
