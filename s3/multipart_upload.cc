#include "s3/multipart_upload.h"

#include <algorithm>

#include "s3/object_reads.h"
#include "s3/object_writes.h"
#include "s3/request_builder.h"
#include "s3/s3_url.h"
#include "s3/s3_xml.h"
#include "s3/transport.h"

namespace gulpdb::remote::internal {

namespace {

constexpr uint64_t kMinPartSize = uint64_t{5} << 20;
constexpr uint64_t kMaxParts = 10000;
// Has the answer of `r` (CreateMultipartUpload's, CompleteMultipartUpload's:
// small XML documents) go to `*answer`.
void AnswerInto(Request& r, std::string* answer) {
  r.sink.kind = Sink::Kind::kString;
  r.sink.str = answer;
  r.sink.max_size = 1 << 20;
}

}  // namespace

MultipartUpload::MultipartUpload(const RequestBuilder& requests, Transport& transport,
                                 ObjectReads& reads, ObjectWrites& writes, const S3Config& config,
                                 const std::string& key, const std::string& path, uint64_t offset,
                                 uint64_t length, const UploadOptions& options)
    : requests_(requests),
      transport_(transport),
      reads_(reads),
      writes_(writes),
      key_(key),
      path_(path),
      offset_(offset),
      length_(length),
      options_(options) {
  ValidateKey(key_);
  object_ = requests_.Name(key_);
  if (length_ == 0) {
    throw InvalidArgumentError("multipart upload " + object_ + ": no bytes (use Put)");
  }
  part_size_ = options_.part_size > 0 ? options_.part_size : config.part_size;
  if (part_size_ < kMinPartSize) {
    throw InvalidArgumentError("multipart upload " + object_ + ": part size " +
                               std::to_string(part_size_) + " is under S3's minimum of 5 MiB");
  }
  if ((length_ + part_size_ - 1) / part_size_ > kMaxParts) {
    const uint64_t mib = uint64_t{1} << 20;
    part_size_ = ((length_ + kMaxParts - 1) / kMaxParts + mib - 1) / mib * mib;
  }
  fd_ = OpenRegion(path_, offset_, length_);
}

std::string MultipartUpload::Run() {
  Create();
  try {
    const std::string etag = Complete(SendParts());
    // The stored object must be the region, byte count at least (the parts'
    // contents were verified by the store against their SHA-256).
    const ObjectInfo stored = reads_.Head(key_, "");
    if (stored.size != length_) {
      throw IoError("multipart upload " + object_ + " (" + requests_.ObjectUrl(key_) +
                    "): the stored object is " + std::to_string(stored.size) + " bytes, uploaded " +
                    std::to_string(length_));
    }
    return etag.empty() ? stored.etag : etag;
  } catch (...) {
    Abort();
    throw;
  }
}

void MultipartUpload::Create() {
  std::string response;
  Request create;
  requests_.Target(create, "POST", key_, "uploads=");
  create.headers.push_back("Content-Type: application/octet-stream");
  AddWriteHeaders(create, options_.write, /*conditions=*/false, object_);
  AnswerInto(create, &response);
  std::string upload_id;
  create.validate = [&](const Request&, bool* retryable) {
    std::string error;
    if (xml::ParseInitiateMultipartUpload(response, &upload_id, &error)) return std::string();
    *retryable = true;
    return "CreateMultipartUpload: " + error;
  };
  transport_.Run(create);
  upload_id_query_ = "uploadId=" + UriEncode(upload_id, false);
}

std::vector<std::string> MultipartUpload::SendParts() {
  const uint64_t parts = (length_ + part_size_ - 1) / part_size_;
  std::vector<Request> requests(static_cast<size_t>(parts));
  std::vector<Request*> pointers;
  for (uint64_t i = 0; i < parts; ++i) {
    Request& r = requests[static_cast<size_t>(i)];
    requests_.Target(r, "PUT", key_,
                     "partNumber=" + std::to_string(i + 1) + "&" + upload_id_query_);
    r.upload_part = true;
    r.body.kind = Body::Kind::kFile;
    r.body.fd = fd_.get();
    r.body.path = path_;
    r.body.offset = offset_ + i * part_size_;
    r.body.length = std::min(part_size_, length_ - i * part_size_);
    r.validate = [](const Request& done, bool* retryable) {
      if (!done.response.etag.empty()) return std::string();
      *retryable = true;
      return std::string("UploadPart: no ETag in the response");
    };
    pointers.push_back(&r);
  }
  transport_.Run(pointers, options_.max_parallel);
  std::vector<std::string> etags;
  for (const Request& r : requests) etags.push_back(r.response.etag);
  return etags;
}

std::string MultipartUpload::Complete(const std::vector<std::string>& etags) {
  const std::string body = xml::CompleteMultipartUploadBody(etags);
  std::string response;
  Request complete;
  requests_.Target(complete, "POST", key_, upload_id_query_);
  complete.headers.push_back("Content-Type: application/xml");
  AddWriteHeaders(complete, WriteOptions{options_.write.if_absent, options_.write.if_match, {}},
                  /*conditions=*/true, object_);
  complete.body.kind = Body::Kind::kMemory;
  complete.body.data = body;
  AnswerInto(complete, &response);
  std::string etag;
  complete.validate = [&](const Request&, bool* retryable) {
    std::string error;
    xml::ErrorBody eb;
    if (xml::ParseCompleteMultipartUpload(response, &etag, &eb, &error)) return std::string();
    *retryable = eb.code.empty() || eb.code == "InternalError" || eb.code == "SlowDown";
    return "CompleteMultipartUpload: " + error;
  };
  try {
    transport_.Run(complete);
  } catch (const NotFoundError& e) {
    // A completion that succeeded but whose answer was lost is retried
    // into NoSuchUpload; the object then exists with the right size (and
    // this upload's metadata).
    if (complete.attempts >= 2) etag = writes_.StoredByThisWrite(key_, length_, options_.write, "");
    if (etag.empty()) {
      if (!options_.write.if_match.empty() && Mentions(e, "NoSuchKey")) ThrowConditionGone(e, key_);
      throw;
    }
  } catch (const PreconditionFailedError&) {
    if (complete.attempts >= 2 && !options_.write.metadata.empty()) {
      etag = writes_.StoredByThisWrite(key_, length_, options_.write, "");
    }
    if (etag.empty()) throw;
  }
  return etag;
}

void MultipartUpload::Abort() {
  Request abort;
  requests_.Target(abort, "DELETE", key_, upload_id_query_);
  abort.ok_statuses = {204, 200};
  abort.not_found_ok = true;
  try {
    transport_.Run(abort);
  } catch (const std::exception&) {
    // Best effort: the upload's parts expire with the bucket's lifecycle rules.
  }
}

}  // namespace gulpdb::remote::internal
