// What the ingest library itself needs of the option table
// (command_options.cc; the public part is in gulpdb/ingest.h).
#ifndef GULPDB_INGEST_COMMAND_OPTIONS_H_
#define GULPDB_INGEST_COMMAND_OPTIONS_H_

#include <string>

#include "gulpdb/ingest.h"

namespace gulpdb::ingest {

// The first value of `options` outside what its option takes (a quality of
// 0, a frame rate of NaN, ...), as the one line SetIngestOption would throw
// for it ("--quality must be a whole number from 1 to 100, not '0'"); empty
// when every value is in range. Paths and switches are not looked at.
std::string CheckOptionValues(const IngestOptions& options);

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_COMMAND_OPTIONS_H_
