#include "engine/query/index_handles.h"

namespace gulpdb::engine {

std::string IndexHandles::Seal(std::string_view key, std::string value) const {
  return sealed ? index::Seal(key, std::move(value)) : value;
}

std::string_view IndexHandles::Unseal(std::string_view key, std::string_view value,
                                      index::RecordKind kind) const {
  return sealed ? index::Unseal(key, value, kind, dir) : value;
}

}  // namespace gulpdb::engine
