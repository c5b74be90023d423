// SHA-256 of request payloads, for SigV4's x-amz-content-sha256: the store
// recomputes it over the bytes it receives and refuses the request when they
// differ, so an upload corrupted in transit, or a file changed between
// hashing and sending, is never stored. Internal to remote/.
//
// The hash itself is util/sha256.h's (OpenSSL's libcrypto).
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

}  // namespace gulpdb::remote

#endif  // GULPDB_REMOTE_PAYLOAD_HASH_H_
