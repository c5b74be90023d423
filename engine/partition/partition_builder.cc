// Building a dataset's partitioned index snapshot (partitions.h,
// BuildPartitions): the dataset's entries of each kind, cut into partitions
// by size, diffed against the previous root's (range-stable base, delta
// generations, merges), written as files named by their SHA-256, and the
// root, paged where a group would make it large. The reader is
// partitioned_index.cc; the file format both read, partition_file.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "engine/core/dataset_view.h"
#include "engine/partition/partition_file.h"
#include "engine/partition/partitions.h"
#include "engine/query/index_handles.h"
#include "engine/query/meta_value.h"
#include "gulpdb/error.h"
#include "index/change_record.h"
#include "index/lmdb_verify.h"
#include "index/query_keys.h"
#include "index/seal.h"
#include "util/coding.h"
#include "util/file_io.h"
#include "util/sha256.h"
namespace gulpdb::engine {
namespace {

using namespace part;  // NOLINT: the room's partition file helpers

// ---- writing partitions ----------------------------------------------------

// Cuts runs of logical entries into partition files of one kind and level.
class PartitionWriter {
 public:
  PartitionWriter(PartitionKind kind, uint64_t generation, std::string out_dir,
                  std::set<std::string>* written)
      : kind_(kind), generation_(generation), out_dir_(std::move(out_dir)), written_(written) {}

  // Writes `entries` (sorted, non-empty) as one partition and returns its entry.
  PartitionEntry Write(const std::vector<Entry>& entries) {
    const std::string stem = out_dir_ + "/.build." + util::UniqueFileSuffix();
    const std::string env_dir = stem + ".env";
    const std::string file = stem + ".part";
    try {
      util::MakeDirectory(env_dir);
      index::EnvOptions options;
      options.max_dbs = 2;
      // Fixed, so that the same entries give the same bytes (the meta page
      // records the map size).
      options.initial_map_size = size_t{1} << 28;
      {
        std::unique_ptr<index::Env> env = index::Env::Open(env_dir, options);
        env->SetDurable(false);  // the compact copy below is synced
        const index::Dbi dbi = env->OpenDb(index::PartitionKindName(kind_), true);
        env->Update([&](index::Txn& txn) {
          for (size_t i = 0; i < entries.size(); ++i) {
            if (kind_ == PartitionKind::kOrder) {
              txn.Append(dbi, BigEndian32(static_cast<uint32_t>(i)),
                         entries[i].key + entries[i].value);
            } else {
              txn.Append(dbi, entries[i].key, entries[i].value);
            }
          }
        });
        env->CopyTo(file, /*compact=*/true);
      }
      util::RemoveTree(env_dir);
    } catch (...) {
      util::RemoveFileQuietly(file);
      try {
        util::RemoveTree(env_dir);
      } catch (...) {
      }
      throw;
    }
    PartitionEntry entry;
    entry.kind = kind_;
    entry.generation = generation_;
    entry.first_key = entries.front().key;
    entry.last_key = entries.back().key;
    entry.count = entries.size();
    try {
      {
        util::UniqueFd fd = util::OpenFile(file, O_RDONLY);
        entry.size = util::FileSize(fd.get(), file);
        entry.sha256 = util::Sha256HexOfFile(fd.get(), file, 0, entry.size);
      }
      // A file of that name holds these bytes already (content-addressed).
      const std::string final_path = out_dir_ + "/" + entry.sha256;
      if (util::PathExists(final_path)) {
        util::RemoveFile(file);
      } else {
        util::Rename(file, final_path);
      }
    } catch (...) {
      util::RemoveFileQuietly(file);
      throw;
    }
    written_->insert(entry.sha256);
    return entry;
  }

 private:
  PartitionKind kind_;
  uint64_t generation_;
  std::string out_dir_;
  std::set<std::string>* written_;
};

// Splits `entries` into runs of about `target` estimated file bytes each
// (all of them in one run when they fit in `max_one`).
std::vector<std::pair<size_t, size_t>> Cut(const std::vector<Entry>& entries, uint64_t target,
                                           uint64_t max_one) {
  uint64_t payload = 0;
  for (const Entry& e : entries) payload += e.bytes();
  std::vector<std::pair<size_t, size_t>> runs;
  if (entries.empty()) return runs;
  if (EstimatedFileBytes(payload) <= max_one) {
    runs.emplace_back(0, entries.size());
    return runs;
  }
  // Pieces of equal payload, as many as the target needs.
  const uint64_t pieces = (EstimatedFileBytes(payload) + target - 1) / target;
  const uint64_t per_piece = payload / pieces + 1;
  size_t begin = 0;
  uint64_t acc = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    acc += entries[i].bytes();
    if (acc >= per_piece && i + 1 < entries.size()) {
      runs.emplace_back(begin, i + 1);
      begin = i + 1;
      acc = 0;
    }
  }
  runs.emplace_back(begin, entries.size());
  return runs;
}

// ---- the dataset's entries -------------------------------------------------

// One read snapshot of a dataset's index, entries by kind in key order.
class DatasetEntries {
 public:
  explicit DatasetEntries(const Dataset& dataset) : handles_(IndexOf(dataset)) {
    index::Env& env = *handles_.env;
    handles_.query.Refresh(env);
    const QueryDbHandles q = handles_.query.Load();
    dbis_[static_cast<int>(PartitionKind::kVideos)] = handles_.videos;
    dbis_[static_cast<int>(PartitionKind::kMetaIndex)] = q.meta_index;
    dbis_[static_cast<int>(PartitionKind::kOrder)] = env.OpenDb(index::kOrderDb, false);
    dbis_[static_cast<int>(PartitionKind::kChunks)] = env.OpenDb(index::kChunksDb, false);
    dbis_[static_cast<int>(PartitionKind::kSplitMembers)] = q.split_members;
    meta_fields_dbi_ = q.meta_fields;
    splits_dbi_ = q.splits;
    info_dbi_ = env.OpenDb(index::kInfoDb, false);
    try {
      changes_dbi_ = env.OpenDb(index::kChangesDb, false);
    } catch (const NotFoundError&) {
      changes_dbi_ = 0;  // no change record: every build reads the whole index
    }
    txn_ = std::make_unique<index::Txn>(env.BeginRead());
  }

