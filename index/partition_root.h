// The root of a partitioned index snapshot: the list of its partitions
// (kind, level, key or position range, count, size, SHA-256), the dataset
// info and the meta-index field numbers. Layout: partition_root.fbs;
// design: docs/remote_datasets.md, "Partitioned snapshots".
//
// DecodePartitionRoot verifies the FlatBuffers bytes and the invariants a
// reader relies on (partitions grouped by kind and generation, key ranges in
// order and disjoint within a group, order positions contiguous, hashes of
// 32 bytes); a root that fails is a CorruptionError naming `what`, never a
// crash. Pure functions, thread-safe.
#ifndef GULPDB_INDEX_PARTITION_ROOT_H_
#define GULPDB_INDEX_PARTITION_ROOT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "index/query_keys.h"

namespace gulpdb::index {

// The newest format a publisher writes, and the oldest one readers still
// read. Format 1 keeps each video record in the videos partitions (by id);
// format 2 keeps it with its order entry (by position), so that a block of
// positions (a sampler's block) is a block of records, and the videos
// partitions only locate an id's order entry. Format 3 is format 2 with a
// two-level root: the groups of partitions too large to list in the root
// are listed by pages (RootPage) that the root names, so that the root
// stays small at any size and a lookup reads one page per group it probes.
// A publisher writes format 3 only for a root that has pages. Format 4 is
// format 3 (pages where needed) with a record delta level for the order
// table (kRecords): records changed in place since the order partitions
// were written, so that a scattered meta edit rewrites about what it
// changed. A publisher writes format 4 only for a root that has records
// partitions; readers of formats up to 3 refuse it (a right refusal: they
// would read the base records).
inline constexpr uint32_t kPartitionRootFormat = 4;
inline constexpr uint32_t kPagedPartitionRootFormat = 3;
inline constexpr uint32_t kUnpagedPartitionRootFormat = 2;
inline constexpr uint32_t kOldestPartitionRootFormat = 1;

// What a partition holds; each is one named database in its LMDB file.
enum class PartitionKind : uint8_t {
  // Format 1: id -> sealed VideoRecord. Format 2: id -> its order key (12
  // bytes). Empty value in a delta: removed.
  kVideos = 0,
  kMetaIndex = 1,  // meta entry key (query_keys.h) -> id (empty in a delta: removed)
  // 4-byte big-endian local index -> order key (12 bytes) + format 1: id;
  // format 2: id length (2 bytes, big-endian), id, sealed VideoRecord.
  kOrder = 2,
  kChunks = 3,  // chunk key -> sealed ChunkRecord
  // Split member key (query_keys.h: split number, position) -> id; the
  // root lists the splits (format 2).
  kSplitMembers = 4,
  // Format 4: the record delta level of the order table, one group
  // (generation 0), by order key: order key -> id length (2 bytes,
  // big-endian), id, length of the sealed record (4 bytes, big-endian), the
  // sealed VideoRecord now, then the sealed record the order partition
  // holds (the base's). An entry here wins over the order partition's
  // record; the order partitions keep ids and positions.
  kRecords = 5,
};
inline constexpr int kPartitionKinds = 6;
// The name of the database a partition of `kind` keeps its entries in.
const char* PartitionKindName(PartitionKind kind);

struct PartitionEntry {
  PartitionKind kind = PartitionKind::kVideos;
  uint64_t generation = 0;  // 0: base; > 0: a delta made by that generation
  std::string first_key;    // logical keys (order: order keys), inclusive
  std::string last_key;
  uint64_t first_position = 0;  // order partitions only
  uint64_t count = 0;
  uint64_t size = 0;
  std::string sha256;  // 64 lowercase hex digits: the file's name
};

// A page of a format 3 root: a run of consecutive partitions of one group
// (kind, generation), in an object named by its SHA-256.
struct RootPage {
  PartitionKind kind = PartitionKind::kVideos;
  uint64_t generation = 0;
  std::string first_key;        // its first partition's first key
  std::string last_key;         // its last partition's last key
  uint64_t first_position = 0;  // order pages only
  uint64_t count = 0;           // entries of its partitions
  uint64_t partitions = 0;      // partitions it lists
  uint64_t partition_bytes = 0;
  uint64_t size = 0;   // bytes of the page object
  std::string sha256;  // 64 lowercase hex digits: the page's name
};

struct MetaFieldEntry {
  std::string name;
  uint32_t number = 0;
  MetaKeyForm form = MetaKeyForm::kCanonical;  // how its meta_index entries key values
};

struct SplitEntry {
  std::string name;
  uint32_t number = 0;  // its members' keys start with SplitMemberPrefix(number)
  uint64_t count = 0;
};

struct PartitionRoot {
  uint32_t format_version = kPartitionRootFormat;
  uint64_t generation = 0;
  bool sealed = true;
  std::string dataset_info;  // EncodeDatasetInfo bytes
  std::vector<MetaFieldEntry> meta_fields;
  // Sorted by (kind, generation, first_key).
  std::vector<PartitionEntry> partitions;
  // The dataset had named splits, which the partitions do not carry (a
  // format 1 root pushed with --layout partitioned): a reader asking for
  // splits gets an error instead of "none".
  bool splits_omitted = false;
  // The named splits, by name (format 2 carries them).
  std::vector<SplitEntry> splits;
  // Format 3: the pages of the groups listed by page, sorted as
  // `partitions`. A decoded root lists no partition of those groups (its
  // "top"); a built or expanded one lists them all, and encodes as its top.
  std::vector<RootPage> pages;

  // Whether the group (kind, generation) is listed by pages.
  bool Paged(PartitionKind kind, uint64_t generation) const;
  // Entries of the partitions of `kind` (every generation): from the pages
  // of a paged group, from the partitions of another.
  uint64_t Count(PartitionKind kind) const;
  // Bytes of every partition, the same way.
  uint64_t PartitionBytes() const;
};

std::string EncodePartitionRoot(const PartitionRoot& root);
// Throws CorruptionError "decode partition root <what>: <detail>".
PartitionRoot DecodePartitionRoot(std::string_view bytes, std::string_view what);
// The invariants DecodePartitionRoot checks, on a root built in memory.
void ValidatePartitionRoot(const PartitionRoot& root, std::string_view what);

// A page's bytes (file identifier "GDBP"), and its partitions back: checked
// against the page's entry in the root (kind and generation, key range,
// positions, counts and bytes) and ordered as the root's. Throws
// CorruptionError "decode root page <what>: <detail>".
std::string EncodeRootPage(const std::vector<PartitionEntry>& partitions);
std::vector<PartitionEntry> DecodeRootPage(std::string_view bytes, const RootPage& page,
                                           std::string_view what);

}  // namespace gulpdb::index

#endif  // GULPDB_INDEX_PARTITION_ROOT_H_
