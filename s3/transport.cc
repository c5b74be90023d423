#include "s3/transport.h"

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
#include "util/file_io.h"
#include "util/sha256.h"
#include "util/sys_error.h"
#include "util/url_text.h"

namespace gulpdb::remote::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxErrorBody = 64 << 10;
// Idle easy handles kept for reuse (they hold no connection: the multi
// handles' caches do).
constexpr size_t kMaxIdleEasyHandles = 256;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] {
    const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) throw IoError(std::string("curl_global_init: ") + curl_easy_strerror(rc));
  });
}

// Transport failures worth another attempt: the connection could not be made
// or broke, the server said nothing or something truncated, or a timeout.
bool IsRetryableCurlCode(CURLcode code) {
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
std::exception_ptr MakeError(ErrorKind kind, const std::string& text, const std::string& key = "") {
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

std::string_view TrimView(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && EqualsIgnoreCase(text.substr(0, prefix.size()), prefix);
}

bool ParseU64(std::string_view s, uint64_t* out) {
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
bool ParseContentRange(std::string_view s, uint64_t* first, uint64_t* last, uint64_t* total,
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

std::string RangeText(uint64_t offset, uint64_t length) {
  return std::to_string(offset) + "-" + std::to_string(offset + length - 1);
}

struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

std::string ObjectName(std::string_view bucket, std::string_view key) {
  std::string s = "s3://" + std::string(bucket);
  if (!key.empty()) s += "/" + std::string(key);
  return s;
}

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

Transport::Impl::Impl(const S3Config& c) : config(c), pool_pid(::getpid()) {
  policy.max_attempts = c.max_attempts;
  policy.retry_budget_ms = c.retry_budget_ms;
  policy.backoff_base_ms = c.backoff_base_ms;
  policy.backoff_max_ms = c.backoff_max_ms;
  sigv4 = "aws:amz:" + c.region + ":s3";
}

Transport::Impl::~Impl() {
  if (::getpid() != pool_pid) return;  // a child after fork: the handles are the parent's
  for (CURL* e : easies) curl_easy_cleanup(e);
  for (CURLM* m : multis) curl_multi_cleanup(m);
}

CURLM* Transport::Impl::TakeMulti() {
  {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (::getpid() != pool_pid) {
      // Forked: abandon the parent's handles and connections, untouched.
      multis.clear();
      easies.clear();
      pool_pid = ::getpid();
    }
    if (!multis.empty()) {
      CURLM* m = multis.back();
      multis.pop_back();
      return m;
    }
  }
  CURLM* m = curl_multi_init();
  if (m == nullptr) throw IoError("curl_multi_init failed (out of memory?)");
  curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, static_cast<long>(config.max_connections));
  return m;
}

void Transport::Impl::ReturnMulti(CURLM* m) {
  std::lock_guard<std::mutex> lock(pool_mu);
  if (::getpid() != pool_pid) return;
  multis.push_back(m);
}

CURL* Transport::Impl::TakeEasy() {
  {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (!easies.empty() && ::getpid() == pool_pid) {
      CURL* e = easies.back();
      easies.pop_back();
      return e;
    }
  }
  CURL* e = curl_easy_init();
  if (e == nullptr) throw IoError("curl_easy_init failed (out of memory?)");
  return e;
}

void Transport::Impl::ReturnEasy(CURL* e) {
  curl_easy_reset(e);
  {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (::getpid() != pool_pid) return;
    if (easies.size() < kMaxIdleEasyHandles) {
      easies.push_back(e);
      return;
    }
  }
  curl_easy_cleanup(e);
}

namespace {

enum class Outcome { kSuccess, kRetry, kFail };

// One request's progress through its attempts.
class Transfer {
 public:
  Transfer(Request* req, Transport::Impl* impl) : req_(req), impl_(impl) {}
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
  static size_t OnHeader(char* data, size_t size, size_t n, void* self);
  static size_t OnWrite(char* data, size_t size, size_t n, void* self);
  static size_t OnRead(char* data, size_t size, size_t n, void* self);
  static int OnSeek(void* self, curl_off_t offset, int origin);
  static int OnProgress(void* self, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                        curl_off_t ulnow);

  bool Decide();  // is this response's body the caller's? sets cb_error_ on a bad 2xx
  bool DecideRange();
  bool DecideFile();
  // False (with the callback error set) when the response announces more
  // bytes than the sink's max_size.
  bool WithinMaxSize(int64_t content_length);
  bool Deliver(const char* data, size_t len);
  void SetCallbackError(std::string text, bool retryable, ErrorKind kind);
  Outcome Failed(const std::string& detail, bool retryable, ErrorKind kind);
  std::string Prefix() const;

  Request* req_;
  Transport::Impl* impl_;
  CURL* easy_ = nullptr;
  std::unique_ptr<curl_slist, SlistFree> headers_;
  char errbuf_[CURL_ERROR_SIZE] = {};
  bool started_ = false;
  Clock::time_point first_start_{};
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::time_point next_start_{};

  // The current attempt.
  ResponseInfo resp_;
  std::string content_range_;
  std::string retry_after_;
  bool chunked_ = false;
  bool decided_ = false;
  bool body_is_callers_ = false;
  std::string error_body_;
  uint64_t received_ = 0;
  uint64_t upload_pos_ = 0;
  Clock::time_point last_progress_{};
  curl_off_t last_dlnow_ = 0;
  curl_off_t last_ulnow_ = 0;
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

  std::exception_ptr failure_;
};

std::string Transfer::Prefix() const {
  return req_->method + " " + ObjectName(req_->bucket, req_->key) + " (" + req_->url + "): ";
}

void Transfer::PrepareAttempt() {
  if (!started_) {
    started_ = true;
    first_start_ = Clock::now();
    const S3Config& c = impl_->config;
    if (c.request_timeout_ms > 0) {
      deadline_ = Clock::now() + std::chrono::milliseconds(c.request_timeout_ms);
    }
    Body& b = req_->body;
    if (b.kind != Body::Kind::kNone && b.sha256.empty()) {
      util::PayloadDigests d = b.kind == Body::Kind::kMemory
                                   ? util::DigestsOf(b.data)
                                   : util::DigestsOfFile(b.fd, b.path, b.offset, b.length);
      b.sha256 = std::move(d.sha256_hex);
      b.md5_hex = std::move(d.md5_hex);
      b.md5_base64 = std::move(d.md5_base64);
    }
    impl_->requests.fetch_add(1, std::memory_order_relaxed);
  }
  if (easy_ == nullptr) {
    easy_ = impl_->TakeEasy();
  } else {
    curl_easy_reset(easy_);
  }
  ++req_->attempts;
  impl_->attempts.fetch_add(1, std::memory_order_relaxed);

  resp_ = ResponseInfo();
  content_range_.clear();
  retry_after_.clear();
  chunked_ = decided_ = body_is_callers_ = false;
  error_body_.clear();
  received_ = upload_pos_ = 0;
  last_progress_ = Clock::now();
  last_dlnow_ = last_ulnow_ = 0;
  cb_error_.clear();
  cb_exception_ = nullptr;
  errbuf_[0] = '\0';
  if (req_->sink.kind == Sink::Kind::kString) req_->sink.str->clear();

  const S3Config& c = impl_->config;
  CURL* e = easy_;
  curl_easy_setopt(e, CURLOPT_URL, req_->url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, this);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf_);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(c.connect_timeout_ms));
  // An attempt that moves no byte for the stall time is abandoned by
  // OnProgress. curl's own low-speed check averages over its last five
  // seconds (a burst then a stall of 1 s is noticed after ~7 s), so it is
  // only the backstop here, and the timer that makes curl call OnProgress
  // every second while nothing moves.
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                   static_cast<long>(std::max<uint32_t>(1, (c.stall_timeout_ms + 999) / 1000)));
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &Transfer::OnProgress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, this);
  if (deadline_ != Clock::time_point::max()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<int64_t>(1, left.count())));
  }
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  if (!c.ca_bundle.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, c.ca_bundle.c_str());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Transfer::OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transfer::OnWrite);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, this);
  if (!c.credentials.anonymous()) {
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, impl_->sigv4.c_str());
    curl_easy_setopt(e, CURLOPT_USERNAME, c.credentials.access_key_id.c_str());
    curl_easy_setopt(e, CURLOPT_PASSWORD, c.credentials.secret_access_key.c_str());
  }

  const Body& body = req_->body;
  const uint64_t body_length = body.kind == Body::Kind::kMemory ? body.data.size()
                               : body.kind == Body::Kind::kFile ? body.length
                                                                : 0;
  if (req_->method == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else if (req_->method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (req_->method == "PUT") {
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body_length));
  } else if (req_->method == "POST") {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body_length));
  } else {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req_->method.c_str());
  }
  if (req_->method == "PUT" || req_->method == "POST") {
    curl_easy_setopt(e, CURLOPT_READFUNCTION, &Transfer::OnRead);
    curl_easy_setopt(e, CURLOPT_READDATA, this);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, &Transfer::OnSeek);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, this);
  }

  std::vector<std::string> lines;
  lines.push_back("x-amz-content-sha256: " +
                  (body.kind == Body::Kind::kNone ? std::string(util::kEmptySha256) : body.sha256));
  if (!c.credentials.session_token.empty()) {
    lines.push_back("x-amz-security-token: " + c.credentials.session_token);
  }
  // Large uploads keep curl's "Expect: 100-continue" (a refused PUT then
  // costs no body). It cannot be switched off with an empty "Expect:" line:
  // curl 7.88 would sign the removed header (s3_faults_test catches that).
  if (req_->has_range) {
    lines.push_back("Range: bytes=" + RangeText(req_->range_offset, req_->range_length));
  }
  resuming_ = req_->sink.kind == Sink::Kind::kFile && file_written_ > 0 && file_total_known_ &&
              !file_etag_.empty() && file_written_ < file_total_;
  if (req_->sink.kind == Sink::Kind::kFile && !resuming_ && file_written_ > 0) {
    util::Truncate(req_->sink.fd, 0, req_->sink.path);
    file_written_ = 0;
  }
  if (resuming_) {
    lines.push_back("Range: bytes=" + std::to_string(file_written_) + "-");
    lines.push_back("If-Match: " + file_etag_);
  }
  if (body.kind != Body::Kind::kNone && !body.md5_base64.empty()) {
    lines.push_back("Content-MD5: " + body.md5_base64);
  }
  for (const std::string& h : req_->headers) {
    // After a damaged store: replace only what this request stored.
    if (!req_->replace_damaged.empty() &&
        (StartsWithIgnoreCase(h, "If-Match:") || StartsWithIgnoreCase(h, "If-None-Match:"))) {
      continue;
    }
    lines.push_back(h);
  }
  if (!req_->replace_damaged.empty() && !req_->upload_part) {
    lines.push_back("If-Match: " + req_->replace_damaged);
  }
  curl_slist* list = nullptr;
  for (const std::string& l : lines) {
    curl_slist* next = curl_slist_append(list, l.c_str());
    if (next == nullptr) {
      curl_slist_free_all(list);
      throw IoError(Prefix() + "out of memory building headers");
    }
    list = next;
  }
  headers_.reset(list);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, list);
}

