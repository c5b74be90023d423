#include "s3/s3_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <limits>
#include <mutex>

#include "s3/etag.h"
#include "s3/s3_url.h"
#include "s3/s3_xml.h"
#include "s3/transport.h"
#include "util/file_io.h"
#include "util/sys_error.h"
#include "util/url_text.h"

namespace gulpdb::remote {

using internal::Body;
using internal::Request;
using internal::Sink;

namespace {

constexpr uint64_t kMinPartSize = uint64_t{5} << 20;
constexpr uint64_t kMaxParts = 10000;
constexpr uint64_t kMaxPutSize = uint64_t{5} << 30;

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens `path` for reading and checks it holds [offset, offset + length).
int OpenRegion(const std::string& path, uint64_t offset, uint64_t length) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) util::ThrowErrno("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    util::ThrowErrno("stat", path, err);
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (offset > size || length > size - offset) {
    ::close(fd);
    throw InvalidArgumentError("upload " + path + ": the file is " + std::to_string(size) +
                               " bytes, shorter than the region of " + std::to_string(length) +
                               " bytes from offset " + std::to_string(offset));
  }
  return fd;
}

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

ObjectInfo InfoOf(const internal::ResponseInfo& r) {
  return ObjectInfo{r.object_size, r.etag, r.last_modified, r.server_side_encryption, r.metadata};
}

// Signed requests over plain http to another machine can be read and
// replayed on the way (and a session token travels in clear): say so, once
// per process, on stderr. Loopback (a local MinIO or s3rver) is exempt.
void WarnOnceIfCredentialsGoInClear(const S3Config& config, const Endpoint& ep) {
  if (config.credentials.anonymous() || ep.scheme != "http" || util::IsLoopbackHost(ep.host)) {
    return;
  }
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr,
                 "gulpdb: warning: requests signed with the S3 credentials of key id %s (%s) go "
                 "over plain http to %s, which is not this machine: anyone on the way can read "
                 "them (and a session token), and replay them; use an https:// endpoint\n",
                 config.credentials.access_key_id.c_str(), config.credentials.source.c_str(),
                 ep.HostPort().c_str());
  });
}

bool Printable(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// Adds the header lines of `write` to `r`: its metadata and, with
// `conditions`, its condition. Throws InvalidArgumentError for what cannot
// be sent.
void AddWriteHeaders(Request& r, const WriteOptions& write, bool conditions,
                     const std::string& object) {
  if (conditions) {
    if (write.if_absent && !write.if_match.empty()) {
      throw InvalidArgumentError("PUT " + object +
                                 ": a write is conditional on the object's absence or on its "
                                 "ETag, not both");
    }
    if (write.if_absent) r.headers.push_back("If-None-Match: *");
    if (!write.if_match.empty()) {
      if (!Printable(write.if_match)) {
        throw InvalidArgumentError("PUT " + object + ": the ETag to match is not printable ASCII");
      }
      r.headers.push_back("If-Match: " + write.if_match);
    }
  }
  for (const auto& [name, value] : write.metadata) {
    bool good_name = !name.empty();
    for (char c : name) {
      good_name = good_name && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
    }
    if (!good_name || value.empty() || !Printable(value)) {
      throw InvalidArgumentError("PUT " + object + ": metadata '" + name +
                                 "' needs a name of lowercase letters, digits and '-' and a "
                                 "value of printable ASCII");
    }
    r.headers.push_back("x-amz-meta-" + name + ": " + value);
  }
}

bool Mentions(const std::exception& e, const char* code) {
  return std::string_view(e.what()).find(code) != std::string_view::npos;
}

}  // namespace

S3Client::S3Client(S3Config config, std::string bucket)
    : config_(std::move(config)), bucket_(std::move(bucket)) {
  config_.Validate();
  ValidateBucketName(bucket_);
  const Endpoint ep = ParseEndpoint(config_.EffectiveEndpoint());
  WarnOnceIfCredentialsGoInClear(config_, ep);
  scheme_ = ep.scheme;
  host_port_ = ep.HostPort();
  transport_ = std::make_unique<internal::Transport>(config_);
}

