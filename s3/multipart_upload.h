// One multipart upload of a file region (internal to s3/): S3Client's
// MultipartUpload, in its steps. Create the upload (with the write's
// metadata), send the parts concurrently (each retried on its own),
// complete it (with the write's condition; a completion whose answer was
// lost is recognised as ObjectWrites does), check the stored object's size,
// and abort the upload (best effort) when any step fails, so that nothing is
// stored under the key.
//
// Thread safety: one upload belongs to one thread; its parts run
// concurrently on the client's transport, which other threads share.
//
// Failures: as s3_client.h says of MultipartUpload. The constructor checks
// the arguments (InvalidArgumentError) and opens the region before any
// request.
#ifndef GULPDB_S3_MULTIPART_UPLOAD_H_
#define GULPDB_S3_MULTIPART_UPLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "s3/s3_client.h"
#include "util/file_io.h"

namespace gulpdb::remote::internal {

class ObjectReads;
class ObjectWrites;
class RequestBuilder;
class Transport;

class MultipartUpload {
 public:
  // The upload of `length` (>= 1) bytes of `path` from `offset` as `key`.
  // Everything given must outlive this.
  MultipartUpload(const RequestBuilder& requests, Transport& transport, ObjectReads& reads,
                  ObjectWrites& writes, const S3Config& config, const std::string& key,
                  const std::string& path, uint64_t offset, uint64_t length,
                  const UploadOptions& options);

  // Runs the steps; returns the stored object's ETag. Once.
  std::string Run();

 private:
  // Creates the upload; sets upload_id_query_.
  void Create();
  // Sends the parts; returns their ETags in order.
  std::vector<std::string> SendParts();
  // Completes the upload of the parts with `etags`; returns the ETag the
  // store gave ("" when the completion was recognised only by its size).
  std::string Complete(const std::vector<std::string>& etags);
  void Abort();

  const RequestBuilder& requests_;
  Transport& transport_;
  ObjectReads& reads_;
  ObjectWrites& writes_;
  const std::string& key_;
  const std::string& path_;
  uint64_t offset_;
  uint64_t length_;
  const UploadOptions& options_;
  std::string object_;  // s3://bucket/key, for messages
  uint64_t part_size_;
  util::UniqueFd fd_;
  std::string upload_id_query_;  // "uploadId=..."
};

}  // namespace gulpdb::remote::internal

#endif  // GULPDB_S3_MULTIPART_UPLOAD_H_
