// The response of a Transfer's attempt as libcurl delivers it
// (ResponseReceiver, s3/transfer.h): headers, the decision whether the body
// is the caller's, and the body into the request's sink.
#include <curl/curl.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "s3/transfer.h"
#include "util/file_io.h"

namespace gulpdb::remote::internal {

void ResponseReceiver::StartResponse() {
  resp_ = ResponseInfo();
  content_range_.clear();
  retry_after_.clear();
  chunked_ = decided_ = body_is_callers_ = false;
  error_body_.clear();
  received_ = 0;
  cb_error_.clear();
  cb_exception_ = nullptr;
  if (req_->sink.kind == Sink::Kind::kString) req_->sink.str->clear();
}

size_t ResponseReceiver::OnHeader(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<ResponseReceiver*>(self);
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

void ResponseReceiver::SetCallbackError(std::string text, bool retryable, ErrorKind kind) {
  cb_error_ = std::move(text);
  cb_error_retryable_ = retryable;
  cb_error_kind_ = kind;
}

bool ResponseReceiver::DecideRange() {
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

bool ResponseReceiver::DecideFile() {
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

bool ResponseReceiver::Decide() {
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

bool ResponseReceiver::WithinMaxSize(int64_t content_length) {
  const uint64_t max = req_->sink.max_size;
  if (content_length < 0 || static_cast<uint64_t>(content_length) <= max) return true;
  SetCallbackError("the object is " + std::to_string(content_length) + " bytes, larger than the " +
                       std::to_string(max) + " bytes allowed for this read",
                   false, ErrorKind::kTooLarge);
  return false;
}

bool ResponseReceiver::Deliver(const char* data, size_t len) {
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

size_t ResponseReceiver::OnWrite(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<ResponseReceiver*>(self);
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

}  // namespace gulpdb::remote::internal
