// JSON text in the dialect of Python's `json` module, handled as text.
//
// GulpIO writes its `.gmeta` files with `json.dump`, and gulpdb promises that an
// exported `.gmeta` is byte-identical to the imported one. So meta data is never
// turned into doubles and back: it stays JSON text, validated here and, when it
// did not come from Python, rewritten into the exact form `json.dumps` produces.
//
// The dialect is RFC 8259 JSON plus what Python accepts and writes:
//   - the literals NaN, Infinity and -Infinity;
//   - numbers of any size or precision (kept verbatim, never converted);
//   - `\uXXXX` escapes of lone surrogates (Python round-trips them; see below);
//   - duplicate object keys (Python keeps the last value at the first key's place).
// It rejects what Python's json.loads rejects: trailing characters, raw control
// characters (< 0x20) in strings, invalid escapes, a leading UTF-8 byte order
// mark, single quotes, comments, trailing commas. It also rejects invalid UTF-8
// (Python fails to decode such a file) and nesting deeper than kMaxJsonDepth.
//
// Python's output form ("canonical" below): `", "` between elements and members,
// `": "` after keys, no other whitespace; strings escaped with ensure_ascii rules:
// `\"` `\\` `\n` `\r` `\t` `\b` `\f`, every other character outside 0x20..0x7e
// (including DEL 0x7f) as lowercase `\u00XX`/`\uXXXX`, characters above U+FFFF as
// a surrogate pair; `/` is not escaped; numbers and literals exactly as given.
//
// Thread safety: every function here is pure and may be called concurrently.
#ifndef GULPDB_ENGINE_JSON_JSON_TEXT_H_
#define GULPDB_ENGINE_JSON_JSON_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gulpdb::engine {

// Deepest nesting of arrays and objects accepted: `[[1]]` has depth 2. Python's
// own encoder and decoder stop near 1000 (its recursion limit), so no text that
// Python wrote or read is refused, while hostile input cannot exhaust memory.
inline constexpr int kMaxJsonDepth = 1000;

// Validates `text` as exactly one JSON value (whitespace around it allowed) and
// returns it in canonical form. For any text written by Python's json.dump or
// json.dumps with default separators and ensure_ascii, the result is
// byte-identical to the input. Otherwise it is what `json.dumps(json.loads(text))`
// returns, except that numbers keep their spelling (`1E5` stays `1E5` where
// Python would write `100000.0`), so no precision is ever lost.
// Throws InvalidArgumentError "parse json: byte <offset>: <what is wrong>".
std::string NormalizeJson(std::string_view text);

// `bytes` for an error message: printable ASCII as is, every other byte as
// \xNN, cut after `max_bytes` input bytes with "..." appended.
std::string PrintableBytes(std::string_view bytes, size_t max_bytes = 80);

// Returns the quoted JSON string Python writes for the UTF-8 text `utf8`
// (json.dumps with ensure_ascii, the default). Throws InvalidArgumentError when
// `utf8` is not valid UTF-8 (overlong forms and encoded surrogates included).
std::string PythonJsonString(std::string_view utf8);

// As PythonJsonString, appending to `*out` (which must not be null). On error
// `*out` is left as it was.
void AppendPythonJsonString(std::string_view utf8, std::string* out);

// Decodes the JSON string token `quoted_token` (quotes included, nothing
// around it) to UTF-8. Escaped surrogate pairs are combined; a lone surrogate
// has no UTF-8 form and is an error. Throws InvalidArgumentError
// "decode json string: byte <offset>: <what is wrong>".
std::string DecodeJsonString(std::string_view quoted_token);

// ---------------------------------------------------------------------------
// Incremental scanning, for parsers that read large files block by block
// (the .gmeta reader). These never throw for bad input; they report it.

enum class JsonScanStatus {
  kOk,         // a complete value (or string) was found
  kTruncated,  // `text` ended before the value did: more input may complete it
  kInvalid,    // the text can never become valid JSON, whatever follows
};

struct JsonScanResult {
  JsonScanStatus status = JsonScanStatus::kOk;
  // kOk: offset one past the value. kInvalid: offset of the offending byte.
  // kTruncated: text.size().
  size_t pos = 0;
  std::string error;  // kInvalid only: what is wrong, e.g. "invalid escape \q"
};

// Validates the JSON value starting at text[pos] (no leading whitespace is
// skipped). `input_complete` says that `text` holds all the input there is: a
// number running into the end of `text` is then complete rather than truncated.
// Costs no allocation; the value itself is left in place (text.substr(pos,
// result.pos - pos) is its verbatim text).
JsonScanResult ScanJsonValue(std::string_view text, size_t pos, bool input_complete);

// Decodes the JSON string token starting at text[pos] (which must be `"`) into
// `*utf8` (replaced, must not be null). A lone surrogate escape is kInvalid
// here, since it cannot be represented in UTF-8 — unless `lone_surrogates`:
// then it is written as the three bytes UTF-8's pattern gives its code point
// (WTF-8), so that every string Python's json module reads has one byte form
// and byte order stays code point order (the query room orders strings so).
// On kOk, result.pos is one past the closing quote; on failure `*utf8` holds
// unspecified contents.
JsonScanResult ScanJsonString(std::string_view text, size_t pos, std::string* utf8,
                              bool lone_surrogates = false);

// The first position at or after `pos` that is not JSON whitespace (space,
// tab, line feed, carriage return); text.size() when there is none.
size_t SkipJsonSpace(std::string_view text, size_t pos);

// One member of a JSON object, as positions in the text it was read from.
struct JsonMember {
  std::string key;     // decoded; empty when it has no UTF-8 form (see below)
  size_t key_pos = 0;  // the key's opening quote
  size_t value_pos = 0;
  size_t value_end = 0;  // one past the value
};

// The members of the object at text[pos] (which must be '{'), in text order,
// duplicates included. The text must have been validated (NormalizeJson or
// ScanJsonValue said kOk): nothing is checked here. A key holding a lone
// surrogate escape decodes as ScanJsonString does with `lone_surrogates`,
// or else to an empty key.
std::vector<JsonMember> JsonObjectMembers(std::string_view text, size_t pos,
                                          bool lone_surrogates = false);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_JSON_JSON_TEXT_H_
