// Where a published dataset lives: a flat namespace of objects under a
// prefix, either in an S3-compatible bucket (over remote::S3Client) or in a
// local directory (the index snapshots `gulpdb snapshot` publishes beside a
// dataset on a shared file system, and tests). Publishing (publish.cc) and
// remote reading (remote_dataset.cc) are written once against this
// interface; the layout of what they store is docs/format/remote_format.md.
//
// Keys are relative to the store's prefix ("data_0.gulp",
// "gulpdb.snapshots/<sha256>.mdb"): '/'-separated segments, none empty, "."
// or "..", checked before anything is touched (remote::JoinKey), so that a
// key read from a manifest never reaches outside the store.
//
// Errors: NotFoundError for a missing object, AccessDeniedError (403),
// remote::RangeNotSatisfiableError for a range past an object's end,
// IoError for everything else, each naming the object (Name(key)). The S3
// store retries transient failures (s3/s3_client.h); the local one does
// not need to.
//
// Conditions (remote::WriteOptions, S3 conditional writes): a write may be
// made only if the key is absent or only if the object has a given ETag, and
// reads only if it has a given ETag; a condition that does not hold is a
// remote::PreconditionFailedError naming the key. Writes carry user metadata
// (S3: x-amz-meta-*), which Head returns. The local store has no ETags and
// no metadata: it takes neither conditions nor metadata
// (SupportsConditions() is false); publishing to it relies on one writer.
//
// Thread safety: every method may be called from any number of threads at
// once. Replacing an object (Put, PutFile) is atomic: a reader sees the old
// or the new bytes, never a mix.
#ifndef GULPDB_ENGINE_REMOTE_OBJECT_STORE_H_
#define GULPDB_ENGINE_REMOTE_OBJECT_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "s3/s3_client.h"

namespace gulpdb::engine {

struct StoreObject {
  std::string key;  // relative to the store's prefix
  uint64_t size = 0;
  std::string etag;  // the S3 ETag; "" for a local directory
  // User metadata (Head only; lowercase names without "x-amz-meta-").
  std::map<std::string, std::string> metadata{};
};

// One range of a batch read into a caller-owned buffer of `length` bytes:
// the client's RangeRead, its key relative to the store's prefix as every
// key here is.
using StoreRange = remote::RangeRead;

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // "s3://bucket/prefix" or the directory's path.
  virtual const std::string& url() const = 0;
  // The full name of an object, for messages ("s3://bucket/prefix/key").
  std::string Name(std::string_view key) const;
  // A stable identity of the store (endpoint + bucket + prefix, or the
  // directory's real path): the name of its cache folder.
  virtual std::string Identity() const = 0;

  // The whole object; NotFoundError if absent, remote::ObjectTooLargeError
  // if larger than `max_size` (found out before more than that is fetched).
  // `info`, when not null, receives its size and ETag.
  virtual std::string Get(const std::string& key, uint64_t max_size,
                          StoreObject* info = nullptr) = 0;
  // Streams the whole object into the new file `path` (created or
  // truncated); on failure `path` is removed. Returns its size and ETag. An
  // object larger than `max_size` is remote::ObjectTooLargeError, found out
  // before more than max_size bytes are fetched.
  virtual StoreObject GetToFile(const std::string& key, const std::string& path,
                                uint64_t max_size) = 0;
  // Reads every range (concurrently on S3: one HTTP range request each).
  // Returns when all are complete and exact, or throws the first failure.
  virtual void GetRanges(const std::vector<StoreRange>& ranges) = 0;
  // Size, ETag and metadata, or nullopt if the object does not exist.
  virtual std::optional<StoreObject> Head(const std::string& key) = 0;
  // Replaces `key` with `data`, if `write`'s condition holds, storing its
  // metadata; returns the new ETag.
  virtual std::string Put(const std::string& key, std::string_view data,
                          const remote::WriteOptions& write) = 0;
  std::string Put(const std::string& key, std::string_view data) {
    return Put(key, data, remote::WriteOptions());
  }
  // Replaces `key` with `length` bytes of the file `path` from offset 0
  // (multipart on S3 when large, `parallel` parts at once; 0 = the
  // configured connection count), as Put. Returns the new ETag.
  virtual std::string PutFile(const std::string& key, const std::string& path, uint64_t length,
                              uint32_t parallel, const remote::WriteOptions& write) = 0;
  std::string PutFile(const std::string& key, const std::string& path, uint64_t length,
                      uint32_t parallel) {
    return PutFile(key, path, length, parallel, remote::WriteOptions());
  }
  // True when writes honour remote::WriteOptions (conditions and metadata)
  // and objects have ETags: S3 (whether the server really checks the
  // conditions is for the caller to find out); false for a local directory,
  // which refuses a write with a condition or metadata (InvalidArgumentError).
  virtual bool SupportsConditions() const = 0;
  // Deletes the objects; absent ones are not an error.
  virtual void Delete(const std::vector<std::string>& keys) = 0;
  // Every object under the prefix, keys relative to it, in key order.
  virtual std::vector<StoreObject> List() = 0;

  // Requests made and bytes received so far (zeros for a local directory).
  virtual remote::ClientStats stats() const = 0;
};

// The objects under `url` ("s3://bucket/prefix"), reached with `config`.
// Throws InvalidArgumentError for a malformed URL or configuration; makes no
// request.
std::unique_ptr<ObjectStore> OpenS3Store(const std::string& url, remote::S3Config config);

// The files under the directory `dir` (created on the first Put). Keys map
// to paths below it; subdirectories are made as needed.
std::unique_ptr<ObjectStore> OpenLocalStore(const std::string& dir);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_OBJECT_STORE_H_
