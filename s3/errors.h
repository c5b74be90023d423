// The errors of remote object access, beyond gulpdb's own (gulpdb/error.h).
//
// Every failure of an S3Client call is a gulpdb::Error whose message reads
// "<METHOD> s3://<bucket>/<key> (<url>): <detail>", where the detail names the
// HTTP status and S3 error code or the transport error, and the number of
// attempts made. The kinds:
//   - NotFoundError (gulpdb/error.h): the object or the bucket does not exist
//     (HTTP 404); never retried. NoSuchBucketError when S3 says it is the
//     bucket (error code NoSuchBucket).
//   - AccessDeniedError: the store refused the credentials or the request's
//     signature, or denied access (HTTP 403, and 400 ExpiredToken); never
//     retried. The message names the bucket and where the credentials came from.
//   - RangeNotSatisfiableError: a ranged read asked for bytes the object does
//     not have (HTTP 416, or a range the server clamped); never retried.
//   - ObjectTooLargeError: a GET whose caller bounded the size met a larger
//     object (by its Content-Length, or once more bytes arrived); the
//     transfer stops there; never retried.
//   - PreconditionFailedError: a conditional request's condition did not hold
//     (HTTP 412 PreconditionFailed; 409 ConditionalRequestConflict, a
//     concurrent conditional write of the same key; 404 on a write that was
//     conditional on an ETag): the object is not the one the caller expected.
//     Never retried.
//   - IoError: everything else (connection refused or reset, timeouts, 5xx
//     after the last retry, truncated or malformed responses, other 4xx).
//   - InvalidArgumentError: bad URLs, keys, configuration, before any request.
// Python sees the IoError family as OSError.
//
// Thread safety: plain value types.
#ifndef GULPDB_S3_ERRORS_H_
#define GULPDB_S3_ERRORS_H_

#include <string>
#include <utility>

#include "gulpdb/error.h"

namespace gulpdb::remote {

// HTTP 403 (AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, ...):
// wrong or missing credentials, or a policy that denies the request. Public
// (gulpdb/error.h), so that callers of remote datasets can tell it apart.
using AccessDeniedError = gulpdb::AccessDeniedError;

// A ranged read outside the object (HTTP 416, or the server returned fewer
// bytes than asked because the object is shorter).
class RangeNotSatisfiableError : public IoError {
 public:
  using IoError::IoError;
  [[noreturn]] void ThrowWithMessage(const std::string& message) const override {
    throw RangeNotSatisfiableError(message);
  }
};

// HTTP 404 NoSuchBucket: the bucket itself does not exist (a NotFoundError).
class NoSuchBucketError : public NotFoundError {
 public:
  using NotFoundError::NotFoundError;
  [[noreturn]] void ThrowWithMessage(const std::string& message) const override {
    throw NoSuchBucketError(message);
  }
};

// A GET of an object larger than the caller allowed (S3Client::Get's and
// GetToFile's max_size): stopped before more than that many bytes arrived.
class ObjectTooLargeError : public IoError {
 public:
  using IoError::IoError;
  [[noreturn]] void ThrowWithMessage(const std::string& message) const override {
    throw ObjectTooLargeError(message);
  }
};

// A condition of a request (If-Match, If-None-Match) did not hold. key() is
// the object's key in its bucket ("" when unknown), so that a caller reading
// several objects at once knows which one changed.
class PreconditionFailedError : public IoError {
 public:
  explicit PreconditionFailedError(const std::string& message, std::string key = "")
      : IoError(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }
  [[noreturn]] void ThrowWithMessage(const std::string& message) const override {
    throw PreconditionFailedError(message, key_);
  }

 private:
  std::string key_;
};

}  // namespace gulpdb::remote

#endif  // GULPDB_S3_ERRORS_H_
