// One snapshot of what the query room reads of a dataset's index: a read
// transaction of the LMDB index, or the dataset's index source (a
// partitioned snapshot, index_handles.h). The one place where the two
// differ, so that queries, listings and splits are written once.
//
// Thread safety: an IndexReader belongs to one thread; views it returns
// last until its next call or its end.
#ifndef GULPDB_ENGINE_QUERY_INDEX_READER_H_
#define GULPDB_ENGINE_QUERY_INDEX_READER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/query/index_handles.h"
#include "engine/query/query_dbs.h"
#include "index/lmdb_env.h"
#include "index/query_keys.h"
#include "index/records.h"

namespace gulpdb::engine {

class IndexReader {
 public:
  explicit IndexReader(const IndexHandles& ix);
  const IndexHandles& ix() const { return ix_; }

  // The indexed fields, by name. CorruptionError for a damaged entry.
  std::vector<MetaField> Fields();

  // The meta index entries with from <= key < to (`to` empty: no upper
  // bound), in key order, until `fn` returns false.
  void Entries(std::string_view from, std::string_view to,
               const std::function<bool(std::string_view key, std::string_view id)>& fn);

  // The record of `id` (its place, frame count and meta), or nullopt when
  // there is none.
  std::optional<index::VideoMetaView> Video(std::string_view id);

  // The videos with from <= id < to (`to` empty: no upper bound) in id
  // order, until `fn` returns false.
  void Videos(std::string_view from, std::string_view to,
              const std::function<bool(std::string_view id, const index::VideoMetaView&)>& fn);

  // The split databases, or the index source's splits. A source that left
  // them out (a format 1 partitioned snapshot) makes asking an error naming
  // `operation`.
  std::map<std::string, index::SplitHeader> SplitHeaders(const std::string& operation);
  std::vector<std::string> SplitIds(uint32_t split);

 private:
  const IndexHandles& ix_;
  QueryDbHandles dbs_;
  std::optional<index::Txn> txn_;
  std::optional<index::VideoRecord> record_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_INDEX_READER_H_
