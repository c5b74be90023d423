// One S3 request's progress through its attempts over libcurl (Transfer),
// the response of an attempt as it arrives (ResponseReceiver), and the state
// a Transport shares between its batches (Transport::Impl: pooled handles,
// the retry policy, counters). Private to the transport's files, one per
// step: the attempt (transport_attempt.cc: the easy handle set up, the
// upload body and progress callbacks), its response (transport_response.cc:
// headers and body as they arrive), its finish (transport_finish.cc: the
// attempt classified as success, retry or failure) and the run of a batch
// (transport.cc). The one header of this
// folder that holds libcurl's types; nothing outside transport*.cc includes
// it.
// Thread safety: a Transfer belongs to the thread running its batch;
// Transport::Impl's pools and counters are safe to share.
#ifndef GULPDB_S3_TRANSFER_H_
#define GULPDB_S3_TRANSFER_H_

#include <curl/curl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "s3/errors.h"
#include "s3/retry_policy.h"
#include "s3/s3_config.h"
#include "s3/transport.h"
#include "util/url_text.h"

namespace gulpdb::remote::internal {

using Clock = std::chrono::steady_clock;

inline constexpr size_t kMaxErrorBody = 64 << 10;
// Idle easy handles kept for reuse (they hold no connection: the multi
// handles' caches do).
inline constexpr size_t kMaxIdleEasyHandles = 256;

// Transport failures worth another attempt: the connection could not be made
// or broke, the server said nothing or something truncated, or a timeout.
inline bool IsRetryableCurlCode(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
      return true;
    default:
      return false;
  }
}

enum class ErrorKind {
  kIo,
  kNotFound,
  kNoSuchBucket,
  kAccessDenied,
  kRange,
  kTooLarge,
  kPrecondition
};

// Every failure of a request is made here; its message shows URLs, redacted.
inline std::exception_ptr MakeError(ErrorKind kind, const std::string& text,
                                    const std::string& key = "") {
  const std::string message = util::RedactUrls(text);
  switch (kind) {
    case ErrorKind::kPrecondition:
      return std::make_exception_ptr(PreconditionFailedError(message, key));
    case ErrorKind::kNotFound:
      return std::make_exception_ptr(NotFoundError(message));
    case ErrorKind::kNoSuchBucket:
      return std::make_exception_ptr(NoSuchBucketError(message));
    case ErrorKind::kAccessDenied:
      return std::make_exception_ptr(AccessDeniedError(message));
    case ErrorKind::kRange:
      return std::make_exception_ptr(RangeNotSatisfiableError(message));
    case ErrorKind::kTooLarge:
      return std::make_exception_ptr(ObjectTooLargeError(message));
    case ErrorKind::kIo:
      break;
  }
  return std::make_exception_ptr(IoError(message));
}

inline std::string_view TrimView(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

inline bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && EqualsIgnoreCase(text.substr(0, prefix.size()), prefix);
}

inline bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// "bytes first-last/total" (total may be "*": *total_known is then false).
inline bool ParseContentRange(std::string_view s, uint64_t* first, uint64_t* last, uint64_t* total,
                              bool* total_known) {
  s = TrimView(s);
  if (s.substr(0, 6) != "bytes ") return false;
  s.remove_prefix(6);
  const size_t dash = s.find('-');
  const size_t slash = s.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return false;
  }
  if (!ParseU64(s.substr(0, dash), first) ||
      !ParseU64(s.substr(dash + 1, slash - dash - 1), last)) {
    return false;
  }
  const std::string_view t = s.substr(slash + 1);
  *total_known = t != "*";
  if (*total_known && !ParseU64(t, total)) return false;
  return *first <= *last && (!*total_known || *last < *total);
}

inline std::string RangeText(uint64_t offset, uint64_t length) {
  return std::to_string(offset) + "-" + std::to_string(offset + length - 1);
}

struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

struct Transport::Impl {
  explicit Impl(const S3Config& c);
  ~Impl();

  CURLM* TakeMulti();
  void ReturnMulti(CURLM* m);
  CURL* TakeEasy();
  void ReturnEasy(CURL* e);

  S3Config config;
  RetryPolicy policy;
  std::string sigv4;  // "aws:amz:<region>:s3"

  std::mutex pool_mu;
  pid_t pool_pid;
  std::vector<CURLM*> multis;
  std::vector<CURL*> easies;

