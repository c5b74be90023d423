// Published tags (docs/versions.md, docs/format/remote_format.md "Tags"):
// what a reader of a tag in a bucket needs. The manifest lists each tag
// (ManifestTag) with the SHA-256 name of its tag object; the tag object
// names the tag's partition root and its chunk list in pages. Opening a tag
// reads the manifest, the tag object and the root (O(1) in the dataset's
// size) and hands the core a manifest that describes the tag: its root, its
// chunk list, its counts, and the published generation's identity, so that
// a tag is read through the same code as a generation.
//
// Thread safety: pure functions; the store is thread-safe.
#ifndef GULPDB_ENGINE_REMOTE_PUBLISHED_TAGS_H_
#define GULPDB_ENGINE_REMOTE_PUBLISHED_TAGS_H_

#include <set>
#include <string>
#include <vector>

#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/verified_fetch.h"
#include "gulpdb/dataset.h"
#include "index/partition_root.h"

namespace gulpdb::engine {

// The entry of tag `name` in `manifest`; NameNotFoundError "<what>: no tag
// 'NAME' in URL (tags: ...)" listing the tags there are when it has none.
const ManifestTag& FindPublishedTag(const Manifest& manifest, const std::string& name,
                                    const std::string& url, const std::string& what);

// The tag object `tag` names: one GET of at most its size, its SHA-256
// checked (FetchVerified: CorruptionError naming the object's URL when the
// bucket holds other bytes, or none), parsed, its name checked against the
// entry's.
TagObject FetchTagObject(ObjectStore& store, const ManifestTag& tag, const std::string& what,
                         const BadObjectScope* remember);

// The manifest a reader of `tag` opens: `published` (the generation that
// lists it: identity, label map, tags) with the tag's root, chunk list and
// counts, and no obsolete list.
Manifest TagManifest(const Manifest& published, const TagObject& tag);

// A local tag's summary as a published tag says it (its time in whole
// milliseconds), and a published summary as Dataset::Versions gives it.
TagSummary SummaryOf(const VersionInfo& local);
VersionInfo VersionOf(const TagSummary& published);

// The tags `manifest` lists, as Dataset::Versions gives them (oldest first).
std::vector<VersionInfo> PublishedVersions(const Manifest& manifest);

// Every object published tag `tag` names: its tag object, its root, the
// root's pages and partitions (`root` expanded), its chunk pages, and the
// data objects and .gmeta keys of the chunks it reads (`tag_manifest`'s
// chunk list loaded).
std::set<std::string> TagNamedObjects(const ManifestTag& tag, const Manifest& tag_manifest,
                                      const index::PartitionRoot& root);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISHED_TAGS_H_
