#include "s3/retry_policy.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace gulpdb::remote {

uint32_t BackoffDelayMs(const RetryPolicy& policy, uint32_t failed_attempts, std::mt19937_64& rng) {
  if (policy.backoff_base_ms == 0 || failed_attempts == 0) return 0;
  const uint32_t shift = std::min<uint32_t>(failed_attempts - 1, 30);
  const uint64_t ceiling =
      std::min<uint64_t>(uint64_t{policy.backoff_base_ms} << shift, policy.backoff_max_ms);
  std::uniform_int_distribution<uint64_t> pick(0, ceiling);
  return static_cast<uint32_t>(pick(rng));
}

bool MayRetry(const RetryPolicy& policy, uint32_t attempts, uint64_t elapsed_ms) {
  return attempts < policy.max_attempts || elapsed_ms < policy.retry_budget_ms;
}

uint32_t RetryAfterCapMs(const RetryPolicy& policy) {
  return std::max(policy.retry_budget_ms, policy.backoff_max_ms);
}

std::optional<uint64_t> ParseRetryAfterMs(std::string_view value,
                                          std::chrono::system_clock::time_point now) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (value.find_first_not_of("0123456789") == std::string_view::npos) {
    if (value.size() > 9) return uint64_t{999999999} * 1000;  // absurd, capped by the caller
    uint64_t seconds = 0;
    for (char c : value) seconds = seconds * 10 + static_cast<uint64_t>(c - '0');
    return seconds * 1000;
  }
  // IMF-fixdate, as HTTP/1.1 sends dates.
  const std::string text(value);
  struct tm tm;
  std::memset(&tm, 0, sizeof(tm));
  const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const time_t when = ::timegm(&tm);
  if (when == static_cast<time_t>(-1)) return std::nullopt;
  const auto at = std::chrono::system_clock::from_time_t(when);
  if (at <= now) return 0;
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(at - now).count());
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
