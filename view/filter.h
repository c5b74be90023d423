// The filter box: the user's text handed to the engine in one call.
//
// The text is what `gulpdb ls --where` takes: a query of the query
// language (docs/query.md, gulpdb::Query::ParseWhere in
// include/gulpdb/query.h), or the older KEY=VALUE term that is not one.
//
// Thread safety: as Dataset.
#ifndef GULPDB_VIEW_FILTER_H_
#define GULPDB_VIEW_FILTER_H_

#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/dataset.h"

namespace gulpdb::view {

// The ids of the videos that `filter` selects, in the dataset's order.
// Throws QuerySyntaxError (an InvalidArgumentError), whose message shows the
// text with a caret under the byte at fault, for a filter that is not a
// query.
std::vector<std::string> FilterIds(const Dataset& dataset, std::string_view filter);

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_FILTER_H_
