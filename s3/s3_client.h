// A client for one bucket of an S3-compatible object store: whole-object and
// ranged reads (one at a time or a batch issued concurrently), uploads from
// memory or from a file region (multipart for large files, parts in
// parallel), HEAD, DELETE and ListObjectsV2. Writes may be conditional (S3's
// conditional writes: If-None-Match: * and If-Match: <etag> on PutObject and
// CompleteMultipartUpload) and carry user metadata (x-amz-meta-*). Generic:
// it knows nothing of datasets; remote datasets are built on it.
//
// Requests go over HTTP(S) with libcurl, signed with SigV4 by libcurl
// (credentials from S3Config, none = anonymous), payloads hashed into
// x-amz-content-sha256 and Content-MD5 so that the store verifies every
// uploaded byte; a PUT whose returned ETag is an MD5 other than the body's
// (a store that checks neither stored changed bytes) is sent again
// (transport.h, "Uploads").
// Connections are kept alive and reused across calls (transport.h).
//
// Thread safety: every method may be called from any number of threads at
// once. Each call blocks until it has succeeded or failed; buffers and
// strings passed in must stay valid for the call only. A client may be used
// in a child process after fork(): the child leaves the parent's connections
// alone and opens its own (DataLoader workers may inherit a client).
//
// Failures (errors.h): every method throws gulpdb::Error subclasses whose
// message names the method, the object (s3://bucket/key), the URL, the HTTP
// status with S3's error code and message, or the transport error, and the
// number of attempts. Transient failures (connection refused or reset,
// timeouts, 5xx, 503 SlowDown, truncated bodies) are retried with
// exponential backoff and jitter (honouring Retry-After) for at least
// S3Config::max_attempts attempts and at least S3Config::retry_budget_ms,
// within S3Config::request_timeout_ms (retry_policy.h); then IoError. A
// GET bounded by max_size stops at it (ObjectTooLargeError). Messages never
// show the user information of a URL (util/url_text.h); credentials sent
// over plain http to a host that is not loopback are warned about once per
// process on stderr. 404 is NotFoundError (NoSuchBucketError), 403
// AccessDeniedError (naming the bucket and where the credentials came from),
// a range beyond the object RangeNotSatisfiableError, a condition that did
// not hold PreconditionFailedError (never retried). Bad arguments (keys,
// ranges, files) throw InvalidArgumentError before any request. No call ever
// returns short or wrong bytes as a success. A client whose server went away
// works again, with no reset, once the server is back.
#ifndef GULPDB_S3_S3_CLIENT_H_
#define GULPDB_S3_S3_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "s3/errors.h"
#include "s3/s3_config.h"
#include "s3/s3_types.h"

namespace gulpdb::remote {

namespace internal {
class ObjectReads;
class ObjectWrites;
class RequestBuilder;
class Transport;
}  // namespace internal

// One range of a batch read: `length` bytes of `key` from `offset` into
// `out`, which the caller owns and which must hold `length` bytes.
struct RangeRead {
  std::string key;
  uint64_t offset = 0;
  uint64_t length = 0;
  char* out = nullptr;
  // Read only if the object's ETag is this one (If-Match); else the read
  // fails with PreconditionFailedError naming the key. Empty: any object.
  std::string if_match{};
};

// What a write stores besides the bytes, and the condition it is made on.
struct WriteOptions {
  // Store only if no object has the key (If-None-Match: *).
  bool if_absent = false;
  // Store only if the object's ETag is this one (If-Match: <etag>, with the
  // double quotes the store sent). Empty: no such condition. A missing
  // object fails the condition too.
  std::string if_match;
  // User metadata: x-amz-meta-<name>: <value> for each entry. Names are
  // lowercase letters, digits and '-'; values printable ASCII. Give one
  // value that is unique to this write (an upload id): a retried write whose
  // condition fails because an earlier attempt of it was stored (its answer
  // lost) is then recognised by the stored object's size and metadata, and
  // succeeds with that object's ETag.
  std::map<std::string, std::string> metadata;
};

struct UploadOptions {
  // Part size of multipart uploads; 0 = S3Config::part_size. Raised as needed
  // to stay within S3's 10,000 parts.
  uint64_t part_size = 0;
  // Regions larger than this upload in parts; unset = S3Config::multipart_threshold.
  std::optional<uint64_t> multipart_threshold;
  // Parts in flight at once; 0 = S3Config::max_connections.
  uint32_t max_parallel = 0;
  // Metadata (sent when the upload is created) and condition (checked when
  // it completes, or with the single PUT).
  WriteOptions write;
};

struct ListOptions {
  // With a delimiter (usually "/"), keys holding it after the prefix are
  // rolled up into ListResult::common_prefixes.
  std::string delimiter;
  // Keys per page (ListObjectsV2's max-keys); 0 = the server's default (1000).
  uint32_t page_size = 0;
};

// What the client has done since it was made.
struct ClientStats {
  uint64_t requests = 0;     // logical requests (a retried request counts once)
  uint64_t attempts = 0;     // HTTP attempts, retries included
  uint64_t retries = 0;      // attempts made after a failed one
  uint64_t connections = 0;  // TCP connections opened
  uint64_t bytes_received = 0;
  uint64_t bytes_sent = 0;
};

class S3Client {
 public:
  // Throws InvalidArgumentError if `config` is invalid or `bucket` is not a
  // valid bucket name. Makes no request.
  S3Client(S3Config config, std::string bucket);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const std::string& bucket() const { return bucket_; }
  const S3Config& config() const { return config_; }
  // The HTTP(S) URL of `key` (path or virtual-hosted style, see s3_config.h).
  std::string ObjectUrl(std::string_view key) const;

