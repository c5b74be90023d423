// The record lookups of a partitioned index snapshot (partitions.h,
// PartitionedIndex, an IndexSource): lookups that probe the delta
// generations newest first, and scans that merge them. Opening the root and
// its partitions is partitioned_index.cc's.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <utility>

#include "engine/core/dataset_view.h"
#include "engine/partition/partition_file.h"
#include "engine/partition/partitions.h"
#include "engine/query/index_handles.h"
#include "gulpdb/error.h"
#include "index/query_keys.h"
#include "index/seal.h"
#include "util/file_io.h"
namespace gulpdb::engine {

using namespace part;  // NOLINT: the room's partition file helpers

std::optional<std::string> PartitionedIndex::Lookup(PartitionKind kind,
                                                    std::string_view key) const {
  for (const Group& level : levels_.of(kind)) {
    const PartitionEntry* p = levels_.Holding(level, key);
    if (p == nullptr) continue;
    std::shared_ptr<Open> open = levels_.OpenPartition(*p);
    index::Txn txn = open->file->env->BeginRead();
    std::string_view value;
    if (txn.Get(open->file->dbi, key, &value)) return std::string(value);
  }
  return std::nullopt;
}

std::optional<PartitionedIndex::RecordDeltaHit> PartitionedIndex::FindRecordDelta(
    std::string_view order_key) const {
  const std::vector<Group>& levels = levels_.of(PartitionKind::kRecords);
  if (levels.empty()) return std::nullopt;
  const PartitionEntry* p = levels_.Holding(levels.front(), order_key);
  if (p == nullptr) return std::nullopt;
  std::shared_ptr<Open> open = levels_.OpenPartition(*p);
  index::Txn txn = open->file->env->BeginRead();
  std::string_view value;
  if (!txn.Get(open->file->dbi, order_key, &value)) return std::nullopt;
  return RecordDeltaHit{*p, open->file->path, std::string(value)};
}

std::optional<index::VideoRecord> PartitionedIndex::FindVideo(std::string_view id) const {
  return Find(id, nullptr, /*frames_only=*/false);
}

std::optional<index::VideoRecord> PartitionedIndex::FindFrames(
    std::string_view id, const std::function<void(uint32_t chunk)>* chunk_known) const {
  return Find(id, chunk_known, /*frames_only=*/true);
}

std::optional<index::VideoRecord> PartitionedIndex::Find(
    std::string_view id, const std::function<void(uint32_t)>* chunk_known, bool frames_only) const {
  const std::string where = "partitioned index " + name_;
  const auto decode = frames_only ? index::DecodeVideoFrames : index::DecodeVideoRecord;
  if (!clustered()) {
    std::optional<std::string> value = Lookup(PartitionKind::kVideos, id);
    if (!value || value->empty()) return std::nullopt;
    std::optional<index::VideoRecord> record =
        decode(index::Unseal(id, *value, index::RecordKind::kVideo, where), id);
    if (chunk_known != nullptr) (*chunk_known)(record->chunk);
    return record;
  }
  std::optional<std::string> order_key = Hinted(id);
  if (!order_key) {
    order_key = Lookup(PartitionKind::kVideos, id);
    if (!order_key || order_key->empty()) return std::nullopt;
  }
  if (order_key->size() != kOrderKeySize) {
    throw CorruptionError("read id '" + std::string(id) + "' in " + where +
                          ": its order key is not " + std::to_string(kOrderKeySize) + " bytes");
  }
  // The order key starts with the chunk: the caller may fetch for it now.
  if (chunk_known != nullptr) (*chunk_known)(index::DecodeChunkKey(order_key->substr(0, 4)));
  // A record changed in place since its order partition was written is in
  // the record delta level (format 4), which wins.
  if (std::optional<RecordDeltaHit> hit = FindRecordDelta(*order_key)) {
    const RecordDelta d = ParseRecordDelta(hit->value, hit->entry, hit->path);
    if (d.id != id) {
      PartitionCorrupt(
          hit->entry, hit->path,
          "the record delta of id '" + std::string(id) + "' names '" + std::string(d.id) + "'");
    }
    return decode(index::Unseal(id, d.record, index::RecordKind::kVideo, where), id);
  }
  const PartitionEntry* p = levels_.Holding(levels_.order(), *order_key);
  if (p == nullptr) {
    throw CorruptionError("read id '" + std::string(id) + "' in " + where +
                          ": it names an order entry no order partition holds");
  }
  std::shared_ptr<Open> open = levels_.OpenPartition(*p);
  index::Txn txn = open->file->env->BeginRead();
  // The order keys ascend with the local index: a binary search.
  uint64_t lo = 0, hi = p->count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    std::string_view value;
    if (!txn.Get(open->file->dbi, BigEndian32(static_cast<uint32_t>(mid)), &value)) {
      PartitionCorrupt(*p, open->file->path, "no entry " + std::to_string(mid));
    }
    const std::string_view key = LogicalKey(PartitionKind::kOrder, {}, value, *p, open->file->path);
    if (key < *order_key) {
      lo = mid + 1;
    } else if (*order_key < key) {
      hi = mid;
    } else {
      const OrderValue v = ParseOrderValue(value.substr(kOrderKeySize), *p, open->file->path);
      if (v.id != id) {
        PartitionCorrupt(
            *p, open->file->path,
            "the order entry of id '" + std::string(id) + "' names '" + std::string(v.id) + "'");
      }
      return decode(index::Unseal(id, v.record, index::RecordKind::kVideo, where), id);
    }
  }
  PartitionCorrupt(*p, open->file->path,
                   "no order entry for id '" + std::string(id) + "', which the index lists");
}

