// SHA-256 of request payloads, for SigV4's x-amz-content-sha256: the store
// recomputes it over the bytes it receives and refuses the request when they
// differ, so an upload corrupted in transit, or a file changed between
// hashing and sending, is never stored. And their MD5, for Content-MD5, which
// stores check too (some skip the payload hash: s3rver, stores behind
// proxies that re-sign), and to compare with the ETag a store returns where
// that is the MD5 of what it stored. Internal to remote/.
//
// The hashes themselves are util/sha256.h's (OpenSSL's libcrypto).
//
// Thread safety: pure functions.
#ifndef GULPDB_REMOTE_PAYLOAD_HASH_H_
#define GULPDB_REMOTE_PAYLOAD_HASH_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace gulpdb::remote {

// The SHA-256 of no bytes, as 64 lowercase hex digits.
inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// The SHA-256 of `data` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

// The SHA-256 of `length` bytes of the open file `fd` from `offset` (pread;
// the file position is unchanged). Throws IoError naming `path` if the read
// fails, and IoError if the file ends before offset + length.
std::string Sha256HexOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length);

// Both digests of a payload, from one pass over it.
struct PayloadDigests {
  std::string sha256_hex;  // 64 lowercase hex digits
  std::string md5_hex;     // 32 lowercase hex digits
  std::string md5_base64;  // as Content-MD5 wants it
};
PayloadDigests DigestsOf(std::string_view data);
// As Sha256HexOfFile.
PayloadDigests DigestsOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length);

// True for an ETag that is an MD5 in hex as S3 gives it ("\"<32 lowercase
// hex digits>\""): a single PUT's or part's ETag on stores that do not
// encrypt (SSE-KMS and SSE-C ETags are not MD5s; multipart ETags end in
// "-<parts>").
bool IsMd5Etag(std::string_view etag);

}  // namespace gulpdb::remote

#endif  // GULPDB_REMOTE_PAYLOAD_HASH_H_
