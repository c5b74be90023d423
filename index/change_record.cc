#include "index/change_record.h"

#include <vector>

#include "util/coding.h"

namespace gulpdb::index {

namespace {
constexpr std::string_view kMagic = "GDC1";
}  // namespace

std::string EncodeChangeHeader(const ChangeHeader& header) {
  std::string out(kMagic);
  out.push_back(header.overflowed ? '\1' : '\0');
  util::PutFixedBig(&out, header.stamp, 8);
  out += header.base;
  return out;
}

std::optional<ChangeHeader> DecodeChangeHeader(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 9 || bytes.substr(0, kMagic.size()) != kMagic) {
    return std::nullopt;
  }
  const char flags = bytes[kMagic.size()];
  if (flags != '\0' && flags != '\1') return std::nullopt;
  ChangeHeader h;
  h.overflowed = flags == '\1';
  h.stamp = util::GetFixedBig(bytes, kMagic.size() + 1, 8);
  h.base = std::string(bytes.substr(kMagic.size() + 9));
  return h;
}

std::optional<ChangeHeader> ReadChangeHeader(const Txn& txn, Dbi changes) {
  std::string_view value;
  if (changes == 0 || !txn.Get(changes, kChangeHeaderKey, &value)) return std::nullopt;
  return DecodeChangeHeader(value);
}

bool ChangeRecordCovers(const Txn& txn, Dbi changes, std::string_view base) {
  const std::optional<ChangeHeader> h = ReadChangeHeader(txn, changes);
  return h && !h->overflowed && !base.empty() && h->base == base && h->stamp == txn.id();
}

std::optional<ChangeBefore> DecodeChangeBefore(std::string_view bytes) {
  if (bytes.empty() || (bytes[0] != '\0' && bytes[0] != '\1')) return std::nullopt;
  if (bytes[0] == '\0' && bytes.size() != 1) return std::nullopt;
  return ChangeBefore{bytes[0] == '\1', bytes.substr(1)};
}

void StartChangeRecord(Txn& txn, Dbi changes, const std::string& base) {
  std::vector<std::string> keys;
  {
    Cursor cursor(txn, changes);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) keys.emplace_back(cursor.key());
  }
  for (const std::string& key : keys) txn.Del(changes, key);
  ChangeHeader h;
  h.stamp = txn.id();
  h.base = base;
  txn.Put(changes, kChangeHeaderKey, EncodeChangeHeader(h));
}

}  // namespace gulpdb::index
