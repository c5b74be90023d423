// Value types the object-store client returns: what a HEAD or a listing says
// about an object.
//
// Thread safety: plain value types.
#ifndef GULPDB_S3_S3_TYPES_H_
#define GULPDB_S3_S3_TYPES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gulpdb::remote {

// What the store says about one object.
struct ObjectInfo {
  uint64_t size = 0;
  std::string etag;           // as sent, with its double quotes
  std::string last_modified;  // as sent: an HTTP date (HEAD, GET) or ISO 8601 (listings)
  // x-amz-server-side-encryption as sent (HEAD, GET; "SSE-C" for a customer
  // key): an encrypting store's ETags need not be MD5s. Empty otherwise.
  std::string server_side_encryption;
  // User metadata (x-amz-meta-<name>: value), names in lowercase without the
  // prefix; HEAD and GET only (listings do not carry it).
  std::map<std::string, std::string> metadata{};
};

struct ListedObject {
  std::string key;
  ObjectInfo info;
};

// The result of a listing: the objects in key order and, when a delimiter
// was given, the common prefixes ("directories"), each ending with it.
struct ListResult {
  std::vector<ListedObject> objects;
  std::vector<std::string> common_prefixes;
};

}  // namespace gulpdb::remote

#endif  // GULPDB_S3_S3_TYPES_H_
