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
#include <utility>

#include "gulpdb/error.h"

namespace gulpdb::engine {

inline void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void PutBytes(std::string* out, std::string_view bytes) {
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out->append(bytes);
}

// Reads a payload; any overrun is a CorruptionError naming the record (its
// checksum matched, so this means a bug or a foreign file). The views it
// returns point into the payload it was given.
class PayloadReader {
 public:
  PayloadReader(std::string_view in, std::string what) : in_(in), what_(std::move(what)) {}
  uint64_t Fixed(int bytes) {
    Need(static_cast<size_t>(bytes));
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) {
      v = (v << 8) | static_cast<uint8_t>(in_[pos_ + static_cast<size_t>(i)]);
    }
    pos_ += static_cast<size_t>(bytes);
    return v;
  }
  std::string_view Bytes(uint64_t size) {
    Need(size);
    std::string_view out = in_.substr(pos_, size);
    pos_ += size;
    return out;
  }
  std::string_view Sized() { return Bytes(Fixed(4)); }
  const std::string& what() const { return what_; }

 private:
  void Need(uint64_t size) const {
    if (size > in_.size() - pos_) {
      throw CorruptionError("replay " + what_ + ": the record ends early at byte " +
                            std::to_string(pos_));
    }
  }
  std::string_view in_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_PAYLOAD_CODEC_H_
