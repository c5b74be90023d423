// The end of a Transfer's attempt (s3/transfer.h): the attempt
// classified as success, retry (after its backoff) or failure, with the
// error that names the request.
#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <random>

#include "s3/errors.h"
#include "s3/etag.h"
#include "s3/retry_policy.h"
#include "s3/s3_xml.h"
#include "s3/transfer.h"
#include "util/sha256.h"

namespace gulpdb::remote::internal {

Outcome Transfer::Failed(const std::string& detail, bool retryable, ErrorKind kind) {
  const uint32_t attempts = req_->attempts;
  const Clock::time_point now = Clock::now();
  const auto elapsed_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - first_start_).count());
  const auto suffix = [&](const std::string& extra) {
    std::string over;  // when the retry budget allowed more than max_attempts
    if (attempts > impl_->policy.max_attempts) {
      over = " over " + std::to_string(elapsed_ms / 1000) + "." +
             std::to_string(elapsed_ms % 1000 / 100) + " s, retry budget " +
             std::to_string(impl_->policy.retry_budget_ms) + " ms";
    }
    return " (" + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") + over +
           extra + ")";
  };
  if (retryable && MayRetry(impl_->policy, attempts, elapsed_ms)) {
    uint64_t delay_ms;
    {
      std::lock_guard<std::mutex> lock(impl_->rng_mu);
      delay_ms = BackoffDelayMs(impl_->policy, attempts, impl_->rng);
    }
    // A server that says when to come back (503 SlowDown, 429) is believed,
    // up to RetryAfterCapMs.
    if ((resp_.status == 503 || resp_.status == 429) && !retry_after_.empty()) {
      if (const std::optional<uint64_t> asked =
              ParseRetryAfterMs(retry_after_, std::chrono::system_clock::now())) {
        delay_ms = std::max<uint64_t>(delay_ms,
                                      std::min<uint64_t>(*asked, RetryAfterCapMs(impl_->policy)));
      }
    }
    next_start_ = now + std::chrono::milliseconds(delay_ms);
    if (next_start_ < deadline_) {
      impl_->retries.fetch_add(1, std::memory_order_relaxed);
      return Outcome::kRetry;
    }
    failure_ =
        MakeError(kind,
                  Prefix() + detail +
                      suffix("; request deadline of " +
                             std::to_string(impl_->config.request_timeout_ms) + " ms reached"),
                  req_->key);
    return Outcome::kFail;
  }
  failure_ = MakeError(kind, Prefix() + detail + suffix(""), req_->key);
  return Outcome::kFail;
}

