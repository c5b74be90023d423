// SHA-256, by OpenSSL's libcrypto (SHA extensions where the CPU has them):
// the one home of the hash that names published objects and partitions,
// signs request payloads (SigV4's x-amz-content-sha256, which the store
// recomputes over the bytes it receives, so that an upload corrupted in
// transit is never stored) and digests a dataset's ids
// (Dataset::IdsDigest); beside it MD5, which uploads carry as Content-MD5
// and S3 stores answer as ETags. sha256.cc is the only file that includes
// OpenSSL headers. Lowercase hex names are checked by util/hex.h.
//
// Errors: OpenSSL failing to make or run a digest context (out of memory) is
// an IoError naming the step; a read of a file region that fails or ends
// early is an IoError naming the file.
//
// Thread safety: the functions are pure (or read only the file they are
// given); a Sha256 or Md5 belongs to one thread at a time.
#ifndef GULPDB_UTIL_SHA256_H_
#define GULPDB_UTIL_SHA256_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace gulpdb::util {

// A SHA-256 computed over bytes given piece by piece. Move-only; it owns its
// OpenSSL context.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // The digest of every byte given so far, as 64 lowercase hex digits. The
  // object then starts again, empty.
  std::string FinishHex();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// The SHA-256 of no bytes, as 64 lowercase hex digits.
inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// The SHA-256 of `data` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

// The SHA-256 of `length` bytes of the open file `fd` from `offset` (pread;
// the file position is unchanged). Throws IoError naming `path` if the read
// fails, and IoError if the file ends before offset + length.
std::string Sha256HexOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length);

// An MD5 computed over bytes given piece by piece, as Sha256. Not for
// anything that must resist collisions: it only checks bytes against what
// an S3 store computes (Content-MD5, ETags).
class Md5 {
 public:
  struct Digest {
    std::string hex;     // 32 lowercase hex digits, as an S3 ETag holds it
    std::string base64;  // as the Content-MD5 header holds it
  };
  Md5();
  ~Md5();
  Md5(Md5&&) noexcept;
  Md5& operator=(Md5&&) noexcept;
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // The digest of every byte given so far. The object then starts again,
  // empty.
  Digest Finish();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// Both digests of a payload, from one pass over it.
struct PayloadDigests {
  std::string sha256_hex;  // 64 lowercase hex digits
  std::string md5_hex;     // 32 lowercase hex digits
  std::string md5_base64;  // as Content-MD5 wants it
};
PayloadDigests DigestsOf(std::string_view data);
// As Sha256HexOfFile.
PayloadDigests DigestsOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_SHA256_H_
