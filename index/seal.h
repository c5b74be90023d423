// Record seals (format 2, docs/format/index_format.md): every video and
// chunk record value in the index is followed by 4 bytes, the CRC-32C of the
// record's key and value (little-endian), so that a damaged index entry is a
// CorruptionError naming the id or chunk, never wrong data. Datasets of
// format 1 have no seals (the caller decides, from DatasetInfo). Pure
// functions, thread-safe.
#ifndef GULPDB_INDEX_SEAL_H_
#define GULPDB_INDEX_SEAL_H_

#include <string>
#include <string_view>

namespace gulpdb::index {

constexpr size_t kSealSize = 4;

enum class RecordKind { kVideo, kChunk };  // what a sealed key names, for messages

// `value` followed by its seal over `key`.
std::string Seal(std::string_view key, std::string value);

// The record bytes of the sealed `value` stored under `key`. Throws
// CorruptionError "read <id 'key' | chunk N> in <where>: ..." when the value
// is too short for a seal or the seal does not match.
std::string_view Unseal(std::string_view key, std::string_view value, RecordKind kind,
                        const std::string& where);

}  // namespace gulpdb::index

#endif  // GULPDB_INDEX_SEAL_H_