S3Client::~S3Client() = default;

bool S3Client::VirtualHosted() const {
  switch (config_.addressing_style) {
    case AddressingStyle::kPath:
      return false;
    case AddressingStyle::kVirtualHosted:
      return true;
    case AddressingStyle::kAuto:
      break;
  }
  // Dotted names do not match the wildcard certificate of *.s3.amazonaws.com.
  return config_.UsesAwsEndpoint() && bucket_.find('.') == std::string::npos;
}

std::string S3Client::BucketUrl() const {
  if (VirtualHosted()) return scheme_ + "://" + bucket_ + "." + host_port_ + "/";
  return scheme_ + "://" + host_port_ + "/" + bucket_;
}

std::string S3Client::ObjectUrl(std::string_view key) const {
  const std::string path = UriEncode(key, /*keep_slash=*/true);
  if (VirtualHosted()) return scheme_ + "://" + bucket_ + "." + host_port_ + "/" + path;
  return scheme_ + "://" + host_port_ + "/" + bucket_ + "/" + path;
}

void S3Client::Target(Request& r, const char* method, const std::string& key,
                      const std::string& query) const {
  r.method = method;
  r.url = query.empty() ? ObjectUrl(key) : ObjectUrl(key) + "?" + query;
  r.bucket = bucket_;
  r.key = key;
}

ObjectInfo S3Client::Head(const std::string& key, const std::string& if_match) {
  ValidateKey(key);
  Request r;
  Target(r, "HEAD", key);
  if (!if_match.empty()) {
    if (!Printable(if_match)) {
      throw InvalidArgumentError("HEAD " + internal::ObjectName(bucket_, key) +
                                 ": the ETag to match is not printable ASCII");
    }
    r.headers.push_back("If-Match: " + if_match);
  }
  transport_->Run(r);
  if (r.response.content_length < 0) {
    throw IoError("HEAD " + internal::ObjectName(bucket_, key) + " (" + r.url +
                  "): HTTP 200 without Content-Length");
  }
  return InfoOf(r.response);
}

std::optional<ObjectInfo> S3Client::HeadIfExists(const std::string& key) {
  try {
    return Head(key);
  } catch (const NotFoundError&) {
    return std::nullopt;
  }
}

std::string S3Client::Get(const std::string& key, ObjectInfo* info, uint64_t max_size) {
  ValidateKey(key);
  std::string body;
  Request r;
  Target(r, "GET", key);
  r.sink.kind = Sink::Kind::kString;
  r.sink.str = &body;
  r.sink.max_size = max_size;
  transport_->Run(r);
  if (info != nullptr) {
    *info = InfoOf(r.response);
    info->size = body.size();
  }
  return body;
}

ObjectInfo S3Client::GetToFile(const std::string& key, const std::string& path, uint64_t max_size) {
  ValidateKey(key);
  const int raw = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (raw < 0) util::ThrowErrno("create", path, errno);
  Fd fd(raw);
  Request r;
  Target(r, "GET", key);
  r.sink.kind = Sink::Kind::kFile;
  r.sink.fd = fd.get();
  r.sink.path = path;
  r.sink.max_size = max_size;
  try {
    transport_->Run(r);
  } catch (...) {
    util::RemoveFileQuietly(path);
    throw;
  }
  return InfoOf(r.response);
}

