#include "index/seal.h"

#include <cstdint>

#include "gulpdb/error.h"
#include "index/records.h"
#include "util/coding.h"
#include "util/crc32c.h"

namespace gulpdb::index {
namespace {

uint32_t SealOf(std::string_view key, std::string_view body) {
  return util::Crc32c(body.data(), body.size(), util::Crc32c(key.data(), key.size()));
}

}  // namespace

std::string Seal(std::string_view key, std::string value) {
  const uint32_t crc = SealOf(key, value);
  util::PutFixed32Little(&value, crc);
  return value;
}

std::string_view Unseal(std::string_view key, std::string_view value, RecordKind kind,
                        const std::string& where) {
  // Built only on failure: this runs for every record read.
  const auto what = [&] {
    return kind == RecordKind::kChunk ? "chunk " + std::to_string(DecodeChunkKey(key))
                                      : "id '" + std::string(key) + "'";
  };
  if (value.size() < kSealSize) {
    throw CorruptionError("read " + what() + " in " + where + ": the index entry is " +
                          std::to_string(value.size()) + " bytes, too short for its seal");
  }
  const std::string_view body = value.substr(0, value.size() - kSealSize);
  const uint32_t stored = util::GetFixed32Little(value, body.size());
  if (SealOf(key, body) != stored) {
    throw CorruptionError("read " + what() + " in " + where +
                          ": the index entry is damaged (record checksum mismatch)");
  }
  return body;
}

}  // namespace gulpdb::index
