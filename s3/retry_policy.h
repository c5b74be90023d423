// When to retry a failed request and how long to wait first. Internal to
// s3/; transport.cc applies it.
//
// Retried: connection failures and resets, timeouts, truncated or malformed
// responses, HTTP 500/502/503/504 (503 SlowDown included), 408 and 429, and
// the 400s S3 uses for transient trouble (RequestTimeout, a payload whose
// hash did not match what arrived). Never retried: 403 (credentials), 404,
// 416 and every other 4xx, which would fail the same way again.
//
// Backoff is exponential with full jitter: before attempt n+1 the request
// waits a uniformly random time in [0, min(max, base * 2^(n-1))] ms, which
// spreads the retries of many clients hit by the same outage. A 503 or 429
// carrying Retry-After (seconds, or an HTTP date) waits at least that long,
// capped at RetryAfterCapMs.
//
// How many attempts: a retryable failure is retried while the request has
// made fewer than max_attempts attempts, or while less than retry_budget_ms
// has passed since its first attempt began, whichever allows more; so a
// server that is away for a few seconds (a restart) is ridden out, however
// fast each attempt fails. The request deadline (S3Config::
// request_timeout_ms) bounds everything.
//
// Thread safety: pure functions; the random generator is the caller's.
#ifndef GULPDB_S3_RETRY_POLICY_H_
#define GULPDB_S3_RETRY_POLICY_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

namespace gulpdb::remote {

struct RetryPolicy {
  uint32_t max_attempts = 5;
  uint32_t retry_budget_ms = 10000;
  uint32_t backoff_base_ms = 100;
  uint32_t backoff_max_ms = 5000;
};

// The wait before the next attempt after `failed_attempts` (>= 1) failures.
uint32_t BackoffDelayMs(const RetryPolicy& policy, uint32_t failed_attempts, std::mt19937_64& rng);

// True when a request that has made `attempts` attempts, the first begun
// `elapsed_ms` ago, may make another after a retryable failure.
bool MayRetry(const RetryPolicy& policy, uint32_t attempts, uint64_t elapsed_ms);

// The longest Retry-After honoured: the retry budget, or the backoff cap if
// that is longer.
uint32_t RetryAfterCapMs(const RetryPolicy& policy);

// The wait a Retry-After header value asks for, in milliseconds: whole
// seconds ("120"), or an HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT", IMF
// fixdate) taken against `now` (0 when it has passed). nullopt when the
// value is neither.
std::optional<uint64_t> ParseRetryAfterMs(std::string_view value,
                                          std::chrono::system_clock::time_point now);

// True if an HTTP error response (status >= 300) with this S3 error code
// (possibly empty) is worth another attempt.
bool IsRetryableHttpError(long status, std::string_view s3_code);

// True if the response means the credentials or the signature were refused
// (403, and the 400s S3 sends for expired or malformed tokens).
bool IsCredentialsError(long status, std::string_view s3_code);

}  // namespace gulpdb::remote

#endif  // GULPDB_S3_RETRY_POLICY_H_
