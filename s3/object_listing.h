// One listing of a bucket's keys under a prefix (internal to s3/):
// S3Client's List, ListObjectsV2 page by page, following the continuation
// tokens until the store says the listing is complete. Each page's query
// parameters are sorted (the URL is then SigV4's canonical form); a store
// that says a listing is truncated but gives no new token fails the listing
// rather than looping.
//
// Thread safety: one listing belongs to one thread; the transport it runs
// on is shared.
//
// Failures: as s3_client.h says of List. A page that does not parse is
// retried as a transient failure.
#ifndef GULPDB_S3_OBJECT_LISTING_H_
#define GULPDB_S3_OBJECT_LISTING_H_

#include <string>

#include "s3/s3_client.h"

namespace gulpdb::remote::internal {

class RequestBuilder;
class Transport;

class ObjectListing {
 public:
  // Everything given must outlive this.
  ObjectListing(const RequestBuilder& requests, Transport& transport, const std::string& prefix,
                const ListOptions& options);

  // Every page, in key order. Once.
  ListResult Run();

 private:
  // The query of the page after `token_` ("?..."), parameters sorted.
  std::string PageQuery() const;

  const RequestBuilder& requests_;
  Transport& transport_;
  const std::string& prefix_;
  const ListOptions& options_;
  std::string token_;           // of the next page; "" for the first
  std::string previous_token_;  // of the page before it
};

}  // namespace gulpdb::remote::internal

#endif  // GULPDB_S3_OBJECT_LISTING_H_
