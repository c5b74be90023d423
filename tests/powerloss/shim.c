// LD_PRELOAD shim of the power-loss simulator (docs/testing.md, "Power loss").
//
// Records, in order, every file-system operation a process issues under one
// directory tree: writes with their bytes (write, pwrite, pwritev, writev and
// their 64-bit and v2 forms), ftruncate/truncate, fallocate, the sync family
// (fsync, fdatasync, sync_file_range, msync, syncfs, sync), opens (flags, and
// whether O_CREAT made a new file), renames, links, unlinks, mkdir and rmdir.
// gulpdb's own file layer and LMDB both go through libc's dynamic symbols, so
// one shim sees both; a write through a shared writable mmap would not be
// seen, so such an mmap of a recorded file is recorded as `mmapw` and the
// checker refuses a trace that has one outside LMDB's lock file.
//
// Environment:
//   GULPDB_PL_ROOT   absolute path: only paths under it are recorded
//   GULPDB_PL_TRACE  the trace file (appended to)
//   GULPDB_PL_ACK    a path outside the root: each write to it is recorded as
//                    an `ack` with its bytes (a workload's acknowledged commit)
//
// Trace format: records, each a header line of space-separated fields
//   <op> <pid> <fields...> <payload length>\n
// followed by the payload's bytes. Paths are %-encoded (bytes <= 0x20, '%',
// >= 0x7f). Ops and fields:
//   open   pid fd flags created path        (O_* flags in decimal; created 0/1)
//   write  pid fd offset n                  payload: the n bytes written
//   trunc  pid fd size
//   falloc pid fd mode offset len
//   fsync | fdatasync | syncfs | sfr pid fd
//   msync  pid                              (address-based; not tied to a file)
//   sync   pid
//   close  pid fd
//   dup    pid oldfd newfd
//   rename pid flags old new                (renameat2 flags)
//   link   pid old new
//   unlink | rmdir | mkdir pid path
//   mmapw  pid fd
//   ack    pid                              payload: the bytes written
//
// Every recorded call holds one process-wide mutex across the real call and
// its record, so the trace order is an order the calls really took effect in.
// Thread safety: as above. Signals: not async-signal-safe (tests only).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 65536

static pthread_mutex_t g_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static char* g_paths[MAX_FDS];  // tracked fd -> its path (NULL: not tracked)
static unsigned char g_ack[MAX_FDS];
static int g_trace_fd = -1;
static char g_root[PATH_MAX];
static size_t g_root_len;
static char g_ack_path[PATH_MAX];
static int g_ready;  // 1: configured, -1: not configured

