// A .gulp chunk file: JPEG frames back to back, each followed by GulpIO's
// zero padding to a multiple of four bytes (docs/format/chunk_format.md).
//
// A ChunkFile knows nothing of the index; the index says which byte ranges
// are committed. Reads use pread (no shared file offset), so one ChunkFile
// may be read from any number of threads at once. Writing (AppendFrames,
// Sync, Truncate) is for the single writer only.
#ifndef GULPDB_ENGINE_CORE_CHUNK_FILE_H_
#define GULPDB_ENGINE_CORE_CHUNK_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/types.h"
#include "util/file_io.h"

namespace gulpdb::engine {

class ChunkFile {
 public:
  enum class Mode { kRead, kAppend, kCreate };
  // kRead: read-only; kAppend: read-write, the file must exist; kCreate:
  // read-write, the file must not exist yet (EEXIST is an IoError).
  ChunkFile(std::string path, Mode mode);

  const std::string& path() const { return path_; }

  // Reads exactly `size` bytes at `offset`. A file that ends early is a
  // CorruptionError naming the file, the offset and the sizes.
  void ReadAt(uint64_t offset, void* dst, size_t size) const;

  // Writes each JPEG followed by its pad, starting at `offset`, with as few
  // system calls as possible; returns one FrameInfo per frame.
  std::vector<FrameInfo> AppendFrames(uint64_t offset, const std::vector<std::string_view>& jpegs);

  uint64_t Size() const { return util::FileSize(fd_.get(), path_); }
  void Sync() { util::DataSync(fd_.get(), path_); }
  void TruncateTo(uint64_t size) { util::Truncate(fd_.get(), size, path_); }
  int fd() const { return fd_.get(); }

 private:
  std::string path_;
  util::UniqueFd fd_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_CHUNK_FILE_H_
