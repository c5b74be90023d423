// The reads of S3Client (internal to s3/): HEAD, a whole object into memory
// or into a file, and batches of ranged GETs issued concurrently (the read
// path of remote datasets). Each builds its requests (request_builder.h),
// runs them on the client's transport and turns the answer into what
// s3_client.h promises.
//
// Thread safety: stateless beyond the transport it shares; any number of
// threads may call it at once.
//
// Failures: as s3_client.h says of the same methods. Bad arguments (keys,
// ranges, buffers, ETags) throw InvalidArgumentError before any request.
#ifndef GULPDB_S3_OBJECT_READS_H_
#define GULPDB_S3_OBJECT_READS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "s3/s3_client.h"

namespace gulpdb::remote::internal {

class RequestBuilder;
class Transport;

class ObjectReads {
 public:
  // Both must outlive this.
  ObjectReads(const RequestBuilder& requests, Transport& transport)
      : requests_(requests), transport_(transport) {}

  ObjectInfo Head(const std::string& key, const std::string& if_match);
  std::optional<ObjectInfo> HeadIfExists(const std::string& key);
  std::string Get(const std::string& key, ObjectInfo* info, uint64_t max_size);
  ObjectInfo GetToFile(const std::string& key, const std::string& path, uint64_t max_size);
  void GetRanges(const std::vector<RangeRead>& reads);

 private:
  const RequestBuilder& requests_;
  Transport& transport_;
};

}  // namespace gulpdb::remote::internal

#endif  // GULPDB_S3_OBJECT_READS_H_
