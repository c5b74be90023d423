#include "s3/s3_client.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <mutex>

#include "s3/multipart_upload.h"
#include "s3/object_listing.h"
#include "s3/object_reads.h"
#include "s3/object_writes.h"
#include "s3/request_builder.h"
#include "s3/s3_url.h"
#include "s3/transport.h"
#include "util/sys_error.h"
#include "util/url_text.h"

namespace gulpdb::remote {

using internal::Request;

namespace {

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

}  // namespace

S3Client::S3Client(S3Config config, std::string bucket)
    : config_(std::move(config)), bucket_(std::move(bucket)) {
  config_.Validate();
  ValidateBucketName(bucket_);
  const Endpoint ep = ParseEndpoint(config_.EffectiveEndpoint());
  WarnOnceIfCredentialsGoInClear(config_, ep);
  requests_ = std::make_unique<const internal::RequestBuilder>(config_, bucket_, ep);
  transport_ = std::make_unique<internal::Transport>(config_);
  reads_ = std::make_unique<internal::ObjectReads>(*requests_, *transport_);
  writes_ = std::make_unique<internal::ObjectWrites>(*requests_, *transport_, *reads_);
}

S3Client::~S3Client() = default;

std::string S3Client::ObjectUrl(std::string_view key) const { return requests_->ObjectUrl(key); }

ObjectInfo S3Client::Head(const std::string& key, const std::string& if_match) {
  return reads_->Head(key, if_match);
}

std::optional<ObjectInfo> S3Client::HeadIfExists(const std::string& key) {
  return reads_->HeadIfExists(key);
}

std::string S3Client::Get(const std::string& key, ObjectInfo* info, uint64_t max_size) {
  return reads_->Get(key, info, max_size);
}

ObjectInfo S3Client::GetToFile(const std::string& key, const std::string& path, uint64_t max_size) {
  return reads_->GetToFile(key, path, max_size);
}

void S3Client::GetRanges(const std::vector<RangeRead>& reads) { reads_->GetRanges(reads); }

std::string S3Client::Put(const std::string& key, std::string_view data,
                          const WriteOptions& write) {
  return writes_->Put(key, data, write);
}

std::string S3Client::PutFile(const std::string& key, const std::string& path, uint64_t offset,
                              uint64_t length, const WriteOptions& write) {
  return writes_->PutFile(key, path, offset, length, write);
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
  return internal::MultipartUpload(*requests_, *transport_, *reads_, *writes_, config_, key, path,
                                   offset, length, options)
      .Run();
}

void S3Client::Delete(const std::string& key) { DeleteMany({key}); }

void S3Client::DeleteMany(const std::vector<std::string>& keys) {
  std::vector<Request> requests(keys.size());
  std::vector<Request*> pointers;
  for (size_t i = 0; i < keys.size(); ++i) {
    ValidateKey(keys[i]);
    Request& r = requests[i];
    requests_->Target(r, "DELETE", keys[i]);
    r.ok_statuses = {204, 200};
    r.not_found_ok = true;
    pointers.push_back(&r);
  }
  transport_->Run(pointers);
}

ListResult S3Client::List(const std::string& prefix, const ListOptions& options) {
  return internal::ObjectListing(*requests_, *transport_, prefix, options).Run();
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