size_t Transfer::OnHeader(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<Transfer*>(self);
  const size_t len = size * n;
  const std::string_view line = TrimView(std::string_view(data, len));
  if (line.substr(0, 5) == "HTTP/") {
    // A new response (a retry by curl on a reused connection, or after a 1xx).
    t->resp_ = ResponseInfo();
    t->content_range_.clear();
    t->retry_after_.clear();
    t->chunked_ = false;
    const size_t sp = line.find(' ');
    uint64_t status = 0;
    if (sp != std::string_view::npos && ParseU64(line.substr(sp + 1, 3), &status)) {
      t->resp_.status = static_cast<long>(status);
    }
    return len;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return len;
  const std::string_view name = TrimView(line.substr(0, colon));
  const std::string_view value = TrimView(line.substr(colon + 1));
  if (EqualsIgnoreCase(name, "content-length")) {
    uint64_t v = 0;
    t->resp_.content_length = ParseU64(value, &v) ? static_cast<int64_t>(v) : -2;  // -2: garbled
  } else if (EqualsIgnoreCase(name, "content-range")) {
    t->content_range_ = std::string(value);
  } else if (EqualsIgnoreCase(name, "etag")) {
    t->resp_.etag = std::string(value);
  } else if (EqualsIgnoreCase(name, "last-modified")) {
    t->resp_.last_modified = std::string(value);
  } else if (EqualsIgnoreCase(name, "x-amz-server-side-encryption")) {
    t->resp_.server_side_encryption = std::string(value);
  } else if (EqualsIgnoreCase(name, "x-amz-server-side-encryption-customer-algorithm")) {
    t->resp_.server_side_encryption = "SSE-C";
  } else if (EqualsIgnoreCase(name, "x-amz-request-id")) {
    t->resp_.request_id = std::string(value);
  } else if (EqualsIgnoreCase(name, "retry-after")) {
    t->retry_after_ = std::string(value);
  } else if (name.size() > 11 && EqualsIgnoreCase(name.substr(0, 11), "x-amz-meta-")) {
    std::string lower(name.substr(11));
    for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    t->resp_.metadata[lower] = std::string(value);
  } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
    t->chunked_ = value.find("chunked") != std::string_view::npos;
  }
  return len;
}

