// How a push checks the objects its generation names and it does not upload
// (docs/remote_datasets.md, "What a push checks"): a damaged or missing one
// that the pusher holds a good copy of is uploaded again, instead of being
// named once more.
//
// The cost model: every object is checked by size against the listing the
// push makes anyway (no request more); one the pusher holds a copy of (built
// by this push, in its node cache, or a local file) is checked by content
// when the store's ETag is an MD5 (IsMd5Etag): the MD5 of the copy, one local
// read, no request. A content check done once is remembered per store in the
// node cache (VerifiedEtags: key and ETag; a replaced object has another
// ETag), so a push reads locally only what changed since the last push from
// this machine. A full re-read of the store (a GET of every object) is
// `gulpdb check URL`'s job, not a push's.
//
// Thread safety: VerifiedEtags may be used from any number of threads;
// LocalCopy from one at a time.
#ifndef GULPDB_ENGINE_REMOTE_PUSH_VERIFY_H_
#define GULPDB_ENGINE_REMOTE_PUSH_VERIFY_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "engine/remote/object_store.h"

namespace gulpdb::engine {

// The (key, ETag) pairs of a store whose content a push from this machine
// checked or uploaded: $GULPDB_CACHE/pushed/<hash of the store's identity>,
// one "<etag>\t<key>" per line. Only a cache: an unreadable record is an
// empty one.
class VerifiedEtags {
 public:
  explicit VerifiedEtags(const std::string& store_identity);
  bool Holds(const std::string& key, const std::string& etag) const;
  void Add(const std::string& key, const std::string& etag);
  // Writes the record, keeping the keys of `named` only. Best effort.
  void Save(const std::set<std::string>& named) const noexcept;

 private:
  std::string path_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> etags_;  // key -> ETag
};

// What an object must hold, here: `length` bytes of a file from offset 0,
// or bytes in memory. A file from a cache is trusted only if its SHA-256 is
// the one given.
class LocalCopy {
 public:
  static LocalCopy File(std::string path, uint64_t length, std::string sha256_to_check = "");
  static LocalCopy Bytes(std::string_view bytes);

  const std::string& path() const { return path_; }
  std::string_view bytes() const { return bytes_; }
  bool is_file() const { return !path_.empty(); }
  uint64_t length() const { return length_; }
  // The MD5 (hex) of the copy, or nullopt when it is not what it must be (a
  // file that is shorter, unreadable, or whose SHA-256 is not the one to
  // check). Read once.
  const std::optional<std::string>& Md5() const;

 private:
  std::string path_;
  std::string_view bytes_;
  uint64_t length_ = 0;
  std::string sha256_;
  mutable bool hashed_ = false;
  mutable std::optional<std::string> md5_;
};

enum class NamedObjectState {
  kGood,        // the copy's bytes: its ETag is the copy's MD5, or was so before
  kUnverified,  // the right size; no copy, or an ETag that is not an MD5
  kMissing,     // not listed
  kOtherSize,   // listed with another size
  kOtherBytes,  // its ETag is an MD5, not the copy's
};

// The state of the object `key` that a generation names with `size` bytes,
// as listed (`listed`, null when the listing does not show it), against
// `copy` (null when the pusher has none). A content check that passes is
// added to `verified`.
NamedObjectState CheckNamedObject(const std::string& key, const StoreObject* listed, uint64_t size,
                                  const LocalCopy* copy, VerifiedEtags& verified);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUSH_VERIFY_H_
