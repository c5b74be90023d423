// A file's identity as stat(2) gives it: size, device, inode, modification
// and change times in nanoseconds. Any write to the file changes its change
// time, which no tool can set back (only the kernel sets it); a replacement
// (cp, mv, restore) or a copy to another disk changes the inode or device.
// So a cache that records what it verified of a file, with the identity the
// file had then, can trust the record while the identity is the same (the
// .gmeta source stamps of imported datasets, the verified snapshots of the
// node cache).
//
// Thread safety: plain values and free functions; safe from any thread.
#ifndef GULPDB_UTIL_FILE_IDENTITY_H_
#define GULPDB_UTIL_FILE_IDENTITY_H_

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

namespace gulpdb::util {

struct FileIdentity {
  uint64_t size = 0, device = 0, inode = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;

  bool operator==(const FileIdentity& o) const {
    return size == o.size && device == o.device && inode == o.inode && mtime_ns == o.mtime_ns &&
           ctime_ns == o.ctime_ns;
  }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
};

// The identity in `st` (a stat or fstat of the file).
FileIdentity IdentityOfStat(const struct stat& st);

// stat(2) of `path`: none when it does not exist (ENOENT, ENOTDIR);
// IoError for any other failure.
std::optional<FileIdentity> IdentityOf(const std::string& path);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_FILE_IDENTITY_H_
