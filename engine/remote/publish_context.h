// What every step of one push reads (engine/remote/publisher.h): the
// dataset directory, the store, the options and the push's identity, set
// before the steps run (the dataset's UUID once the index copy is open), and
// the report each step adds its counts to. Beside it, the helpers the steps
// share: the CRC-32C and SHA-256 of a local file, the promise a published
// object is under, and the error for a published index a push cannot build
// on. Internal to engine/remote.
// Thread safety: written on the push's thread before the uploads start;
// read by the upload pools. The report is written on the push's thread,
// except foreign_objects_replaced (under the Uploader's lock).
#ifndef GULPDB_ENGINE_REMOTE_PUBLISH_CONTEXT_H_
#define GULPDB_ENGINE_REMOTE_PUBLISH_CONTEXT_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "engine/remote/object_store.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"

namespace gulpdb::engine {

using Clock = std::chrono::steady_clock;

// CRC-32C of the first `length` bytes of the file `path`, and of its first
// `checkpoint` bytes (checkpoint <= length).
struct PrefixCrc {
  uint32_t at_checkpoint = 0;
  uint32_t whole = 0;
};

PrefixCrc CrcOfFile(const std::string& path, uint64_t length, uint64_t checkpoint);

// The SHA-256 (hex) of the file `path`; sets *size to its size.
std::string Sha256OfFile(const std::string& path, uint64_t* size);

// What a published manifest promised about an object's first bytes.
struct Promise {
  uint64_t length = 0;
  std::optional<uint32_t> crc32c;
  std::string from;  // "generation N" or "an obsolete entry kept until ..."
};

// A published index this push cannot build on: `e`, and how to replace it.
CorruptionError DamagedIndex(const Error& e);

struct PushContext {
  // Throws InvalidArgumentError for a negative grace period.
  PushContext(std::string dir, ObjectStore& store, bool publish_chunks, const PushOptions& options);

  // Whether an obsolete entry listed since `since` is past its grace period.
  bool Expired(int64_t since) const { return since + grace.count() <= now; }
  // The metadata every object this push writes carries: its dataset and push.
  std::map<std::string, std::string> Metadata() const;

  const std::string dir;
  ObjectStore& store;
  const bool publish_chunks;
  const bool conditional;  // S3: lease, conditions, identity checks
  const PushOptions& options;
  const std::chrono::seconds grace;
  const uint32_t jobs;
  const std::string what;  // "push DIR to URL", for messages
  int64_t now = 0;
  std::string push_id;
  std::string dataset;
  PushReport report;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISH_CONTEXT_H_
