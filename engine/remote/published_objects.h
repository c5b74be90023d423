// The objects a published generation names (docs/format/remote_format.md),
// and the rule a push follows before it deletes or empties an object: never
// one that the generation it publishes or the one it replaces names, nor the
// manifest or the push lease, whatever an obsolete list (hand-edited or
// crafted) says.
//
// Thread safety: pure functions.
#ifndef GULPDB_ENGINE_REMOTE_PUBLISHED_OBJECTS_H_
#define GULPDB_ENGINE_REMOTE_PUBLISHED_OBJECTS_H_

#include <set>
#include <string>
#include <string_view>

#include "engine/remote/manifest.h"
#include "index/partition_root.h"

namespace gulpdb::engine {

// Every object `manifest` names (a version 3 manifest's chunk list loaded
// first): its history copy, its snapshot or root (and, given `root` expanded,
// the root's pages and partitions), its chunk pages, each chunk's data
// object and .gmeta, and its label map.
std::set<std::string> NamedObjects(const Manifest& manifest, const index::PartitionRoot* root);

// Whether `key` is one of gulpdb's own objects (the manifest, the lease,
// manifest copies, snapshots, partitions, roots and their pages, chunk
// pages): never a chunk's data object or .gmeta.
bool IsGulpdbObject(std::string_view key);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISHED_OBJECTS_H_
