// The read path of JPEG bytes, shared by every read of a Dataset (ReadJpegs,
// ReadJpegBatch, and through them ReadFrames and ReadBatch), for local and
// remote datasets alike:
//
//   1. one short read transaction looks up every request's video record
//      (and, locally, opens its chunk file through the dataset's cache);
//   2. each selection is resolved and its frames grouped into runs that are
//      adjacent in their chunk;
//   3. every run of every request is read: one pread per run from a local
//      chunk file, or one HTTP range request per run from a remote chunk
//      object, all runs of the call issued at once over the store's kept-alive
//      connections (remote::S3Client::GetRanges);
//   4. frames are checked against their stored CRC-32C: always for a remote
//      dataset (bytes that crossed a network are cheap to check, and a wrong
//      answer must never reach the caller), on request
//      (OpenOptions::verify_checksums) for a local one.
//
// A remote read never asks for a byte past its chunk's committed length in
// the manifest: a frame that would need one is a CorruptionError.
//
// Thread safety: as Dataset (any number of threads at once).
#ifndef GULPDB_ENGINE_CORE_CHUNK_READER_H_
#define GULPDB_ENGINE_CORE_CHUNK_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/dataset_impl.h"

namespace gulpdb::engine {

struct JpegRequest {
  std::string_view id;
  const Selection* selection = nullptr;  // must outlive the call
};

// The JPEG bytes of every request, in request order. Throws as
// Dataset::ReadJpegs: IdNotFoundError for a missing id, OutOfRangeError for a
// bad frame index (before any byte is read), CorruptionError for a frame
// whose bytes or checksum are wrong, IoError (AccessDeniedError for HTTP 403)
// when the file system or the object store fails.
std::vector<JpegFrames> ReadJpegRequests(const DatasetImpl& impl,
                                         const std::vector<JpegRequest>& requests);

// One chunk's bytes, for walks over a whole dataset (check): a local chunk
// file or a remote chunk object. ReadAt reads exactly `size` bytes or
// throws (CorruptionError when the file or object ends early).
class ChunkBytes {
 public:
  virtual ~ChunkBytes() = default;
  virtual uint64_t Size() const = 0;
  virtual void ReadAt(uint64_t offset, void* dst, size_t size) const = 0;
  // The file's path or the object's URL.
  virtual const std::string& name() const = 0;
};

// Opens chunk `number` (whose record is `record`) of `impl` for reading:
// the file (NotFoundError or IoError when it cannot be opened) or, for a
// remote dataset, the object the manifest gives readers for it (one HEAD
// request; CorruptionError when the manifest has no such chunk or its entry
// disagrees with the record, NotFoundError when the object is missing).
std::shared_ptr<const ChunkBytes> OpenChunkBytes(const DatasetImpl& impl, uint32_t number,
                                                 const index::ChunkRecord& record);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_CHUNK_READER_H_