  // Whether the change record holds every change since the root `base`.
  bool ChangesCover(const std::string& base) const {
    return changes_dbi_ != 0 && index::ChangeRecordCovers(*txn_, changes_dbi_, base);
  }

  // A key the change record holds for `kind`, and its value before.
  struct Changed {
    std::string key;
    bool existed = false;
    std::string before;
  };
  // The change record's keys of `kind` (index/change_record.h), in key order.
  std::vector<Changed> Changes(uint8_t kind) const {
    std::vector<Changed> out;
    const std::string prefix(1, static_cast<char>(kind));
    index::Cursor cursor(*txn_, changes_dbi_);
    for (bool ok = cursor.Seek(prefix); ok && cursor.key().substr(0, 1) == prefix;
         ok = cursor.Next()) {
      const std::optional<index::ChangeBefore> before = index::DecodeChangeBefore(cursor.value());
      if (!before) {
        throw CorruptionError("partition " + handles_.dir + ": a change record entry is damaged");
      }
      out.push_back(Changed{std::string(cursor.key().substr(1)), before->existed,
                            std::string(before->value)});
    }
    return out;
  }

  // The record of video `id` as the index holds it, or nullopt.
  std::optional<std::string_view> StoredVideo(std::string_view id) const {
    std::string_view value;
    if (!txn_->Get(handles_.videos, id, &value)) return std::nullopt;
    return value;
  }
  // `stored` (a record as the index holds it) sealed, as partitions hold it.
  std::string SealedVideo(std::string_view id, std::string_view stored) const {
    return handles_.sealed ? std::string(stored) : index::Seal(id, std::string(stored));
  }
  // The order key a stored record of `id` names.
  std::string OrderKeyOf(std::string_view id, std::string_view stored) const {
    const std::string where = "partition " + handles_.dir;
    const std::string_view record =
        handles_.sealed ? index::Unseal(id, stored, index::RecordKind::kVideo, where) : stored;
    const index::VideoMetaView v = index::DecodeVideoMeta(record, id);
    return index::OrderKey(v.chunk, v.seq);
  }
  // The id at order key `key`, or nullopt.
  std::optional<std::string_view> OrderId(std::string_view key) const {
    std::string_view id;
    if (!txn_->Get(dbis_[static_cast<int>(PartitionKind::kOrder)], key, &id)) return std::nullopt;
    return id;
  }
  // A videos or meta_index entry's value in a partition (a video's: its
  // order key), from the index's value `stored` of `key`.
  std::string LsmValue(PartitionKind kind, std::string_view key, std::string_view stored) const {
    return kind == PartitionKind::kVideos ? OrderKeyOf(key, stored) : std::string(stored);
  }
  // The index's value of `key` in a videos or meta_index database.
  std::optional<std::string_view> Stored(PartitionKind kind, std::string_view key) const {
    std::string_view value;
    const index::Dbi dbi = dbis_[static_cast<int>(kind)];
    if (dbi == 0 || !txn_->Get(dbi, key, &value)) return std::nullopt;
    return value;
  }

  bool sealed() const { return handles_.sealed; }
  const std::string& name() const { return handles_.dir; }

  std::string InfoBytes() const {
    std::string_view value;
    if (!txn_->Get(info_dbi_, index::kDatasetInfoKey, &value)) {
      throw CorruptionError("partition " + handles_.dir + ": the index has no dataset info");
    }
    return std::string(value);
  }

  std::vector<index::MetaFieldEntry> MetaFields() const {
    std::vector<index::MetaFieldEntry> out;
    if (meta_fields_dbi_ == 0) return out;
    index::Cursor cursor(*txn_, meta_fields_dbi_);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
      index::MetaFieldEntry f;
      f.name = std::string(cursor.key());
      const index::MetaFieldValue value = index::DecodeMetaField(cursor.value());
      f.number = value.number;
      f.form = value.form;
      out.push_back(std::move(f));
    }
    return out;
  }

