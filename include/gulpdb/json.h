// JSON text as gulpdb writes it: the form of Python's json.dumps, which
// GulpIO's .gmeta files and gulpdb's stored meta use (", " and ": "
// separators, non-ASCII escaped as \uXXXX). For programs that print ids or
// meta next to gulpdb's own output (the gulpdb command's --json modes).
// Thread-safe.
#ifndef GULPDB_JSON_H_
#define GULPDB_JSON_H_

#include <string>
#include <string_view>

#include "gulpdb/export.h"

namespace gulpdb {

// `utf8` as a quoted JSON string, exactly as Python's json.dumps writes it.
// Throws InvalidArgumentError when `utf8` is not valid UTF-8.
GULPDB_EXPORT std::string PythonJsonString(std::string_view utf8);

}  // namespace gulpdb

#endif  // GULPDB_JSON_H_
