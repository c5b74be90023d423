#include "view/filter.h"

#include "gulpdb/query.h"

namespace gulpdb::view {

std::vector<std::string> FilterIds(const Dataset& dataset, std::string_view filter) {
  return dataset.Select(Query::ParseWhere(filter));
}

}  // namespace gulpdb::view
