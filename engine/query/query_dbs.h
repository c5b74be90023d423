// The handles of the query databases (index/query_keys.h) of one open
// dataset. A dataset created before they existed has none of them until the
// first write that needs them creates them (CreateMetaIndex, SetSplit), in
// this or another process; a handle not known yet is 0.
//
// Thread safety: the handles are atomics. LMDB only lets a transaction use a
// handle opened before it began, so load them (Load) before beginning the
// transaction that uses them, never inside it.
#ifndef GULPDB_ENGINE_QUERY_QUERY_DBS_H_
#define GULPDB_ENGINE_QUERY_QUERY_DBS_H_

#include <atomic>

#include "index/lmdb_env.h"

namespace gulpdb::engine {

struct QueryDbHandles {
  index::Dbi meta_fields = 0, meta_index = 0, splits = 0, split_members = 0, split_refs = 0;
  bool has_meta_index() const { return meta_fields != 0 && meta_index != 0; }
  bool has_splits() const { return splits != 0 && split_members != 0 && split_refs != 0; }
};

class QueryDbs {
 public:
  // Opens the databases that exist and are not known yet (another process
  // may have created them since this one looked). Cheap once all are known.
  void Refresh(index::Env& env);
  // Creates every one of them that is missing (a write: hold the writer lock).
  void Create(index::Env& env);
  QueryDbHandles Load() const;

 private:
  std::atomic<index::Dbi> meta_fields_{0}, meta_index_{0}, splits_{0}, split_members_{0},
      split_refs_{0};
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_QUERY_DBS_H_
