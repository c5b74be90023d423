// The engine's front door (open.cc): Dataset::Open and Dataset::Exists
// dispatch to the room that owns the kind of dataset asked for; Merge, which
// the core implements, opens its datasets through them.
#ifndef GULPDB_ENGINE_OPEN_H_
#define GULPDB_ENGINE_OPEN_H_

#include <memory>
#include <string>

#include "gulpdb/dataset.h"
#include "gulpdb/interop.h"

namespace gulpdb::engine {

// Dataset::Open, which refuses an imported dataset whose GulpIO files changed
// since they were indexed (engine/gulpio/gulpio_files.h); without
// `check_sources` it opens such a dataset anyway, for the health check.
std::unique_ptr<Dataset> OpenDataset(const std::string& dir, const OpenOptions& options,
                                     bool check_sources);

// gulpdb::Check (interop.h) of a dataset already open: one read through a
// partitioned snapshot (OpenOnIndexSource) walks every partition.
CheckReport CheckOpenDataset(Dataset& dataset, const CheckOptions& options);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_OPEN_H_
