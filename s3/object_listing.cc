#include "s3/object_listing.h"

#include "s3/request_builder.h"
#include "s3/s3_url.h"
#include "s3/s3_xml.h"
#include "s3/transport.h"

namespace gulpdb::remote::internal {

ObjectListing::ObjectListing(const RequestBuilder& requests, Transport& transport,
                             const std::string& prefix, const ListOptions& options)
    : requests_(requests), transport_(transport), prefix_(prefix), options_(options) {
  if (!prefix_.empty()) ValidateKey(prefix_);
}

std::string ObjectListing::PageQuery() const {
  std::string query;
  const auto add = [&](const std::string& name, const std::string& value) {
    query += (query.empty() ? "?" : "&") + name + "=" + UriEncode(value, false);
  };
  if (!token_.empty()) add("continuation-token", token_);
  if (!options_.delimiter.empty()) add("delimiter", options_.delimiter);
  add("encoding-type", "url");
  add("list-type", "2");
  if (options_.page_size > 0) add("max-keys", std::to_string(options_.page_size));
  if (!prefix_.empty()) add("prefix", prefix_);
  return query;
}

ListResult ObjectListing::Run() {
  ListResult result;
  while (true) {
    std::string body;
    xml::ListPage page;
    Request r;
    r.url = requests_.BucketUrl() + PageQuery();
    r.bucket = requests_.bucket();
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
    transport_.Run(r);
    for (ListedObject& o : page.objects) result.objects.push_back(std::move(o));
    for (std::string& p : page.common_prefixes) result.common_prefixes.push_back(std::move(p));
    if (!page.truncated) break;
    if (page.next_continuation_token.empty() || page.next_continuation_token == token_ ||
        page.next_continuation_token == previous_token_) {
      throw IoError("GET " + requests_.Name("") + " (" + r.url +
                    "): ListObjectsV2 says the listing is truncated but gives no new "
                    "continuation token");
    }
    previous_token_ = token_;
    token_ = page.next_continuation_token;
  }
  return result;
}

}  // namespace gulpdb::remote::internal
