#include "remote/retry_policy.h"

#include <algorithm>

namespace gulpdb::remote {

uint32_t BackoffDelayMs(const RetryPolicy& policy, uint32_t failed_attempts, std::mt19937_64& rng) {
  if (policy.backoff_base_ms == 0 || failed_attempts == 0) return 0;
  const uint32_t shift = std::min<uint32_t>(failed_attempts - 1, 30);
  const uint64_t ceiling =
      std::min<uint64_t>(uint64_t{policy.backoff_base_ms} << shift, policy.backoff_max_ms);
  std::uniform_int_distribution<uint64_t> pick(0, ceiling);
  return static_cast<uint32_t>(pick(rng));
}

bool IsRetryableHttpError(long status, std::string_view s3_code) {
  switch (status) {
    case 408:  // Request Timeout
    case 429:  // Too Many Requests (S3-compatible stores; S3 itself says 503 SlowDown)
    case 500:
    case 502:
    case 503:
    case 504:
      return true;
    case 400:
      return s3_code == "RequestTimeout" || s3_code == "XAmzContentSHA256Mismatch" ||
             s3_code == "BadDigest" || s3_code == "IncompleteBody" || s3_code == "InternalError" ||
             s3_code == "SlowDown";
    default:
      return false;
  }
}

bool IsCredentialsError(long status, std::string_view s3_code) {
  if (status == 403) return true;
  return status == 400 && (s3_code == "ExpiredToken" || s3_code == "InvalidToken" ||
                           s3_code == "TokenRefreshRequired");
}

}  // namespace gulpdb::remote
