// The command line's metadata queries and named splits: `gulpdb index`
// (create, list and drop meta indexes), `gulpdb split` (set, list, show and
// remove splits), the --where and --split filters of `gulpdb ls`, and the
// lines `gulpdb info` prints about both. A --where argument is a query of
// the query language (docs/query.md), or KEY=VALUE as
// gulpdb::Query::ParseWhere reads it (include/gulpdb/query.h).
#ifndef GULPDB_CLI_QUERY_COMMANDS_H_
#define GULPDB_CLI_QUERY_COMMANDS_H_

#include <boost/program_options.hpp>
#include <functional>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"

namespace gulpdb::cli {

int RunIndex(const std::vector<std::string>& args);
int RunSplit(const std::vector<std::string>& args);

// Adds --where EXPR (repeatable) and --split NAME to ls's options.
void AddListFilterOptions(boost::program_options::options_description* options);
// The --where arguments as one query (all must hold). A bad one is a
// UsageError showing it with a caret under the byte where it went wrong.
Query WhereQuery(const boost::program_options::variables_map& vm);
// Calls fn for the videos ls lists: every video in (chunk, insertion) order;
// with --where (`where`, from WhereQuery) those that satisfy it (same
// order); with --split those of the split in split order (and satisfying
// `where`). Stops when fn returns false. An unknown split is
// NameNotFoundError.
void ForEachListed(const Dataset& dataset, const boost::program_options::variables_map& vm,
                   const Query& where, const std::function<bool(const VideoInfo&)>& fn);

// For `gulpdb info`: lines "splits: ..." and "meta indexes: ...", and the
// same as JSON members (", \"splits\": {...}, \"meta_indexes\": [...]").
std::string QueryInfoText(const Dataset& dataset);
std::string QueryInfoJson(const Dataset& dataset);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_QUERY_COMMANDS_H_
