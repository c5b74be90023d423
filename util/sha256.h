// SHA-256, by OpenSSL's libcrypto (SHA extensions where the CPU has them):
// the one home of the hash that names published objects and partitions,
// signs request payloads (remote/payload_hash.h builds on it) and digests a
// dataset's ids (Dataset::IdsDigest). sha256.cc is the only file that
// includes OpenSSL headers.
//
// Errors: OpenSSL failing to make or run a digest context (out of memory) is
// an IoError naming the step; nothing else fails.
//
// Thread safety: Sha256Hex is pure; a Sha256 belongs to one thread at a time.
#ifndef GULPDB_UTIL_SHA256_H_
#define GULPDB_UTIL_SHA256_H_

#include <cstddef>
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

// The SHA-256 of `data` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_SHA256_H_
