// The text of a query as the parser (expr.cc) reads it: a cursor over its
// bytes, the tokens below the grammar (keywords, names, values) and the one
// way to fail, a QuerySyntaxError naming the byte, then the text with a
// caret under it. Values are turned into the JSON texts the rest of the
// room compares; strings go through the JSON reader, so that their escapes
// mean what they mean in meta.
//
// Thread safety: a QueryText belongs to one parse.
#ifndef GULPDB_ENGINE_QUERY_QUERY_TEXT_H_
#define GULPDB_ENGINE_QUERY_QUERY_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace gulpdb::engine {

// [A-Za-z_] and [A-Za-z0-9_]: the characters of a bare name.
bool IsNameStart(char c);
bool IsNameChar(char c);
// and, or, not, in, has, true, false, null, in any case: no bare name.
bool IsQueryKeyword(std::string_view word);

// A value as written: its JSON text (a string's in canonical form), the
// text it was written as (the string `=` also matches for a value that is
// not a string; empty for a string) and the byte it starts at.
struct QueryValue {
  std::string json;
  std::string text;
  size_t pos = 0;
};

class QueryText {
 public:
  explicit QueryText(std::string_view text) : t_(text) {}

  // Throws QuerySyntaxError "parse query: byte <at>: <what>", then the
  // caret lines (CaretLines, expr.h); control bytes of `what` shown as \xNN.
  [[noreturn]] void Fail(size_t at, const std::string& what) const;
  // Past spaces, tabs and line ends.
  void Skip();
  // What stands at the cursor (or at byte `at`), for messages: a word, a
  // character or "the end of the query".
  std::string Found() const;
  std::string FoundAt(size_t at) const;
  // The keyword `word` (lower case; matched in any case) at the cursor, not
  // followed by a name character; Take moves past it (spaces first).
  bool AtKeyword(std::string_view word) const;
  bool TakeKeyword(std::string_view word);

  // A value at the cursor (spaces first): a string, a number as JSON
  // writes it, true, false, null, NaN, Infinity, -Infinity, or a JSON list
  // or object. Fails naming what stands there otherwise.
  QueryValue ReadValue();
  // A string in '...' or "..." at the cursor: JSON's escapes and \'.
  QueryValue ReadString();

 protected:
  std::string_view t_;
  size_t i_ = 0;

 private:
  QueryValue ReadNumber();
  // Whether byte `at` continues a name (or is a dot): a number cannot end there.
  bool NameCharAt(size_t at) const;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_QUERY_TEXT_H_
