// Where a dataset opened from a published manifest gets what is not on this
// machine: its chunk bytes and its label map. The storage core reads through
// this interface; the remote room implements it (engine/remote/
// remote_dataset.h, RemoteSource) and hands it to the core when it opens such
// a dataset, so that the core never includes the room above it.
//
// Thread safety: an implementation may be used from any number of threads.
#ifndef GULPDB_ENGINE_CORE_CHUNK_SOURCE_H_
#define GULPDB_ENGINE_CORE_CHUNK_SOURCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/dataset.h"
#include "index/records.h"

namespace gulpdb::engine {

class ChunkBytes;  // engine/core/chunk_bytes.h

class ChunkSource {
 public:
  virtual ~ChunkSource() = default;

  // False when readers read the dataset's own chunk files (a dataset on a
  // network file system read through its published snapshot): the core then
  // reads them itself, and calls nothing below but CopyLabelMap.
  virtual bool ServesChunks() const = 0;

  // The object readers read for chunk `number`, checked against the
  // snapshot's record of the chunk (`record` is called for it the first time
  // the source meets the chunk only). Throws CorruptionError "read id '<id>'
  // in <dir>: ..." when the source has no such chunk or its entry disagrees
  // with the record.
  struct Object {
    std::string key;
    uint64_t committed_length = 0;
  };
  virtual Object VerifiedChunk(uint32_t number, std::string_view id, const std::string& dir,
                               const std::function<index::ChunkRecord()>& record) const = 0;
  // A hint that VerifiedChunk(number, ...) comes next: a source that has not
  // met the chunk yet may start fetching what it needs for it in the
  // background, and `record` with it (a function safe to call from another
  // thread, and to call again). By default, nothing.
  virtual void PrefetchChunk(uint32_t number, std::function<void()> record) const {
    (void)number;
    (void)record;
  }

  // The name of object `key` in messages (its URL).
  virtual std::string Name(const std::string& key) const = 0;

  // Reads the ranges (concurrently). `what` says what was being read, for
  // messages. A missing, cut or replaced object is a CorruptionError that
  // says what probably happened; other failures keep their type.
  struct Range {
    std::string key;
    uint64_t offset = 0;
    uint64_t length = 0;
    char* out = nullptr;
  };
  virtual void Read(const std::vector<Range>& ranges, const std::string& what) const = 0;

  // Read-ahead: starts fetching the ranges (`out` unused) in the background,
  // for a Read of them that follows (Dataset::Prefetch). Never throws for
  // the store's sake: the Read meets what went wrong. By default, nothing.
  virtual void Prefetch(const std::vector<Range>& ranges) const { (void)ranges; }

  // The frames of `ranges`, as the last Read filled them, failed their
  // checksums: the source drops any copy it served them from (a cache), so
  // that a Read of them again fetches them from the store. True when it had
  // such a copy (reading again may then succeed). By default, false.
  virtual bool Forget(const std::vector<Range>& ranges) const {
    (void)ranges;
    return false;
  }

  // Chunk `number` (whose record is `record`) of the dataset `dir` as one
  // object, for walks over a whole dataset (check): see OpenChunkBytes.
  virtual std::shared_ptr<const ChunkBytes> OpenChunk(uint32_t number,
                                                      const index::ChunkRecord& record,
                                                      const std::string& dir) const = 0;

  // Copies the published label map, if the dataset has one, to the local
  // file `path` (written atomically).
  virtual void CopyLabelMap(const std::string& path) const = 0;

  // The tags the source publishes (a manifest's tags: Dataset::Versions
  // of a dataset in a bucket), or nullopt when the dataset's own directory
  // holds its tags. By default, nullopt.
  virtual std::optional<std::vector<VersionInfo>> PublishedVersions() const { return std::nullopt; }
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_CHUNK_SOURCE_H_
