// What an S3 ETag says about the bytes stored: where it is the MD5 of an
// object, a client can compare it with the MD5 it sent (util/sha256.h's
// Md5) and so know the store holds what was uploaded. Internal to s3/
// and the published datasets that compare listed ETags.
//
// Thread safety: pure functions.
#ifndef GULPDB_S3_ETAG_H_
#define GULPDB_S3_ETAG_H_

#include <string_view>

namespace gulpdb::remote {

// True for an ETag that is an MD5 in hex as S3 gives it ("\"<32 lowercase
// hex digits>\""): a single PUT's or part's ETag on stores that do not
// encrypt (SSE-KMS and SSE-C ETags are not MD5s; multipart ETags end in
// "-<parts>").
bool IsMd5Etag(std::string_view etag);

}  // namespace gulpdb::remote

#endif  // GULPDB_S3_ETAG_H_
