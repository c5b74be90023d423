// Small POSIX helpers: an owning file descriptor, whole-buffer pread/pwrite
// with EINTR and short-transfer handling, directory fsync and advisory locks.
//
// Every failure throws a gulpdb::Error naming the operation and the path.
// Thread safety: UniqueFd is move-only and not synchronised; the free
// functions are safe from any thread.
#ifndef GULPDB_ENGINE_FILE_UTIL_H_
#define GULPDB_ENGINE_FILE_UTIL_H_

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
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

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_FILE_UTIL_H_