std::optional<std::string> PartitionedIndex::Hinted(std::string_view id) const {
  std::lock_guard<std::mutex> lock(hints_mutex_);
  auto it = hints_.find(std::string(id));
  if (it == hints_.end()) return std::nullopt;
  return it->second;
}

void PartitionedIndex::Hint(std::string_view id, std::string_view order_key) const {
  std::lock_guard<std::mutex> lock(hints_mutex_);
  if (hints_.size() >= kMaxHints) hints_.clear();
  hints_.emplace(std::string(id), std::string(order_key));
}

std::optional<index::ChunkRecord> PartitionedIndex::Chunk(uint32_t chunk) const {
  const std::string key = index::ChunkKey(chunk);
  std::optional<std::string> value = Lookup(PartitionKind::kChunks, key);
  if (!value) return std::nullopt;
  const std::string what = std::to_string(chunk) + " of " + name_;
  return index::DecodeChunkRecord(
      index::Unseal(key, *value, index::RecordKind::kChunk, "partitioned index " + name_), what);
}

std::optional<std::string> PartitionedIndex::OrderAt(uint64_t position) const {
  if (position >= order_count_) return std::nullopt;
  const Group& group = levels_.order();
  auto slot = std::upper_bound(group.begin(), group.end(), position,
                               [](uint64_t pos, const Slot& s) { return pos < s.first_position; });
  const std::vector<PartitionEntry>& parts = levels_.Load(*(slot - 1));
  auto it = std::upper_bound(
      parts.begin(), parts.end(), position,
      [](uint64_t pos, const PartitionEntry& e) { return pos < e.first_position; });
  const PartitionEntry* p = &*(it - 1);
  std::shared_ptr<Open> open = levels_.OpenPartition(*p);
  index::Txn txn = open->file->env->BeginRead();
  std::string_view value;
  if (!txn.Get(open->file->dbi, BigEndian32(static_cast<uint32_t>(position - p->first_position)),
               &value)) {
    PartitionCorrupt(*p, open->file->path, "no entry for position " + std::to_string(position));
  }
  const std::string_view order_key =
      LogicalKey(PartitionKind::kOrder, {}, value, *p, open->file->path);  // checks the size
  const std::string_view rest = LogicalValue(PartitionKind::kOrder, value);
  if (!clustered()) return std::string(rest);
  const OrderValue v = ParseOrderValue(rest, *p, open->file->path);
  // The caller reads this video next, most likely: its record is here.
  Hint(v.id, order_key);
  return std::string(v.id);
}

namespace {

// Walks one level's partitions that overlap [from, to), opening each when
// the walk reaches it.
class LevelCursor {
 public:
  using Opener = std::function<std::shared_ptr<void>(const PartitionEntry&, PartitionFile**)>;
  LevelCursor(std::vector<const PartitionEntry*> parts, std::string_view from, Opener opener)
      : parts_(std::move(parts)), from_(from), opener_(std::move(opener)) {
    // Skip the partitions that end before `from`.
    while (next_ < parts_.size() && parts_[next_]->last_key < from_) ++next_;
    Advance();
  }
  bool Valid() const { return valid_; }
  std::string_view key() const { return key_; }
  std::string_view value() const { return value_; }