  // The named splits, by name.
  std::vector<index::SplitEntry> Splits() const {
    std::vector<index::SplitEntry> out;
    if (splits_dbi_ == 0) return out;
    index::Cursor cursor(*txn_, splits_dbi_);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
      const index::SplitHeader h = index::DecodeSplitHeader(cursor.value(), cursor.key());
      index::SplitEntry e;
      e.name = std::string(cursor.key());
      e.number = h.number;
      e.count = h.count;
      out.push_back(std::move(e));
    }
    return out;
  }

  // The entries of `kind` in key order, logical values as a partition of
  // the current format stores them (kPartitionRootFormat): video and chunk
  // records sealed; a video's entry its order key; an order entry the id
  // and its record. Valid while this object is.
  class Cursor {
   public:
    bool Valid() const { return valid_; }
    std::string_view key() const { return cursor_->key(); }
    std::string_view value() const { return made_ ? *made_ : cursor_->value(); }
    void Next() {
      valid_ = cursor_ && cursor_->Next();
      Set();
    }

   private:
    friend class DatasetEntries;
    Cursor(const DatasetEntries& data, PartitionKind kind, uint32_t format,
           std::string_view from = {})
        : data_(data), kind_(kind), seal_(!data.handles_.sealed), clustered_(format >= 2) {
      const index::Dbi dbi = data.dbis_[static_cast<int>(kind)];
      if (dbi == 0) return;  // no meta index
      cursor_ = std::make_unique<index::Cursor>(*data.txn_, dbi);
      valid_ = from.empty() ? cursor_->First() : cursor_->Seek(from);
      Set();
    }
    // The sealed record of video `id`, as the dataset's index holds it.
    std::string SealedVideo(std::string_view id, std::string_view stored) const {
      return seal_ ? index::Seal(id, std::string(stored)) : std::string(stored);
    }
    void Set() {
      made_.reset();
      if (!valid_) return;
      const std::string_view key = cursor_->key(), value = cursor_->value();
      if (!clustered_ && kind_ == PartitionKind::kOrder) return;  // format 1: the id
      if (!clustered_ && kind_ == PartitionKind::kVideos) {       // format 1: the record
        if (seal_) made_ = index::Seal(key, std::string(value));
        return;
      }
      switch (kind_) {
        case PartitionKind::kVideos: {
          // The order key the record names (its chunk and sequence).
          const std::string where = "partition " + data_.name();
          const std::string_view record =
              seal_ ? value : index::Unseal(key, value, index::RecordKind::kVideo, where);
          const index::VideoMetaView v = index::DecodeVideoMeta(record, key);
          made_ = index::OrderKey(v.chunk, v.seq);
          break;
        }
        case PartitionKind::kOrder: {
          // The id, and the record it names.
          std::string_view stored;
          if (value.size() > 0xffff || !data_.txn_->Get(data_.dbis_[0], value, &stored)) {
            throw CorruptionError("partition " + data_.name() + ": the order table lists id '" +
                                  std::string(value) + "' that has no record");
          }
          std::string out;
          util::PutFixedBig(&out, value.size(), 2);
          out.append(value);
          out += SealedVideo(value, stored);
          made_ = std::move(out);
          break;
        }
        case PartitionKind::kChunks:
          if (seal_) made_ = index::Seal(key, std::string(value));
          break;
        case PartitionKind::kMetaIndex:
        case PartitionKind::kSplitMembers:
        case PartitionKind::kRecords:  // never read from the dataset: made with the order's
          break;
      }
    }
    const DatasetEntries& data_;
    PartitionKind kind_;
    bool seal_;
    bool clustered_;
    std::unique_ptr<index::Cursor> cursor_;
    bool valid_ = false;
    std::optional<std::string> made_;
  };
  Cursor Entries(PartitionKind kind, uint32_t format) const { return Cursor(*this, kind, format); }
  // From the first key >= `from`.
  Cursor Entries(PartitionKind kind, uint32_t format, std::string_view from) const {
    return Cursor(*this, kind, format, from);
  }

 private:
  const IndexHandles& handles_;
  index::Dbi dbis_[index::kPartitionKinds] = {0, 0, 0, 0, 0};
  index::Dbi meta_fields_dbi_ = 0;
  index::Dbi splits_dbi_ = 0;
  index::Dbi info_dbi_ = 0;
  index::Dbi changes_dbi_ = 0;
  std::unique_ptr<index::Txn> txn_;
};

// Reads every logical entry of a partition.
std::vector<Entry> ReadAll(const PartitionFile& file) {
  std::vector<Entry> out;
  out.reserve(file.entry.count);
  index::Txn txn = file.env->BeginRead();
  index::Cursor cursor(txn, file.dbi);
  for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
    Entry e;
    e.key = std::string(
        LogicalKey(file.entry.kind, cursor.key(), cursor.value(), file.entry, file.path));
    e.value = std::string(LogicalValue(file.entry.kind, cursor.value()));
    out.push_back(std::move(e));
  }
  return out;
}

