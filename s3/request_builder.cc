#include "s3/request_builder.h"

#include "s3/errors.h"
#include "s3/s3_client.h"
#include "s3/s3_url.h"

namespace gulpdb::remote::internal {

namespace {

bool Printable(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

bool VirtualHosted(const S3Config& config, const std::string& bucket) {
  switch (config.addressing_style) {
    case AddressingStyle::kPath:
      return false;
    case AddressingStyle::kVirtualHosted:
      return true;
    case AddressingStyle::kAuto:
      break;
  }
  // Dotted names do not match the wildcard certificate of *.s3.amazonaws.com.
  return config.UsesAwsEndpoint() && bucket.find('.') == std::string::npos;
}

}  // namespace

RequestBuilder::RequestBuilder(const S3Config& config, std::string bucket, const Endpoint& endpoint)
    : bucket_(std::move(bucket)),
      scheme_(endpoint.scheme),
      host_port_(endpoint.HostPort()),
      virtual_hosted_(VirtualHosted(config, bucket_)) {}

std::string RequestBuilder::BucketUrl() const {
  if (virtual_hosted_) return scheme_ + "://" + bucket_ + "." + host_port_ + "/";
  return scheme_ + "://" + host_port_ + "/" + bucket_;
}

std::string RequestBuilder::ObjectUrl(std::string_view key) const {
  const std::string path = UriEncode(key, /*keep_slash=*/true);
  if (virtual_hosted_) return scheme_ + "://" + bucket_ + "." + host_port_ + "/" + path;
  return scheme_ + "://" + host_port_ + "/" + bucket_ + "/" + path;
}

void RequestBuilder::Target(Request& r, const char* method, const std::string& key,
                            const std::string& query) const {
  r.method = method;
  r.url = query.empty() ? ObjectUrl(key) : ObjectUrl(key) + "?" + query;
  r.bucket = bucket_;
  r.key = key;
}

void AddIfMatch(Request& r, const std::string& etag, const char* operation,
                std::string_view object) {
  if (!Printable(etag)) {
    throw InvalidArgumentError(std::string(operation) + " " + std::string(object) +
                               ": the ETag to match is not printable ASCII");
  }
  r.headers.push_back("If-Match: " + etag);
}

void AddWriteHeaders(Request& r, const WriteOptions& write, bool conditions,
                     const std::string& object) {
  if (conditions) {
    if (write.if_absent && !write.if_match.empty()) {
      throw InvalidArgumentError("PUT " + object +
                                 ": a write is conditional on the object's absence or on its "
                                 "ETag, not both");
    }
    if (write.if_absent) r.headers.push_back("If-None-Match: *");
    if (!write.if_match.empty()) AddIfMatch(r, write.if_match, "PUT", object);
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

}  // namespace gulpdb::remote::internal
