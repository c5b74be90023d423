// Text the viewer writes into JSON, HTML, SVG and URLs, and the numbers it
// reads from query parameters. Ids and meta come from the index: they are
// escaped for where they go, never trusted to be valid UTF-8.
//
// Thread safety: pure functions.
#ifndef GULPDB_VIEW_TEXT_H_
#define GULPDB_VIEW_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gulpdb::view {

// `text` as a quoted JSON string (Python's json.dumps form). Bytes that are
// not valid UTF-8 become U+FFFD: the string shows them, it does not carry
// them (PercentEncode does).
std::string JsonString(std::string_view text);

// `text` for HTML and SVG text and attribute values: & < > " ' escaped,
// invalid UTF-8 as U+FFFD.
std::string HtmlEscape(std::string_view text);

// At most `max_chars` characters of the UTF-8 `text` (invalid bytes count
// as one), with "…" appended when it was cut.
std::string Shorten(std::string_view text, size_t max_chars);

// `bytes` percent-encoded for a URL's query (every byte but A-Z a-z 0-9 -
// _ . ~ as %XX), so that any id, valid UTF-8 or not, travels exactly.
std::string PercentEncode(std::string_view bytes);

// `bytes` in base64 (RFC 4648 section 4, padded with '='), for data: URLs.
std::string Base64(std::string_view bytes);
// `bytes` in URL-safe base64 (RFC 4648 section 5: - and _), unpadded.
std::string Base64Url(std::string_view bytes);

// A query parameter's whole number: decimal digits only, at most `max`;
// nullopt for anything else (empty, a sign, a fraction, too large).
std::optional<uint64_t> ParseCount(std::string_view text, uint64_t max);

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_TEXT_H_