// Builds the base level of one kind with stable boundaries: the entries of
// the dataset that fall in a previous base partition's range [its first
// key, the next one's) keep that partition when they are the same entries,
// and are rewritten (split past twice the target) when they are not. With
// no previous partitions, cuts at the target.
class RangeStableBuilder {
 public:
  RangeStableBuilder(std::vector<PartitionEntry> previous, const PartitionFetch& fetch,
                     const PartitionOptions& options, PartitionWriter* writer,
                     std::vector<PartitionEntry>* out)
      : previous_(std::move(previous)),
        fetch_(fetch),
        options_(options),
        writer_(writer),
        out_(out) {}

  // Order partitions: a range whose entries have the previous partition's
  // keys and ids keeps it, and the records that differ are added to
  // `deltas` (as record delta entries, in key order).
  void KeepWithRecordDeltas(std::vector<Entry>* deltas) { record_deltas_ = deltas; }

  void Add(std::string_view key, std::string_view value) {
    while (range_ + 1 < previous_.size() && key >= previous_[range_ + 1].first_key) {
      FinishRange();
      ++range_;
    }
    buffer_.push_back(Entry{std::string(key), std::string(value)});
    buffer_bytes_ += buffer_.back().bytes();
    // A range that grew far past the target (a large append at the tail)
    // cannot be its old partition: write full pieces as they come.
    if (EstimatedFileBytes(buffer_bytes_) > 4 * options_.target_bytes) {
      changed_ = true;
      FlushPieces(2 * options_.target_bytes);
    }
  }

  void Finish() {
    FinishRange();
    while (range_ + 1 < previous_.size()) {
      ++range_;
      FinishRange();
    }
  }

 private:
  // Writes target-sized pieces from the front of the buffer while more than
  // `keep` estimated bytes would stay.
  void FlushPieces(uint64_t keep) {
    size_t begin = 0;
    uint64_t acc = 0, left = buffer_bytes_;
    std::vector<Entry> piece;
    for (size_t i = 0; i < buffer_.size() && EstimatedFileBytes(left) > keep; ++i) {
      acc += buffer_[i].bytes();
      left -= buffer_[i].bytes();
      if (EstimatedFileBytes(acc) >= options_.target_bytes) {
        piece.assign(std::make_move_iterator(buffer_.begin() + static_cast<ptrdiff_t>(begin)),
                     std::make_move_iterator(buffer_.begin() + static_cast<ptrdiff_t>(i + 1)));
        out_->push_back(writer_->Write(piece));
        begin = i + 1;
        acc = 0;
      }
    }
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(begin));
    buffer_bytes_ = 0;
    for (const Entry& e : buffer_) buffer_bytes_ += e.bytes();
  }

  void FinishRange() {
    uint64_t max_one = previous_.empty() ? options_.target_bytes : 2 * options_.target_bytes;
    if (!previous_.empty() && !changed_) {
      const PartitionEntry& old = previous_[range_];
      // The last range may keep its partition and get new ones after it
      // when its entries are all still there, first (appends to the order
      // table and the chunk list come at the tail), and the partition is
      // not small (a small one is rewritten with the new entries, so that
      // appends do not leave a trail of small partitions).
      const bool last = range_ + 1 == previous_.size();
      const bool keep_prefix = last && old.size >= options_.target_bytes / 2;
      if (buffer_.size() == old.count || (keep_prefix && buffer_.size() > old.count)) {
        const std::string path = fetch_(old);
        const std::unique_ptr<PartitionFile> file = OpenPartitionFile(path, old);
        const std::vector<Entry> old_entries = ReadAll(*file);
        bool keep = std::equal(old_entries.begin(), old_entries.end(), buffer_.begin());
        if (!keep && record_deltas_ != nullptr && SameIds(old_entries, file->path)) {
          // Records changed in place: the partition stays, the records
          // that differ go to the record delta level.
          for (size_t i = 0; i < old_entries.size(); ++i) {
            if (old_entries[i].value == buffer_[i].value) continue;
            const OrderValue now = ParseOrderValue(buffer_[i].value, old, file->path);
            const OrderValue base = ParseOrderValue(old_entries[i].value, old, file->path);
            record_deltas_->push_back(
                Entry{buffer_[i].key, EncodeRecordDelta(now.id, now.record, base.record)});
          }
          keep = true;
        }
        if (keep) {
          out_->push_back(old);
          buffer_.erase(buffer_.begin(),
                        buffer_.begin() + static_cast<ptrdiff_t>(old_entries.size()));
          max_one = options_.target_bytes;
        }
      }
    }
    for (const auto& [begin, end] : Cut(buffer_, options_.target_bytes, max_one)) {
      std::vector<Entry> piece(buffer_.begin() + static_cast<ptrdiff_t>(begin),
                               buffer_.begin() + static_cast<ptrdiff_t>(end));
      out_->push_back(writer_->Write(piece));
    }
    Reset();
  }

  // Whether the first entries of the buffer are `old`'s keys and ids (order
  // entries, whose records may differ).
  bool SameIds(const std::vector<Entry>& old, const std::string& path) const {
    if (buffer_.size() < old.size() || previous_.empty()) return false;
    for (size_t i = 0; i < old.size(); ++i) {
      if (old[i].key != buffer_[i].key) return false;
      if (ParseOrderValue(old[i].value, previous_[range_], path).id !=
          ParseOrderValue(buffer_[i].value, previous_[range_], path).id) {
        return false;
      }
    }
    return true;
  }

  void Reset() {
    buffer_.clear();
    buffer_bytes_ = 0;
    changed_ = false;
  }

  std::vector<PartitionEntry> previous_;
  const PartitionFetch& fetch_;
  const PartitionOptions& options_;
  PartitionWriter* writer_;
  std::vector<PartitionEntry>* out_;
  std::vector<Entry>* record_deltas_ = nullptr;
  size_t range_ = 0;
  std::vector<Entry> buffer_;
  uint64_t buffer_bytes_ = 0;
  bool changed_ = false;
};

