#include "s3/etag.h"

#include "util/hex.h"

namespace gulpdb::remote {

bool IsMd5Etag(std::string_view etag) {
  return etag.size() == 34 && etag.front() == '"' && etag.back() == '"' &&
         util::IsLowerHex(etag.substr(1, 32), 32);
}

}  // namespace gulpdb::remote