  // Size, ETag, Last-Modified and user metadata of `key`. NotFoundError if
  // absent; PreconditionFailedError if `if_match` is given and the object's
  // ETag is another.
  ObjectInfo Head(const std::string& key, const std::string& if_match = "");
  // The same, or nullopt if the object does not exist.
  std::optional<ObjectInfo> HeadIfExists(const std::string& key);

  // The whole object. An object larger than `max_size` fails with
  // ObjectTooLargeError as soon as its Content-Length says so (or after at
  // most max_size bytes of it). `info`, when not null, receives its size,
  // ETag and Last-Modified.
  std::string Get(const std::string& key, ObjectInfo* info = nullptr,
                  uint64_t max_size = UINT64_MAX);

  // Streams the whole object into the file `path` (created or truncated,
  // mode 0644, not fsynced). A retry after a broken transfer resumes where it
  // stopped (Range + If-Match on the ETag; an object replaced meanwhile is an
  // IoError). An object larger than `max_size` fails with
  // ObjectTooLargeError before more than max_size bytes are written. On
  // failure `path` is removed.
  ObjectInfo GetToFile(const std::string& key, const std::string& path,
                       uint64_t max_size = UINT64_MAX);

  // Reads every range of `reads` concurrently (up to max_connections at once,
  // one HTTP range request each, over kept-alive connections), each retried
  // on its own. A range reaching past the end of its object is
  // RangeNotSatisfiableError. Returns when all are complete and verified; on the first
  // range that fails for good, cancels the others and throws its error (the
  // buffers may then hold partial data). Ranges of length 0 are skipped.
  void GetRanges(const std::vector<RangeRead>& reads);

  // Stores `data` as `key` (one PUT), with `write`'s metadata, if its
  // condition holds (else PreconditionFailedError). Returns the new object's
  // ETag.
  std::string Put(const std::string& key, std::string_view data, const WriteOptions& write = {});

  // Stores `length` bytes of the file `path` from `offset` as `key`, in one
  // PUT streamed from the file (up to 5 GiB), as Put. Returns the ETag.
  std::string PutFile(const std::string& key, const std::string& path, uint64_t offset,
                      uint64_t length, const WriteOptions& write = {});

  // Stores the region as `key`: one PUT up to the multipart threshold, a
  // multipart upload beyond it. Returns the ETag.
  std::string UploadFile(const std::string& key, const std::string& path, uint64_t offset,
                         uint64_t length, const UploadOptions& options = {});
  // The whole file.
  std::string UploadFile(const std::string& key, const std::string& path,
                         const UploadOptions& options = {});

  // A multipart upload of the region (length >= 1): creates the upload, sends
  // the parts concurrently (each part_size bytes but the last; each retried
  // on its own), completes it, and checks the stored size. On failure the
  // upload is aborted (best effort) and nothing is stored under `key`.
  // Returns the ETag.
  std::string MultipartUpload(const std::string& key, const std::string& path, uint64_t offset,
                              uint64_t length, const UploadOptions& options = {});

  // Deletes `key`. Deleting an absent object is not an error (as in S3).
  void Delete(const std::string& key);
  // Deletes every key, concurrently.
  void DeleteMany(const std::vector<std::string>& keys);

  // Every object whose key starts with `prefix` ("" = the whole bucket), in
  // key order, following ListObjectsV2's continuation tokens.
  ListResult List(const std::string& prefix, const ListOptions& options = {});

  ClientStats stats() const;

 private:
  S3Config config_;
  std::string bucket_;
  // The operations, each in its own class (internal to s3/): how requests
  // are addressed and checked (request_builder.h), the reads
  // (object_reads.h), the single-request writes (object_writes.h); a
  // multipart upload (multipart_upload.h) and a listing (object_listing.h)
  // are made per call. The client forwards to them.
  std::unique_ptr<const internal::RequestBuilder> requests_;
  std::unique_ptr<internal::Transport> transport_;
  std::unique_ptr<internal::ObjectReads> reads_;
  std::unique_ptr<internal::ObjectWrites> writes_;
};

}  // namespace gulpdb::remote

#endif  // GULPDB_S3_S3_CLIENT_H_
