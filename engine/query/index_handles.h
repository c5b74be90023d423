// What the query room sees of a dataset's index, and all it sees: the
// read side is one snapshot of the index (QuerySource, extended by the
// storage core's IndexSource, engine/core/index_source.h, which the LMDB
// index and a partitioned snapshot both implement), which the core hands to
// the room's functions; the write side is the LMDB environment, the videos
// database and how to seal a stored record (format 2 seals them,
// index/seal.h), plus the query databases this room owns (IndexHandles;
// the storage core's Dataset::Impl derives from it). The query room never
// sees the rest of the core (chunk files, the writer, remote sources) and
// never calls it.
//
// Thread safety: the handles are set while a dataset opens and read-only
// after that; `query` is thread-safe (query_dbs.h). A QuerySource is as its
// implementation says (IndexSource: any number of threads for a
// partitioned snapshot, one thread for an LMDB snapshot).
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
#include "index/lmdb_env.h"
#include "index/query_keys.h"
#include "index/records.h"
#include "index/seal.h"

namespace gulpdb::engine {

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

// What the query room reads of one snapshot of an index (the storage core's
// IndexSource, engine/core/index_source.h, extends it). Records come
// verified; a damaged one is a CorruptionError. Views passed to callbacks
// are valid during the call; views returned are valid as each method says,
// and never after the snapshot is dropped.
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
  // The place, frame count and meta of video `id` without its frames (what
  // queries read); nullopt when there is none. The view lies in the
  // snapshot (valid until it is dropped) or in `*scratch` (valid until
  // `*scratch` is used again). By default, from FindVideo.
  virtual std::optional<index::VideoMetaView> FindVideoMeta(std::string_view id,
                                                            index::VideoRecord* scratch) const;
  // ScanVideos by meta view (valid during the call). By default, from ScanVideos.
  virtual void ScanVideoMeta(
      std::string_view from, std::string_view to,
      const std::function<bool(std::string_view id, const index::VideoMetaView&)>& fn) const;
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

// The indexed fields of `index`, by name. CorruptionError naming `dir` for
// a name that is not UTF-8.
std::vector<MetaField> SnapshotFields(const QuerySource& index, const std::string& dir);
// The named splits of `index`. A snapshot that left them out (a format 1
// partitioned snapshot) makes asking an InvalidArgumentError naming
// `operation` and `dir`.
std::map<std::string, index::SplitHeader> SnapshotSplitHeaders(const QuerySource& index,
                                                               const std::string& dir,
                                                               const std::string& operation);

struct IndexHandles {
  explicit IndexHandles(std::string dir_in) : dir(std::move(dir_in)) {}

  std::string dir;  // the dataset (a path or a URL), for messages
  std::shared_ptr<index::Env> env;
  index::Dbi videos = 0;
  mutable QueryDbs query;  // meta index and splits
  // Format 2 seals every video and chunk record (index/seal.h). Set at open
  // from DatasetInfo.
  bool sealed = false;

  // `value` sealed under `key` when the dataset seals its records.
  std::string Seal(std::string_view key, std::string value) const;
  // The record bytes of a stored value; CorruptionError naming the video id
  // or chunk number if the seal does not match. The view lies inside `value`.
  std::string_view Unseal(std::string_view key, std::string_view value,
                          index::RecordKind kind) const;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_INDEX_HANDLES_H_