void Transfer::SetCallbackError(std::string text, bool retryable, ErrorKind kind) {
  cb_error_ = std::move(text);
  cb_error_retryable_ = retryable;
  cb_error_kind_ = kind;
}

bool Transfer::DecideRange() {
  const uint64_t off = req_->range_offset;
  const uint64_t len = req_->range_length;
  const std::string asked = "bytes " + RangeText(off, len);
  if (resp_.status == 206) {
    uint64_t first = 0, last = 0, total = 0;
    bool total_known = false;
    if (!ParseContentRange(content_range_, &first, &last, &total, &total_known)) {
      SetCallbackError("HTTP 206 with Content-Range '" + content_range_ + "' for " + asked, true,
                       ErrorKind::kIo);
      return false;
    }
    if (first == off && last == off + len - 1) {
      resp_.object_size = total_known ? total : 0;
      return true;
    }
    if (first == off && last < off + len - 1 && total_known && last + 1 == total) {
      SetCallbackError("the object is " + std::to_string(total) + " bytes long, asked for " + asked,
                       false, ErrorKind::kRange);
      return false;
    }
    SetCallbackError("the server sent bytes " + std::to_string(first) + "-" + std::to_string(last) +
                         " (Content-Range '" + content_range_ + "') for " + asked,
                     true, ErrorKind::kIo);
    return false;
  }
  if (resp_.status == 200) {
    // The server ignored Range. That is only the asked bytes when the object
    // is exactly the range.
    if (off == 0 && resp_.content_length == static_cast<int64_t>(len)) {
      resp_.object_size = len;
      return true;
    }
    if (off == 0 && resp_.content_length >= 0 && resp_.content_length < static_cast<int64_t>(len)) {
      SetCallbackError("the object is " + std::to_string(resp_.content_length) +
                           " bytes long, asked for " + asked,
                       false, ErrorKind::kRange);
      return false;
    }
    SetCallbackError("the server ignored the Range header (HTTP 200, Content-Length " +
                         std::to_string(resp_.content_length) + ") for " + asked,
                     false, ErrorKind::kIo);
    return false;
  }
  return false;  // an error response
}

