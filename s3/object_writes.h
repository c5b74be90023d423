// The single-request writes of S3Client (internal to s3/): PUT from memory
// or from a file region, with a write's metadata and condition
// (WriteOptions, s3_client.h), and what a conditional write means when its
// answer was lost: a retry whose condition fails because an earlier attempt
// of it was stored is recognised by the stored object's size and metadata
// (StoredByThisWrite), and succeeds with that object's ETag. The multipart
// upload (multipart_upload.h) completes its uploads the same way.
//
// Thread safety: stateless beyond the transport it shares; any number of
// threads may call it at once.
//
// Failures: as s3_client.h says of Put and PutFile; a failed condition is a
// PreconditionFailedError (also when the object an If-Match write was
// conditional on is gone), never retried.
#ifndef GULPDB_S3_OBJECT_WRITES_H_
#define GULPDB_S3_OBJECT_WRITES_H_

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "s3/s3_client.h"
#include "util/file_io.h"

namespace gulpdb::remote::internal {

class ObjectReads;
class RequestBuilder;
class Transport;
struct Request;

class ObjectWrites {
 public:
  // All three must outlive this.
  ObjectWrites(const RequestBuilder& requests, Transport& transport, ObjectReads& reads)
      : requests_(requests), transport_(transport), reads_(reads) {}

  std::string Put(const std::string& key, std::string_view data, const WriteOptions& write);
  std::string PutFile(const std::string& key, const std::string& path, uint64_t offset,
                      uint64_t length, const WriteOptions& write);

  // The ETag of `key` if it holds what a write of `length` bytes with
  // `write`'s metadata stored (and, given the body's MD5, an ETag that is
  // not another MD5), else "".
  std::string StoredByThisWrite(const std::string& key, uint64_t length, const WriteOptions& write,
                                const std::string& md5_hex);

 private:
  // Runs the write `r` of `length` bytes made with `write`: a failed
  // condition is a PreconditionFailedError, unless an earlier attempt of
  // this write was stored. Returns the ETag.
  std::string Run(Request& r, uint64_t length, const WriteOptions& write);

  const RequestBuilder& requests_;
  Transport& transport_;
  ObjectReads& reads_;
};

// Opens `path` for reading and checks it holds [offset, offset + length)
// (InvalidArgumentError naming the file when it does not).
util::UniqueFd OpenRegion(const std::string& path, uint64_t offset, uint64_t length);

// True when the store's error `e` carries S3's error code `code`.
bool Mentions(const std::exception& e, const char* code);

// The PreconditionFailedError of a write conditional on an object (If-Match)
// that the store says is gone (`e`, its NotFoundError).
[[noreturn]] void ThrowConditionGone(const NotFoundError& e, const std::string& key);

}  // namespace gulpdb::remote::internal

#endif  // GULPDB_S3_OBJECT_WRITES_H_
