// engine/query/ holds metadata queries and named splits: the secondary meta
// index (meta key -> videos, kept in the same LMDB transaction as the videos
// it describes), Dataset::Select (index lookups, or a scan of the records
// when a key has no index), the named splits stored in the index, and their
// export to / import from gulpdb_splits.json. Keys and values are laid out
// in docs/format/index_format.md; what equality of meta values means is in
// meta_value.h (and include/gulpdb/query.h for users).
//
// This header is the write side: QueryTxn keeps the meta index and the splits
// right inside a write transaction of any write path (the Writer's commit,
// merge's attach, compaction through the Writer, import), and the helpers the
// other engine modules call. Every function runs inside a transaction it is
// given and has no effect outside it, so Env::Update may run it again.
//
// Thread safety: a QueryTxn belongs to its transaction's thread.
#ifndef GULPDB_ENGINE_QUERY_QUERY_TXN_H_
#define GULPDB_ENGINE_QUERY_QUERY_TXN_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/query/index_handles.h"
#include "engine/query/query_dbs.h"
#include "index/lmdb_env.h"
#include "index/query_keys.h"
#include "index/records.h"

namespace gulpdb::engine {

// A SetSplit or RemoveSplit of a Writer's batch, applied at commit.
struct SplitOp {
  std::string name;
  bool remove = false;
  std::vector<std::string> ids;  // SetSplit: the ids in split order
};

// Throws InvalidArgumentError "<operation>: ..." unless `name` is 1 to
// `max_bytes` bytes of valid UTF-8. `what` names it ("split name", "meta key").
void ValidateQueryName(std::string_view name, size_t max_bytes, const char* what,
                       const std::string& operation);

// The indexed fields, by name, as `txn` sees them (none when the databases
// are absent).
std::vector<MetaField> ReadMetaFields(index::Txn& txn, const QueryDbHandles& dbs);
// The splits, by name, as `txn` sees them.
std::map<std::string, index::SplitHeader> ReadSplitHeaders(index::Txn& txn,
                                                           const QueryDbHandles& dbs);
// The ids of one split in position order.
std::vector<std::string> ReadSplitIds(index::Txn& txn, const QueryDbHandles& dbs, uint32_t split);

class QueryTxn {
 public:
  // Loads what the transaction must maintain: the indexed fields (a read of a
  // tiny database) and the split databases. `dbs` must have been loaded
  // before `txn` began. Costs nothing when the dataset has neither.
  QueryTxn(const IndexHandles& ds, index::Txn& txn, const QueryDbHandles& dbs);

  // The meta index entries of a video stored as `record` (new or moved).
  // Throws CorruptionError naming the id when its meta is not a JSON list.
  void Index(std::string_view id, const index::VideoRecord& record);
  // Removes the entries of a video as it was stored (removed, replaced or moved).
  void Unindex(std::string_view id, const index::VideoRecord& record);
  // The video `id` is gone: drops it from every split.
  void DropFromSplits(std::string_view id);
  // Applies one SetSplit / RemoveSplit. A SetSplit keeps only the ids that
  // exist in the transaction (Writer::SetSplit checked them all when it was
  // called: those missing now were removed later in the batch).
  void Apply(const SplitOp& op);

  // The entry keys `meta_data` gives the fields, for a video at (chunk, seq).
  std::vector<std::string> EntryKeys(std::string_view id, std::string_view meta_data,
                                     uint32_t chunk, uint64_t seq) const;

 private:
  void ClearSplit(uint32_t split);
  void AddRef(std::string_view id, index::SplitRef ref);
  void DropRef(std::string_view id, index::SplitRef ref);
  index::SplitHeader* HeaderOf(uint32_t split, std::string* name);

  const IndexHandles& ds_;
  index::Txn& txn_;
  QueryDbHandles dbs_;
  std::vector<MetaField> fields_;
  std::vector<std::string> quoted_;                                  // fields_[i].quoted
  std::optional<std::map<std::string, index::SplitHeader>> splits_;  // loaded on first use
};

enum class MetaIndexBuild {
  kBuilt,    // a new meta index
  kRebuilt,  // one of an older key form, rebuilt in the newest
  kExisted,  // indexed already in the newest form: nothing changed
};
// Builds the meta index of `key` over every video in one write transaction
// (creating the databases first), or rebuilds one of an older key form
// (index/query_keys.h) under its field number. The caller holds the writer
// lock.
MetaIndexBuild BuildMetaIndex(const IndexHandles& ds, std::string_view key);

// Drops the meta index of `key` (its entries and its meta_fields entry)
// inside `txn`; false when it has none.
bool DropMetaField(index::Txn& txn, const QueryDbHandles& dbs, std::string_view key);

// Problems of the meta index and the splits, for `gulpdb check`: entries that
// point to no video, to the wrong place or for the wrong value, videos
// missing from an index, split members that do not exist, split sizes and
// back references that disagree. Calls problem(where, what) for each.
void CheckQueryDatabases(const IndexHandles& ds,
                         const std::function<void(std::string, std::string)>& problem);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_QUERY_TXN_H_
