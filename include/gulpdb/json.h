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

// A value given on a command line (`gulpdb meta --set KEY=VALUE`), read as
// --where reads one: its JSON text in canonical form when `text` is one JSON
// value (`5`, `true`, `"a b"`, `[1, 2]`), else `text` itself as a JSON
// string. Throws InvalidArgumentError when `text` is not valid UTF-8.
GULPDB_EXPORT std::string JsonValueFromArgument(std::string_view text);

// The text of the first entry of a video's meta_data list (VideoInfo::
// meta_data): its meta, as GulpIO2 returns it; "null" for an empty list.
// Throws InvalidArgumentError when `meta_data` is not a JSON list.
GULPDB_EXPORT std::string FirstMetaEntry(std::string_view meta_data);

}  // namespace gulpdb

#endif  // GULPDB_JSON_H_