void S3Client::GetRanges(const std::vector<RangeRead>& reads) {
  std::vector<Request> requests;
  requests.reserve(reads.size());
  for (const RangeRead& read : reads) {
    ValidateKey(read.key);
    CheckRange(read.key, read.offset, read.length, read.out);
    if (read.length == 0) continue;
    Request& r = requests.emplace_back();
    Target(r, "GET", read.key);
    if (!read.if_match.empty()) {
      if (!Printable(read.if_match)) {
        throw InvalidArgumentError("read " + read.key +
                                   ": the ETag to match is not printable ASCII");
      }
      r.headers.push_back("If-Match: " + read.if_match);
    }
    r.has_range = true;
    r.range_offset = read.offset;
    r.range_length = read.length;
    r.sink.kind = Sink::Kind::kBuffer;
    r.sink.buffer = read.out;
  }
  std::vector<Request*> pointers;
  pointers.reserve(requests.size());
  for (Request& r : requests) pointers.push_back(&r);
  transport_->Run(pointers);
}

std::string S3Client::StoredByThisWrite(const std::string& key, uint64_t length,
                                        const WriteOptions& write, const std::string& md5_hex) {
  const std::optional<ObjectInfo> stored = HeadIfExists(key);
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

std::string S3Client::RunWrite(Request& r, uint64_t length, const WriteOptions& write) {
  try {
    transport_->Run(r);
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
    throw PreconditionFailedError(
        std::string(e.what()) + ": the object this write was conditional on is gone", r.key);
  }
  return r.response.etag;
}

std::string S3Client::Put(const std::string& key, std::string_view data,
                          const WriteOptions& write) {
  ValidateKey(key);
  if (data.size() > kMaxPutSize) {
    throw InvalidArgumentError("PUT " + internal::ObjectName(bucket_, key) + ": " +
                               std::to_string(data.size()) +
                               " bytes is more than one PUT takes (5 GiB)");
  }
  Request r;
  Target(r, "PUT", key);
  r.headers.push_back("Content-Type: application/octet-stream");
  AddWriteHeaders(r, write, /*conditions=*/true, internal::ObjectName(bucket_, key));
  r.body.kind = Body::Kind::kMemory;
  r.body.data = data;
  return RunWrite(r, data.size(), write);
}

std::string S3Client::PutFile(const std::string& key, const std::string& path, uint64_t offset,
                              uint64_t length, const WriteOptions& write) {
  ValidateKey(key);
  if (length > kMaxPutSize) {
    throw InvalidArgumentError("PUT " + internal::ObjectName(bucket_, key) + " from " + path +
                               ": " + std::to_string(length) +
                               " bytes is more than one PUT takes (5 GiB); use UploadFile");
  }
  Fd fd(OpenRegion(path, offset, length));
  Request r;
  Target(r, "PUT", key);
  r.headers.push_back("Content-Type: application/octet-stream");
  AddWriteHeaders(r, write, /*conditions=*/true, internal::ObjectName(bucket_, key));
  r.body.kind = Body::Kind::kFile;
  r.body.fd = fd.get();
  r.body.path = path;
  r.body.offset = offset;
  r.body.length = length;
  return RunWrite(r, length, write);
}

std::string S3Client::UploadFile(const std::string& key, const std::string& path,
                                 const UploadOptions& options) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) util::ThrowErrno("stat", path, errno);
  return UploadFile(key, path, 0, static_cast<uint64_t>(st.st_size), options);
}

std::string S3Client::UploadFile(const std::string& key, const std::string& path, uint64_t offset,
                                 uint64_t length, const UploadOptions& options) {
  const uint64_t threshold = options.multipart_threshold.value_or(config_.multipart_threshold);
  if (length == 0 || length <= threshold) return PutFile(key, path, offset, length, options.write);
  return MultipartUpload(key, path, offset, length, options);
}

