// The change record: what changed in a dataset's index since its newest tag
// (docs/format/index_format.md, "Change record"), so that building the
// next tag reads what changed instead of the whole index.
//
// It is the named database `changes` of the index. While a record is
// started (StartChangeRecord, by the tag's own durable step), every write
// of this gulpdb to a tracked database (videos, order, meta_index) also
// records, in the same transaction, the key it touched and the value the
// key had before its first change since the start (Env::TrackChanges,
// lmdb_env.h: the hook is in Txn::Put, Append and Del, so that no mutating
// operation can forget it). Every write commit stamps the header with its
// transaction id: a commit by a build without the record (an older gulpdb)
// leaves the stamp behind the index's id, and the record is then not used.
// A record whose entries would pass a quarter of the videos (plus 4096)
// stops recording and says so (overflowed): the next tag reads the index.
//
// Thread safety: pure functions over a caller's transaction.
#ifndef GULPDB_INDEX_CHANGE_RECORD_H_
#define GULPDB_INDEX_CHANGE_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "index/lmdb_env.h"

namespace gulpdb::index {

inline constexpr const char* kChangesDb = "changes";
// The header's key; an entry's key is its kind byte (below 0x80) and the key.
inline constexpr std::string_view kChangeHeaderKey = "\xff";
// Kinds: the numbers of index::PartitionKind for the same databases.
inline constexpr uint8_t kChangedVideo = 0;      // videos: id -> record
inline constexpr uint8_t kChangedMetaEntry = 1;  // meta_index: entry key -> id
inline constexpr uint8_t kChangedOrder = 2;      // order: order key -> id

struct ChangeHeader {
  uint64_t stamp = 0;       // the transaction id of the last commit that kept it
  bool overflowed = false;  // recording stopped: too many changes
  std::string base;         // what it is relative to: the root (SHA-256 hex) of the newest tag
};

std::string EncodeChangeHeader(const ChangeHeader& header);
// nullopt for bytes that are not a header (an unknown format: not used).
std::optional<ChangeHeader> DecodeChangeHeader(std::string_view bytes);

// The header of `txn`'s snapshot, or nullopt (no record, or not one this
// build reads).
std::optional<ChangeHeader> ReadChangeHeader(const Txn& txn, Dbi changes);

// Whether the change record of `txn`'s snapshot holds every change since
// the tag whose root is `base`: started at it, never overflowed, and
// stamped by the last commit.
bool ChangeRecordCovers(const Txn& txn, Dbi changes, std::string_view base);

// An entry's value: whether the key existed before its first change since
// the start, and its value then.
struct ChangeBefore {
  bool existed = false;
  std::string_view value;
};
// nullopt for a value that is not one (CorruptionError is the caller's).
std::optional<ChangeBefore> DecodeChangeBefore(std::string_view bytes);

// Empties the record and starts it at `base`, in `txn` (a write transaction).
void StartChangeRecord(Txn& txn, Dbi changes, const std::string& base);

}  // namespace gulpdb::index

#endif  // GULPDB_INDEX_CHANGE_RECORD_H_
