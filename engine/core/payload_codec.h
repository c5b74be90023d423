// The byte coding of a journal record's payload (docs/format/journal_format.md):
// little-endian integers, and byte strings as a 32-bit length then the bytes.
// A batch's record is encoded with these (engine/core/journal_record.cc) and so is
// each part of a batch that lives beside it (meta_edit.h's edits).
// Thread safety: pure functions; a PayloadReader belongs to one thread.
#ifndef GULPDB_ENGINE_CORE_PAYLOAD_CODEC_H_
#define GULPDB_ENGINE_CORE_PAYLOAD_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "util/coding.h"

namespace gulpdb::engine {

inline void PutU32(std::string* out, uint32_t v) { util::PutFixed32Little(out, v); }
inline void PutU64(std::string* out, uint64_t v) { util::PutFixed64Little(out, v); }
inline void PutBytes(std::string* out, std::string_view bytes) {
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out->append(bytes);
}

// Reads a payload (util/coding.h's ByteReader); any overrun is a
// CorruptionError naming the record as "replay <what>" (its checksum
// matched, so this means a bug or a foreign file).
class PayloadReader : public util::ByteReader {
 public:
  PayloadReader(std::string_view in, const std::string& what)
      : util::ByteReader(in, "replay " + what) {}
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_PAYLOAD_CODEC_H_