std::string S3Client::MultipartUpload(const std::string& key, const std::string& path,
                                      uint64_t offset, uint64_t length,
                                      const UploadOptions& options) {
  ValidateKey(key);
  const std::string object = internal::ObjectName(bucket_, key);
  if (length == 0) {
    throw InvalidArgumentError("multipart upload " + object + ": no bytes (use Put)");
  }
  uint64_t part_size = options.part_size > 0 ? options.part_size : config_.part_size;
  if (part_size < kMinPartSize) {
    throw InvalidArgumentError("multipart upload " + object + ": part size " +
                               std::to_string(part_size) + " is under S3's minimum of 5 MiB");
  }
  if ((length + part_size - 1) / part_size > kMaxParts) {
    const uint64_t mib = uint64_t{1} << 20;
    part_size = ((length + kMaxParts - 1) / kMaxParts + mib - 1) / mib * mib;
  }
  Fd fd(OpenRegion(path, offset, length));
  const std::string url = ObjectUrl(key);

  // Create.
  std::string response;
  Request create;
  Target(create, "POST", key, "uploads=");
  create.headers.push_back("Content-Type: application/octet-stream");
  AddWriteHeaders(create, options.write, /*conditions=*/false, object);
  create.sink.kind = Sink::Kind::kString;
  create.sink.str = &response;
  create.sink.max_size = 1 << 20;
  std::string upload_id;
  create.validate = [&](const Request&, bool* retryable) {
    std::string error;
    if (xml::ParseInitiateMultipartUpload(response, &upload_id, &error)) return std::string();
    *retryable = true;
    return "CreateMultipartUpload: " + error;
  };
  transport_->Run(create);
  const std::string id_query = "uploadId=" + UriEncode(upload_id, false);

  try {
    // Parts, concurrently.
    const uint64_t parts = (length + part_size - 1) / part_size;
    std::vector<Request> requests(static_cast<size_t>(parts));
    std::vector<Request*> pointers;
    for (uint64_t i = 0; i < parts; ++i) {
      Request& r = requests[static_cast<size_t>(i)];
      Target(r, "PUT", key, "partNumber=" + std::to_string(i + 1) + "&" + id_query);
      r.upload_part = true;
      r.body.kind = Body::Kind::kFile;
      r.body.fd = fd.get();
      r.body.path = path;
      r.body.offset = offset + i * part_size;
      r.body.length = std::min(part_size, length - i * part_size);
      r.validate = [](const Request& done, bool* retryable) {
        if (!done.response.etag.empty()) return std::string();
        *retryable = true;
        return std::string("UploadPart: no ETag in the response");
      };
      pointers.push_back(&r);
    }
    transport_->Run(pointers, options.max_parallel);

    // Complete.
    std::vector<std::string> etags;
    for (const Request& r : requests) etags.push_back(r.response.etag);
    const std::string body = xml::CompleteMultipartUploadBody(etags);
    Request complete;
    Target(complete, "POST", key, id_query);
    complete.headers.push_back("Content-Type: application/xml");
    AddWriteHeaders(complete, WriteOptions{options.write.if_absent, options.write.if_match, {}},
                    /*conditions=*/true, object);
    complete.body.kind = Body::Kind::kMemory;
    complete.body.data = body;
    complete.sink.kind = Sink::Kind::kString;
    complete.sink.str = &response;
    complete.sink.max_size = 1 << 20;
    std::string etag;
    complete.validate = [&](const Request&, bool* retryable) {
      std::string error;
      xml::ErrorBody eb;
      if (xml::ParseCompleteMultipartUpload(response, &etag, &eb, &error)) return std::string();
      *retryable = eb.code.empty() || eb.code == "InternalError" || eb.code == "SlowDown";
      return "CompleteMultipartUpload: " + error;
    };
    try {
      transport_->Run(complete);
    } catch (const NotFoundError& e) {
      // A completion that succeeded but whose answer was lost is retried
      // into NoSuchUpload; the object then exists with the right size (and
      // this upload's metadata).
      if (complete.attempts >= 2) etag = StoredByThisWrite(key, length, options.write, "");
      if (etag.empty()) {
        if (!options.write.if_match.empty() && Mentions(e, "NoSuchKey")) {
          throw PreconditionFailedError(
              std::string(e.what()) + ": the object this write was conditional on is gone", key);
        }
        throw;
      }
    } catch (const PreconditionFailedError&) {
      if (complete.attempts >= 2 && !options.write.metadata.empty()) {
        etag = StoredByThisWrite(key, length, options.write, "");
      }
      if (etag.empty()) throw;
    }

    // The stored object must be the region, byte count at least (the parts'
    // contents were verified by the store against their SHA-256).
    const ObjectInfo stored = Head(key);
    if (stored.size != length) {
      throw IoError("multipart upload " + object + " (" + url + "): the stored object is " +
                    std::to_string(stored.size) + " bytes, uploaded " + std::to_string(length));
    }
    return etag.empty() ? stored.etag : etag;
  } catch (...) {
    Request abort;
    Target(abort, "DELETE", key, id_query);
    abort.ok_statuses = {204, 200};
    abort.not_found_ok = true;
    try {
      transport_->Run(abort);
    } catch (const std::exception&) {
      // Best effort: the upload's parts expire with the bucket's lifecycle rules.
    }
    throw;
  }
}