std::vector<PartitionEntry> PartitionsOf(const PartitionRoot& root, PartitionKind kind, bool base) {
  std::vector<PartitionEntry> out;
  for (const PartitionEntry& p : root.partitions) {
    if (p.kind == kind && (p.generation == 0) == base) out.push_back(p);
  }
  return out;
}

// ---- building from the change record ---------------------------------------

// A videos or meta_index kind's changes since the previous root, by a walk
// of the dataset's entries and the previous partitions (base and deltas
// merged) together: every key whose value differs, tombstones for keys gone.
void ScanChanges(const DatasetEntries& data, const PartitionedIndex& old, PartitionKind kind,
                 uint32_t format,
                 const std::function<void(std::string_view key, std::string_view value)>& change) {
  DatasetEntries::Cursor current = data.Entries(kind, format);
  old.Scan(kind, {}, {}, [&](std::string_view key, std::string_view value) {
    for (; current.Valid() && current.key() < key; current.Next()) {
      change(current.key(), current.value());
    }
    if (current.Valid() && current.key() == key) {
      if (current.value() != value) change(current.key(), current.value());
      current.Next();
    } else {
      change(key, {});  // removed: a tombstone
    }
    return true;
  });
  for (; current.Valid(); current.Next()) change(current.key(), current.value());
}

// A videos or meta_index kind's changes since the previous root, from the
// change record: each key it holds whose value differs from the one it had
// then (a tombstone, an empty value, for one removed). In key order.
std::vector<Entry> LsmChanges(const DatasetEntries& data, PartitionKind kind) {
  std::vector<Entry> out;
  for (const DatasetEntries::Changed& c : data.Changes(static_cast<uint8_t>(kind))) {
    const std::optional<std::string_view> stored = data.Stored(kind, c.key);
    std::optional<std::string> now, was;
    if (stored) now = data.LsmValue(kind, c.key, *stored);
    if (c.existed) was = data.LsmValue(kind, c.key, c.before);
    if (now == was) continue;
    out.push_back(Entry{c.key, now ? *now : std::string()});
  }
  return out;
}

