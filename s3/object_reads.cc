#include "s3/object_reads.h"

#include <fcntl.h>

#include <cerrno>
#include <limits>

#include "s3/request_builder.h"
#include "s3/s3_url.h"
#include "s3/transport.h"
#include "util/file_io.h"
#include "util/sys_error.h"

namespace gulpdb::remote::internal {

namespace {

void CheckRange(const std::string& key, uint64_t offset, uint64_t length, const char* out) {
  if (length > 0 && out == nullptr) {
    throw InvalidArgumentError("read " + key + ": null output buffer for " +
                               std::to_string(length) + " bytes");
  }
  if (offset > std::numeric_limits<uint64_t>::max() - length) {
    throw InvalidArgumentError("read " + key + ": range from " + std::to_string(offset) + " of " +
                               std::to_string(length) + " bytes overflows");
  }
}

ObjectInfo InfoOf(const ResponseInfo& r) {
  return ObjectInfo{r.object_size, r.etag, r.last_modified, r.server_side_encryption, r.metadata};
}

}  // namespace

ObjectInfo ObjectReads::Head(const std::string& key, const std::string& if_match) {
  ValidateKey(key);
  Request r;
  requests_.Target(r, "HEAD", key);
  if (!if_match.empty()) AddIfMatch(r, if_match, "HEAD", requests_.Name(key));
  transport_.Run(r);
  if (r.response.content_length < 0) {
    throw IoError("HEAD " + requests_.Name(key) + " (" + r.url +
                  "): HTTP 200 without Content-Length");
  }
  return InfoOf(r.response);
}

std::optional<ObjectInfo> ObjectReads::HeadIfExists(const std::string& key) {
  try {
    return Head(key, "");
  } catch (const NotFoundError&) {
    return std::nullopt;
  }
}

std::string ObjectReads::Get(const std::string& key, ObjectInfo* info, uint64_t max_size) {
  ValidateKey(key);
  std::string body;
  Request r;
  requests_.Target(r, "GET", key);
  r.sink.kind = Sink::Kind::kString;
  r.sink.str = &body;
  r.sink.max_size = max_size;
  transport_.Run(r);
  if (info != nullptr) {
    *info = InfoOf(r.response);
    info->size = body.size();
  }
  return body;
}

ObjectInfo ObjectReads::GetToFile(const std::string& key, const std::string& path,
                                  uint64_t max_size) {
  ValidateKey(key);
  const int raw = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (raw < 0) util::ThrowErrno("create", path, errno);
  const util::UniqueFd fd(raw);
  Request r;
  requests_.Target(r, "GET", key);
  r.sink.kind = Sink::Kind::kFile;
  r.sink.fd = fd.get();
  r.sink.path = path;
  r.sink.max_size = max_size;
  try {
    transport_.Run(r);
  } catch (...) {
    util::RemoveFileQuietly(path);
    throw;
  }
  return InfoOf(r.response);
}

void ObjectReads::GetRanges(const std::vector<RangeRead>& reads) {
  std::vector<Request> requests;
  requests.reserve(reads.size());
  for (const RangeRead& read : reads) {
    ValidateKey(read.key);
    CheckRange(read.key, read.offset, read.length, read.out);
    if (read.length == 0) continue;
    Request& r = requests.emplace_back();
    requests_.Target(r, "GET", read.key);
    if (!read.if_match.empty()) AddIfMatch(r, read.if_match, "read", read.key);
    r.has_range = true;
    r.range_offset = read.offset;
    r.range_length = read.length;
    r.sink.kind = Sink::Kind::kBuffer;
    r.sink.buffer = read.out;
  }
  std::vector<Request*> pointers;
  pointers.reserve(requests.size());
  for (Request& r : requests) pointers.push_back(&r);
  transport_.Run(pointers);
}

}  // namespace gulpdb::remote::internal
