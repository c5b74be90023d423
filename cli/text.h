// How the gulpdb command prints ids and other user text: unambiguously and
// safely on a terminal. An id may hold any Unicode character, including NUL,
// newline, tab and other control characters; printed raw it would break the
// line-and-tab layout of `ls` or hide in a message. Thread-safe (pure
// functions).
#ifndef GULPDB_CLI_TEXT_H_
#define GULPDB_CLI_TEXT_H_

#include <string>
#include <string_view>
#include <vector>

namespace gulpdb::cli {

// `text` as the body of a JSON string, with non-ASCII characters left as they
// are: `"` and `\` and control characters escaped as JSON escapes them (\n,
// \t, \r, \b, \f, else \u00XX), and DEL and the C1 controls (U+0080..U+009F)
// as \u00XX too. Decoding '"' + result + '"' as JSON gives `text` back, so
// `ls` and `ls --json` agree. Bytes that are not UTF-8 (never in an id, but
// possible in a command-line argument) are shown as \xhh.
std::string EscapeForDisplay(std::string_view text);

// `text` with only control characters (as EscapeForDisplay) and bytes that
// are not UTF-8 (\xhh) escaped, for error messages, which quote ids and
// paths: a message stays one line.
std::string EscapeControls(std::string_view text);

// A file system path as a quoted JSON string: Python's json.dumps form when
// it is UTF-8; otherwise each byte that is not UTF-8 becomes \udcXX, as
// Python's os.fsdecode maps it (os.fsencode gives the bytes back).
std::string JsonPathString(std::string_view path);

// Up to `shown` of `items`, escaped and quoted, then "and N more":
// "'a', 'b', 'c' and 4 more".
std::string ListForDisplay(const std::vector<std::string>& items, size_t shown = 5);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_TEXT_H_
