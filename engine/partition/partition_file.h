// The partition file, as both halves of the room read it: the partition
// builder (partition_builder.cc, which diffs against the previous root's
// partitions) and the partitioned reader (partitioned_index.cc, which opens
// partitions, and partitioned_lookup.cc, which reads them). Internal to
// engine/partition; the format is docs/format/partitions.md's and
// index/partition_root.h's.
//
// Thread safety: free functions; a PartitionFile is read-only once open.
#ifndef GULPDB_ENGINE_PARTITION_PARTITION_FILE_H_
#define GULPDB_ENGINE_PARTITION_PARTITION_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/partition/partitions.h"
#include "index/lmdb_env.h"
#include "index/partition_root.h"

namespace gulpdb::engine::part {

using index::PartitionEntry;
using index::PartitionKind;
using index::PartitionRoot;

inline constexpr size_t kOrderKeySize = 12;  // index::OrderKey: chunk (4) + seq (8)
inline constexpr uint64_t kPageSize = 4096;  // LMDB's page on the machines we build on
// Bytes a key/value pair takes in a leaf page besides its key and value:
// the node header (8) and its slot in the page's index (2).
inline constexpr uint64_t kNodeOverhead = 10;

// `v` as 4 big-endian bytes (a partition's local key).
std::string BigEndian32(uint32_t v);

// Whether `s` is 64 lowercase hex digits (a SHA-256 name).
bool IsSha256Name(const std::string& s);

// Estimated bytes of a partition file holding entries of `payload` bytes
// (keys, values and node overheads): leaf pages filled in key order
// (MDB_APPEND) lose about a twentieth to entries that do not fit a page's
// end, plus branch pages and the two meta pages and the main database's.
inline uint64_t EstimatedFileBytes(uint64_t payload) {
  return payload + payload / 16 + 4 * kPageSize;
}

// One logical entry: the key and value a reader sees.
struct Entry {
  std::string key;
  std::string value;
  uint64_t bytes() const { return key.size() + value.size() + kNodeOverhead; }
  bool operator==(const Entry& o) const { return key == o.key && value == o.value; }
};

// A verified partition file, open read-only.
struct PartitionFile {
  PartitionEntry entry;
  std::string path;
  std::unique_ptr<index::Env> env;
  index::Dbi dbi = 0;
};

// Throws CorruptionError "open partition <sha256> (<path>): <detail>".
[[noreturn]] void PartitionCorrupt(const PartitionEntry& entry, const std::string& path,
                                   const std::string& detail);

// The logical key of a stored entry (an order entry's is the start of its
// value); CorruptionError for an order entry too short to hold one.
std::string_view LogicalKey(PartitionKind kind, std::string_view key, std::string_view value,
                            const PartitionEntry& entry, const std::string& path);
std::string_view LogicalValue(PartitionKind kind, std::string_view value);

// A format 2 order entry's value after its order key: the id and its sealed
// record. CorruptionError naming the partition (or the index `name`) for
// one cut short.
struct OrderValue {
  std::string_view id;
  std::string_view record;
};
OrderValue ParseOrderValue(std::string_view value, const PartitionEntry& entry,
                           const std::string& path);
OrderValue ParseOrderValue(std::string_view value, const std::string& name);

// A record delta entry's value (kRecords, index/partition_root.h): the id,
// its sealed record now and the sealed record of the base's order entry.
struct RecordDelta {
  std::string_view id;
  std::string_view record;
  std::string_view base;
};
std::string EncodeRecordDelta(std::string_view id, std::string_view record, std::string_view base);
// CorruptionError naming the partition for a value cut short.
RecordDelta ParseRecordDelta(std::string_view value, const PartitionEntry& entry,
                             const std::string& path);

// Whether the partitions of every paged group of `root` are listed too
// (ExpandPartitionRoot, partitions.h).
bool Expanded(const PartitionRoot& root);

// The partition file at `path`, verified against `entry` (VerifyPartitionFile)
// and opened read-only; CorruptionError naming it when it is not what the
// root says.
std::unique_ptr<PartitionFile> OpenPartitionFile(const std::string& path,
                                                 const PartitionEntry& entry);

}  // namespace gulpdb::engine::part

namespace gulpdb::engine {

// A partition a PartitionLevels holds open: opened by partition_levels.cc,
// read by the lookups of partitioned_lookup.cc.
struct PartitionLevels::Open {
  std::unique_ptr<part::PartitionFile> file;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_PARTITION_PARTITION_FILE_H_
