// The partitions a partitioned index's root names, by kind and level: where
// the lookups and scans of a PartitionedIndex (partitions.h) find them.
// Each kind has its delta generations newest first, then its base; each
// level is a group of slots in key order, a slot being a page of a paged
// group (format 3) or the whole of a group the root lists. A page is read
// through a PageFetch on the first use that needs it; a partition is fetched
// through a PartitionFetch, verified and opened on first use, and at most
// kMaxOpenPartitions stay open once no lookup holds them (a walk of every
// partition would otherwise keep thousands of files mapped and open).
//
// Errors: what the fetches throw, and CorruptionError naming the page or
// partition whose bytes are not what the root says. A failed fetch is
// tried again by the next use.
//
// Thread safety: every method may be called from any number of threads at
// once; threads wanting a page or a partition another one is fetching wait
// for that fetch (no lock is held while fetching).
#ifndef GULPDB_ENGINE_PARTITION_PARTITION_LEVELS_H_
#define GULPDB_ENGINE_PARTITION_PARTITION_LEVELS_H_

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "index/partition_root.h"

namespace gulpdb::engine {

// Returns the path of a local copy of the partition `entry` names (the
// node cache downloads it; tests read a directory); the caller verifies it
// (VerifyPartitionFile). Throws what it throws (NotFoundError for a
// partition it cannot find).
using PartitionFetch = std::function<std::string(const index::PartitionEntry& entry)>;
// Returns the bytes of the root page `page` names, their size and SHA-256
// verified (a format 3 root). Throws CorruptionError naming the page for
// other bytes, what it throws otherwise.
using PageFetch = std::function<std::string(const index::RootPage& page)>;

class PartitionLevels {
 public:
  // A page of a paged group, or a whole group the root lists: its range,
  // and its partitions once loaded (never unloaded: the root never changes).
  struct Slot {
    const index::RootPage* page = nullptr;  // null: listed by the root
    std::string first_key, last_key;
    uint64_t first_position = 0;
    mutable std::shared_ptr<const std::vector<index::PartitionEntry>> parts;
    // Set while one thread fetches the page; others wait for it.
    mutable std::shared_future<std::shared_ptr<const std::vector<index::PartitionEntry>>> loading;
  };
  using Group = std::vector<Slot>;
  // An open partition (partition_file.h); the lookup holding it keeps it
  // open.
  struct Open;

  // `root` (validated) must outlive this object; `name` names the snapshot
  // in messages. Throws InvalidArgumentError when the root has paged groups
  // and `pages` is null.
  PartitionLevels(const index::PartitionRoot& root, PartitionFetch fetch, std::string name,
                  PageFetch pages);
  ~PartitionLevels();
  PartitionLevels(const PartitionLevels&) = delete;
  PartitionLevels& operator=(const PartitionLevels&) = delete;

  // The levels of `kind`, newest first (empty when the root has none).
  const std::vector<Group>& of(index::PartitionKind kind) const;
  // The order table's group (the order kind's only one), or an empty group.
  const Group& order() const;
  // The partitions of `slot`, its page read on first use.
  const std::vector<index::PartitionEntry>& Load(const Slot& slot) const;
  // The partition of `group` whose key range holds `key`, or null.
  const index::PartitionEntry* Holding(const Group& group, std::string_view key) const;
  // The partitions of `group` that overlap [from, to) (`to` empty: no bound).
  std::vector<const index::PartitionEntry*> Overlapping(const Group& group, std::string_view from,
                                                        std::string_view to) const;
  // The partition `entry` names, fetched and opened on first use.
  std::shared_ptr<Open> OpenPartition(const index::PartitionEntry& entry) const;

  // Partitions fetched (first uses) so far, their bytes, and root pages.
  uint64_t fetches() const;
  uint64_t fetched_bytes() const;
  uint64_t page_fetches() const;
  // Partitions open now (at most kMaxOpenPartitions once idle).
  size_t open_partitions() const;

  static constexpr size_t kMaxOpenPartitions = 256;

 private:
  // Closes the least recently used partitions no lookup holds, past the
  // bound (mutex_ held).
  void CloseIdle() const;

  PartitionFetch fetch_;
  std::string name_;
  PageFetch pages_;
  std::vector<Group> levels_[index::kPartitionKinds];
  mutable std::mutex mutex_;       // guards open_, clock_ and the fetch counters
  mutable std::mutex page_mutex_;  // guards the slots' parts and loading
  // Open partitions by name, each with its last use.
  struct Opened {
    std::shared_future<std::shared_ptr<Open>> open;
    uint64_t used = 0;
  };
  mutable std::map<std::string, Opened> open_;
  mutable uint64_t clock_ = 0;
  mutable uint64_t fetches_ = 0;
  mutable uint64_t fetched_bytes_ = 0;
  mutable uint64_t page_fetches_ = 0;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_PARTITION_PARTITION_LEVELS_H_