// The order partitions and the record delta level from the change record:
// a range of the previous order partitions that no order key was added to
// or removed from keeps its partition (appends after a last partition at
// least half full keep it too, and follow it); another is rewritten from
// the index. Records changed in place in kept ranges join the previous
// record deltas. Returns false, having written nothing to `out`, when the
// full build must run instead (no previous order partitions, or a delta
// past a tenth of the order partitions: a rebase).
bool OrderFromChanges(const DatasetEntries& data, const std::vector<PartitionEntry>& base,
                      const std::vector<PartitionEntry>& previous_records,
                      const PartitionFetch& fetch, const PartitionOptions& options, uint32_t format,
                      PartitionWriter* writer, std::vector<PartitionEntry>* out,
                      std::vector<Entry>* records) {
  if (base.empty()) return false;
  const auto range_of = [&](std::string_view key) -> size_t {
    auto it = std::upper_bound(
        base.begin(), base.end(), key,
        [](std::string_view k, const PartitionEntry& p) { return k < p.first_key; });
    return it == base.begin() ? 0 : static_cast<size_t>(it - base.begin()) - 1;
  };
  const size_t last = base.size() - 1;
  std::vector<bool> rewrite(base.size(), false);
  bool appended = false;
  for (const DatasetEntries::Changed& c : data.Changes(index::kChangedOrder)) {
    const std::optional<std::string_view> id = data.OrderId(c.key);
    if (c.existed && id && *id == c.before) continue;  // written again as it was
    if (!c.existed && !id) continue;                   // added and removed since
    const size_t r = range_of(c.key);
    if (r == last && c.key > base[last].last_key) {
      appended = true;
    } else {
      rewrite[r] = true;
    }
  }
  const bool keep_last = appended && !rewrite[last] && base[last].size >= options.target_bytes / 2;
  if (appended && !keep_last) rewrite[last] = true;

  // The previous record deltas, then the records changed in place since.
  std::map<std::string, std::string> deltas;  // order key -> record delta value
  for (const PartitionEntry& p : previous_records) {
    const std::unique_ptr<PartitionFile> file = OpenPartitionFile(fetch(p), p);
    for (Entry& e : ReadAll(*file)) deltas[e.key] = std::move(e.value);
  }
  for (const DatasetEntries::Changed& c : data.Changes(index::kChangedVideo)) {
    if (!c.existed) continue;  // a new id: its order key is new too
    const std::optional<std::string_view> stored = data.StoredVideo(c.key);
    if (!stored) continue;  // removed: its order key is gone
    const std::string key = data.OrderKeyOf(c.key, *stored);
    if (key != data.OrderKeyOf(c.key, c.before)) continue;  // moved: order keys changed
    std::string base_record;
    const auto previous = deltas.find(key);
    if (previous != deltas.end()) {
      const PartitionEntry where{};
      base_record = std::string(ParseRecordDelta(previous->second, where, data.name()).base);
    } else {
      base_record = data.SealedVideo(c.key, c.before);
    }
    deltas[key] = EncodeRecordDelta(c.key, data.SealedVideo(c.key, *stored), base_record);
  }
  uint64_t delta_bytes = 0, order_bytes = 0;
  for (const PartitionEntry& p : base) order_bytes += p.size;
  std::vector<Entry> kept;
  for (auto& [key, value] : deltas) {
    const size_t r = range_of(key);
    if (rewrite[r] || key > base[r].last_key) continue;  // rewritten from the index
    const PartitionEntry where{};
    const RecordDelta d = ParseRecordDelta(value, where, data.name());
    if (d.record == d.base) continue;  // edited back to what the order partition holds
    const std::optional<std::string_view> id = data.OrderId(key);
    if (!id || *id != d.id) continue;  // removed (its range is rewritten)
    kept.push_back(Entry{key, std::move(value)});
    delta_bytes += kept.back().bytes();
  }
  if (EstimatedFileBytes(delta_bytes) > order_bytes / 10 && !kept.empty()) return false;

  // Entries of the index's order table in [from, to) (`to` empty: no bound).
  const auto read = [&](const std::string& from, const std::string& to) {
    std::vector<Entry> entries;
    for (DatasetEntries::Cursor c = data.Entries(PartitionKind::kOrder, format, from);
         c.Valid() && (to.empty() || c.key() < to); c.Next()) {
      entries.push_back(Entry{std::string(c.key()), std::string(c.value())});
    }
    return entries;
  };
  const auto write = [&](const std::vector<Entry>& entries, uint64_t max_one) {
    for (const auto& [begin, end] : Cut(entries, options.target_bytes, max_one)) {
      out->push_back(
          writer->Write(std::vector<Entry>(entries.begin() + static_cast<ptrdiff_t>(begin),
                                           entries.begin() + static_cast<ptrdiff_t>(end))));
    }
  };
  for (size_t r = 0; r < base.size(); ++r) {
    if (!rewrite[r]) {
      out->push_back(base[r]);
      continue;
    }
    write(read(r == 0 ? std::string() : base[r].first_key,
               r == last ? std::string() : base[r + 1].first_key),
          2 * options.target_bytes);
  }
  if (keep_last) write(read(base[last].last_key + std::string(1, '\0'), {}), options.target_bytes);
  *records = std::move(kept);
  return true;
}

}  // namespace

namespace {

// Estimated bytes of a partition's entry in a root.
uint64_t RootEntryBytes(const PartitionEntry& p) {
  return p.first_key.size() + p.last_key.size() + 32 + 96;
}

// Format 3: lists each group whose entries would take more than 4 pages by
// pages of about `page_bytes`, each written to `out_dir` as <sha256>.
void PageRoot(PartitionRoot* root, uint64_t page_bytes, const std::string& out_dir) {
  std::vector<PartitionEntry>& parts = root->partitions;
  for (size_t begin = 0; begin < parts.size();) {
    size_t end = begin;
    uint64_t bytes = 0;
    while (end < parts.size() && parts[end].kind == parts[begin].kind &&
           parts[end].generation == parts[begin].generation) {
      bytes += RootEntryBytes(parts[end++]);
    }
    if (bytes > 4 * page_bytes) {
      for (size_t first = begin; first < end;) {
        size_t last = first;
        uint64_t page_size = 0;
        while (last < end &&
               (last == first || page_size + RootEntryBytes(parts[last]) <= page_bytes)) {
          page_size += RootEntryBytes(parts[last++]);
        }
        const std::vector<PartitionEntry> run(parts.begin() + static_cast<ptrdiff_t>(first),
                                              parts.begin() + static_cast<ptrdiff_t>(last));
        index::RootPage page;
        page.kind = run.front().kind;
        page.generation = run.front().generation;
        page.first_key = run.front().first_key;
        page.last_key = run.back().last_key;
        page.first_position = run.front().first_position;
        page.partitions = run.size();
        for (const PartitionEntry& p : run) {
          page.count += p.count;
          page.partition_bytes += p.size;
        }
        const std::string bytes_of_page = index::EncodeRootPage(run);
        page.size = bytes_of_page.size();
        page.sha256 = util::Sha256Hex(bytes_of_page);
        const std::string path = out_dir + "/" + page.sha256;
        if (!util::PathExists(path)) util::WriteFileAtomically(path, bytes_of_page);
        root->pages.push_back(std::move(page));
        first = last;
      }
    }
    begin = end;
  }
  root->format_version =
      root->pages.empty() ? index::kUnpagedPartitionRootFormat : index::kPagedPartitionRootFormat;
}

// Formats whose partitions hold the same entries (3 pages the root of 2).
uint32_t EntriesFormat(uint32_t format) { return std::min<uint32_t>(format, 2); }

}  // namespace

