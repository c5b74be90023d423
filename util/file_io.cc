#include "util/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <thread>

#include "gulpdb/error.h"
#include "util/path.h"
#include "util/sys_error.h"
#include "util/test_bug.h"

namespace gulpdb::util {

namespace fault {
namespace detail {

std::atomic<IoHook> io_hook{nullptr};
namespace {
std::atomic<void*> io_context{nullptr};
}  // namespace

Injection CallIoHook(Op op, const std::string& path, uint64_t offset, size_t size) {
  if (IoHook hook = io_hook.load(std::memory_order_acquire)) {
    return hook(op, path, offset, size, io_context.load(std::memory_order_acquire));
  }
  return {};
}

}  // namespace detail

void SetIoHook(IoHook hook, void* context) {
  detail::io_context.store(context, std::memory_order_release);
  detail::io_hook.store(hook, std::memory_order_release);
}

const char* OpName(Op op) {
  switch (op) {
    case Op::kRead:
      return "read";
    case Op::kWrite:
      return "write";
    case Op::kSync:
      return "sync";
    case Op::kTruncate:
      return "truncate";
    case Op::kRename:
      return "rename";
    case Op::kRemove:
      return "remove";
    case Op::kSyncDirectory:
      return "sync directory";
  }
  return "unknown";
}

}  // namespace fault

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd OpenFile(const std::string& path, int flags, int mode) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) ThrowErrno("open", path, errno);
  return UniqueFd(fd);
}

size_t PreadFull(int fd, void* dst, size_t size, uint64_t offset, const std::string& path) {
  auto* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < size) {
    const fault::Injection inject =
        fault::Inject(fault::Op::kRead, path, offset + done, size - done);
    if (inject.error != 0) {
      ThrowErrno("read", path + " at offset " + std::to_string(offset + done), inject.error);
    }
    const ssize_t n =
        ::pread(fd, out + done, std::min(size - done, std::max<size_t>(1, inject.max_bytes)),
                static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      ThrowErrno("read", path + " at offset " + std::to_string(offset + done), errno);
    }
    if (n == 0) break;  // end of file
    done += static_cast<size_t>(n);
  }
  return done;
}

void PwritevFull(int fd, struct iovec* iov, int iovcnt, uint64_t offset, const std::string& path) {
  while (iovcnt > 0) {
    size_t total = 0;
    for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
    const fault::Injection inject = fault::Inject(fault::Op::kWrite, path, offset, total);
    if (inject.error != 0) {
      ThrowErrno("write", path + " at offset " + std::to_string(offset), inject.error);
    }
    ssize_t n;
    if (inject.max_bytes < total) {
      // A short write, as a full disk or a signal gives: only the first
      // max_bytes go through (at least one, or the loop would not progress).
      const size_t first = std::max<size_t>(1, std::min(inject.max_bytes, iov[0].iov_len));
      n = ::pwrite(fd, iov[0].iov_base, first, static_cast<off_t>(offset));
    } else {
      n = ::pwritev(fd, iov, iovcnt, static_cast<off_t>(offset));
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      ThrowErrno("write", path + " at offset " + std::to_string(offset), errno);
    }
    offset += static_cast<uint64_t>(n);
    size_t left = static_cast<size_t>(n);
    while (iovcnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
}

void WriteFull(int fd, std::string_view bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const fault::Injection inject =
        fault::Inject(fault::Op::kWrite, path, done, bytes.size() - done);
    if (inject.error != 0) ThrowErrno("write", path, inject.error);
    const size_t want = std::min(bytes.size() - done, std::max<size_t>(1, inject.max_bytes));
    const ssize_t n = ::write(fd, bytes.data() + done, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ThrowErrno("write", path, errno);
    done += static_cast<size_t>(n);
  }
}

uint64_t FileSize(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) ThrowErrno("stat", path, errno);
  return static_cast<uint64_t>(st.st_size);
}

void DataSync(int fd, const std::string& path) {
  const fault::Injection inject = fault::Inject(fault::Op::kSync, path, 0, 0);
  if (inject.error != 0) ThrowErrno("fdatasync", path, inject.error);
  if (::fdatasync(fd) != 0) ThrowErrno("fdatasync", path, errno);
}

void Truncate(int fd, uint64_t size, const std::string& path) {
  const fault::Injection inject = fault::Inject(fault::Op::kTruncate, path, size, 0);
  if (inject.error != 0) ThrowErrno("truncate", path, inject.error);
  int rc;
  do {
    rc = ::ftruncate(fd, static_cast<off_t>(size));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) ThrowErrno("truncate", path, errno);
}

std::string ReadFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused
  // below); reads of a regular file ignore the flag.
  UniqueFd fd = OpenFile(path, O_RDONLY | O_NONBLOCK);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) ThrowErrno("stat", path, errno);
  if (!S_ISREG(st.st_mode)) throw InvalidArgumentError("read " + path + ": not a regular file");
  std::string data(static_cast<size_t>(st.st_size), '\0');
  data.resize(PreadFull(fd.get(), data.data(), data.size(), 0, path));
  return data;
}

