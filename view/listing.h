// The grid's pages: which ids are at positions [start, start + count) of
// what the page shows, without loading the whole index.
//
// Without a filter or a split the positions are the dataset's own order
// (Dataset::IdsAt: one snapshot per page, O(1) in the dataset's size once
// the order's chunk starts are known). A filter or a split is a list of ids
// (FilterIds, Dataset::Split), computed once for the snapshot it was asked
// on and kept in a small cache (at most `max_entries` lists and
// `max_cached_bytes` of ids, least recently used dropped first); a list
// larger than the whole cache is not kept and is computed again for each
// page. A list is used only while the dataset's snapshot id is the one it
// was computed on: a commit makes the next page compute it again.
//
// Thread safety: any number of threads at once.
#ifndef GULPDB_VIEW_LISTING_H_
#define GULPDB_VIEW_LISTING_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/dataset.h"

namespace gulpdb::view {

class Listing {
 public:
  explicit Listing(std::shared_ptr<const Dataset> dataset, size_t max_entries = 8,
                   size_t max_cached_bytes = size_t{64} << 20);

  struct Page {
    uint64_t total = 0;  // videos the filter and split select
    uint64_t start = 0;
    std::vector<std::string> ids;  // the page's, in order; fewer at the end
  };

  // The page at `start` of the videos that `filter` (FilterIds; empty: all)
  // and `split` (empty: all) select, in the split's order when one is given,
  // else the dataset's. Throws InvalidArgumentError for a bad filter and
  // NameNotFoundError for an unknown split.
  Page Get(std::string_view filter, std::string_view split, uint64_t start, uint64_t count);

  // Lists computed (not found in the cache) so far: for tests.
  uint64_t computed() const;

 private:
  using Ids = std::shared_ptr<const std::vector<std::string>>;
  struct Entry {
    std::string key;
    Ids ids;
    size_t bytes = 0;
  };
  Ids Selected(std::string_view filter, std::string_view split);

  std::shared_ptr<const Dataset> dataset_;
  const size_t max_entries_;
  const size_t max_cached_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> cache_;  // most recently used first
  size_t cached_bytes_ = 0;
  uint64_t computed_ = 0;
};

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_LISTING_H_
