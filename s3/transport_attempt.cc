// An attempt of a Transfer (s3/transfer.h): the easy handle set up for
// it, and libcurl's callbacks as its response arrives (headers, body into
// the request's sink, upload body, progress and stalls).
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
#include "s3/transfer.h"
#include "util/file_io.h"
#include "util/sha256.h"
#include "util/sys_error.h"

namespace gulpdb::remote::internal {

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

}  // namespace gulpdb::remote::internal
