#include "s3/object_writes.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "s3/etag.h"
#include "s3/object_reads.h"
#include "s3/request_builder.h"
#include "s3/s3_url.h"
#include "s3/transport.h"
#include "util/sys_error.h"

namespace gulpdb::remote::internal {

namespace {

constexpr uint64_t kMaxPutSize = uint64_t{5} << 30;

}  // namespace

util::UniqueFd OpenRegion(const std::string& path, uint64_t offset, uint64_t length) {
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) util::ThrowErrno("open", path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) util::ThrowErrno("stat", path, errno);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (offset > size || length > size - offset) {
    throw InvalidArgumentError("upload " + path + ": the file is " + std::to_string(size) +
                               " bytes, shorter than the region of " + std::to_string(length) +
                               " bytes from offset " + std::to_string(offset));
  }
  return fd;
}

bool Mentions(const std::exception& e, const char* code) {
  return std::string_view(e.what()).find(code) != std::string_view::npos;
}

void ThrowConditionGone(const NotFoundError& e, const std::string& key) {
  throw PreconditionFailedError(
      std::string(e.what()) + ": the object this write was conditional on is gone", key);
}

std::string ObjectWrites::StoredByThisWrite(const std::string& key, uint64_t length,
                                            const WriteOptions& write, const std::string& md5_hex) {
  const std::optional<ObjectInfo> stored = reads_.HeadIfExists(key);
  if (!stored || stored->size != length || stored->etag.empty()) return "";
  // Our metadata on other bytes: an attempt the store kept damaged.
  if (!md5_hex.empty() && stored->server_side_encryption.empty() && IsMd5Etag(stored->etag) &&
      stored->etag != "\"" + md5_hex + "\"") {
    return "";
  }
  for (const auto& [name, value] : write.metadata) {
    const auto it = stored->metadata.find(name);
    if (it == stored->metadata.end() || it->second != value) return "";
  }
  return stored->etag;
}

std::string ObjectWrites::Run(Request& r, uint64_t length, const WriteOptions& write) {
  try {
    transport_.Run(r);
  } catch (const PreconditionFailedError&) {
    // An earlier attempt may have been stored and its answer lost; only a
    // write with metadata can tell its own object from another's.
    if (r.attempts >= 2 && !write.metadata.empty()) {
      const std::string etag = StoredByThisWrite(r.key, length, write, r.body.md5_hex);
      if (!etag.empty()) return etag;
    }
    throw;
  } catch (const NotFoundError& e) {
    if (write.if_match.empty() || Mentions(e, "NoSuchBucket")) throw;
    ThrowConditionGone(e, r.key);
  }
  return r.response.etag;
}

std::string ObjectWrites::Put(const std::string& key, std::string_view data,
                              const WriteOptions& write) {
  ValidateKey(key);
  if (data.size() > kMaxPutSize) {
    throw InvalidArgumentError("PUT " + requests_.Name(key) + ": " + std::to_string(data.size()) +
                               " bytes is more than one PUT takes (5 GiB)");
  }
  Request r;
  requests_.Target(r, "PUT", key);
  r.headers.push_back("Content-Type: application/octet-stream");
  AddWriteHeaders(r, write, /*conditions=*/true, requests_.Name(key));
  r.body.kind = Body::Kind::kMemory;
  r.body.data = data;
  return Run(r, data.size(), write);
}

std::string ObjectWrites::PutFile(const std::string& key, const std::string& path, uint64_t offset,
                                  uint64_t length, const WriteOptions& write) {
  ValidateKey(key);
  if (length > kMaxPutSize) {
    throw InvalidArgumentError("PUT " + requests_.Name(key) + " from " + path + ": " +
                               std::to_string(length) +
                               " bytes is more than one PUT takes (5 GiB); use UploadFile");
  }
  const util::UniqueFd fd = OpenRegion(path, offset, length);
  Request r;
  requests_.Target(r, "PUT", key);
  r.headers.push_back("Content-Type: application/octet-stream");
  AddWriteHeaders(r, write, /*conditions=*/true, requests_.Name(key));
  r.body.kind = Body::Kind::kFile;
  r.body.fd = fd.get();
  r.body.path = path;
  r.body.offset = offset;
  r.body.length = length;
  return Run(r, length, write);
}

}  // namespace gulpdb::remote::internal