bool Transfer::DecideFile() {
  if (resuming_ && resp_.status == 206) {
    uint64_t first = 0, last = 0, total = 0;
    bool total_known = false;
    if (!ParseContentRange(content_range_, &first, &last, &total, &total_known) ||
        first != file_written_ || !total_known || total != file_total_ || last + 1 != total) {
      SetCallbackError("resuming at byte " + std::to_string(file_written_) + " of " +
                           std::to_string(file_total_) + ", the server sent Content-Range '" +
                           content_range_ + "'",
                       true, ErrorKind::kIo);
      return false;
    }
    resp_.object_size = total;
    return true;
  }
  if (resp_.status != 200) return false;
  if (!WithinMaxSize(resp_.content_length)) return false;
  if (file_written_ > 0) {
    // The server sent the whole object again: start the file over.
    util::Truncate(req_->sink.fd, 0, req_->sink.path);
    file_written_ = 0;
  }
  file_total_known_ = resp_.content_length >= 0;
  file_total_ = file_total_known_ ? static_cast<uint64_t>(resp_.content_length) : 0;
  file_etag_ = resp_.etag;
  resp_.object_size = file_total_;
  return true;
}

bool Transfer::Decide() {
  if (resp_.content_length == -2) {
    SetCallbackError("a malformed Content-Length header", true, ErrorKind::kIo);
    return false;
  }
  if (req_->has_range) return DecideRange();
  if (req_->sink.kind == Sink::Kind::kFile) return DecideFile();
  const auto& ok = req_->ok_statuses;
  if (std::find(ok.begin(), ok.end(), resp_.status) == ok.end()) return false;
  if (req_->sink.kind == Sink::Kind::kString && !WithinMaxSize(resp_.content_length)) return false;
  if (resp_.content_length >= 0) resp_.object_size = static_cast<uint64_t>(resp_.content_length);
  return true;
}