void S3Client::Delete(const std::string& key) { DeleteMany({key}); }

void S3Client::DeleteMany(const std::vector<std::string>& keys) {
  std::vector<Request> requests(keys.size());
  std::vector<Request*> pointers;
  for (size_t i = 0; i < keys.size(); ++i) {
    ValidateKey(keys[i]);
    Request& r = requests[i];
    Target(r, "DELETE", keys[i]);
    r.ok_statuses = {204, 200};
    r.not_found_ok = true;
    pointers.push_back(&r);
  }
  transport_->Run(pointers);
}

ListResult S3Client::List(const std::string& prefix, const ListOptions& options) {
  if (!prefix.empty()) ValidateKey(prefix);
  ListResult result;
  std::string token;
  std::string previous_token;
  while (true) {
    // Query parameters in sorted order: the URL is then SigV4's canonical form.
    std::string query;
    const auto add = [&](const std::string& name, const std::string& value) {
      query += (query.empty() ? "?" : "&") + name + "=" + UriEncode(value, false);
    };
    if (!token.empty()) add("continuation-token", token);
    if (!options.delimiter.empty()) add("delimiter", options.delimiter);
    add("encoding-type", "url");
    add("list-type", "2");
    if (options.page_size > 0) add("max-keys", std::to_string(options.page_size));
    if (!prefix.empty()) add("prefix", prefix);

    std::string body;
    xml::ListPage page;
    Request r;
    r.url = BucketUrl() + query;
    r.bucket = bucket_;
    r.key = "";
    r.sink.kind = Sink::Kind::kString;
    r.sink.str = &body;
    r.sink.max_size = 64 << 20;
    r.validate = [&](const Request&, bool* retryable) {
      std::string error;
      if (xml::ParseListObjectsV2(body, &page, &error)) return std::string();
      *retryable = true;
      return "ListObjectsV2: " + error;
    };
    transport_->Run(r);
    for (ListedObject& o : page.objects) result.objects.push_back(std::move(o));
    for (std::string& p : page.common_prefixes) result.common_prefixes.push_back(std::move(p));
    if (!page.truncated) break;
    if (page.next_continuation_token.empty() || page.next_continuation_token == token ||
        page.next_continuation_token == previous_token) {
      throw IoError("GET " + internal::ObjectName(bucket_, "") + " (" + r.url +
                    "): ListObjectsV2 says the listing is truncated but gives no new "
                    "continuation token");
    }
    previous_token = token;
    token = page.next_continuation_token;
  }
  return result;
}

ClientStats S3Client::stats() const {
  // The transport's counters, member for member: a counter added to one
  // and not the other fails here.
  static_assert(sizeof(ClientStats) == sizeof(internal::TransportStats));
  const internal::TransportStats t = transport_->stats();
  return ClientStats{t.requests,    t.attempts,       t.retries,
                     t.connections, t.bytes_received, t.bytes_sent};
}

}  // namespace gulpdb::remote
