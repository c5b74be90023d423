// Names that come from outside the process (a bucket listing, a manifest, an
// index snapshot, an index record, a GulpIO directory) and are about to
// become a path below a directory: a chunk file, a .gmeta, an exported file,
// an attached shard's chunk, a cache entry. Every such name passes
// RelativeNameProblem (through CheckRelativeName or JoinRelative) before it
// is joined to a directory, so that no name can reach outside it.
//
// A relative name is 1 to 4096 bytes of '/'-separated segments, so that
// sub-paths are allowed ("shards/ingest-0001/part-00000/data_0.gulp"); it is
// refused when it
//   - is empty, or starts with '/' (absolute);
//   - has an empty segment (a trailing or doubled '/'), or a "." or ".."
//     segment;
//   - holds a NUL byte, a backslash (a separator elsewhere, and a way to hide
//     ".." from a reader of the name) or a control character (0x01-0x1F,
//     0x7F);
//   - has a segment longer than 255 bytes (NAME_MAX).
// Bytes >= 0x80 are allowed as they are (file names are bytes on Linux).
//
// Thread safety: pure functions.
#ifndef GULPDB_UTIL_RELATIVE_NAME_H_
#define GULPDB_UTIL_RELATIVE_NAME_H_

#include <string>
#include <string_view>

namespace gulpdb::util {

inline constexpr size_t kMaxRelativeNameBytes = 4096;
inline constexpr size_t kMaxSegmentBytes = 255;

// "" when `name` is a relative name as above; otherwise what is wrong with it
// ("a '..' segment", "a backslash at byte 4", ...).
std::string RelativeNameProblem(std::string_view name);

inline bool IsRelativeName(std::string_view name) { return RelativeNameProblem(name).empty(); }

// Throws CorruptionError "<operation>: <whose> '<name, escaped>' is not a
// safe relative name: <problem>" unless `name` is a relative name. A name
// that comes from a bucket, a manifest or an index is data: a bad one is
// damage (or a hostile writer), hence CorruptionError.
void CheckRelativeName(std::string_view name, const std::string& operation,
                       const std::string& whose);

// `dir` + "/" + `name`, after CheckRelativeName(name, operation, whose).
std::string JoinRelative(std::string_view dir, std::string_view name, const std::string& operation,
                         const std::string& whose);

// `bytes` with every byte that is not printable ASCII written as \xNN (and
// the backslash as \\), for names in messages.
std::string EscapeBytes(std::string_view bytes);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_RELATIVE_NAME_H_