  std::mutex rng_mu;
  std::mt19937_64 rng{std::random_device{}()};

  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> attempts{0};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> connections{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> bytes_sent{0};
};

enum class Outcome { kSuccess, kRetry, kFail };

// The response of one attempt as libcurl delivers it: its status line and
// headers (OnHeader), the decision whether its body is the caller's or an
// error body (Decide: the status, Content-Range and sizes checked), and the
// body into the request's sink (OnWrite, Deliver), with the state a file
// sink keeps across attempts to resume (transport_response.cc). A failure
// found inside a callback is kept (SetCallbackError, or the exception) for
// the attempt's finish to report. Transfer is built on it.
class ResponseReceiver {
 public:
  explicit ResponseReceiver(Request* req) : req_(req) {}
  ResponseReceiver(const ResponseReceiver&) = delete;
  ResponseReceiver& operator=(const ResponseReceiver&) = delete;

  // libcurl's header and write callbacks; `self` is the ResponseReceiver.
  static size_t OnHeader(char* data, size_t size, size_t n, void* self);
  static size_t OnWrite(char* data, size_t size, size_t n, void* self);

 protected:
  ~ResponseReceiver() = default;

  // Forgets the previous attempt's response (a file sink keeps what it wrote).
  void StartResponse();
  bool Decide();  // is this response's body the caller's? sets cb_error_ on a bad 2xx
  void SetCallbackError(std::string text, bool retryable, ErrorKind kind);

  Request* req_;

  // The current attempt.
  ResponseInfo resp_;
  std::string content_range_;
  std::string retry_after_;
  bool chunked_ = false;
  bool decided_ = false;
  bool body_is_callers_ = false;
  std::string error_body_;
  uint64_t received_ = 0;
  std::string cb_error_;
  bool cb_error_retryable_ = false;
  ErrorKind cb_error_kind_ = ErrorKind::kIo;
  std::exception_ptr cb_exception_;

  // A file sink, across attempts.
  uint64_t file_written_ = 0;
  uint64_t file_total_ = 0;
  bool file_total_known_ = false;
  std::string file_etag_;
  bool resuming_ = false;

 private:
  bool DecideRange();
  bool DecideFile();
  // False (with the callback error set) when the response announces more
  // bytes than the sink's max_size.
  bool WithinMaxSize(int64_t content_length);
  bool Deliver(const char* data, size_t len);
};

// One request's progress through its attempts: each attempt's easy handle
// set up, with its headers, signing and upload body (PrepareAttempt,
// transport_attempt.cc), and its end classified as success, retry after a
// backoff, or failure (Finish, transport_finish.cc). The response itself is
// ResponseReceiver's; the run of a batch, Transport::Run's (transport.cc).
class Transfer : private ResponseReceiver {
 public:
  Transfer(Request* req, Transport::Impl* impl) : ResponseReceiver(req), impl_(impl) {}
  ~Transfer() {
    if (easy_ != nullptr) impl_->ReturnEasy(easy_);
  }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  Request* request() const { return req_; }
  CURL* easy() const { return easy_; }
  Clock::time_point next_start() const { return next_start_; }
  std::exception_ptr failure() const { return failure_; }

  // Sets the easy handle up for the next attempt. Throws (a local file that
  // cannot be read, ...) when the request cannot be attempted at all.
  void PrepareAttempt();
  // Classifies the attempt that just ended with `rc`.
  Outcome Finish(CURLcode rc);
  // Gives the easy handle back to the pool between attempts, so that a batch
  // holds no more handles than it has transfers in flight.
  void ReleaseEasy() {
    if (easy_ != nullptr) impl_->ReturnEasy(easy_);
    easy_ = nullptr;
  }

 private:
  static size_t OnRead(char* data, size_t size, size_t n, void* self);
  static int OnSeek(void* self, curl_off_t offset, int origin);
  static int OnProgress(void* self, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                        curl_off_t ulnow);

  Outcome Failed(const std::string& detail, bool retryable, ErrorKind kind);
  std::string Prefix() const;

  Transport::Impl* impl_;
  CURL* easy_ = nullptr;
  std::unique_ptr<curl_slist, SlistFree> headers_;
  char errbuf_[CURL_ERROR_SIZE] = {};
  bool started_ = false;
  Clock::time_point first_start_{};
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::time_point next_start_{};

  // The current attempt's upload and progress.
  uint64_t upload_pos_ = 0;
  Clock::time_point last_progress_{};
  curl_off_t last_dlnow_ = 0;
  curl_off_t last_ulnow_ = 0;

  std::exception_ptr failure_;
};

}  // namespace gulpdb::remote::internal

#endif  // GULPDB_S3_TRANSFER_H_
