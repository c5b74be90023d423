// An index a Dataset reads through instead of its LMDB environment: a
// partitioned index snapshot (engine/partition's PartitionedIndex implements
// it), as chunk_source.h is where the chunks of such a dataset come from.
// The storage core reads every record of a dataset opened on one
// (OpenOnIndexSource, dataset_view.h) through this interface and never
// touches LMDB for it; the query room reads its part (QuerySource,
// engine/query/index_handles.h).
//
// Records are returned verified (seal, size): a damaged one is a
// CorruptionError naming where it came from, never a wrong answer.
//
// Thread safety: an implementation may be used from any number of threads.
#ifndef GULPDB_ENGINE_CORE_INDEX_SOURCE_H_
#define GULPDB_ENGINE_CORE_INDEX_SOURCE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/query/index_handles.h"
#include "index/records.h"

namespace gulpdb::engine {

// FindVideo, ScanVideos, MetaFields and ScanMeta come from QuerySource.
class IndexSource : public QuerySource {
 public:
  ~IndexSource() override = default;

  // The dataset info record of the snapshot.
  virtual const index::DatasetInfo& info() const = 0;

  // Entries of the order table (position -> id): the dataset's video count.
  virtual uint64_t OrderCount() const = 0;
  // The id at `position` (0-based) of the order table; nullopt past its end.
  virtual std::optional<std::string> OrderAt(uint64_t position) const = 0;
  // The order table's entries with from <= order key < to (index::OrderKey;
  // `to` empty: no bound) in order; `fn` returns false to stop.
  virtual void ScanOrder(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view order_key, std::string_view id)>& fn) const = 0;
  // The first position of each block of the order table stored together
  // (each order partition), ascending, starting with 0.
  virtual std::vector<uint64_t> OrderBoundaries() const = 0;

  // FindVideo for a read of the video's frames: `chunk_known` is called
  // with the video's chunk as soon as the index knows it, so that the
  // caller can start fetching what the read needs of the chunk while the
  // record is still on its way (a partitioned index knows the chunk from
  // the order key, before it fetches the order partition). By default,
  // after FindVideo.
  virtual std::optional<index::VideoRecord> FindVideoToRead(
      std::string_view id, const std::function<void(uint32_t chunk)>& chunk_known) const {
    std::optional<index::VideoRecord> record = FindVideo(id);
    if (record) chunk_known(record->chunk);
    return record;
  }

  // The record of chunk `chunk`; nullopt when the index has none.
  virtual std::optional<index::ChunkRecord> Chunk(uint32_t chunk) const = 0;
  // Every chunk record in number order; `fn` returns false to stop.
  virtual void ScanChunks(
      const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn) const = 0;

  // Ids whose meta has `field` equal to the JSON value `json_value`, in the
  // meta index's order ((chunk, insertion) order); empty when the field has
  // no meta index. Long values are keyed by their checksum
  // (index/query_keys.h): the caller checks each candidate's meta.
  virtual std::vector<std::string> MetaLookup(std::string_view field,
                                              std::string_view json_value) const = 0;

  // The bytes of the whole index (every partition), for Stats.
  virtual uint64_t IndexBytes() const = 0;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_INDEX_SOURCE_H_
