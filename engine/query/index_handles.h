// What the query room sees of a dataset's index, and all it sees: the LMDB
// environment, the videos database and how to open a stored video record
// (format 2 seals them, index/seal.h), plus the query databases this room
// owns. The storage core's Dataset::Impl is one (it derives from this), so
// the core passes itself to the functions here; the query room never sees
// the rest of the core (chunk files, the writer, remote sources).
//
// Thread safety: the handles are set while a dataset opens and read-only
// after that; `query` is thread-safe (query_dbs.h).
#ifndef GULPDB_ENGINE_QUERY_INDEX_HANDLES_H_
#define GULPDB_ENGINE_QUERY_INDEX_HANDLES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/query/query_dbs.h"
#include "gulpdb/dataset.h"
#include "index/lmdb_env.h"
#include "index/query_keys.h"
#include "index/records.h"
#include "index/seal.h"

namespace gulpdb::engine {

// What the query room reads of an index that is not an LMDB environment (a
// partitioned snapshot; the storage core's IndexSource, engine/core/
// index_source.h, extends it). Records come verified; a damaged one is a
// CorruptionError. Thread-safe.
// An indexed meta field.
struct MetaField {
  std::string name;
  std::string quoted;  // the name as a canonical JSON string
  uint32_t number = 0;
  index::MetaKeyForm form = index::kNewestMetaKeyForm;
};

// The fields `fields` names, with their quoted names. CorruptionError
// naming `where` for a name that is not UTF-8.
std::vector<MetaField> MakeMetaFields(
    const std::vector<std::pair<std::string, index::MetaFieldValue>>& fields,
    const std::string& where);

// The bytes a field of form `form` keys the JSON value `json` by: its
// canonical form (kCanonical) or its ordered bytes (kOrdered). Throws
// InvalidArgumentError for text that is not one JSON value.
std::string MetaKeyValue(index::MetaKeyForm form, std::string_view json);

class QuerySource {
 public:
  virtual ~QuerySource() = default;
  // The record of video `id`; nullopt when there is none.
  virtual std::optional<index::VideoRecord> FindVideo(std::string_view id) const = 0;
  // Videos with from <= id < to (`to` empty: no upper bound) in id order;
  // `fn` returns false to stop.
  virtual void ScanVideos(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn) const = 0;
  // The indexed meta fields: (name, field number and key form), in name order.
  virtual std::vector<std::pair<std::string, index::MetaFieldValue>> MetaFields() const = 0;
  // The meta index entries (index/query_keys.h) with from <= key < to (`to`
  // empty: no upper bound), in key order; `fn` returns false to stop.
  virtual void ScanMeta(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view key, std::string_view id)>& fn) const = 0;
  // Whether the dataset had named splits that this source does not carry
  // (a format 1 partitioned snapshot pushed with --layout partitioned):
  // asking for splits is then an error.
  virtual bool SplitsOmitted() const = 0;
  // The named splits (name -> header), and the ids of split number `split`
  // in its order. CorruptionError when the members disagree with the count.
  virtual std::map<std::string, index::SplitHeader> SplitHeaders() const = 0;
  virtual std::vector<std::string> SplitIds(uint32_t split) const = 0;
};

struct IndexHandles {
  explicit IndexHandles(std::string dir_in) : dir(std::move(dir_in)) {}

  std::string dir;  // the dataset (a path or a URL), for messages
  std::shared_ptr<index::Env> env;
  index::Dbi videos = 0;
  mutable QueryDbs query;  // meta index and splits
  // Format 2 seals every video and chunk record (index/seal.h). Set at open
  // from DatasetInfo.
  bool sealed = false;
  // Set for a dataset read through an index source (the storage core's
  // OpenOnIndexSource, which owns it): the query room reads it instead of
  // `env`, which is then null.
  const QuerySource* source = nullptr;

  // `value` sealed under `key` when the dataset seals its records.
  std::string Seal(std::string_view key, std::string value) const;
  // The record bytes of a stored value; CorruptionError naming the video id
  // or chunk number if the seal does not match. The view lies inside `value`.
  std::string_view Unseal(std::string_view key, std::string_view value,
                          index::RecordKind kind) const;
};

// The index of an open dataset. Defined by the storage core (engine/core),
// which owns Dataset's insides; valid as long as `dataset`.
const IndexHandles& IndexOf(const Dataset& dataset);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_INDEX_HANDLES_H_
