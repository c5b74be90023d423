// Internals of Dataset shared by the engine's translation units (dataset.cc,
// writer.cc and the interop code). Not part of the public API.
#ifndef GULPDB_ENGINE_DATASET_IMPL_H_
#define GULPDB_ENGINE_DATASET_IMPL_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "engine/chunk_file.h"
#include "engine/query/query_dbs.h"
#include "engine/thread_pool.h"
#include "gulpdb/dataset.h"
#include "index/lmdb_env.h"
#include "index/records.h"
#include "index/seal.h"

namespace gulpdb {

// Where the LMDB environment and the writer lock live inside a dataset.
inline constexpr const char* kIndexDirName = "gulpdb.index";
inline constexpr const char* kWriterLockName = "writer.lock";

// Read-only chunk files kept open for reading, at most `capacity` at once,
// least recently used closed first. Thread-safe.
class ChunkFileCache {
 public:
  explicit ChunkFileCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}
  std::shared_ptr<const engine::ChunkFile> Get(uint32_t chunk) const;
  void Put(uint32_t chunk, std::shared_ptr<const engine::ChunkFile> file) const;
  void Clear() const;

 private:
  using Entry = std::pair<uint32_t, std::shared_ptr<const engine::ChunkFile>>;
  size_t capacity_;
  mutable std::mutex mutex_;
  mutable std::list<Entry> lru_;  // most recent first
  mutable std::unordered_map<uint32_t, std::list<Entry>::iterator> map_;
};

struct Dataset::Impl {
  std::string dir;
  std::string index_dir;
  OpenOptions options;
  std::shared_ptr<index::Env> env;
  index::Dbi videos = 0, chunks = 0, order = 0, info = 0;
  mutable engine::QueryDbs query;  // meta index and splits (engine/query/)
  ChunkFileCache files;

  // The pool that decodes frames, started on first use.
  engine::ThreadPool& DecodePool() const;

  Impl(std::string dir_in, const OpenOptions& options_in);

  std::string ChunkPath(const std::string& file_name) const { return dir + "/" + file_name; }

  // Format 2 seals every video and chunk record (index/seal.h). Set at open
  // from DatasetInfo.
  bool sealed = false;
  std::string Seal(std::string_view key, std::string value) const;
  // The record bytes of a stored value; CorruptionError naming the video id
  // or chunk number if the seal does not match.
  using RecordKind = index::RecordKind;
  std::string_view Unseal(std::string_view key, std::string_view value, RecordKind kind) const;
  void PutVideo(index::Txn& txn, std::string_view id, const index::VideoRecord& record) const;
  void PutChunk(index::Txn& txn, uint32_t chunk, const index::ChunkRecord& record) const;
  // Decodes the value at a cursor over the chunks database.
  index::ChunkRecord DecodeChunkAt(std::string_view key, std::string_view value) const;

  // Readers of records inside a caller's transaction; they throw
  // CorruptionError for records that fail verification.
  std::optional<index::VideoRecord> FindRecord(const index::Txn& txn, std::string_view id) const;
  index::ChunkRecord GetChunk(const index::Txn& txn, uint32_t chunk) const;
  index::DatasetInfo GetInfo(const index::Txn& txn) const;
  // The open chunk file for reading, from the cache or opened now.
  std::shared_ptr<const engine::ChunkFile> ChunkForRead(const index::Txn& txn,
                                                        uint32_t chunk) const;
  VideoInfo ToVideoInfo(std::string_view id, index::VideoRecord&& record) const;
  void ScanOrder(std::string_view from_key, std::string_view until_key,
                 const std::function<bool(const VideoInfo&)>& fn) const;

 private:
  mutable std::once_flag pool_once_;
  mutable std::unique_ptr<engine::ThreadPool> pool_;
};

namespace engine {

// The one door from the engine's modules to a Dataset's internals (a friend
// of Dataset), so that the public header exposes none of them.
class DatasetAccess {
 public:
  using Impl = Dataset::Impl;
  static Impl& Of(Dataset& dataset) { return *dataset.impl_; }
  static const Impl& Of(const Dataset& dataset) { return *dataset.impl_; }
};

using DatasetImpl = DatasetAccess::Impl;

}  // namespace engine
}  // namespace gulpdb

#endif  // GULPDB_ENGINE_DATASET_IMPL_H_