  void Next() {
    if (cursor_ && cursor_->Next()) {
      Set();
      return;
    }
    Advance();
  }

 private:
  void Advance() {
    cursor_.reset();
    txn_.reset();
    valid_ = false;
    while (next_ < parts_.size()) {
      const PartitionEntry& p = *parts_[next_++];
      keep_ = opener_(p, &file_);
      txn_ = std::make_unique<index::Txn>(file_->env->BeginRead());
      cursor_ = std::make_unique<index::Cursor>(*txn_, file_->dbi);
      bool ok;
      if (p.kind != PartitionKind::kOrder && from_ > p.first_key) {
        ok = cursor_->Seek(from_);
      } else {
        ok = cursor_->First();
        while (ok && LogicalKey(p.kind, cursor_->key(), cursor_->value(), p, file_->path) < from_) {
          ok = cursor_->Next();
        }
      }
      if (ok) {
        Set();
        return;
      }
      cursor_.reset();
      txn_.reset();
    }
  }
  void Set() {
    const PartitionEntry& p = *parts_[next_ - 1];
    key_ = LogicalKey(p.kind, cursor_->key(), cursor_->value(), p, file_->path);
    value_ = LogicalValue(p.kind, cursor_->value());
    valid_ = true;
  }

  std::vector<const PartitionEntry*> parts_;
  std::string from_;
  Opener opener_;
  size_t next_ = 0;
  std::shared_ptr<void> keep_;
  PartitionFile* file_ = nullptr;
  std::unique_ptr<index::Txn> txn_;
  std::unique_ptr<index::Cursor> cursor_;
  bool valid_ = false;
  std::string_view key_, value_;
};

}  // namespace

void PartitionedIndex::Scan(
    PartitionKind kind, std::string_view from, std::string_view to,
    const std::function<bool(std::string_view key, std::string_view value)>& fn) const {
  std::vector<std::unique_ptr<LevelCursor>> levels;  // newest first
  for (const Group& level : levels_.of(kind)) {
    // Only the partitions that overlap [from, to): a walk fetches no other.
    levels.push_back(std::make_unique<LevelCursor>(
        levels_.Overlapping(level, from, to), from,
        [this](const PartitionEntry& p, PartitionFile** file) -> std::shared_ptr<void> {
          std::shared_ptr<Open> open = levels_.OpenPartition(p);
          *file = open->file.get();
          return open;
        }));
  }
  while (true) {
    // The smallest key of any level; the newest level holding it wins.
    LevelCursor* winner = nullptr;
    for (auto& level : levels) {
      if (!level->Valid()) continue;
      if (winner == nullptr || level->key() < winner->key()) winner = level.get();
    }
    if (winner == nullptr) return;
    const std::string key(winner->key());
    if (!to.empty() && key >= to) return;
    const std::string value(winner->value());
    for (auto& level : levels) {
      if (level->Valid() && level->key() == key) level->Next();
    }
    if (value.empty()) continue;  // removed by a delta
    if (!fn(key, value)) return;
  }
}

void PartitionedIndex::ScanVideos(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn) const {
  const std::string where = "partitioned index " + name_;
  Scan(PartitionKind::kVideos, from, to, [&](std::string_view id, std::string_view value) {
    if (clustered()) {
      Hint(id, value);
      std::optional<index::VideoRecord> record = FindVideo(id);
      if (!record) {
        throw CorruptionError("read id '" + std::string(id) + "' in " + where +
                              ": listed, but it has no record");
      }
      return fn(id, *record);
    }
    return fn(id, index::DecodeVideoRecord(
                      index::Unseal(id, value, index::RecordKind::kVideo, where), id));
  });
}

}  // namespace gulpdb::engine

namespace gulpdb::engine {

void PartitionedIndex::ScanOrder(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view order_key, std::string_view id)>& fn) const {
  if (!clustered()) {
    Scan(PartitionKind::kOrder, from, to, fn);
    return;
  }
  Scan(PartitionKind::kOrder, from, to, [&](std::string_view order_key, std::string_view value) {
    const OrderValue v = ParseOrderValue(value, name_);
    // The caller reads this video next, most likely: its record is here.
    Hint(v.id, order_key);
    return fn(order_key, v.id);
  });
}

