// A chunk's bytes as one object to read at any offset, for walks over a
// whole dataset: the local chunk file, or the remote chunk object a
// dataset's ChunkSource (chunk_source.h) opens.
#ifndef GULPDB_ENGINE_CORE_CHUNK_BYTES_H_
#define GULPDB_ENGINE_CORE_CHUNK_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gulpdb/dataset.h"
#include "index/records.h"

namespace gulpdb::engine {

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

// Opens chunk `number` (whose record is `record`) of `dataset` for reading:
// the file (NotFoundError or IoError when it cannot be opened) or, for a
// remote dataset, the object the manifest gives readers for it (one HEAD
// request; CorruptionError when the manifest has no such chunk or its entry
// disagrees with the record, NotFoundError when the object is missing).
std::shared_ptr<const ChunkBytes> OpenChunkBytes(const Dataset& dataset, uint32_t number,
                                                 const index::ChunkRecord& record);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_CHUNK_BYTES_H_
