// Shared pieces of the remote client's suites: a client configuration for
// the local test servers (short timeouts, fast backoff), deterministic
// random bytes, and unique key prefixes so that tests sharing one server
// never see each other's objects.
//
// Thread safety: UniquePrefix is thread-safe; the rest are pure functions.
#ifndef GULPDB_TESTS_SUPPORT_REMOTE_FIXTURE_H_
#define GULPDB_TESTS_SUPPORT_REMOTE_FIXTURE_H_

#include <atomic>
#include <cstdint>
#include <random>
#include <string>

#include "gulpdb/remote.h"
#include "s3/s3_client.h"
#include "s3/s3_config.h"

namespace gulpdb::test {

// One range read through S3Client::GetRanges, which the engine uses: exactly
// `length` bytes of `key` from `offset` into `out` (length 0 makes no request).
inline void GetRange(remote::S3Client& client, const std::string& key, uint64_t offset,
                     uint64_t length, char* out) {
  client.GetRanges({remote::RangeRead{key, offset, length, out}});
}
inline std::string GetRange(remote::S3Client& client, const std::string& key, uint64_t offset,
                            uint64_t length) {
  std::string out(static_cast<size_t>(length), '\0');
  GetRange(client, key, offset, length, out.data());
  return out;
}

// A client configuration for a test server at `endpoint`.
inline remote::S3Config TestConfig(const std::string& endpoint, const std::string& key,
                                   const std::string& secret) {
  remote::S3Config c;
  c.endpoint = endpoint;
  c.region = "us-east-1";
  c.credentials.access_key_id = key;
  c.credentials.secret_access_key = secret;
  c.credentials.source = "test";
  c.connect_timeout_ms = 2000;
  c.stall_timeout_ms = 5000;
  c.request_timeout_ms = 20000;
  c.max_attempts = 4;
  c.retry_budget_ms = 0;  // attempts counted by max_attempts alone (tests set a budget)
  c.backoff_base_ms = 5;
  c.backoff_max_ms = 40;
  c.max_connections = 8;
  c.part_size = uint64_t{5} << 20;
  c.multipart_threshold = uint64_t{8} << 20;
  return c;
}

// `n` bytes drawn from `seed`.
inline std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    for (int k = 0; k < 8; ++k) s[i + static_cast<size_t>(k)] = static_cast<char>(v >> (8 * k));
  }
  for (const uint64_t v = rng(); i < n; ++i) s[i] = static_cast<char>(v >> (8 * (i % 8)));
  return s;
}

// "t<n>-<tag>/", a prefix no other test of this process uses.
inline std::string UniquePrefix(const std::string& tag) {
  static std::atomic<int> counter{0};
  return "t" + std::to_string(++counter) + "-" + tag + "/";
}

// Push options that publish the whole index snapshot, for tests of that
// layout (push's default is partitioned: PushOptions::layout).
inline PushOptions WholeSnapshot() {
  PushOptions options;
  options.layout = IndexLayout::kWhole;
  return options;
}

}  // namespace gulpdb::test

#endif  // GULPDB_TESTS_SUPPORT_REMOTE_FIXTURE_H_