namespace {

std::atomic<uint64_t> g_temp_counter{0};

}  // namespace

std::string UniqueFileSuffix() {
  return std::to_string(::getpid()) + "." + std::to_string(g_temp_counter.fetch_add(1));
}

AtomicFile::AtomicFile(std::string path, int mode) : path_(std::move(path)) {
  // O_EXCL with a name unique to this process and call; retried in the
  // unlikely case a stale file of a dead process with our pid is in the way.
  for (int attempt = 0;; ++attempt) {
    temp_path_ = path_ + ".tmp." + UniqueFileSuffix();
    const int fd = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0) {
      fd_ = UniqueFd(fd);
      return;
    }
    if (errno == EINTR) continue;
    if (errno != EEXIST || attempt >= 100) ThrowErrno("create", temp_path_, errno);
  }
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::move(other.fd_)),
      size_(other.size_),
      done_(std::exchange(other.done_, true)) {}

AtomicFile::~AtomicFile() {
  if (!done_) Fail();
}

void AtomicFile::Fail() noexcept {
  fd_ = UniqueFd();
  RemoveFileQuietly(temp_path_);
  done_ = true;
}

void AtomicFile::Append(std::string_view bytes) {
  if (done_)
    throw InvalidArgumentError("write " + path_ + ": the file was already committed or failed");
  try {
    struct iovec iov = {const_cast<char*>(bytes.data()), bytes.size()};
    PwritevFull(fd_.get(), &iov, 1, size_, temp_path_);
  } catch (...) {
    Fail();
    throw;
  }
  size_ += bytes.size();
}

void AtomicFile::Commit() {
  if (done_)
    throw InvalidArgumentError("commit " + path_ + ": the file was already committed or failed");
  try {
    if (!util::TestBugEnabled("rename-before-sync")) DataSync(fd_.get(), temp_path_);
    fd_ = UniqueFd();  // after a successful sync, close(2) has nothing left to report
    Rename(temp_path_, path_);
  } catch (...) {
    Fail();
    throw;
  }
  done_ = true;
  SyncDirectory(ParentOf(path_));  // makes the rename durable
}

void WriteFileAtomically(const std::string& path, std::string_view data, int mode) {
  AtomicFile file(path, mode);
  file.Append(data);
  file.Commit();
}

void CopyFile(const std::string& from, const std::string& to) {
  UniqueFd in = OpenFile(from, O_RDONLY);
  struct stat st;
  if (::fstat(in.get(), &st) != 0) ThrowErrno("stat", from, errno);
  if (!S_ISREG(st.st_mode)) throw InvalidArgumentError("copy " + from + ": not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  AtomicFile out(to);
  std::string block(static_cast<size_t>(std::min<uint64_t>(size, uint64_t{1} << 20)), '\0');
  for (uint64_t done = 0; done < size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(block.size(), size - done));
    const size_t got = PreadFull(in.get(), block.data(), want, done, from);
    if (got != want) throw IoError("copy " + from + ": the file shrank while being read");
    out.Append(std::string_view(block.data(), got));
    done += got;
  }
  out.Commit();
}

void SyncDirectory(const std::string& path) {
  UniqueFd fd = OpenFile(path, O_RDONLY | O_DIRECTORY);
  const fault::Injection inject = fault::Inject(fault::Op::kSyncDirectory, path, 0, 0);
  if (inject.error != 0) ThrowErrno("fsync directory", path, inject.error);
  if (::fsync(fd.get()) != 0) ThrowErrno("fsync directory", path, errno);
}

void Rename(const std::string& from, const std::string& to) {
  if (const int err = RenameOrErrno(from, to); err != 0) ThrowErrno("rename", from, err);
}

