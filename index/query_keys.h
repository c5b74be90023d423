// Keys and values of the query databases: the secondary meta index and the
// named splits (docs/format/index_format.md, "Meta indexes" and "Splits").
// Byte encodings only: what a meta value *is* (its canonical form) is the
// engine's business (engine/query/meta_value.h); this file only packs it.
//
// Every Decode* checks sizes and throws CorruptionError naming the database
// for bytes that do not have the documented shape. Pure functions,
// thread-safe.
#ifndef GULPDB_INDEX_QUERY_KEYS_H_
#define GULPDB_INDEX_QUERY_KEYS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gulpdb::index {

// The query databases, created on first use (datasets made before they
// existed have none of them, and read as having no meta index and no split).
inline constexpr const char* kMetaFieldsDb = "meta_fields";      // field name -> number, form
inline constexpr const char* kMetaIndexDb = "meta_index";        // entry key -> id
inline constexpr const char* kSplitsDb = "splits";               // split name -> SplitHeader
inline constexpr const char* kSplitMembersDb = "split_members";  // member key -> id
inline constexpr const char* kSplitRefsDb = "split_refs";        // id -> SplitRef list

// Longest meta field name that can be indexed, and longest split name.
inline constexpr size_t kMaxFieldNameBytes = 255;
inline constexpr size_t kMaxSplitNameBytes = 255;
// Values up to this many bytes are stored inline in the entry key; longer
// ones by their length and CRC-32C (lookups then verify every candidate
// against its video's record). Keeps every key under LMDB's 511-byte
// limit: 4 + 1 + 2 + 400 + 12 = 419 bytes at most.
inline constexpr size_t kMaxInlineValueBytes = 400;

// ---- meta_fields -------------------------------------------------------------

// How a field's entries store values. kCanonical, the first form, keys
// them by canonical text (engine/query/meta_value.h): equal values share a
// prefix, so it answers equality only. kOrdered keys them by their ordered
// bytes (engine/query/value_order.h), so a range of values is a range of
// keys too. A field keeps its form until it is rebuilt.
enum class MetaKeyForm : uint8_t { kCanonical = 0, kOrdered = 1 };
inline constexpr MetaKeyForm kNewestMetaKeyForm = MetaKeyForm::kOrdered;

struct MetaFieldValue {
  uint32_t number = 0;
  MetaKeyForm form = kNewestMetaKeyForm;
};
// 4 bytes (the field number, BE) for kCanonical, as the first form wrote
// them; then one byte of form for the others (older readers refuse a value
// of 5 bytes instead of misreading the entries).
std::string EncodeMetaField(const MetaFieldValue& field);
// CorruptionError for another size or a form this build does not know.
MetaFieldValue DecodeMetaField(std::string_view value);

// ---- meta_index --------------------------------------------------------------

// The part of an entry key that names (field, value); every entry of that
// pair starts with it and no other entry does. `value` is the value's
// canonical form (kCanonical) or its ordered bytes (kOrdered).
std::string MetaValuePrefix(uint32_t field, MetaKeyForm form, std::string_view value);
// True when `value` is stored by its length and checksum.
inline bool MetaValueHashed(std::string_view value) { return value.size() > kMaxInlineValueBytes; }
// The prefix of every entry of `field`.
std::string MetaFieldPrefix(uint32_t field);
// kOrdered: the prefix of the entries of `field` whose values are stored by
// checksum (too long to key). Inline values (which start with a type tag
// below 0xf0) sort before them.
std::string MetaHashedPrefix(uint32_t field);
// kOrdered: the first key of `field` whose value starts with byte `tag`
// (a bound of a range of values).
std::string MetaTagKey(uint32_t field, uint8_t tag);
// The entry of one video: the (field, value) prefix, then its chunk and
// insertion sequence, so that a prefix scan yields (chunk, insertion) order.
std::string MetaEntryKey(uint32_t field, MetaKeyForm form, std::string_view value, uint32_t chunk,
                         uint64_t seq);
// The chunk and sequence at the end of an entry key.
void DecodeMetaEntryKey(std::string_view key, uint32_t* chunk, uint64_t* seq);
// The (field, value) part of an entry key: MetaValuePrefix's bytes, which
// every entry of that value shares. A view into `key`.
std::string_view MetaEntryValuePrefix(std::string_view key);
// Whether the entry key `key`, of a field in `form`, stores its value by
// length and checksum.
bool MetaEntryHashed(std::string_view key, MetaKeyForm form);
// The field number at the start of an entry key.
uint32_t DecodeMetaEntryField(std::string_view key);

// ---- splits ------------------------------------------------------------------

struct SplitHeader {
  uint32_t number = 0;  // names the split in split_members and split_refs
  uint64_t count = 0;   // ids in the split
};
std::string EncodeSplitHeader(const SplitHeader& header);
// Accepts values longer than 12 bytes (fields a later version may append).
SplitHeader DecodeSplitHeader(std::string_view value, std::string_view name);

// One id's place in one split.
struct SplitRef {
  uint32_t split = 0;
  uint64_t position = 0;
};
// The key of a split's member at `position`; keys of one split sort by position.
std::string SplitMemberKey(uint32_t split, uint64_t position);
// The prefix of every member key of `split`.
std::string SplitMemberPrefix(uint32_t split);
SplitRef DecodeSplitMemberKey(std::string_view key);
// The refs of one id, 12 bytes each, sorted by split number.
std::string EncodeSplitRefs(const std::vector<SplitRef>& refs);
std::vector<SplitRef> DecodeSplitRefs(std::string_view value, std::string_view id);

}  // namespace gulpdb::index

#endif  // GULPDB_INDEX_QUERY_KEYS_H_
