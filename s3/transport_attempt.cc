// An attempt of a Transfer (s3/transfer.h): the easy handle set up for
// it, and libcurl's callbacks for its upload body and its progress (stalls).
// Its response is transport_response.cc's.
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

  StartResponse();
  upload_pos_ = 0;
  last_progress_ = Clock::now();
  last_dlnow_ = last_ulnow_ = 0;
  errbuf_[0] = '\0';

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
  ResponseReceiver* receiver = this;
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &ResponseReceiver::OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, receiver);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &ResponseReceiver::OnWrite);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, receiver);
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
