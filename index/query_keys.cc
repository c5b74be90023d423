#include "index/query_keys.h"

#include <algorithm>

#include "gulpdb/error.h"
#include "util/coding.h"
#include "util/crc32c.h"

namespace gulpdb::index {
namespace {

constexpr char kInlineForm = 0;        // u16 length, the value's bytes
constexpr char kHashedForm = 1;        // u32 length, u32 CRC-32C of the value
constexpr size_t kPositionBytes = 12;  // chunk (4) + sequence (8), or split (4) + position (8)

}  // namespace

std::string EncodeFieldNumber(uint32_t number) {
  std::string out;
  util::PutFixedBig(&out, number, 4);
  return out;
}

uint32_t DecodeFieldNumber(std::string_view value) {
  if (value.size() != 4) {
    throw CorruptionError("decode meta_fields entry: expected 4 bytes, found " +
                          std::to_string(value.size()));
  }
  return static_cast<uint32_t>(util::GetFixedBig(value, 0, 4));
}

std::string MetaFieldPrefix(uint32_t field) { return EncodeFieldNumber(field); }

std::string MetaValuePrefix(uint32_t field, std::string_view canonical_value) {
  std::string out;
  out.reserve(4 + 1 + 4 + std::min(canonical_value.size(), kMaxInlineValueBytes) + kPositionBytes);
  util::PutFixedBig(&out, field, 4);
  if (!MetaValueHashed(canonical_value)) {
    out.push_back(kInlineForm);
    util::PutFixedBig(&out, canonical_value.size(), 2);
    out.append(canonical_value);
  } else {
    out.push_back(kHashedForm);
    util::PutFixedBig(&out, std::min<uint64_t>(canonical_value.size(), UINT32_MAX), 4);
    util::PutFixedBig(&out, util::Crc32c(canonical_value.data(), canonical_value.size()), 4);
  }
  return out;
}

std::string MetaEntryKey(uint32_t field, std::string_view canonical_value, uint32_t chunk,
                         uint64_t seq) {
  std::string key = MetaValuePrefix(field, canonical_value);
  util::PutFixedBig(&key, chunk, 4);
  util::PutFixedBig(&key, seq, 8);
  return key;
}

void DecodeMetaEntryKey(std::string_view key, uint32_t* chunk, uint64_t* seq) {
  if (key.size() < 4 + 1 + 2 + kPositionBytes) {
    throw CorruptionError("decode meta_index key: " + std::to_string(key.size()) +
                          " bytes is too short");
  }
  const size_t at = key.size() - kPositionBytes;
  *chunk = static_cast<uint32_t>(util::GetFixedBig(key, at, 4));
  *seq = util::GetFixedBig(key, at + 4, 8);
}

uint32_t DecodeMetaEntryField(std::string_view key) {
  if (key.size() < 4) throw CorruptionError("decode meta_index key: shorter than a field number");
  return static_cast<uint32_t>(util::GetFixedBig(key, 0, 4));
}

std::string EncodeSplitHeader(const SplitHeader& header) {
  std::string out;
  util::PutFixedBig(&out, header.number, 4);
  util::PutFixedBig(&out, header.count, 8);
  return out;
}

SplitHeader DecodeSplitHeader(std::string_view value, std::string_view name) {
  if (value.size() < 12) {
    throw CorruptionError("decode split '" + std::string(name) +
                          "': " + std::to_string(value.size()) + " bytes, expected at least 12");
  }
  SplitHeader h;
  h.number = static_cast<uint32_t>(util::GetFixedBig(value, 0, 4));
  h.count = util::GetFixedBig(value, 4, 8);
  return h;
}

std::string SplitMemberKey(uint32_t split, uint64_t position) {
  std::string out;
  util::PutFixedBig(&out, split, 4);
  util::PutFixedBig(&out, position, 8);
  return out;
}

std::string SplitMemberPrefix(uint32_t split) {
  std::string out;
  util::PutFixedBig(&out, split, 4);
  return out;
}

SplitRef DecodeSplitMemberKey(std::string_view key) {
  if (key.size() != kPositionBytes) {
    throw CorruptionError("decode split_members key: expected 12 bytes, found " +
                          std::to_string(key.size()));
  }
  return SplitRef{static_cast<uint32_t>(util::GetFixedBig(key, 0, 4)),
                  util::GetFixedBig(key, 4, 8)};
}

std::string EncodeSplitRefs(const std::vector<SplitRef>& refs) {
  std::string out;
  out.reserve(refs.size() * kPositionBytes);
  for (const SplitRef& r : refs) {
    util::PutFixedBig(&out, r.split, 4);
    util::PutFixedBig(&out, r.position, 8);
  }
  return out;
}

std::vector<SplitRef> DecodeSplitRefs(std::string_view value, std::string_view id) {
  if (value.size() % kPositionBytes != 0) {
    throw CorruptionError("decode split_refs of id '" + std::string(id) +
                          "': " + std::to_string(value.size()) + " bytes is not a multiple of 12");
  }
  std::vector<SplitRef> refs;
  refs.reserve(value.size() / kPositionBytes);
  for (size_t at = 0; at < value.size(); at += kPositionBytes) {
    refs.push_back(SplitRef{static_cast<uint32_t>(util::GetFixedBig(value, at, 4)),
                            util::GetFixedBig(value, at + 4, 8)});
  }
  return refs;
}

}  // namespace gulpdb::index
