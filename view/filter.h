// The filter box: the user's text handed to the engine in one call.
//
// Today the text is the command line's KEY=VALUE term (`gulpdb ls --where`,
// parsed by gulpdb::ParseMetaCondition, include/gulpdb/query.h); when the
// engine's query language arrives, this one call takes it, and the page,
// the static report and their tests follow without another change.
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
// Throws InvalidArgumentError, whose message says what is wrong with the
// text, for a filter the engine does not take.
std::vector<std::string> FilterIds(const Dataset& dataset, std::string_view filter);

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_FILTER_H_
