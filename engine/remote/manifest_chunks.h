// The chunk list of the manifest a RemoteSource (remote_dataset.h) reads:
// its entries, each with a flag that says it agreed with the snapshot's
// record of the chunk (checked on first use, ChunkDisagreement), and the
// ETag reads of each chunk object ask for (the manifest's, or one accepted
// since, conditional_reads.h). A manifest that pages its list (version 3)
// has each page fetched on first use (FetchChunkPage): one GET, outside the
// lock, which other threads wanting the page wait for; a failed fetch is
// tried again by the next use. PrefetchChunk starts the page's fetch, and
// the caller's read of the chunk's record, in the background.
//
// Thread safety: any number of threads may use one; the pages, the
// prefetches and the ETags each have a mutex. Loaded pages are never
// dropped: pointers to entries stay valid for the life of the list. The
// destructor waits for the prefetches.
//
// Failures: a page that cannot be fetched throws FetchChunkPage's error
// (CorruptionError naming the page when it is missing or not what the
// manifest says); a chunk the manifest lacks, or whose entry disagrees with
// the record, is a CorruptionError "read id '<id>' in <dir>: ...".
#ifndef GULPDB_ENGINE_REMOTE_MANIFEST_CHUNKS_H_
#define GULPDB_ENGINE_REMOTE_MANIFEST_CHUNKS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "index/records.h"

namespace gulpdb::engine {

class ManifestChunks {
 public:
  // The list of `manifest` (whose pages are in `store`); both must outlive
  // this. Fetches nothing.
  ManifestChunks(ObjectStore& store, const Manifest& manifest);
  ~ManifestChunks();
  ManifestChunks(const ManifestChunks&) = delete;
  ManifestChunks& operator=(const ManifestChunks&) = delete;

  // The entry for chunk `number`, or null (its page fetched first).
  const ManifestChunk* Chunk(uint32_t number) const;
  // Every entry, by number (every page fetched).
  std::vector<ManifestChunk> AllChunks() const;
  // The entry for chunk `number`, checked against `record` (called only the
  // first time) as RemoteSource::VerifiedManifestChunk says.
  const ManifestChunk& Verified(uint32_t number, std::string_view id, const std::string& dir,
                                const std::function<index::ChunkRecord()>& record) const;
  // As RemoteSource::PrefetchChunk.
  void PrefetchChunk(uint32_t number, std::function<void()> record) const;
  // The loaded entry whose object is `key`, or null.
  const ManifestChunk* LoadedChunkOfKey(const std::string& key) const;

  // The ETag reads of `key` ask for ("" for none).
  std::string AcceptedEtag(const std::string& key) const;
  // From now on reads of `key` ask for `etag`.
  void Accept(const std::string& key, const std::string& etag) const;

 private:
  // Entries of a page (of the whole list for a manifest that lists them),
  // each with its flag.
  struct ChunkList {
    explicit ChunkList(std::vector<ManifestChunk> entries);
    std::vector<ManifestChunk> chunks;
    std::unique_ptr<std::atomic<bool>[]> verified;
  };
  // The entry for `number` and its flag, or {null, null}.
  std::pair<const ManifestChunk*, std::atomic<bool>*> Find(uint32_t number) const;
  // Page `page` of manifest_.chunk_pages (of the inline list: 0), loaded.
  std::shared_ptr<ChunkList> Page(size_t page) const;
  // Which page of manifest_.chunk_pages holds `number` (0 for the inline
  // list), or nullopt when none can.
  std::optional<size_t> PageOf(uint32_t number) const;

  ObjectStore& store_;
  const Manifest& manifest_;
  mutable std::mutex pages_mutex_;
  mutable std::vector<std::shared_ptr<ChunkList>> pages_;
  // Pages being fetched: other threads wanting one wait for that fetch.
  mutable std::map<size_t, std::shared_future<std::shared_ptr<ChunkList>>> loading_;
  // PrefetchChunk's background work, waited for by the destructor.
  mutable std::mutex prefetch_mutex_;
  mutable std::set<uint32_t> prefetched_;
  mutable std::vector<std::future<void>> prefetches_;
  mutable std::mutex etags_mutex_;
  mutable std::map<std::string, std::string> etags_;  // chunk key -> the ETag reads ask for
};

// "" when the manifest entry `m` describes chunk `number` of a snapshot
// whose record of it is `record`; otherwise what disagrees. The entry must
// give the record's committed length, and the key a push gives that chunk:
// its file name, or data_<number>.gulp for a file in a sub-directory (an
// attached shard's chunk). A manifest with two chunks' keys swapped, a cut
// committed length or another chunk's object fails here, before a byte of
// it is read.
std::string ChunkDisagreement(const ManifestChunk& m, uint32_t number,
                              const index::ChunkRecord& record);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_MANIFEST_CHUNKS_H_
