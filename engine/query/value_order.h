// The order of meta values, as the query language compares them
// (docs/query.md) and the ordered meta index stores them
// (docs/format/index_format.md, "Meta indexes").
//
// OrderedMetaValue turns one JSON value into bytes that sort (memcmp, the
// shorter first on a common prefix) as the language orders values, and that
// no other value's bytes start with (so an index entry can append a position
// after them). Two values get the same bytes exactly when they are equal as
// `=` and the meta index have always compared them (CanonicalMetaValue,
// meta_value.h): strings by their text, numbers by exact decimal value.
//
// The bytes start with a tag that says the value's type (kOrder* below);
// values of one type are contiguous. Numbers from -Infinity to Infinity are
// ordered by exact value (arbitrary size and precision; no rounding to
// binary floating point); NaN and numbers kept as text only equal
// themselves and lie outside every range; strings are ordered by the bytes
// of their UTF-8 text (code point order; a lone surrogate escape, which
// Python's json reads, counts as its code point); lists and objects only
// equal themselves.
//
// Thread safety: pure functions.
#ifndef GULPDB_ENGINE_QUERY_VALUE_ORDER_H_
#define GULPDB_ENGINE_QUERY_VALUE_ORDER_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace gulpdb::engine {

enum class ValueType : uint8_t { kNull, kBoolean, kNumber, kString, kList, kObject };

// The tags that begin ordered values, in their order. Null and booleans:
inline constexpr uint8_t kOrderNull = 0x10;
inline constexpr uint8_t kOrderFalse = 0x20;
inline constexpr uint8_t kOrderTrue = 0x21;
// Numbers ordered by exact value:
inline constexpr uint8_t kOrderMinusInfinity = 0x30;
inline constexpr uint8_t kOrderNegative = 0x31;
inline constexpr uint8_t kOrderZero = 0x32;
inline constexpr uint8_t kOrderPositive = 0x33;
inline constexpr uint8_t kOrderInfinity = 0x34;
// Numbers that only equal themselves: NaN, and a number whose exponent has
// more than 17 digits (kept as text):
inline constexpr uint8_t kOrderNaN = 0x35;
inline constexpr uint8_t kOrderNumberText = 0x36;
// Strings, lists, objects:
inline constexpr uint8_t kOrderString = 0x40;
inline constexpr uint8_t kOrderList = 0x50;
inline constexpr uint8_t kOrderObject = 0x60;

// The ordered bytes of the JSON value `json` (whitespace around it
// allowed). Throws InvalidArgumentError "parse json: byte N: ..." when
// `json` is not exactly one value of Python's JSON dialect (json_text.h).
std::string OrderedMetaValue(std::string_view json);

// The ordered bytes of a string value whose text is `text` (WTF-8: valid
// UTF-8, or lone surrogates as three bytes), and of the integer `n`.
std::string OrderedString(std::string_view text);
std::string OrderedInteger(uint64_t n);

// The type of ordered bytes (their first byte).
ValueType OrderedType(std::string_view ordered);

// Whether ordered bytes lie in the ordered part of their type: a number
// other than NaN or one kept as text, or a string. Only those satisfy
// <, <=, > and >=.
bool InOrderedRange(std::string_view ordered);

// The half-open range [*from, *to) of tags whose values `ordered`, of a
// type with an order, is compared with by <, <=, >, >=: every number
// (-Infinity to Infinity) or every string. False for other types.
bool RangeTags(std::string_view ordered, uint8_t* from, uint8_t* to);

// The half-open range [*from, *to) of the tags of `ordered`'s type (every
// number, NaN and numbers kept as text included; every string; both
// booleans; ...): what `!=` compares a value with.
void TypeTags(std::string_view ordered, uint8_t* from, uint8_t* to);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_QUERY_VALUE_ORDER_H_
