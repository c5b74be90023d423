#include "index/partition_root.h"

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <map>
#include <set>

#include "gulpdb/error.h"
#include "index/partition_root_generated.h"

namespace gulpdb::index {
namespace {

namespace fbs = gulpdb::index::fb;

[[noreturn]] void Corrupt(std::string_view what, const std::string& detail) {
  throw CorruptionError("decode partition root " + std::string(what) + ": " + detail);
}

std::string HexOf(const uint8_t* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::vector<uint8_t> BytesOfHex(const std::string& hex) {
  if (hex.size() != 64) {
    throw InvalidArgumentError("encode partition root: a SHA-256 of " + std::to_string(hex.size()) +
                               " hex digits");
  }
  std::vector<uint8_t> out(32);
  for (size_t i = 0; i < 32; ++i) {
    const int hi = HexDigit(hex[2 * i]), lo = HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) throw InvalidArgumentError("encode partition root: bad hex " + hex);
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return out;
}

std::string StringOf(const flatbuffers::Vector<uint8_t>* v) {
  if (v == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(v->data()), v->size());
}

std::string Printable(std::string_view key) {
  std::string out;
  for (char c : key.substr(0, 64)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      out += "\\x" + HexOf(&u, 1);
    }
  }
  return out;
}

}  // namespace

const char* PartitionKindName(PartitionKind kind) {
  switch (kind) {
    case PartitionKind::kVideos:
      return "videos";
    case PartitionKind::kMetaIndex:
      return "meta_index";
    case PartitionKind::kOrder:
      return "order";
    case PartitionKind::kChunks:
      return "chunks";
    case PartitionKind::kSplitMembers:
      return "split_members";
    case PartitionKind::kRecords:
      return "records";
  }
  return "?";
}

namespace {

flatbuffers::Offset<flatbuffers::Vector<uint8_t>> Bytes(flatbuffers::FlatBufferBuilder& b,
                                                        const std::string& s) {
  return b.CreateVector(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

flatbuffers::Offset<fbs::PartitionEntry> EncodeEntry(flatbuffers::FlatBufferBuilder& b,
                                                     const PartitionEntry& p) {
  auto first = Bytes(b, p.first_key);
  auto last = Bytes(b, p.last_key);
  auto sha = b.CreateVector(BytesOfHex(p.sha256));
  return fbs::CreatePartitionEntry(b, static_cast<uint8_t>(p.kind), p.generation, first, last,
                                   p.first_position, p.count, p.size, sha);
}

// The fields a partition entry and a page entry share; throws through
// `corrupt` for what the schema allows and a reader does not.
template <typename Fb, typename Out, typename Corrupt>
void DecodeCommon(const Fb* p, const std::string& where, Out* e, Corrupt corrupt) {
  if (p->kind() >= kPartitionKinds) corrupt(where + ": kind " + std::to_string(p->kind()));
  e->kind = static_cast<PartitionKind>(p->kind());
  e->generation = p->generation();
  e->first_key = StringOf(p->first_key());
  e->last_key = StringOf(p->last_key());
  e->first_position = p->first_position();
  e->count = p->count();
  e->size = p->size();
  if (p->sha256() == nullptr || p->sha256()->size() != 32) {
    corrupt(where + ": a SHA-256 is 32 bytes");
  }
  e->sha256 = HexOf(p->sha256()->data(), 32);
}

template <typename Corrupt>
PartitionEntry DecodeEntry(const fbs::PartitionEntry* p, size_t i, Corrupt corrupt) {
  PartitionEntry e;
  DecodeCommon(p, "partition " + std::to_string(i), &e, corrupt);
  return e;
}

// An aligned copy of `bytes` (FlatBuffers reads scalars in place).
std::vector<uint64_t> Aligned(std::string_view bytes) {
  std::vector<uint64_t> storage(bytes.size() / sizeof(uint64_t) + 1);
  // (An empty view may have no address: memcpy must not see it.)
  if (!bytes.empty()) std::memcpy(storage.data(), bytes.data(), bytes.size());
  return storage;
}

}  // namespace

bool PartitionRoot::Paged(PartitionKind kind, uint64_t group_generation) const {
  for (const RootPage& p : pages) {
    if (p.kind == kind && p.generation == group_generation) return true;
  }
  return false;
}

uint64_t PartitionRoot::Count(PartitionKind kind) const {
  uint64_t n = 0;
  for (const RootPage& p : pages) {
    if (p.kind == kind) n += p.count;
  }
  for (const PartitionEntry& p : partitions) {
    if (p.kind == kind && !Paged(p.kind, p.generation)) n += p.count;
  }
  return n;
}

uint64_t PartitionRoot::PartitionBytes() const {
  uint64_t n = 0;
  for (const RootPage& p : pages) n += p.partition_bytes;
  for (const PartitionEntry& p : partitions) {
    if (!Paged(p.kind, p.generation)) n += p.size;
  }
  return n;
}

std::string EncodePartitionRoot(const PartitionRoot& root) {
  flatbuffers::FlatBufferBuilder b(1024 + root.partitions.size() * 160);
  std::vector<flatbuffers::Offset<fbs::PartitionEntry>> parts;
  for (const PartitionEntry& p : root.partitions) {
    // The groups listed by pages are in the pages only.
    if (!root.pages.empty() && root.Paged(p.kind, p.generation)) continue;
    parts.push_back(EncodeEntry(b, p));
  }
  std::vector<flatbuffers::Offset<fbs::RootPageEntry>> pages;
  for (const RootPage& p : root.pages) {
    auto first = Bytes(b, p.first_key);
    auto last = Bytes(b, p.last_key);
    auto sha = b.CreateVector(BytesOfHex(p.sha256));
    pages.push_back(fbs::CreateRootPageEntry(b, static_cast<uint8_t>(p.kind), p.generation, first,
                                             last, p.first_position, p.count, p.partitions,
                                             p.partition_bytes, p.size, sha));
  }
  std::vector<flatbuffers::Offset<fbs::MetaFieldEntry>> fields, ordered_fields;
  for (const MetaFieldEntry& f : root.meta_fields) {
    (f.form == MetaKeyForm::kCanonical ? fields : ordered_fields)
        .push_back(fbs::CreateMetaFieldEntry(b, b.CreateString(f.name), f.number));
  }
  auto info = Bytes(b, root.dataset_info);
  std::vector<flatbuffers::Offset<fbs::SplitEntry>> splits;
  for (const SplitEntry& e : root.splits) {
    splits.push_back(fbs::CreateSplitEntry(b, b.CreateString(e.name), e.number, e.count));
  }
  auto fields_v = b.CreateVector(fields);
  auto parts_v = b.CreateVector(parts);
  auto splits_v = b.CreateVector(splits);
  // Absent (not empty) in a root without pages: its bytes stay those of format 2.
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fbs::RootPageEntry>>> pages_v;
  if (!pages.empty()) pages_v = b.CreateVector(pages);
  // Absent without ordered fields: such a root keeps the bytes older versions wrote.
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fbs::MetaFieldEntry>>> ordered_v;
  if (!ordered_fields.empty()) ordered_v = b.CreateVector(ordered_fields);
  b.Finish(
      fbs::CreatePartitionRoot(b, root.format_version, root.generation, root.sealed, info, fields_v,
                               parts_v, root.splits_omitted, splits_v, pages_v, ordered_v),
      "GDBR");
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

std::string EncodeRootPage(const std::vector<PartitionEntry>& partitions) {
  flatbuffers::FlatBufferBuilder b(256 + partitions.size() * 160);
  std::vector<flatbuffers::Offset<fbs::PartitionEntry>> parts;
  parts.reserve(partitions.size());
  for (const PartitionEntry& p : partitions) parts.push_back(EncodeEntry(b, p));
  auto parts_v = b.CreateVector(parts);
  b.Finish(fbs::CreateRootPage(b, parts_v), "GDBP");
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

std::vector<PartitionEntry> DecodeRootPage(std::string_view bytes, const RootPage& page,
                                           std::string_view what) {
  const auto corrupt = [&](const std::string& detail) {
    throw CorruptionError("decode root page " + std::string(what) + ": " + detail);
  };
  const std::vector<uint64_t> storage = Aligned(bytes);
  const auto* data = reinterpret_cast<const uint8_t*>(storage.data());
  flatbuffers::Verifier verifier(data, bytes.size(), 64, 100'000'000);
  if (!verifier.VerifyBuffer<fbs::RootPage>("GDBP")) {
    corrupt("not a root page (FlatBuffers verification failed)");
  }
  const fbs::RootPage* fb = flatbuffers::GetRoot<fbs::RootPage>(data);
  std::vector<PartitionEntry> out;
  if (fb->partitions() != nullptr) {
    out.reserve(fb->partitions()->size());
    for (const fbs::PartitionEntry* p : *fb->partitions()) {
      out.push_back(DecodeEntry(p, out.size(), corrupt));
    }
  }
  if (out.size() != page.partitions || out.empty()) {
    corrupt("it lists " + std::to_string(out.size()) + " partitions, the root says " +
            std::to_string(page.partitions));
  }
  uint64_t count = 0, bytes_total = 0, position = page.first_position;
  for (size_t i = 0; i < out.size(); ++i) {
    const PartitionEntry& p = out[i];
    const std::string where = "partition " + std::to_string(i) + " (" + p.sha256 + ")";
    if (p.kind != page.kind || p.generation != page.generation) {
      corrupt(where + ": of another group than its page");
    }
    if (p.count == 0 || p.size == 0) corrupt(where + ": empty");
    if (p.first_key.empty() || p.last_key < p.first_key) corrupt(where + ": empty or reversed");
    if (i > 0 && p.first_key <= out[i - 1].last_key) {
      corrupt(where + ": its key range overlaps or precedes the previous partition's");
    }
    if (p.kind == PartitionKind::kOrder) {
      if (p.first_position != position) {
        corrupt(where + ": first position " + std::to_string(p.first_position) + ", expected " +
                std::to_string(position));
      }
      position += p.count;
    } else if (p.first_position != 0) {
      corrupt(where + ": a position on a partition that is not of the order table");
    }
    count += p.count;
    bytes_total += p.size;
  }
  if (out.front().first_key != page.first_key || out.back().last_key != page.last_key ||
      count != page.count || bytes_total != page.partition_bytes) {
    corrupt("its partitions (keys ['" + Printable(out.front().first_key) + "', '" +
            Printable(out.back().last_key) + "'], " + std::to_string(count) + " entries, " +
            std::to_string(bytes_total) + " bytes) are not those the root says (['" +
            Printable(page.first_key) + "', '" + Printable(page.last_key) + "'], " +
            std::to_string(page.count) + ", " + std::to_string(page.partition_bytes) + ")");
  }
  return out;
}

PartitionRoot DecodePartitionRoot(std::string_view bytes, std::string_view what) {
  // FlatBuffers reads scalars in place: work on an aligned copy.
  const std::vector<uint64_t> storage = Aligned(bytes);
  const auto* data = reinterpret_cast<const uint8_t*>(storage.data());
  flatbuffers::Verifier verifier(data, bytes.size(), 64, 100'000'000);
  if (!verifier.VerifyBuffer<fbs::PartitionRoot>("GDBR")) {
    Corrupt(what, "not a partition root (FlatBuffers verification failed)");
  }
  const fbs::PartitionRoot* fb = flatbuffers::GetRoot<fbs::PartitionRoot>(data);
  PartitionRoot root;
  root.format_version = fb->format_version();
  if (root.format_version < kOldestPartitionRootFormat ||
      root.format_version > kPartitionRootFormat) {
    Corrupt(what, "format " + std::to_string(root.format_version) + " (this gulpdb reads " +
                      std::to_string(kOldestPartitionRootFormat) + " to " +
                      std::to_string(kPartitionRootFormat) + ")");
  }
  root.generation = fb->generation();
  root.sealed = fb->sealed();
  root.splits_omitted = fb->splits_omitted();
  root.dataset_info = StringOf(fb->dataset_info());
  for (const auto* list : {fb->meta_fields(), fb->ordered_meta_fields()}) {
    if (list == nullptr) continue;
    const MetaKeyForm form =
        list == fb->meta_fields() ? MetaKeyForm::kCanonical : MetaKeyForm::kOrdered;
    for (const fbs::MetaFieldEntry* f : *list) {
      MetaFieldEntry e;
      e.name = f->name() != nullptr ? f->name()->str() : std::string();
      e.number = f->number();
      e.form = form;
      root.meta_fields.push_back(std::move(e));
    }
  }
  if (fb->splits() != nullptr) {
    for (const fbs::SplitEntry* e : *fb->splits()) {
      SplitEntry split;
      split.name = e->name() != nullptr ? e->name()->str() : std::string();
      split.number = e->number();
      split.count = e->count();
      root.splits.push_back(std::move(split));
    }
  }
  const auto corrupt = [&](const std::string& detail) { Corrupt(what, detail); };
  if (fb->partitions() != nullptr) {
    root.partitions.reserve(fb->partitions()->size());
    for (const fbs::PartitionEntry* p : *fb->partitions()) {
      root.partitions.push_back(DecodeEntry(p, root.partitions.size(), corrupt));
    }
  }
  if (fb->pages() != nullptr) {
    for (const fbs::RootPageEntry* p : *fb->pages()) {
      RootPage e;
      DecodeCommon(p, "page " + std::to_string(root.pages.size()), &e, corrupt);
      e.partitions = p->partitions();
      e.partition_bytes = p->partition_bytes();
      root.pages.push_back(std::move(e));
    }
  }
  ValidatePartitionRoot(root, what);
  return root;
}

namespace {

// The invariants of a run of partitions or of pages: grouped by kind and
// generation, key ranges in order and disjoint within a group, order
// positions contiguous from 0, no deltas of the tail kinds.
template <typename Entry>
void CheckRuns(const PartitionRoot& root, const std::vector<Entry>& entries, const char* noun,
               std::string_view what) {
  const Entry* prev = nullptr;
  uint64_t next_position = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& p = entries[i];
    const std::string where = std::string(noun) + " " + std::to_string(i) + " (" + p.sha256 + ")";
    if (p.count == 0 || p.size == 0) Corrupt(what, where + ": empty");
    if (p.sha256.size() != 64) Corrupt(what, where + ": a SHA-256 is 64 hex digits");
    if (p.first_key.empty() || p.last_key < p.first_key) {
      Corrupt(what, where + ": key range ['" + Printable(p.first_key) + "', '" +
                        Printable(p.last_key) + "'] is empty or reversed");
    }
    const bool tail_kind = p.kind == PartitionKind::kOrder || p.kind == PartitionKind::kChunks ||
                           p.kind == PartitionKind::kSplitMembers ||
                           p.kind == PartitionKind::kRecords;
    if (tail_kind && p.generation != 0) {
      Corrupt(what, where + ": " + PartitionKindName(p.kind) + " partitions have no deltas");
    }
    if (p.kind == PartitionKind::kSplitMembers && root.format_version < 2) {
      Corrupt(what, where + ": split members in a format " + std::to_string(root.format_version) +
                        " root");
    }
    if (p.kind == PartitionKind::kRecords && root.format_version < 4) {
      Corrupt(what, where + ": a record delta in a format " + std::to_string(root.format_version) +
                        " root");
    }
    if (p.generation > root.generation) {
      Corrupt(what, where + ": generation " + std::to_string(p.generation) + " after the root's " +
                        std::to_string(root.generation));
    }
    const bool same_group =
        prev != nullptr && prev->kind == p.kind && prev->generation == p.generation;
    if (prev != nullptr && !same_group &&
        (p.kind < prev->kind || (p.kind == prev->kind && p.generation < prev->generation))) {
      Corrupt(what, where + ": out of order (sorted by kind and generation)");
    }
    if (same_group && p.first_key <= prev->last_key) {
      Corrupt(what, where + ": its key range overlaps or precedes the previous one's");
    }
    if (p.kind == PartitionKind::kOrder) {
      if (p.first_position != next_position) {
        Corrupt(what, where + ": first position " + std::to_string(p.first_position) +
                          ", expected " + std::to_string(next_position));
      }
      next_position += p.count;
    } else if (p.first_position != 0) {
      Corrupt(what, where + ": a position on a partition that is not of the order table");
    }
    prev = &p;
  }
}

}  // namespace

void ValidatePartitionRoot(const PartitionRoot& root, std::string_view what) {
  std::set<std::string> field_names;
  std::set<uint32_t> field_numbers;
  for (const MetaFieldEntry& f : root.meta_fields) {
    if (f.name.empty() || !field_names.insert(f.name).second ||
        !field_numbers.insert(f.number).second) {
      Corrupt(what, "meta field '" + Printable(f.name) + "' (number " + std::to_string(f.number) +
                        ") is empty or listed twice");
    }
  }
  std::set<std::string> split_names;
  std::set<uint32_t> split_numbers;
  for (const SplitEntry& e : root.splits) {
    if (e.name.empty() || !split_names.insert(e.name).second ||
        !split_numbers.insert(e.number).second) {
      Corrupt(what, "split '" + Printable(e.name) + "' (number " + std::to_string(e.number) +
                        ") is unnamed or listed twice");
    }
  }
  CheckRuns(root, root.partitions, "partition", what);
  if (root.pages.empty()) return;
  if (root.format_version < 3) {
    Corrupt(what, "pages in a format " + std::to_string(root.format_version) + " root");
  }
  CheckRuns(root, root.pages, "page", what);
  for (size_t i = 0; i < root.pages.size(); ++i) {
    const RootPage& p = root.pages[i];
    if (p.partitions == 0 || p.partition_bytes == 0 || p.partitions > p.count) {
      Corrupt(what, "page " + std::to_string(i) + " (" + p.sha256 + "): lists " +
                        std::to_string(p.partitions) + " partitions of " +
                        std::to_string(p.partition_bytes) + " bytes for " +
                        std::to_string(p.count) + " entries");
    }
  }
  // A built or expanded root also lists the paged groups' partitions: the
  // same as their pages.
  for (int k = 0; k < kPartitionKinds; ++k) {
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> paged, listed;  // generation -> count, number
    for (const RootPage& p : root.pages) {
      if (static_cast<int>(p.kind) != k) continue;
      paged[p.generation].first += p.count;
      paged[p.generation].second += p.partitions;
    }
    for (const PartitionEntry& p : root.partitions) {
      if (static_cast<int>(p.kind) != k || paged.count(p.generation) == 0) continue;
      listed[p.generation].first += p.count;
      listed[p.generation].second += 1;
    }
    for (const auto& [generation, totals] : listed) {
      if (totals != paged[generation]) {
        Corrupt(what, std::string(PartitionKindName(static_cast<PartitionKind>(k))) +
                          " generation " + std::to_string(generation) +
                          ": its partitions are not those its pages list");
      }
    }
  }
}

}  // namespace gulpdb::index
