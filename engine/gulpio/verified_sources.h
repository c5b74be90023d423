// The fast path of an imported dataset's source check: a small side record
// of the .gmeta files whose content was last found to match the index, each
// with the stat(2) identity it had then. A later open that finds the same
// identity (size, device, inode, modification and change time) skips reading
// the file; anything else (a copy, a restore, a rename over it, a touch)
// makes that open hash it once and record the new identity
// (docs/format/index_format.md "Source stamps").
//
// The record is a cache, never authoritative: the index holds each .gmeta's
// content fingerprint (ChunkRecord::meta_content), and an entry counts only
// when it names the same content the index does. A missing, damaged or
// foreign record makes the next open hash the files again, nothing worse.
// It lives in the index directory when that is writable, else in the user
// cache (CacheDirectory()/verified/), keyed by the index's real path; it is
// replaced atomically (temporary file and rename), so a process killed
// while writing it leaves the old record, and concurrent openers never
// block each other or a writer (the last rename wins; every version is a
// valid record).
//
// Thread safety: free functions; safe from any thread.
#ifndef GULPDB_ENGINE_GULPIO_VERIFIED_SOURCES_H_
#define GULPDB_ENGINE_GULPIO_VERIFIED_SOURCES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "engine/core/dataset_view.h"
#include "index/records.h"
#include "util/file_identity.h"

namespace gulpdb::engine {

// A file's content fingerprint and the identity of the bytes it was taken
// from (fstat of the descriptor read, before and after reading).
struct HashedFile {
  index::ContentStamp content;
  util::FileIdentity identity;
  bool stable = false;  // the identity did not change while the file was read
};

// Reads `path` whole (1 MiB reads) and returns its size and CRC-32C: none
// when the file does not exist; IoError when a read fails.
std::optional<HashedFile> HashFile(const std::string& path);

// One .gmeta found to hold `content` while it had `identity`.
struct VerifiedSource {
  index::ContentStamp content;
  util::FileIdentity identity;
};
using VerifiedSources = std::map<uint32_t, VerifiedSource>;  // by chunk number

// The side record of `ds` (empty when there is none, or when it is damaged
// or unreadable: the caller then hashes). Never throws for the record's
// content; bytes that do not parse are ignored.
VerifiedSources LoadVerifiedSources(const Dataset& ds);

// Replaces the side record of `ds` with `sources`. Best effort: returns
// false, and changes nothing, when neither place can be written.
bool SaveVerifiedSources(const Dataset& ds, const VerifiedSources& sources);

// The file the record of `ds` lives in (in the index directory when that is
// writable, else in the user cache).
std::string VerifiedSourcesPath(const Dataset& ds);

// The record's text, and its parser (nullopt for anything malformed), for
// tests and for the record of a new index (the importer writes it).
std::string EncodeVerifiedSources(const VerifiedSources& sources);
std::optional<VerifiedSources> DecodeVerifiedSources(std::string_view text);
// The record's file name inside an index directory.
inline constexpr const char* kVerifiedSourcesName = "verified_sources";

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_GULPIO_VERIFIED_SOURCES_H_