BuildResult BuildPartitions(const Dataset& dataset, const index::PartitionRoot* previous,
                            const PartitionOptions& options, const std::string& out_dir) {
  if (options.target_bytes < 16 * kPageSize) {
    throw InvalidArgumentError("build partitions: a target of " +
                               std::to_string(options.target_bytes) + " bytes is too small");
  }
  util::MakeDirectories(out_dir);
  if (options.format < index::kOldestPartitionRootFormat ||
      options.format > index::kPartitionRootFormat) {
    throw InvalidArgumentError("build partitions: no format " + std::to_string(options.format));
  }
  // A root of another format has other values: everything is built anew
  // (as the next generation).
  const uint64_t generation = previous != nullptr ? previous->generation + 1 : 1;
  if (previous != nullptr &&
      EntriesFormat(previous->format_version) != EntriesFormat(options.format)) {
    previous = nullptr;
  }
  if (previous != nullptr && !Expanded(*previous)) {
    throw InvalidArgumentError(
        "build partitions: the previous root lists pages, not partitions "
        "(ExpandPartitionRoot)");
  }
  if (options.page_bytes < 128) {
    throw InvalidArgumentError("build partitions: root pages of " +
                               std::to_string(options.page_bytes) + " bytes are too small");
  }
  BuildResult result;
  // What the build reads of the previous root's partitions, counted.
  const PartitionFetch fetch =
      [&result, inner = options.previous ? options.previous
                                         : DirectoryFetch(out_dir)](const PartitionEntry& entry) {
        std::string path = inner(entry);
        result.previous_bytes_read += entry.size;
        return path;
      };
  DatasetEntries data(dataset);
  // The change record says what changed since the previous root: the
  // build reads that instead of the whole index (format 4; a record that
  // does not cover the previous root is not used).
  const bool from_changes = previous != nullptr && options.format >= 4 &&
                            !options.previous_sha256.empty() &&
                            data.ChangesCover(options.previous_sha256);
  result.from_changes = from_changes;
  PartitionRoot& root = result.root;
  root.format_version = options.format;
  root.generation = generation;
  root.sealed = true;
  root.dataset_info = data.InfoBytes();
  root.meta_fields = data.MetaFields();
  // Format 2 carries the named splits; format 1 leaves them out and says so.
  if (options.format >= 2) {
    root.splits = data.Splits();
  } else {
    root.splits_omitted = !data.Splits().empty();
  }
  std::set<std::string> written;
  std::unique_ptr<PartitionedIndex> old;
  if (previous != nullptr) {
    old = std::make_unique<PartitionedIndex>(*previous, fetch, out_dir + " (previous root)");
  }

  std::vector<PartitionEntry> record_partitions;  // made with the order's
  for (int k = 0; k < index::kPartitionKinds; ++k) {
    const auto kind = static_cast<PartitionKind>(k);
    std::vector<PartitionEntry> base, deltas;
    if (previous != nullptr) {
      base = PartitionsOf(*previous, kind, true);
      deltas = PartitionsOf(*previous, kind, false);
    }
    if (kind == PartitionKind::kSplitMembers && root.format_version < 2) continue;
    const bool lsm = kind == PartitionKind::kVideos || kind == PartitionKind::kMetaIndex;
    std::set<uint64_t> delta_generations;
    for (const PartitionEntry& d : deltas) delta_generations.insert(d.generation);

    std::vector<PartitionEntry> out;
    if (lsm && previous != nullptr) {
      // The changes since the previous root: the dataset's entries against
      // the previous base with its deltas applied.
      std::vector<Entry> changes;
      uint64_t change_bytes = 0, base_bytes = 0;
      for (const PartitionEntry& p : base) base_bytes += p.size;
      auto change = [&](std::string_view key, std::string_view value) {
        changes.push_back(Entry{std::string(key), std::string(value)});
        change_bytes += changes.back().bytes();
      };
      if (from_changes) {
        for (Entry& e : LsmChanges(data, kind)) change(e.key, e.value);
      } else {
        ScanChanges(data, *old, kind, root.format_version, change);
      }
      // Merge when the deltas would be too many, or when the changes are
      // not small next to the base (a first meta index, a base that is
      // empty): a lookup then keeps probing few partitions.
      const bool merge = delta_generations.size() + 1 > options.max_deltas ||
                         EstimatedFileBytes(change_bytes) > base_bytes / 4;
      if (changes.empty()) {
        out = base;
        out.insert(out.end(), deltas.begin(), deltas.end());
      } else if (!merge) {
        out = base;
        out.insert(out.end(), deltas.begin(), deltas.end());
        PartitionWriter writer(kind, root.generation, out_dir, &written);
        for (const auto& [begin, end] : Cut(changes, options.target_bytes, options.target_bytes)) {
          out.push_back(
              writer.Write(std::vector<Entry>(changes.begin() + static_cast<ptrdiff_t>(begin),
                                              changes.begin() + static_cast<ptrdiff_t>(end))));
        }
      } else {
        // Merge: the base rebuilt with stable boundaries; only the ranges
        // that received changes differ.
        changes.clear();
        result.merged = true;
        PartitionWriter writer(kind, 0, out_dir, &written);
        RangeStableBuilder builder(base, fetch, options, &writer, &out);
        for (DatasetEntries::Cursor c = data.Entries(kind, root.format_version); c.Valid();
             c.Next()) {
          builder.Add(c.key(), c.value());
        }
        builder.Finish();
      }
    } else if (kind == PartitionKind::kRecords) {
      out = std::move(record_partitions);
    } else {
      PartitionWriter writer(kind, 0, out_dir, &written);
      const auto build_base = [&](std::vector<Entry>* record_deltas) {
        out.clear();
        RangeStableBuilder builder(base, fetch, options, &writer, &out);
        if (record_deltas != nullptr) builder.KeepWithRecordDeltas(record_deltas);
        for (DatasetEntries::Cursor c = data.Entries(kind, root.format_version); c.Valid();
             c.Next()) {
          builder.Add(c.key(), c.value());
        }
        builder.Finish();
      };
      if (kind == PartitionKind::kOrder && options.format >= 4 && previous != nullptr) {
        // Records changed in place go to the record delta level, against
        // the previous order partitions, unless the delta would be more
        // than a tenth of them: then the order partitions are rebuilt (a
        // rebase) and the level empties.
        std::vector<Entry> records;
        if (!from_changes ||
            !OrderFromChanges(data, base, PartitionsOf(*previous, PartitionKind::kRecords, true),
                              fetch, options, root.format_version, &writer, &out, &records)) {
          build_base(&records);
        }
        uint64_t delta_bytes = 0, order_bytes = 0;
        for (const Entry& e : records) delta_bytes += e.bytes();
        for (const PartitionEntry& p : out) order_bytes += p.size;
        if (!records.empty() && EstimatedFileBytes(delta_bytes) > order_bytes / 10) {
          result.merged = true;
          build_base(nullptr);
        } else if (!records.empty()) {
          PartitionWriter delta_writer(PartitionKind::kRecords, 0, out_dir, &written);
          RangeStableBuilder delta_builder(PartitionsOf(*previous, PartitionKind::kRecords, true),
                                           fetch, options, &delta_writer, &record_partitions);
          for (const Entry& e : records) delta_builder.Add(e.key, e.value);
          delta_builder.Finish();
        }
      } else {
        build_base(nullptr);
      }
    }
    uint64_t position = 0;
    for (PartitionEntry& p : out) {
      if (kind == PartitionKind::kOrder) {
        p.first_position = position;
        position += p.count;
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const PartitionEntry& a, const PartitionEntry& b) {
      return a.generation < b.generation;
    });
    root.partitions.insert(root.partitions.end(), out.begin(), out.end());
  }
  if (options.format >= 3) PageRoot(&root, options.page_bytes, out_dir);
  // Format 4 only for a root with a record delta level: another keeps the
  // bytes older readers read.
  for (const PartitionEntry& p : root.partitions) {
    if (p.kind == PartitionKind::kRecords) root.format_version = index::kPartitionRootFormat;
  }
  index::ValidatePartitionRoot(root, out_dir);

  std::set<std::string> listed_before;
  if (previous != nullptr) {
    for (const PartitionEntry& p : previous->partitions) listed_before.insert(p.sha256);
  }
  for (const PartitionEntry& p : root.partitions) {
    result.total_bytes += p.size;
    if (listed_before.count(p.sha256) == 0 &&
        std::find(result.new_partitions.begin(), result.new_partitions.end(), p.sha256) ==
            result.new_partitions.end()) {
      result.new_partitions.push_back(p.sha256);
      result.new_bytes += p.size;
    }
  }
  result.root_bytes = index::EncodePartitionRoot(root);
  result.root_sha256 = util::Sha256Hex(result.root_bytes);
  util::WriteFileAtomically(out_dir + "/" + result.root_sha256, result.root_bytes);
  util::SyncDirectory(out_dir);
  return result;
}

void StartChangeRecord(const Dataset& dataset, const std::string& root_sha256) {
  index::Env& env = *IndexOf(dataset).env;
  const index::Dbi changes = env.OpenDb(index::kChangesDb, true);
  env.Update([&](index::Txn& txn) { index::StartChangeRecord(txn, changes, root_sha256); });
}

}  // namespace gulpdb::engine