bool Transfer::WithinMaxSize(int64_t content_length) {
  const uint64_t max = req_->sink.max_size;
  if (content_length < 0 || static_cast<uint64_t>(content_length) <= max) return true;
  SetCallbackError("the object is " + std::to_string(content_length) + " bytes, larger than the " +
                       std::to_string(max) + " bytes allowed for this read",
                   false, ErrorKind::kTooLarge);
  return false;
}

bool Transfer::Deliver(const char* data, size_t len) {
  Sink& s = req_->sink;
  switch (s.kind) {
    case Sink::Kind::kDiscard:
      break;
    case Sink::Kind::kString:
      if (received_ + len > s.max_size) {
        SetCallbackError("the object is larger than the " + std::to_string(s.max_size) +
                             " bytes allowed for this read",
                         false, ErrorKind::kTooLarge);
        return false;
      }
      s.str->append(data, len);
      break;
    case Sink::Kind::kBuffer:
      if (received_ + len > req_->range_length) {
        SetCallbackError("the server sent more than the " + std::to_string(req_->range_length) +
                             " bytes asked for",
                         true, ErrorKind::kIo);
        return false;
      }
      std::memcpy(s.buffer + received_, data, len);
      break;
    case Sink::Kind::kFile: {
      if (file_written_ + len > s.max_size) {
        SetCallbackError("the object is larger than the " + std::to_string(s.max_size) +
                             " bytes allowed for this read",
                         false, ErrorKind::kTooLarge);
        return false;
      }
      struct iovec iov = {const_cast<char*>(data), len};
      util::PwritevFull(s.fd, &iov, 1, file_written_, s.path);
      file_written_ += len;
      break;
    }
  }
  received_ += len;
  return true;
}

size_t Transfer::OnWrite(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<Transfer*>(self);
  const size_t len = size * n;
  try {
    if (!t->decided_) {
      t->decided_ = true;
      t->body_is_callers_ = t->Decide();
      if (!t->cb_error_.empty()) return 0;  // a wrong 2xx: abort the transfer
    }
    if (!t->body_is_callers_) {
      const size_t room = kMaxErrorBody - std::min(kMaxErrorBody, t->error_body_.size());
      t->error_body_.append(data, std::min(room, len));
      return len;
    }
    return t->Deliver(data, len) ? len : 0;
  } catch (...) {
    t->cb_exception_ = std::current_exception();
    return 0;
  }
}

size_t Transfer::OnRead(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<Transfer*>(self);
  const Body& b = t->req_->body;
  const uint64_t total = b.kind == Body::Kind::kMemory ? b.data.size() : b.length;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(size * n, total - t->upload_pos_));
  if (want == 0) return 0;
  if (b.kind == Body::Kind::kMemory) {
    std::memcpy(data, b.data.data() + t->upload_pos_, want);
    t->upload_pos_ += want;
    return want;
  }
  while (true) {
    const ssize_t r = ::pread(b.fd, data, want, static_cast<off_t>(b.offset + t->upload_pos_));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      try {
        if (r < 0) util::ThrowErrno("read", b.path, errno);
        throw IoError("read " + b.path + ": file ends at " +
                      std::to_string(b.offset + t->upload_pos_) + ", before the " +
                      std::to_string(b.length) + " bytes to upload");
      } catch (...) {
        t->cb_exception_ = std::current_exception();
      }
      return CURL_READFUNC_ABORT;
    }
    t->upload_pos_ += static_cast<uint64_t>(r);
    return static_cast<size_t>(r);
  }
}

int Transfer::OnSeek(void* self, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(self);
  const Body& b = t->req_->body;
  const uint64_t total = b.kind == Body::Kind::kMemory ? b.data.size() : b.length;
  if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > total) {
    return CURL_SEEKFUNC_FAIL;
  }
  t->upload_pos_ = static_cast<uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

int Transfer::OnProgress(void* self, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(self);
  const Clock::time_point now = Clock::now();
  if (dlnow != t->last_dlnow_ || ulnow != t->last_ulnow_) {
    t->last_dlnow_ = dlnow;
    t->last_ulnow_ = ulnow;
    t->last_progress_ = now;
    return 0;
  }
  const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - t->last_progress_);
  if (idle.count() < static_cast<int64_t>(t->impl_->config.stall_timeout_ms)) return 0;
  t->SetCallbackError("stalled: no byte moved for " + std::to_string(idle.count()) +
                          " ms (stall timeout " +
                          std::to_string(t->impl_->config.stall_timeout_ms) + " ms)",
                      true, ErrorKind::kIo);
  return 1;  // abort the attempt
}

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

