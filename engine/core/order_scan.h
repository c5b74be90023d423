// Walking the order table of an index source from its start: what
// Dataset::Ids and Dataset::IdsDigest read on a dataset opened on one (a
// partitioned snapshot). Such a snapshot fetches an order partition when a
// scan first reaches it, one round trip after another; ScanOrderIds fetches
// the blocks ahead of the scan (IndexSource::OrderBoundaries, each by
// OrderAt of its first position) a window of blocks at a time on threads of
// its own, so that the round trips of a window overlap and the scan finds
// its partitions fetched.
//
// Errors are the source's, thrown by the scan: a fetch that fails ahead of
// the scan is not reported there, and is tried again (and reported) when
// the scan reaches its block. A process out of threads scans without
// reading ahead.
//
// Thread safety: as the IndexSource's (any number of threads).
#ifndef GULPDB_ENGINE_CORE_ORDER_SCAN_H_
#define GULPDB_ENGINE_CORE_ORDER_SCAN_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "engine/core/index_source.h"

namespace gulpdb::engine {

// Calls `fn` with the id at each position [0, limit) of `source`'s order
// table, in order, until it returns false or the table ends. The view is
// valid during the call only.
void ScanOrderIds(const IndexSource& source, uint64_t limit,
                  const std::function<bool(std::string_view id)>& fn);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_ORDER_SCAN_H_
