// How S3Client's requests are built (internal to s3/): where a request goes
// (the bucket's URL and an object's, path or virtual-hosted style, in the
// canonical form SigV4 signs: the path percent-encoded, the query given
// sorted by the caller) and the header lines whose values are checked before
// they are sent: If-Match, and a write's metadata and condition
// (WriteOptions, s3_client.h). libcurl signs what is built here when the
// transport sends it (transport.h).
//
// Thread safety: a RequestBuilder is immutable once made; any number of
// threads may use one. The free functions touch only their arguments.
//
// Failures: what cannot be sent (a non-printable ETag, a malformed metadata
// name or value, two conditions at once) throws InvalidArgumentError naming
// the operation and the object, before any request.
#ifndef GULPDB_S3_REQUEST_BUILDER_H_
#define GULPDB_S3_REQUEST_BUILDER_H_

#include <string>
#include <string_view>

#include "s3/s3_config.h"
#include "s3/transport.h"

namespace gulpdb::remote {

struct WriteOptions;  // s3_client.h

namespace internal {

class RequestBuilder {
 public:
  // The requests of `bucket` at `endpoint`, addressed as `config` says.
  RequestBuilder(const S3Config& config, std::string bucket, const Endpoint& endpoint);

  const std::string& bucket() const { return bucket_; }
  // "s3://bucket/key", for messages.
  std::string Name(std::string_view key) const { return ObjectName(bucket_, key); }
  // The URL of the bucket (ListObjectsV2 appends its query to it).
  std::string BucketUrl() const;
  // The URL of `key`.
  std::string ObjectUrl(std::string_view key) const;
  // Points `r` at `key` with `method` (and `query` after "?", if any).
  void Target(Request& r, const char* method, const std::string& key,
              const std::string& query = "") const;

 private:
  std::string bucket_;
  std::string scheme_;
  std::string host_port_;
  bool virtual_hosted_;
};

// Adds "If-Match: <etag>" to `r`. InvalidArgumentError "<operation>
// <object>: ..." when the ETag is not printable ASCII.
void AddIfMatch(Request& r, const std::string& etag, const char* operation,
                std::string_view object);

// Adds the header lines of `write` to `r`: its metadata and, with
// `conditions`, its condition. `object` names the object in messages.
void AddWriteHeaders(Request& r, const WriteOptions& write, bool conditions,
                     const std::string& object);

}  // namespace internal
}  // namespace gulpdb::remote

#endif  // GULPDB_S3_REQUEST_BUILDER_H_