// Returns the multi handle to the pool, with every transfer removed, however
// Run ends.
class MultiLease {
 public:
  explicit MultiLease(Transport::Impl* impl) : impl_(impl), multi_(impl->TakeMulti()) {}
  ~MultiLease() { impl_->ReturnMulti(multi_); }
  MultiLease(const MultiLease&) = delete;
  MultiLease& operator=(const MultiLease&) = delete;
  CURLM* get() const { return multi_; }

 private:
  Transport::Impl* impl_;
  CURLM* multi_;
};

}  // namespace

Transport::Transport(const S3Config& config) {
  GlobalInit();
  config.Validate();
  impl_ = std::make_unique<Impl>(config);
}

Transport::~Transport() = default;

TransportStats Transport::stats() const {
  TransportStats s;
  s.requests = impl_->requests.load();
  s.attempts = impl_->attempts.load();
  s.retries = impl_->retries.load();
  s.connections = impl_->connections.load();
  s.bytes_received = impl_->bytes_received.load();
  s.bytes_sent = impl_->bytes_sent.load();
  return s;
}

void Transport::Run(const std::vector<Request*>& requests, uint32_t max_parallel) {
  if (requests.empty()) return;
  const size_t limit = max_parallel > 0 ? max_parallel : impl_->config.max_connections;
  MultiLease lease(impl_.get());
  CURLM* multi = lease.get();

  std::vector<std::unique_ptr<Transfer>> transfers;
  transfers.reserve(requests.size());
  for (Request* r : requests) transfers.push_back(std::make_unique<Transfer>(r, impl_.get()));
  std::deque<Transfer*> ready;
  for (auto& t : transfers) ready.push_back(t.get());
  std::vector<Transfer*> waiting;  // backing off before a retry
  std::vector<Transfer*> active;
  std::exception_ptr failure;

  const auto remove_active = [&](Transfer* t) {
    curl_multi_remove_handle(multi, t->easy());
    active.erase(std::find(active.begin(), active.end(), t));
  };
  // Whatever happens, no transfer stays in the multi handle.
  struct Cleanup {
    std::function<void()> fn;
    ~Cleanup() { fn(); }
  } cleanup{[&] {
    for (Transfer* t : active) curl_multi_remove_handle(multi, t->easy());
    active.clear();
  }};

  while (!failure) {
    const Clock::time_point now = Clock::now();
    for (auto it = waiting.begin(); it != waiting.end();) {
      if ((*it)->next_start() <= now) {
        ready.push_back(*it);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    while (!failure && active.size() < limit && !ready.empty()) {
      Transfer* t = ready.front();
      ready.pop_front();
      try {
        t->PrepareAttempt();
      } catch (...) {
        failure = std::current_exception();
        break;
      }
      const CURLMcode mc = curl_multi_add_handle(multi, t->easy());
      if (mc != CURLM_OK) {
        throw IoError(std::string("curl_multi_add_handle: ") + curl_multi_strerror(mc));
      }
      active.push_back(t);
    }
    if (failure || (active.empty() && ready.empty() && waiting.empty())) break;

    int running = 0;
    const CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK)
      throw IoError(std::string("curl_multi_perform: ") + curl_multi_strerror(mc));
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode rc = msg->data.result;
      remove_active(t);
      const Outcome outcome = t->Finish(rc);
      t->ReleaseEasy();
      switch (outcome) {
        case Outcome::kSuccess:
          break;
        case Outcome::kRetry:
          waiting.push_back(t);
          break;
        case Outcome::kFail:
          if (!failure) failure = t->failure();
          break;
      }
    }
    if (failure || (active.empty() && ready.empty() && waiting.empty())) break;

    // Sleep until there is socket activity, a curl timer, or a retry is due.
    int wait_ms = 1000;
    if (!ready.empty() && active.size() < limit) wait_ms = 0;
    for (Transfer* t : waiting) {
      const auto until =
          std::chrono::duration_cast<std::chrono::milliseconds>(t->next_start() - Clock::now());
      wait_ms = std::min<int>(wait_ms, static_cast<int>(std::max<int64_t>(0, until.count())));
    }
    if (!active.empty() || wait_ms > 0) {
      const CURLMcode pc = curl_multi_poll(multi, nullptr, 0, wait_ms, nullptr);
      if (pc != CURLM_OK) throw IoError(std::string("curl_multi_poll: ") + curl_multi_strerror(pc));
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace gulpdb::remote::internal