int RenameOrErrno(const std::string& from, const std::string& to) {
  const fault::Injection inject = fault::Inject(fault::Op::kRename, from, 0, 0);
  if (inject.error != 0) return inject.error;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

int ExchangePathsOrErrno(const std::string& a, const std::string& b) {
  const fault::Injection inject = fault::Inject(fault::Op::kRename, a, 0, 0);
  if (inject.error != 0) return inject.error;
  return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0 ? 0 : errno;
}

bool RemoveFile(const std::string& path) {
  const fault::Injection inject = fault::Inject(fault::Op::kRemove, path, 0, 0);
  if (inject.error != 0) ThrowErrno("remove", path, inject.error);
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  ThrowErrno("remove", path, errno);
}

void RemoveFileQuietly(const std::string& path) noexcept {
  if (fault::Inject(fault::Op::kRemove, path, 0, 0).error != 0) return;
  ::unlink(path.c_str());
}

bool RemoveDirectory(const std::string& path) {
  const fault::Injection inject = fault::Inject(fault::Op::kRemove, path, 0, 0);
  if (inject.error != 0) ThrowErrno("remove", path, inject.error);
  if (::rmdir(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  ThrowErrno("remove", path, errno);
}

void RemoveTree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    for (const std::string& name : ListDirectory(path)) RemoveTree(path + "/" + name);
    RemoveDirectory(path);
  } else {
    RemoveFile(path);
  }
}

bool MakeDirectory(const std::string& path, int mode, const std::string& operation) {
  if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) == 0) return true;
  if (errno == EEXIST) return false;
  ThrowErrno(operation, path, errno);
}

void MakeDirectories(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string part = slash == std::string::npos ? path : path.substr(0, slash);
    // Each new directory's entry is made durable before anything is put in
    // it: a manifest naming an object in a directory lost at a power cut
    // would be a broken publication (found by tests/powerloss).
    if (!part.empty() && MakeDirectory(part)) SyncDirectory(ParentOf(part));
    if (slash == std::string::npos) return;
  }
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void RemoveFlatDirectory(const std::string& path) {
  if (!PathExists(path)) return;
  for (const std::string& name : ListDirectory(path)) {
    RemoveFile(path + "/" + name);
  }
  RemoveDirectory(path);
}

std::vector<std::string> ListDirectory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) ThrowErrno("list", dir, errno);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

// "a character device", ... for a mode that is neither a regular file nor a directory.
std::string KindOf(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "neither a file nor a directory";
}

}  // namespace

std::string DescribeUnusableEntry(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (!S_ISLNK(st.st_mode)) {
    return S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ? "" : KindOf(st.st_mode);
  }
  char target[4096];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
  const std::string to = n > 0 ? std::string(target, static_cast<size_t>(n)) : "?";
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "a dangling symbolic link (to " + to + ")";
    if (errno == ELOOP) return "a symbolic link loop (" + to + ")";
    return "";
  }
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return "";
  return "a symbolic link to " + to + ", " + KindOf(st.st_mode);
}

void RequireUsableEntry(const std::string& path, const std::string& operation) {
  const std::string reason = DescribeUnusableEntry(path);
  if (reason.empty()) return;
  const std::string message = operation + " " + path + ": " + reason;
  if (reason.rfind("a dangling", 0) == 0) throw NotFoundError(message);
  throw InvalidArgumentError(message);
}

FileLock::FileLock(const std::string& path, std::chrono::milliseconds wait, const std::string& what)
    : fd_(OpenFile(path, O_RDWR | O_CREAT)) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (::flock(fd_.get(), LOCK_EX | LOCK_NB) == 0) return;
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) ThrowErrno("lock", path, errno);
    if (std::chrono::steady_clock::now() >= deadline) {
      throw BusyError("open writer " + what + ": another writer holds the lock " + path);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void RandomBytes(void* out, size_t size) {
  auto* bytes = static_cast<unsigned char*>(out);
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::getrandom(bytes + got, size - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ThrowErrno("getrandom", "(random source)", errno);
    got += static_cast<size_t>(n);
  }
}

std::string RandomUuid() {
  unsigned char bytes[16];
  RandomBytes(bytes, sizeof bytes);
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < sizeof bytes; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0x0f];
  }
  return out;
}

}  // namespace gulpdb::util