Outcome Transfer::Finish(CURLcode rc) {
  curl_off_t value = 0;
  long connects = 0;
  if (curl_easy_getinfo(easy_, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0) {
    impl_->connections.fetch_add(static_cast<uint64_t>(connects), std::memory_order_relaxed);
  }
  if (curl_easy_getinfo(easy_, CURLINFO_SIZE_DOWNLOAD_T, &value) == CURLE_OK && value > 0) {
    impl_->bytes_received.fetch_add(static_cast<uint64_t>(value), std::memory_order_relaxed);
  }
  if (curl_easy_getinfo(easy_, CURLINFO_SIZE_UPLOAD_T, &value) == CURLE_OK && value > 0) {
    impl_->bytes_sent.fetch_add(static_cast<uint64_t>(value), std::memory_order_relaxed);
  }

  if (cb_exception_) {
    failure_ = cb_exception_;
    return Outcome::kFail;
  }
  if (rc == CURLE_OK && !decided_) {
    decided_ = true;
    try {
      body_is_callers_ = Decide();
    } catch (...) {
      failure_ = std::current_exception();
      return Outcome::kFail;
    }
  }
  if (!cb_error_.empty()) return Failed(cb_error_, cb_error_retryable_, cb_error_kind_);
  if (rc != CURLE_OK) {
    std::string detail = curl_easy_strerror(rc);
    if (errbuf_[0] != '\0') detail += std::string(": ") + errbuf_;
    if (resp_.status != 0) detail += " (after HTTP " + std::to_string(resp_.status) + ")";
    return Failed(detail, IsRetryableCurlCode(rc), ErrorKind::kIo);
  }
  req_->response = resp_;
  const long status = resp_.status;

  if (body_is_callers_) {
    const bool has_body = req_->method != "HEAD";
    if (has_body && resp_.content_length < 0 && !chunked_ && req_->method == "GET") {
      return Failed("HTTP " + std::to_string(status) +
                        " without Content-Length: cannot tell a complete body from a cut one",
                    false, ErrorKind::kIo);
    }
    if (has_body && resp_.content_length >= 0 &&
        received_ != static_cast<uint64_t>(resp_.content_length)) {
      return Failed("received " + std::to_string(received_) + " of the " +
                        std::to_string(resp_.content_length) + " bytes of the body",
                    true, ErrorKind::kIo);
    }
    if (req_->has_range && received_ != req_->range_length) {
      return Failed("received " + std::to_string(received_) + " of the " +
                        std::to_string(req_->range_length) + " bytes asked for",
                    true, ErrorKind::kIo);
    }
    if (req_->sink.kind == Sink::Kind::kFile && file_total_known_ && file_written_ != file_total_) {
      return Failed("wrote " + std::to_string(file_written_) + " of " +
                        std::to_string(file_total_) + " bytes",
                    true, ErrorKind::kIo);
    }
    if (req_->sink.kind == Sink::Kind::kFile) {
      req_->response.object_size = file_written_;
      req_->response.etag = file_etag_.empty() ? resp_.etag : file_etag_;
    }
    if (req_->method == "PUT" && req_->body.kind != Body::Kind::kNone &&
        resp_.server_side_encryption.empty() && IsMd5Etag(resp_.etag) &&
        resp_.etag != "\"" + req_->body.md5_hex + "\"") {
      req_->replace_damaged = resp_.etag;
      return Failed("the store answered ETag " + resp_.etag + ", which is not the MD5 \"" +
                        req_->body.md5_hex +
                        "\" of the bytes sent: it stored bytes that changed on the way (and "
                        "checked neither Content-MD5 nor the payload hash)",
                    true, ErrorKind::kIo);
    }
    if (req_->validate) {
      bool retryable = false;
      const std::string problem = req_->validate(*req_, &retryable);
      if (!problem.empty()) return Failed(problem, retryable, ErrorKind::kIo);
    }
    return Outcome::kSuccess;
  }

  // An error response.
  xml::ErrorBody eb;
  const bool parsed = xml::ParseError(error_body_, &eb);
  std::string detail = "HTTP " + std::to_string(status);
  if (parsed) {
    detail += " " + eb.code;
    if (!eb.message.empty()) detail += ": " + eb.message;
  }
  if (!resp_.request_id.empty()) detail += " [request id " + resp_.request_id + "]";
  if (status == 404) {
    if (req_->not_found_ok && eb.code != "NoSuchBucket") return Outcome::kSuccess;
    return Failed(detail, false,
                  eb.code == "NoSuchBucket" ? ErrorKind::kNoSuchBucket : ErrorKind::kNotFound);
  }
  if (IsCredentialsError(status, eb.code)) {
    const Credentials& cr = impl_->config.credentials;
    return Failed("access denied to bucket '" + req_->bucket + "': " + detail + "; credentials: " +
                      (cr.anonymous() ? std::string("none (anonymous request)")
                                      : "key id " + cr.access_key_id + " from " + cr.source) +
                      "; check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_PROFILE",
                  false, ErrorKind::kAccessDenied);
  }
  if (status == 416) return Failed(detail, false, ErrorKind::kRange);
  if (status == 412 && resuming_) {
    return Failed(detail + ": the object changed while it was being downloaded", false,
                  ErrorKind::kIo);
  }
  if (status == 412 || (status == 409 && eb.code == "ConditionalRequestConflict")) {
    return Failed(detail, false, ErrorKind::kPrecondition);
  }
  if (status == 301 || status == 307 || eb.code == "PermanentRedirect" ||
      (eb.code == "AuthorizationHeaderMalformed" && !eb.region.empty())) {
    detail += "; the bucket is not served by this endpoint and region (" +
              impl_->config.EffectiveEndpoint() + ", " + impl_->config.region + ")";
    if (!eb.region.empty()) detail += ": it is in region " + eb.region;
    if (!eb.endpoint.empty()) detail += ": use endpoint " + eb.endpoint;
    detail += "; set AWS_REGION or AWS_ENDPOINT_URL";
    return Failed(detail, false, ErrorKind::kIo);
  }
  return Failed(detail, IsRetryableHttpError(status, eb.code), ErrorKind::kIo);
}

}  // namespace gulpdb::remote::internal