#define REAL(ret, name, args)    \
  static ret(*real_##name) args; \
  if (!real_##name) real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name)

static ssize_t raw_write(int fd, const void* p, size_t n) {
  static ssize_t (*w)(int, const void*, size_t);
  if (!w) w = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  const char* c = p;
  size_t done = 0;
  while (done < n) {
    ssize_t r = w(fd, c + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return (ssize_t)done;
}

static void setup(void) {
  if (g_ready) return;
  const char* root = getenv("GULPDB_PL_ROOT");
  const char* trace = getenv("GULPDB_PL_TRACE");
  const char* ack = getenv("GULPDB_PL_ACK");
  if (!root || !trace || !*root || strlen(root) >= PATH_MAX - 1) {
    g_ready = -1;
    return;
  }
  strcpy(g_root, root);
  g_root_len = strlen(g_root);
  while (g_root_len > 1 && g_root[g_root_len - 1] == '/') g_root[--g_root_len] = 0;
  if (ack && strlen(ack) < PATH_MAX) strcpy(g_ack_path, ack);
  REAL(int, open, (const char*, int, ...));
  g_trace_fd = real_open(trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (g_trace_fd < 0) {
    g_ready = -1;
    return;
  }
  // Out of the way of the fds a program expects to get (0, 1, 2, ...).
  int high = fcntl(g_trace_fd, F_DUPFD_CLOEXEC, 1000);
  if (high >= 0) {
    REAL(int, close, (int));
    real_close(g_trace_fd);
    g_trace_fd = high;
  }
  g_ready = 1;
}

static int active(void) {
  if (!g_ready) setup();
  return g_ready == 1;
}

// Absolute, lexically normalized form of `path` relative to `dirfd`.
static int absolute(int dirfd, const char* path, char* out) {
  char base[PATH_MAX];
  char joined[2 * PATH_MAX];
  if (path[0] == '/') {
    snprintf(joined, sizeof joined, "%s", path);
  } else {
    if (dirfd == AT_FDCWD) {
      if (!getcwd(base, sizeof base)) return -1;
    } else if (dirfd >= 0 && dirfd < MAX_FDS && g_paths[dirfd]) {
      snprintf(base, sizeof base, "%s", g_paths[dirfd]);
    } else {
      char link[64];
      snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
      ssize_t n = readlink(link, base, sizeof base - 1);
      if (n < 0) return -1;
      base[n] = 0;
    }
    snprintf(joined, sizeof joined, "%s/%s", base, path);
  }
  // Normalize: drop "." and empty segments, resolve "..".
  size_t len = 0;
  out[0] = 0;
  const char* s = joined;
  while (*s) {
    while (*s == '/') ++s;
    const char* e = s;
    while (*e && *e != '/') ++e;
    size_t seg = (size_t)(e - s);
    if (seg == 0) break;
    if (seg == 1 && s[0] == '.') {
    } else if (seg == 2 && s[0] == '.' && s[1] == '.') {
      while (len > 0 && out[len - 1] != '/') --len;
      if (len > 0) --len;
      out[len] = 0;
    } else {
      if (len + seg + 2 >= PATH_MAX) return -1;
      out[len++] = '/';
      memcpy(out + len, s, seg);
      len += seg;
      out[len] = 0;
    }
    s = e;
  }
  if (len == 0) strcpy(out, "/");
  return 0;
}

static int under_root(const char* abs) {
  return strncmp(abs, g_root, g_root_len) == 0 && (abs[g_root_len] == 0 || abs[g_root_len] == '/');
}

static void encode(const char* path, char* out, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  for (const unsigned char* p = (const unsigned char*)path; *p && o + 4 < cap; ++p) {
    if (*p <= 0x20 || *p == '%' || *p >= 0x7f) {
      out[o++] = '%';
      out[o++] = hex[*p >> 4];
      out[o++] = hex[*p & 15];
    } else {
      out[o++] = (char)*p;
    }
  }
  out[o] = 0;
}

// One record: the header (printf-style) and an optional payload of iovecs.
static void record(const struct iovec* iov, int iovcnt, size_t payload, const char* fmt, ...) {
  char head[3 * 2 * PATH_MAX + 256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(head, sizeof head - 32, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  n += snprintf(head + n, 32, " %zu\n", payload);
  raw_write(g_trace_fd, head, (size_t)n);
  size_t left = payload;
  for (int i = 0; i < iovcnt && left > 0; ++i) {
    size_t take = iov[i].iov_len < left ? iov[i].iov_len : left;
    raw_write(g_trace_fd, iov[i].iov_base, take);
    left -= take;
  }
}

static int tracked(int fd) { return fd >= 0 && fd < MAX_FDS && (g_paths[fd] || g_ack[fd]); }

static void forget(int fd) {
  if (fd < 0 || fd >= MAX_FDS) return;
  free(g_paths[fd]);
  g_paths[fd] = NULL;
  g_ack[fd] = 0;
}

// Called with the mutex held, after a successful open of `abs` as `fd`.
static void note_open(int fd, const char* abs, int flags, int created) {
  if (fd < 0 || fd >= MAX_FDS) return;
  forget(fd);
  if (g_ack_path[0] && strcmp(abs, g_ack_path) == 0) {
    g_ack[fd] = 1;
    return;
  }
  if (!under_root(abs)) return;
  g_paths[fd] = strdup(abs);
  char enc[3 * PATH_MAX];
  encode(abs, enc, sizeof enc);
  record(NULL, 0, 0, "open %d %d %d %d %s", (int)getpid(), fd, flags, created, enc);
}

static int do_open(int dirfd, const char* path, int flags, mode_t mode,
                   int (*call)(int, const char*, int, mode_t)) {
  if (!active() || !path) return call(dirfd, path, flags, mode);
  char abs[PATH_MAX];
  if (absolute(dirfd, path, abs) != 0) return call(dirfd, path, flags, mode);
  int ack = g_ack_path[0] && strcmp(abs, g_ack_path) == 0;
  if (!under_root(abs) && !ack) return call(dirfd, path, flags, mode);
  pthread_mutex_lock(&g_mu);
  struct stat st;
  int existed = lstat(abs, &st) == 0;
  int fd = call(dirfd, path, flags, mode);
  int saved = errno;
  if (fd >= 0) note_open(fd, abs, flags, (flags & O_CREAT) && !existed);
  pthread_mutex_unlock(&g_mu);
  errno = saved;
  return fd;
}

static int call_openat(int dirfd, const char* path, int flags, mode_t mode) {
  REAL(int, openat, (int, const char*, int, ...));
  return real_openat(dirfd, path, flags, mode);
}

#define MODE_ARG                         \
  mode_t mode = 0;                       \
  if (flags & (O_CREAT | __O_TMPFILE)) { \
    va_list ap;                          \
    va_start(ap, flags);                 \
    mode = (mode_t)va_arg(ap, int);      \
    va_end(ap);                          \
  }

int open(const char* path, int flags, ...) {
  MODE_ARG
  return do_open(AT_FDCWD, path, flags, mode, call_openat);
}
int open64(const char* path, int flags, ...) {
  MODE_ARG
  return do_open(AT_FDCWD, path, flags, mode, call_openat);
}
int openat(int dirfd, const char* path, int flags, ...) {
  MODE_ARG
  return do_open(dirfd, path, flags, mode, call_openat);
}
int openat64(int dirfd, const char* path, int flags, ...) {
  MODE_ARG
  return do_open(dirfd, path, flags, mode, call_openat);
}
int __open_2(const char* path, int flags) { return do_open(AT_FDCWD, path, flags, 0, call_openat); }
int __open64_2(const char* path, int flags) {
  return do_open(AT_FDCWD, path, flags, 0, call_openat);
}
int __openat_2(int dirfd, const char* path, int flags) {
  return do_open(dirfd, path, flags, 0, call_openat);
}
int __openat64_2(int dirfd, const char* path, int flags) {
  return do_open(dirfd, path, flags, 0, call_openat);
}
int creat(const char* path, mode_t mode) {
  return do_open(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode, call_openat);
}
int creat64(const char* path, mode_t mode) {
  return do_open(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode, call_openat);
}

// Writes: `offset` < 0 means "at the file position" (write, writev).
static ssize_t do_write(int fd, const struct iovec* iov, int iovcnt, off_t offset,
                        ssize_t (*call)(int, const struct iovec*, int, off_t, int), int flags) {
  if (!active() || !tracked(fd)) return call(fd, iov, iovcnt, offset, flags);
  pthread_mutex_lock(&g_mu);
  off_t at = offset;
  if (at < 0 && g_paths[fd]) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_APPEND)) {
      struct stat st;
      at = fstat(fd, &st) == 0 ? st.st_size : 0;
    } else {
      at = lseek(fd, 0, SEEK_CUR);
    }
  }
  ssize_t n = call(fd, iov, iovcnt, offset, flags);
  int saved = errno;
  if (n > 0) {
    if (g_ack[fd]) {
      record(iov, iovcnt, (size_t)n, "ack %d", (int)getpid());
    } else {
      record(iov, iovcnt, (size_t)n, "write %d %d %lld", (int)getpid(), fd, (long long)at);
    }
  }
  pthread_mutex_unlock(&g_mu);
  errno = saved;
  return n;
}

static ssize_t call_pwritev2(int fd, const struct iovec* iov, int iovcnt, off_t offset, int flags) {
  REAL(ssize_t, pwritev2, (int, const struct iovec*, int, off_t, int));
  return real_pwritev2(fd, iov, iovcnt, offset, flags);
}
static ssize_t call_writev(int fd, const struct iovec* iov, int iovcnt, off_t offset, int flags) {
  (void)offset;
  (void)flags;
  REAL(ssize_t, writev, (int, const struct iovec*, int));
  return real_writev(fd, iov, iovcnt);
}
static ssize_t call_pwritev(int fd, const struct iovec* iov, int iovcnt, off_t offset, int flags) {
  (void)flags;
  REAL(ssize_t, pwritev, (int, const struct iovec*, int, off_t));
  return real_pwritev(fd, iov, iovcnt, offset);
}

ssize_t write(int fd, const void* buf, size_t n) {
  struct iovec v = {(void*)buf, n};
  return do_write(fd, &v, 1, -1, call_writev, 0);
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  struct iovec v = {(void*)buf, n};
  return do_write(fd, &v, 1, off, call_pwritev, 0);
}
ssize_t pwrite64(int fd, const void* buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }
ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  return do_write(fd, iov, iovcnt, -1, call_writev, 0);
}
ssize_t pwritev(int fd, const struct iovec* iov, int iovcnt, off_t off) {
  return do_write(fd, iov, iovcnt, off, call_pwritev, 0);
}
ssize_t pwritev64(int fd, const struct iovec* iov, int iovcnt, off_t off) {
  return pwritev(fd, iov, iovcnt, off);
}
ssize_t pwritev2(int fd, const struct iovec* iov, int iovcnt, off_t off, int flags) {
  if (off == -1) return do_write(fd, iov, iovcnt, -1, call_pwritev2, flags);
  return do_write(fd, iov, iovcnt, off, call_pwritev2, flags);
}
ssize_t pwritev64v2(int fd, const struct iovec* iov, int iovcnt, off_t off, int flags) {
  return pwritev2(fd, iov, iovcnt, off, flags);
}

// Calls on one fd recorded as "<op> pid fd [extra]" when they succeed.
#define FD_CALL(ret, name, params, args, fmt, ...)                          \
  ret name params {                                                         \
    REAL(ret, name, params);                                                \
    if (!active() || !tracked(fd) || !g_paths[fd]) return real_##name args; \
    pthread_mutex_lock(&g_mu);                                              \
    ret r = real_##name args;                                               \
    int saved = errno;                                                      \
    if (r == 0) record(NULL, 0, 0, fmt, (int)getpid(), fd, ##__VA_ARGS__);  \
    pthread_mutex_unlock(&g_mu);                                            \
    errno = saved;                                                          \
    return r;                                                               \
  }

FD_CALL(int, fsync, (int fd), (fd), "fsync %d %d")
FD_CALL(int, fdatasync, (int fd), (fd), "fdatasync %d %d")
FD_CALL(int, syncfs, (int fd), (fd), "syncfs %d %d")
FD_CALL(int, ftruncate, (int fd, off_t size), (fd, size), "trunc %d %d %lld", (long long)size)
FD_CALL(int, ftruncate64, (int fd, off_t size), (fd, size), "trunc %d %d %lld", (long long)size)
FD_CALL(int, fallocate, (int fd, int mode, off_t o, off_t l), (fd, mode, o, l),
        "falloc %d %d %d %lld %lld", mode, (long long)o, (long long)l)
FD_CALL(int, fallocate64, (int fd, int mode, off_t o, off_t l), (fd, mode, o, l),
        "falloc %d %d %d %lld %lld", mode, (long long)o, (long long)l)
FD_CALL(int, sync_file_range, (int fd, off_t o, off_t l, unsigned f), (fd, o, l, f), "sfr %d %d")

int posix_fallocate(int fd, off_t o, off_t l) {
  REAL(int, posix_fallocate, (int, off_t, off_t));
  if (!active() || !tracked(fd) || !g_paths[fd]) return real_posix_fallocate(fd, o, l);
  pthread_mutex_lock(&g_mu);
  int r = real_posix_fallocate(fd, o, l);
  if (r == 0)
    record(NULL, 0, 0, "falloc %d %d 0 %lld %lld", (int)getpid(), fd, (long long)o, (long long)l);
  pthread_mutex_unlock(&g_mu);
  return r;
}

int msync(void* addr, size_t len, int flags) {
  REAL(int, msync, (void*, size_t, int));
  int r = real_msync(addr, len, flags);
  if (active() && r == 0) {
    pthread_mutex_lock(&g_mu);
    record(NULL, 0, 0, "msync %d", (int)getpid());
    pthread_mutex_unlock(&g_mu);
  }
  return r;
}

void sync(void) {
  REAL(void, sync, (void));
  real_sync();
  if (active()) {
    pthread_mutex_lock(&g_mu);
    record(NULL, 0, 0, "sync %d", (int)getpid());
    pthread_mutex_unlock(&g_mu);
  }
}

void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  REAL(void*, mmap, (void*, size_t, int, int, int, off_t));
  void* r = real_mmap(addr, len, prot, flags, fd, off);
  if (r != MAP_FAILED && (prot & PROT_WRITE) && (flags & MAP_SHARED) && active() && tracked(fd) &&
      g_paths[fd]) {
    pthread_mutex_lock(&g_mu);
    record(NULL, 0, 0, "mmapw %d %d", (int)getpid(), fd);
    pthread_mutex_unlock(&g_mu);
  }
  return r;
}
void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}

int close(int fd) {
  REAL(int, close, (int));
  if (!active() || !tracked(fd)) return real_close(fd);
  pthread_mutex_lock(&g_mu);
  if (g_paths[fd]) record(NULL, 0, 0, "close %d %d", (int)getpid(), fd);
  forget(fd);
  int r = real_close(fd);
  int saved = errno;
  pthread_mutex_unlock(&g_mu);
  errno = saved;
  return r;
}

static void note_dup(int oldfd, int newfd) {
  if (newfd < 0 || newfd >= MAX_FDS) return;
  forget(newfd);
  if (!tracked(oldfd)) return;
  g_ack[newfd] = g_ack[oldfd];
  if (g_paths[oldfd]) {
    g_paths[newfd] = strdup(g_paths[oldfd]);
    record(NULL, 0, 0, "dup %d %d %d", (int)getpid(), oldfd, newfd);
  }
}

int dup(int fd) {
  REAL(int, dup, (int));
  if (!active()) return real_dup(fd);
  pthread_mutex_lock(&g_mu);
  int r = real_dup(fd);
  if (r >= 0) note_dup(fd, r);
  pthread_mutex_unlock(&g_mu);
  return r;
}
int dup2(int fd, int newfd) {
  REAL(int, dup2, (int, int));
  if (!active()) return real_dup2(fd, newfd);
  pthread_mutex_lock(&g_mu);
  int r = real_dup2(fd, newfd);
  if (r >= 0 && r != fd) note_dup(fd, r);
  pthread_mutex_unlock(&g_mu);
  return r;
}
int dup3(int fd, int newfd, int flags) {
  REAL(int, dup3, (int, int, int));
  if (!active()) return real_dup3(fd, newfd, flags);
  pthread_mutex_lock(&g_mu);
  int r = real_dup3(fd, newfd, flags);
  if (r >= 0) note_dup(fd, r);
  pthread_mutex_unlock(&g_mu);
  return r;
}

// Path operations: recorded when a path is under the root.
static int path_op(const char* op, int dirfd, const char* path, int (*call)(void*), void* ctx) {
  char abs[PATH_MAX];
  if (!active() || !path || absolute(dirfd, path, abs) != 0 || !under_root(abs)) return call(ctx);
  pthread_mutex_lock(&g_mu);
  int r = call(ctx);
  int saved = errno;
  if (r == 0) {
    char enc[3 * PATH_MAX];
    encode(abs, enc, sizeof enc);
    record(NULL, 0, 0, "%s %d %s", op, (int)getpid(), enc);
  }
  pthread_mutex_unlock(&g_mu);
  errno = saved;
  return r;
}

struct args2 {
  int dirfd;
  const char* path;
  int flags;
  mode_t mode;
};
static int c_unlinkat(void* p) {
  struct args2* a = p;
  REAL(int, unlinkat, (int, const char*, int));
  return real_unlinkat(a->dirfd, a->path, a->flags);
}
static int c_mkdirat(void* p) {
  struct args2* a = p;
  REAL(int, mkdirat, (int, const char*, mode_t));
  return real_mkdirat(a->dirfd, a->path, a->mode);
}
static int c_truncate(void* p) {
  struct args2* a = p;
  REAL(int, truncate, (const char*, off_t));
  return real_truncate(a->path, (off_t)a->mode);
}

int unlink(const char* path) {
  struct args2 a = {AT_FDCWD, path, 0, 0};
  return path_op("unlink", AT_FDCWD, path, c_unlinkat, &a);
}
int rmdir(const char* path) {
  struct args2 a = {AT_FDCWD, path, AT_REMOVEDIR, 0};
  return path_op("rmdir", AT_FDCWD, path, c_unlinkat, &a);
}
int unlinkat(int dirfd, const char* path, int flags) {
  struct args2 a = {dirfd, path, flags, 0};
  return path_op((flags & AT_REMOVEDIR) ? "rmdir" : "unlink", dirfd, path, c_unlinkat, &a);
}
int mkdir(const char* path, mode_t mode) {
  struct args2 a = {AT_FDCWD, path, 0, mode};
  return path_op("mkdir", AT_FDCWD, path, c_mkdirat, &a);
}
int mkdirat(int dirfd, const char* path, mode_t mode) {
  struct args2 a = {dirfd, path, 0, mode};
  return path_op("mkdir", dirfd, path, c_mkdirat, &a);
}
int truncate(const char* path, off_t size) {
  // Recorded as open + trunc + close of a pseudo fd -1 would lose the
  // inode; truncate by path is rare enough to be refused by the checker.
  struct args2 a = {AT_FDCWD, path, 0, (mode_t)size};
  return path_op("ptrunc", AT_FDCWD, path, c_truncate, &a);
}

static int two_paths(const char* op, int olddir, const char* oldp, int newdir, const char* newp,
                     unsigned flags, int (*call)(void*), void* ctx) {
  char a[PATH_MAX], b[PATH_MAX];
  if (!active() || !oldp || !newp || absolute(olddir, oldp, a) != 0 ||
      absolute(newdir, newp, b) != 0 || (!under_root(a) && !under_root(b))) {
    return call(ctx);
  }
  pthread_mutex_lock(&g_mu);
  int r = call(ctx);
  int saved = errno;
  if (r == 0) {
    char ea[3 * PATH_MAX], eb[3 * PATH_MAX];
    encode(a, ea, sizeof ea);
    encode(b, eb, sizeof eb);
    if (strcmp(op, "rename") == 0) {
      record(NULL, 0, 0, "rename %d %u %s %s", (int)getpid(), flags, ea, eb);
    } else {
      record(NULL, 0, 0, "%s %d %s %s", op, (int)getpid(), ea, eb);
    }
  }
  pthread_mutex_unlock(&g_mu);
  errno = saved;
  return r;
}

struct args4 {
  int od;
  const char* op;
  int nd;
  const char* np;
  unsigned flags;
};
static int c_renameat2(void* p) {
  struct args4* a = p;
  if (a->flags == 0) {
    REAL(int, renameat, (int, const char*, int, const char*));
    return real_renameat(a->od, a->op, a->nd, a->np);
  }
  REAL(int, renameat2, (int, const char*, int, const char*, unsigned));
  return real_renameat2(a->od, a->op, a->nd, a->np, a->flags);
}
static int c_linkat(void* p) {
  struct args4* a = p;
  REAL(int, linkat, (int, const char*, int, const char*, int));
  return real_linkat(a->od, a->op, a->nd, a->np, (int)a->flags);
}

int rename(const char* o, const char* n) {
  struct args4 a = {AT_FDCWD, o, AT_FDCWD, n, 0};
  return two_paths("rename", AT_FDCWD, o, AT_FDCWD, n, 0, c_renameat2, &a);
}
int renameat(int od, const char* o, int nd, const char* n) {
  struct args4 a = {od, o, nd, n, 0};
  return two_paths("rename", od, o, nd, n, 0, c_renameat2, &a);
}
int renameat2(int od, const char* o, int nd, const char* n, unsigned flags) {
  struct args4 a = {od, o, nd, n, flags};
  return two_paths("rename", od, o, nd, n, flags, c_renameat2, &a);
}
int link(const char* o, const char* n) {
  struct args4 a = {AT_FDCWD, o, AT_FDCWD, n, 0};
  return two_paths("link", AT_FDCWD, o, AT_FDCWD, n, 0, c_linkat, &a);
}
int linkat(int od, const char* o, int nd, const char* n, int flags) {
  struct args4 a = {od, o, nd, n, (unsigned)flags};
  return two_paths("link", od, o, nd, n, 0, c_linkat, &a);
}
