// The digest of a list of video ids in order: what Dataset::IdsDigest and
// IdsDigestOf (gulpdb/dataset.h) return, and what a training sampler's state
// records to name the videos it counts over (docs/training.md, "The
// dataset's identity"). SHA-256 (util/sha256.h) over each id as its length
// (4 bytes, little-endian) followed by its bytes, so that no two lists of ids
// share the byte stream; the digest of no ids is the SHA-256 of no bytes.
//
// Errors: an id of 2^32 bytes or more is an InvalidArgumentError (no index
// holds one: LMDB keys are at most 511 bytes).
//
// Thread safety: an IdsDigester belongs to one thread at a time.
#ifndef GULPDB_ENGINE_CORE_IDS_DIGEST_H_
#define GULPDB_ENGINE_CORE_IDS_DIGEST_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "util/sha256.h"

namespace gulpdb::engine {

class IdsDigester {
 public:
  // Adds the next id of the list.
  void Add(std::string_view id);
  // Ids added so far.
  uint64_t count() const { return count_; }
  // The digest of the ids added, as 64 lowercase hex digits; the digester
  // then starts again, empty.
  std::string FinishHex();

 private:
  // Ids are hashed a buffer at a time: one OpenSSL call per id would cost
  // more than the hashing of its few bytes.
  static constexpr size_t kBuffer = size_t{1} << 16;
  util::Sha256 sha_;
  std::string buffer_;
  uint64_t count_ = 0;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_IDS_DIGEST_H_
