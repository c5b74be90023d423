// UTF-8 decoding: the one decoder of gulpdb (JSON text, S3 keys, what the
// command prints). Valid means RFC 3629 and Unicode's table 3-7: no overlong
// forms, no encoded surrogates (U+D800..U+DFFF), nothing past U+10FFFF.
//
// Thread safety: pure functions.
#ifndef GULPDB_UTIL_UTF8_H_
#define GULPDB_UTIL_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gulpdb::util {

enum class Utf8Step {
  kOk,         // *code_point and *length are set
  kTruncated,  // `text` ends inside a sequence that is valid so far
  kInvalid,    // not the start of a valid sequence
};

// Decodes the sequence that starts at text[pos] (pos < text.size(); ASCII
// included) into *code_point and *length (1 to 4 bytes).
Utf8Step DecodeUtf8(std::string_view text, size_t pos, uint32_t* code_point, size_t* length);

// The length of the valid sequence at text[pos], or 0 when it is invalid or
// cut off by the end of `text`.
size_t Utf8SequenceLength(std::string_view text, size_t pos);

// The offset of the first byte of `text` that does not begin a valid UTF-8
// sequence, or std::string_view::npos when all of `text` is valid.
size_t FindInvalidUtf8(std::string_view text);

// Appends the UTF-8 form of `code_point` (<= U+10FFFF). A surrogate
// (U+D800..U+DFFF) gets the three bytes UTF-8's pattern gives it, which is
// not valid UTF-8 (it is WTF-8): callers pass one only on purpose.
void AppendUtf8(uint32_t code_point, std::string* out);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_UTF8_H_