std::vector<uint64_t> PartitionedIndex::OrderBoundaries() const {
  std::vector<uint64_t> out;
  for (const Slot& slot : levels_.order()) {
    for (const PartitionEntry& p : levels_.Load(slot)) out.push_back(p.first_position);
  }
  if (out.empty() || out.front() != 0) out.insert(out.begin(), 0);
  return out;
}

void PartitionedIndex::ScanChunks(
    const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn) const {
  const std::string where = "partitioned index " + name_;
  Scan(PartitionKind::kChunks, {}, {}, [&](std::string_view key, std::string_view value) {
    const uint32_t chunk = index::DecodeChunkKey(key);
    return fn(chunk,
              index::DecodeChunkRecord(index::Unseal(key, value, index::RecordKind::kChunk, where),
                                       std::to_string(chunk) + " of " + name_));
  });
}

std::vector<std::pair<std::string, index::MetaFieldValue>> PartitionedIndex::MetaFields() const {
  std::vector<std::pair<std::string, index::MetaFieldValue>> out;
  for (const index::MetaFieldEntry& f : root_.meta_fields) {
    out.emplace_back(f.name, index::MetaFieldValue{f.number, f.form});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

void PartitionedIndex::ScanMeta(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view key, std::string_view id)>& fn) const {
  Scan(PartitionKind::kMetaIndex, from, to, fn);
}

std::map<std::string, index::SplitHeader> PartitionedIndex::SplitHeaders() const {
  std::map<std::string, index::SplitHeader> out;
  for (const index::SplitEntry& e : root_.splits) {
    index::SplitHeader h;
    h.number = e.number;
    h.count = e.count;
    out.emplace(e.name, h);
  }
  return out;
}

std::vector<std::string> PartitionedIndex::SplitIds(uint32_t split) const {
  std::vector<std::string> ids;
  const std::string prefix = index::SplitMemberPrefix(split);
  Scan(PartitionKind::kSplitMembers, prefix, {}, [&](std::string_view key, std::string_view id) {
    if (key.substr(0, prefix.size()) != prefix) return false;
    ids.emplace_back(id);
    return true;
  });
  for (const index::SplitEntry& e : root_.splits) {
    if (e.number == split && e.count != ids.size()) {
      throw CorruptionError("read split '" + e.name + "' of partitioned index " + name_ +
                            ": its partitions hold " + std::to_string(ids.size()) +
                            " members, the root says " + std::to_string(e.count));
    }
  }
  return ids;
}

uint64_t PartitionedIndex::IndexBytes() const { return root_.PartitionBytes(); }

void PartitionedIndex::ScanRecordDeltas(
    const std::function<bool(std::string_view order_key, std::string_view id,
                             const index::VideoRecord& now, const index::VideoRecord& base)>& fn)
    const {
  const std::string where = "partitioned index " + name_;
  for (const Group& level : levels_.of(PartitionKind::kRecords)) {
    for (const PartitionEntry* p : levels_.Overlapping(level, {}, {})) {
      std::shared_ptr<Open> open = levels_.OpenPartition(*p);
      index::Txn txn = open->file->env->BeginRead();
      index::Cursor cursor(txn, open->file->dbi);
      for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        const RecordDelta d = ParseRecordDelta(cursor.value(), *p, open->file->path);
        const index::VideoRecord now = index::DecodeVideoRecord(
            index::Unseal(d.id, d.record, index::RecordKind::kVideo, where), d.id);
        const index::VideoRecord base = index::DecodeVideoRecord(
            index::Unseal(d.id, d.base, index::RecordKind::kVideo, where), d.id);
        if (!fn(cursor.key(), d.id, now, base)) return;
      }
    }
  }
}

bool PartitionedIndex::SameVideosAs(const PartitionedIndex& other) const {
  const auto listed = [](const PartitionRoot& root, PartitionKind kind) {
    std::vector<std::pair<uint64_t, std::string>> out;
    for (const PartitionEntry& p : root.partitions) {
      if (p.kind == kind) out.emplace_back(p.generation, p.sha256);
    }
    for (const index::RootPage& page : root.pages) {
      if (page.kind == kind) out.emplace_back(page.generation, "page " + page.sha256);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  if (clustered() != other.clustered()) return false;
  // Not the chunk list: a meta edit counts itself in its chunk's record.
  for (const PartitionKind kind : {PartitionKind::kVideos, PartitionKind::kOrder}) {
    if (listed(root_, kind) != listed(other.root_, kind)) return false;
  }
  return true;
}

}  // namespace gulpdb::engine
