#include "index/query_keys.h"

#include <algorithm>

#include "gulpdb/error.h"
#include "util/coding.h"
#include "util/crc32c.h"

namespace gulpdb::index {
namespace {

// kCanonical: a form byte after the field number.
constexpr char kInlineForm = 0;  // u16 length, the value's bytes
constexpr char kHashedForm = 1;  // u32 length, u32 CRC-32C of the value
// kOrdered: inline values start with their type tag (below 0xf0); a hashed
// one with this byte, then u32 length, u32 CRC-32C of the ordered bytes.
constexpr char kHashedOrderedTag = '\xf0';
constexpr size_t kPositionBytes = 12;  // chunk (4) + sequence (8), or split (4) + position (8)

}  // namespace

std::string EncodeMetaField(const MetaFieldValue& field) {
  std::string out;
  util::PutFixedBig(&out, field.number, 4);
  if (field.form != MetaKeyForm::kCanonical) out.push_back(static_cast<char>(field.form));
  return out;
}

MetaFieldValue DecodeMetaField(std::string_view value) {
  if (value.size() != 4 && value.size() != 5) {
    throw CorruptionError("decode meta_fields entry: expected 4 or 5 bytes, found " +
                          std::to_string(value.size()));
  }
  MetaFieldValue out;
  out.number = static_cast<uint32_t>(util::GetFixedBig(value, 0, 4));
  out.form = MetaKeyForm::kCanonical;
  if (value.size() == 5) {
    const auto form = static_cast<uint8_t>(value[4]);
    if (form != static_cast<uint8_t>(MetaKeyForm::kOrdered)) {
      throw CorruptionError("decode meta_fields entry: key form " + std::to_string(form) +
                            " is not one this build knows (made by a newer gulpdb?)");
    }
    out.form = MetaKeyForm::kOrdered;
  }
  return out;
}

std::string MetaFieldPrefix(uint32_t field) { return util::FixedBig(field, 4); }

std::string MetaHashedPrefix(uint32_t field) {
  std::string out = MetaFieldPrefix(field);
  out.push_back(kHashedOrderedTag);
  return out;
}

std::string MetaTagKey(uint32_t field, uint8_t tag) {
  std::string out = MetaFieldPrefix(field);
  out.push_back(static_cast<char>(tag));
  return out;
}

std::string MetaValuePrefix(uint32_t field, MetaKeyForm form, std::string_view value) {
  std::string out;
  out.reserve(4 + 1 + 4 + std::min(value.size(), kMaxInlineValueBytes) + kPositionBytes);
  util::PutFixedBig(&out, field, 4);
  const bool hashed = MetaValueHashed(value);
  if (form == MetaKeyForm::kCanonical) {
    out.push_back(hashed ? kHashedForm : kInlineForm);
    if (!hashed) util::PutFixedBig(&out, value.size(), 2);
  } else if (hashed) {
    out.push_back(kHashedOrderedTag);
  }
  if (!hashed) {
    out.append(value);
  } else {
    util::PutFixedBig(&out, std::min<uint64_t>(value.size(), UINT32_MAX), 4);
    util::PutFixedBig(&out, util::Crc32c(value.data(), value.size()), 4);
  }
  return out;
}

std::string MetaEntryKey(uint32_t field, MetaKeyForm form, std::string_view value, uint32_t chunk,
                         uint64_t seq) {
  std::string key = MetaValuePrefix(field, form, value);
  util::PutFixedBig(&key, chunk, 4);
  util::PutFixedBig(&key, seq, 8);
  return key;
}

void DecodeMetaEntryKey(std::string_view key, uint32_t* chunk, uint64_t* seq) {
  if (key.size() < 4 + 1 + kPositionBytes) {
    throw CorruptionError("decode meta_index key: " + std::to_string(key.size()) +
                          " bytes is too short");
  }
  const size_t at = key.size() - kPositionBytes;
  *chunk = static_cast<uint32_t>(util::GetFixedBig(key, at, 4));
  *seq = util::GetFixedBig(key, at + 4, 8);
}

std::string_view MetaEntryValuePrefix(std::string_view key) {
  uint32_t chunk = 0;
  uint64_t seq = 0;
  DecodeMetaEntryKey(key, &chunk, &seq);  // checks the size
  return key.substr(0, key.size() - kPositionBytes);
}

bool MetaEntryHashed(std::string_view key, MetaKeyForm form) {
  if (key.size() < 5) throw CorruptionError("decode meta_index key: shorter than its form byte");
  return key[4] == (form == MetaKeyForm::kCanonical ? kHashedForm : kHashedOrderedTag);
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

std::string SplitMemberPrefix(uint32_t split) { return util::FixedBig(split, 4); }

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
