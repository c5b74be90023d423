// The HTTP engine under S3Client: runs batches of signed requests through
// libcurl's multi interface with bounded concurrency, retries, deadlines and
// strict checks of what comes back. Internal to s3/; transfer.h, private
// to transport*.cc, is the only header of the library that includes
// <curl/curl.h>.
//
// Requests are built by the caller (S3Client) with a canonical URL (path
// percent-encoded as SigV4 wants, query parameters sorted: libcurl 7.88 signs
// the query as given). libcurl signs each attempt (CURLOPT_AWS_SIGV4) with
// the payload hash sent as x-amz-content-sha256.
//
// Connections: each Run borrows a multi handle from a pool; its connection
// cache (up to max_connections) outlives the Run, so consecutive calls on one
// thread reuse connections, and concurrent calls each use their own handle
// (a libcurl handle is never shared between threads). After fork() the child
// abandons the parent's handles without closing them (closing would send TLS
// close_notify on the parent's connections) and builds new ones.
//
// Uploads: every request with a body sends Content-MD5 beside the payload's
// SHA-256, so that a store checking either refuses bytes changed on the way.
// A PUT whose answer carries an ETag that is an MD5 (IsMd5Etag, the store not
// saying it encrypts) other than the body's was stored damaged by a store
// that checks neither: it is sent again, conditional on that very ETag (so
// it replaces nothing but what it stored), as a retryable failure.
//
// Responses: a request succeeds only with one of its expected statuses and
// exactly the bytes it expects: a ranged GET needs 206 and a Content-Range
// naming exactly its bytes (or 200 with exactly the asked length when the
// range starts at 0), a body matching its Content-Length (curl reports a
// short one), and nothing beyond the caller's buffer. Error bodies are read
// (up to 64 KiB) for S3's error code and never reach the caller's buffers.
//
// Failures: see retry_policy.h for what is retried. A request that fails for
// good throws, from Run, the error type of errors.h; the others of the batch
// still running are cancelled and their sinks may hold partial data. A
// failed condition (412, or 409 ConditionalRequestConflict) is a
// PreconditionFailedError carrying the request's key, never retried.
//
// Thread safety: a Transport may be used by any number of threads at once.
// A Request belongs to one Run at a time.
#ifndef GULPDB_S3_TRANSPORT_H_
#define GULPDB_S3_TRANSPORT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "s3/s3_config.h"

namespace gulpdb::remote::internal {

// Where the request body comes from.
struct Body {
  enum class Kind { kNone, kMemory, kFile };
  Kind kind = Kind::kNone;
  std::string_view data;  // kMemory: must stay valid for the Run
  int fd = -1;            // kFile: read with pread, never closed here
  std::string path;       // kFile: for messages
  uint64_t offset = 0;    // kFile
  uint64_t length = 0;    // kFile
  // Hex SHA-256 of the body, and its MD5 (hex, and base64 for Content-MD5);
  // computed in one pass before the first attempt when sha256 is empty.
  std::string sha256;
  std::string md5_hex;
  std::string md5_base64;
};

// Where a successful response body goes.
struct Sink {
  enum class Kind { kDiscard, kString, kBuffer, kFile };
  Kind kind = Kind::kDiscard;
  std::string* str = nullptr;  // kString: replaced by the body
  // kString, kFile: a larger body fails the request (ObjectTooLargeError),
  // as soon as its Content-Length says so or more bytes arrive.
  uint64_t max_size = UINT64_MAX;
  char* buffer = nullptr;  // kBuffer: receives exactly range_length bytes
  int fd = -1;             // kFile: written from offset 0, resumed on retry
  std::string path;        // kFile: for messages
};

// What the response said (the last attempt's).
struct ResponseInfo {
  long status = 0;
  int64_t content_length = -1;
  uint64_t object_size = 0;  // Content-Length, or the total of Content-Range
  std::string etag;
  std::string last_modified;
  std::string request_id;
  // x-amz-server-side-encryption (or "SSE-C" for a customer key): its ETags
  // may not be MD5s. Empty when the store did not say it encrypts.
  std::string server_side_encryption;
  std::map<std::string, std::string> metadata{};  // x-amz-meta-*, lowercase names without it
};

struct Request {
  std::string method = "GET";        // GET, HEAD, PUT, POST or DELETE
  std::string url;                   // absolute and canonical
  std::string bucket;                // for messages
  std::string key;                   // for messages; empty for bucket operations
  std::vector<std::string> headers;  // extra "Name: value" lines
  Body body;
  Sink sink;
  // A ranged GET of [range_offset, range_offset + range_length), verified.
  bool has_range = false;
  uint64_t range_offset = 0;
  uint64_t range_length = 0;
  // A part of a multipart upload: sent again after damage without a
  // condition (a part is not an object).
  bool upload_part = false;
  // Statuses meaning success (a ranged GET decides by itself).
  std::vector<long> ok_statuses = {200};
  // DELETE: a 404 NoSuchKey is a success (the object is gone either way).
  bool not_found_ok = false;
  // Checks a successful response further; returns an error text ("" when
  // fine) and whether another attempt may help.
  std::function<std::string(const Request&, bool* retryable)> validate;

  // Results.
  ResponseInfo response;
  uint32_t attempts = 0;
  // Set when an attempt stored damaged bytes (see "Uploads" above): the
  // ETag the retries are conditional on instead of the request's own
  // condition.
  std::string replace_damaged;
};

struct TransportStats {
  uint64_t requests = 0;     // requests run (each counted once)
  uint64_t attempts = 0;     // HTTP attempts, retries included
  uint64_t retries = 0;      // attempts after a failure
  uint64_t connections = 0;  // TCP connections opened
  uint64_t bytes_received = 0;
  uint64_t bytes_sent = 0;
};

class Transport {
 public:
  // `config` must be valid (S3Config::Validate).
  explicit Transport(const S3Config& config);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Runs every request to completion, at most `max_parallel` at a time (0:
  // the configured max_connections). Returns when all have succeeded; throws
  // the first that failed for good, after cancelling the rest.
  void Run(const std::vector<Request*>& requests, uint32_t max_parallel = 0);
  void Run(Request& request) { Run(std::vector<Request*>{&request}); }

  TransportStats stats() const;

  struct Impl;  // opaque (transport.cc)

 private:
  std::unique_ptr<Impl> impl_;
};

// "s3://bucket/key" (or "s3://bucket" when `key` is empty), for messages.
std::string ObjectName(std::string_view bucket, std::string_view key);

}  // namespace gulpdb::remote::internal

#endif  // GULPDB_S3_TRANSPORT_H_
