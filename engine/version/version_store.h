// The tags of a local dataset, kept in <dir>/gulpdb.versions
// (docs/format/version_format.md):
//
//   objects/<sha256>   partitions and root pages (engine/partition), and
//                      partition roots, content-addressed, shared by tags
//   tags/<sha256 of the name>.tag
//                      one small JSON file per tag: its name, root and summary
//   deleted/<deadline ms>-<random>.tag
//                      a deleted tag's file until its grace period ends:
//                      what it names stays until then
//   chunks/<file>      chunk files compaction emptied while a tag could
//                      read them (engine/core/obsolete_files.h)
//
// Every change is one rename (or a new file renamed into place) followed by
// a directory fsync, so a crash leaves the old or the new state; objects no
// root names are garbage that Reclaim deletes. Tag, DeleteTag and Reclaim
// run under the dataset's writer lock (the caller holds it), which also
// orders them with compaction. Reads (ListTags, ReadTag, roots) take no lock.
//
// Names from disk never become paths outside gulpdb.versions: a tag name
// must pass CheckTagName, a root or object name must be a SHA-256 name.
//
// Thread safety: functions, no shared state.
#ifndef GULPDB_ENGINE_VERSION_VERSION_STORE_H_
#define GULPDB_ENGINE_VERSION_VERSION_STORE_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "index/partition_root.h"

namespace gulpdb::engine {

inline constexpr uint32_t kTagFormat = 1;
// What "HEAD" names: the live dataset.
inline constexpr const char* kHeadVersion = "HEAD";

// Throws InvalidArgumentError "<operation>: <what is wrong with the name>"
// unless `name` is 1 to 255 bytes of A-Z a-z 0-9 . _ -, not "." or "..",
// not HEAD.
void CheckTagName(const std::string& name, const std::string& operation);

// <dir>/gulpdb.versions and its parts.
std::string VersionsDir(const std::string& dir);
std::string ObjectsDir(const std::string& dir);
std::string KeptChunksDir(const std::string& dir);

// The tags of the dataset in `dir`, oldest first. CorruptionError naming
// the file for a tag file that does not parse.
std::vector<VersionInfo> ListTags(const std::string& dir);
// Tag `name`; NameNotFoundError naming the tags there are when it has none.
VersionInfo ReadTag(const std::string& dir, const std::string& name, const std::string& operation);

// The partition root `sha256` names in objects/, checked against its name
// (CorruptionError naming the file otherwise), with its paged groups
// expanded when `expand`.
index::PartitionRoot ReadRoot(const std::string& dir, const std::string& sha256, bool expand);

// Records tag `info` (its root already written under objects/): a new file
// renamed into tags/. InvalidArgumentError naming the tag when the name is
// in use.
void WriteTag(const std::string& dir, const VersionInfo& info);
// Moves tag `name` to deleted/ with a deadline `grace` from now.
void MoveTagToDeleted(const std::string& dir, const std::string& name,
                      std::chrono::milliseconds grace);
// Deletes the deleted tags whose deadline has passed, then every object
// and kept chunk file no remaining root names. Returns the bytes freed.
// CorruptionError (and nothing deleted) when a root cannot be read: what it
// names is then unknown.
uint64_t Reclaim(const std::string& dir);
// Bytes of objects/ and chunks/.
uint64_t StoredVersionBytes(const std::string& dir);

// Milliseconds since the epoch, now.
int64_t NowMs();

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_VERSION_VERSION_STORE_H_
