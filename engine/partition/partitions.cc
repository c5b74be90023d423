#include "engine/partition/partitions.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <utility>

#include "engine/core/dataset_view.h"
#include "engine/query/index_handles.h"
#include "engine/query/meta_value.h"
#include "gulpdb/error.h"
#include "index/lmdb_verify.h"
#include "index/query_keys.h"
#include "index/seal.h"
#include "remote/payload_hash.h"
#include "util/file_io.h"

namespace gulpdb::engine {
namespace {

using index::PartitionEntry;
using index::PartitionKind;
using index::PartitionRoot;

constexpr size_t kOrderKeySize = 12;  // index::OrderKey: chunk (4) + seq (8)
constexpr uint64_t kPageSize = 4096;  // LMDB's page on the machines we build on
// Bytes a key/value pair takes in a leaf page besides its key and value:
// the node header (8) and its slot in the page's index (2).
constexpr uint64_t kNodeOverhead = 10;

std::string BigEndian32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 3; i >= 0; --i) {
    out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  return out;
}

bool IsSha256Name(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Estimated bytes of a partition file holding entries of `payload` bytes
// (keys, values and node overheads): leaf pages filled in key order
// (MDB_APPEND) lose about a twentieth to entries that do not fit a page's
// end, plus branch pages and the two meta pages and the main database's.
uint64_t EstimatedFileBytes(uint64_t payload) { return payload + payload / 16 + 4 * kPageSize; }

// One logical entry: the key and value a reader sees.
struct Entry {
  std::string key;
  std::string value;
  uint64_t bytes() const { return key.size() + value.size() + kNodeOverhead; }
  bool operator==(const Entry& o) const { return key == o.key && value == o.value; }
};

// ---- reading a partition file ------------------------------------------------

// A verified partition file, open read-only.
struct PartitionFile {
  PartitionEntry entry;
  std::string path;
  std::unique_ptr<index::Env> env;
  index::Dbi dbi = 0;
};

[[noreturn]] void PartitionCorrupt(const PartitionEntry& entry, const std::string& path,
                                   const std::string& detail) {
  throw CorruptionError("open partition " + entry.sha256 + " (" + path + "): " + detail);
}

// The logical key of a stored entry.
std::string_view LogicalKey(PartitionKind kind, std::string_view key, std::string_view value,
                            const PartitionEntry& entry, const std::string& path) {
  if (kind != PartitionKind::kOrder) return key;
  if (value.size() <= kOrderKeySize) PartitionCorrupt(entry, path, "an order entry is too short");
  return value.substr(0, kOrderKeySize);
}
std::string_view LogicalValue(PartitionKind kind, std::string_view value) {
  return kind == PartitionKind::kOrder ? value.substr(kOrderKeySize) : value;
}

// A format 2 order entry's value after its order key: the id and its sealed record.
struct OrderValue {
  std::string_view id;
  std::string_view record;
};
std::optional<OrderValue> SplitOrderValue(std::string_view value) {
  if (value.size() < 2) return std::nullopt;
  const size_t n =
      (static_cast<size_t>(static_cast<uint8_t>(value[0])) << 8) | static_cast<uint8_t>(value[1]);
  if (n == 0 || value.size() < 2 + n) return std::nullopt;
  return OrderValue{value.substr(2, n), value.substr(2 + n)};
}
OrderValue ParseOrderValue(std::string_view value, const PartitionEntry& entry,
                           const std::string& path) {
  std::optional<OrderValue> v = SplitOrderValue(value);
  if (!v) PartitionCorrupt(entry, path, "an order entry's id is cut short");
  return *v;
}
OrderValue ParseOrderValue(std::string_view value, const std::string& name) {
  std::optional<OrderValue> v = SplitOrderValue(value);
  if (!v) throw CorruptionError("partitioned index " + name + ": an order entry's id is cut short");
  return *v;
}

std::unique_ptr<PartitionFile> OpenPartitionFile(const std::string& path,
                                                 const PartitionEntry& entry) {
  VerifyPartitionFile(path, entry);
  auto file = std::make_unique<PartitionFile>();
  file->entry = entry;
  file->path = path;
  index::EnvOptions options;
  options.read_only = true;
  options.no_lock = true;
  options.no_subdir = true;
  options.max_dbs = 2;
  options.initial_map_size = (entry.size + kPageSize - 1) / kPageSize * kPageSize;
  try {
    file->env = index::Env::Open(path, options);
    file->dbi = file->env->OpenDb(index::PartitionKindName(entry.kind), false);
  } catch (const Error& e) {
    PartitionCorrupt(entry, path, e.what());
  }
  // The bytes are the ones the root names; their content must be too.
  index::Txn txn = file->env->BeginRead();
  if (txn.Count(file->dbi) != entry.count) {
    PartitionCorrupt(entry, path,
                     "holds " + std::to_string(txn.Count(file->dbi)) + " entries, the root says " +
                         std::to_string(entry.count));
  }
  index::Cursor cursor(txn, file->dbi);
  if (!cursor.First() ||
      LogicalKey(entry.kind, cursor.key(), cursor.value(), entry, path) != entry.first_key ||
      !cursor.Last() ||
      LogicalKey(entry.kind, cursor.key(), cursor.value(), entry, path) != entry.last_key) {
    PartitionCorrupt(entry, path, "its keys are not the range the root gives");
  }
  return file;
}

// ---- writing partitions ----------------------------------------------------

std::atomic<uint64_t> temp_counter{0};

// Cuts runs of logical entries into partition files of one kind and level.
class PartitionWriter {
 public:
  PartitionWriter(PartitionKind kind, uint64_t generation, std::string out_dir,
                  std::set<std::string>* written)
      : kind_(kind), generation_(generation), out_dir_(std::move(out_dir)), written_(written) {}

  // Writes `entries` (sorted, non-empty) as one partition and returns its entry.
  PartitionEntry Write(const std::vector<Entry>& entries) {
    const std::string stem = out_dir_ + "/.build." + std::to_string(::getpid()) + "." +
                             std::to_string(temp_counter.fetch_add(1));
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
        entry.sha256 = remote::Sha256HexOfFile(fd.get(), file, 0, entry.size);
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
    txn_ = std::make_unique<index::Txn>(env.BeginRead());
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
    Cursor(const DatasetEntries& data, PartitionKind kind, uint32_t format)
        : data_(data), kind_(kind), seal_(!data.handles_.sealed), clustered_(format >= 2) {
      const index::Dbi dbi = data.dbis_[static_cast<int>(kind)];
      if (dbi == 0) return;  // no meta index
      cursor_ = std::make_unique<index::Cursor>(*data.txn_, dbi);
      valid_ = cursor_->First();
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
          out.push_back(static_cast<char>(value.size() >> 8));
          out.push_back(static_cast<char>(value.size() & 0xff));
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

 private:
  const IndexHandles& handles_;
  index::Dbi dbis_[index::kPartitionKinds] = {0, 0, 0, 0, 0};
  index::Dbi meta_fields_dbi_ = 0;
  index::Dbi splits_dbi_ = 0;
  index::Dbi info_dbi_ = 0;
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
        if (std::equal(old_entries.begin(), old_entries.end(), buffer_.begin())) {
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

}  // namespace

// ---- public functions --------------------------------------------------------

PartitionFetch DirectoryFetch(const std::string& dir) {
  return [dir](const PartitionEntry& entry) -> std::string {
    if (!IsSha256Name(entry.sha256)) {
      throw InvalidArgumentError("fetch partition '" + entry.sha256 + "': not a SHA-256 name");
    }
    const std::string path = dir + "/" + entry.sha256;
    if (!util::PathExists(path)) {
      throw NotFoundError("fetch partition " + entry.sha256 + ": no file " + path);
    }
    return path;
  };
}

void VerifyPageBytes(std::string_view bytes, const index::RootPage& page, const std::string& name) {
  if (bytes.size() != page.size) {
    throw CorruptionError("root page " + name + ": " + std::to_string(bytes.size()) +
                          " bytes, the root says " + std::to_string(page.size));
  }
  const std::string sha = remote::Sha256Hex(bytes);
  if (sha != page.sha256) {
    throw CorruptionError("root page " + name + ": its SHA-256 is " + sha + ", the root says " +
                          page.sha256);
  }
}

PageFetch DirectoryPageFetch(const std::string& dir) {
  return [dir](const index::RootPage& page) -> std::string {
    if (!IsSha256Name(page.sha256)) {
      throw InvalidArgumentError("fetch root page '" + page.sha256 + "': not a SHA-256 name");
    }
    const std::string path = dir + "/" + page.sha256;
    if (!util::PathExists(path)) {
      throw NotFoundError("fetch root page " + page.sha256 + ": no file " + path);
    }
    // Never more than the root says: a file of another size is another page.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != page.size) {
      throw CorruptionError("root page " + path + ": " + std::to_string(st.st_size) +
                            " bytes, the root says " + std::to_string(page.size));
    }
    std::string bytes = util::ReadFile(path);
    VerifyPageBytes(bytes, page, path);
    return bytes;
  };
}

namespace {

// Whether the partitions of every paged group of `root` are listed too.
bool Expanded(const PartitionRoot& root) {
  for (const index::RootPage& page : root.pages) {
    const bool listed =
        std::any_of(root.partitions.begin(), root.partitions.end(), [&](const PartitionEntry& p) {
          return p.kind == page.kind && p.generation == page.generation;
        });
    if (!listed) return false;
  }
  return true;
}

}  // namespace

index::PartitionRoot ExpandPartitionRoot(index::PartitionRoot root, const PageFetch& fetch,
                                         const std::string& name) {
  if (root.pages.empty() || Expanded(root)) return root;
  std::vector<PartitionEntry> all;
  size_t next = 0;  // the next listed partition
  // Pages and listed partitions are both sorted by (kind, generation); a
  // group is in one or the other.
  const auto before = [](const auto& a, const auto& b) {
    return a.kind < b.kind || (a.kind == b.kind && a.generation < b.generation);
  };
  for (const index::RootPage& page : root.pages) {
    while (next < root.partitions.size() && before(root.partitions[next], page)) {
      all.push_back(std::move(root.partitions[next++]));
    }
    for (PartitionEntry& p : index::DecodeRootPage(fetch(page), page, name + " " + page.sha256)) {
      all.push_back(std::move(p));
    }
  }
  while (next < root.partitions.size()) all.push_back(std::move(root.partitions[next++]));
  root.partitions = std::move(all);
  index::ValidatePartitionRoot(root, name);
  return root;
}

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
        page.sha256 = remote::Sha256Hex(bytes_of_page);
        const std::string path = out_dir + "/" + page.sha256;
        if (!util::PathExists(path)) util::WriteFileAtomically(path, bytes_of_page);
        root->pages.push_back(std::move(page));
        first = last;
      }
    }
    begin = end;
  }
  root->format_version = root->pages.empty() ? index::kUnpagedPartitionRootFormat : 3;
}

// Formats whose partitions hold the same entries (3 pages the root of 2).
uint32_t EntriesFormat(uint32_t format) { return std::min<uint32_t>(format, 2); }

}  // namespace

void VerifyPartitionFile(const std::string& path, const index::PartitionEntry& entry) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) PartitionCorrupt(entry, path, "cannot stat the file");
  if (!S_ISREG(st.st_mode)) PartitionCorrupt(entry, path, "not a regular file");
  if (static_cast<uint64_t>(st.st_size) != entry.size) {
    PartitionCorrupt(
        entry, path,
        std::to_string(st.st_size) + " bytes, the root says " + std::to_string(entry.size));
  }
  std::string sha;
  {
    util::UniqueFd fd = util::OpenFile(path, O_RDONLY);
    sha = remote::Sha256HexOfFile(fd.get(), path, 0, entry.size);
  }
  if (sha != entry.sha256) PartitionCorrupt(entry, path, "its SHA-256 is " + sha);
  try {
    index::CheckIndexFileHeader(path);
  } catch (const CorruptionError& e) {
    PartitionCorrupt(entry, path, e.what());
  }
  const index::IndexFileReport report = index::VerifyIndexFile(path);
  if (!report.healthy()) PartitionCorrupt(entry, path, report.problems.front());
}

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
  const PartitionFetch fetch = options.previous ? options.previous : DirectoryFetch(out_dir);
  DatasetEntries data(dataset);
  BuildResult result;
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
      DatasetEntries::Cursor current = data.Entries(kind, root.format_version);
      old->Scan(kind, {}, {}, [&](std::string_view key, std::string_view value) {
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
    } else {
      PartitionWriter writer(kind, 0, out_dir, &written);
      RangeStableBuilder builder(base, fetch, options, &writer, &out);
      for (DatasetEntries::Cursor c = data.Entries(kind, root.format_version); c.Valid();
           c.Next()) {
        builder.Add(c.key(), c.value());
      }
      builder.Finish();
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
  result.root_sha256 = remote::Sha256Hex(result.root_bytes);
  util::WriteFileAtomically(out_dir + "/" + result.root_sha256, result.root_bytes);
  util::SyncDirectory(out_dir);
  return result;
}

// ---- PartitionedIndex --------------------------------------------------------

struct PartitionedIndex::Open {
  std::unique_ptr<PartitionFile> file;
};

PartitionedIndex::PartitionedIndex(index::PartitionRoot root, PartitionFetch fetch,
                                   std::string name, PageFetch pages)
    : root_(std::move(root)),
      fetch_(std::move(fetch)),
      name_(std::move(name)),
      pages_(std::move(pages)) {
  index::ValidatePartitionRoot(root_, name_);
  info_ = index::DecodeDatasetInfo(root_.dataset_info, "partition root " + name_);
  // The groups of each kind, newest delta generation first and the base
  // last; each group's slots in key order (validated). A group the root
  // lists is one slot, loaded; a paged group is one slot per page, loaded
  // on first use, unless the root lists its partitions too.
  std::map<uint64_t, Group, std::greater<>> by_generation[index::kPartitionKinds];
  std::map<uint64_t, std::vector<PartitionEntry>> listed[index::kPartitionKinds];
  for (const PartitionEntry& p : root_.partitions) {
    listed[static_cast<int>(p.kind)][p.generation].push_back(p);
  }
  for (const index::RootPage& page : root_.pages) {
    if (listed[static_cast<int>(page.kind)].count(page.generation) != 0) continue;
    Slot slot;
    slot.page = &page;
    slot.first_key = page.first_key;
    slot.last_key = page.last_key;
    slot.first_position = page.first_position;
    by_generation[static_cast<int>(page.kind)][page.generation].push_back(std::move(slot));
  }
  if (!root_.pages.empty() && !pages_) {
    for (int k = 0; k < index::kPartitionKinds; ++k) {
      if (!by_generation[k].empty()) {
        throw InvalidArgumentError("open partitioned index " + name_ +
                                   ": its root lists pages, and there is nothing to read them");
      }
    }
  }
  for (int k = 0; k < index::kPartitionKinds; ++k) {
    for (auto& [generation, parts] : listed[k]) {
      Slot slot;
      slot.first_key = parts.front().first_key;
      slot.last_key = parts.back().last_key;
      slot.first_position = parts.front().first_position;
      slot.parts = std::make_shared<const std::vector<PartitionEntry>>(std::move(parts));
      by_generation[k][generation].push_back(std::move(slot));
    }
  }
  order_count_ = root_.Count(PartitionKind::kOrder);
  for (int k = 0; k < index::kPartitionKinds; ++k) {
    for (auto& [generation, group] : by_generation[k]) levels_[k].push_back(std::move(group));
  }
}

const PartitionedIndex::Group& PartitionedIndex::order() const {
  static const Group kNone;
  const std::vector<Group>& groups = levels_[static_cast<int>(PartitionKind::kOrder)];
  return groups.empty() ? kNone : groups.front();
}

PartitionedIndex::~PartitionedIndex() = default;

uint64_t PartitionedIndex::fetches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fetches_;
}

size_t PartitionedIndex::open_partitions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_.size();
}

uint64_t PartitionedIndex::page_fetches() const {
  std::lock_guard<std::mutex> lock(page_mutex_);
  return page_fetches_;
}

const std::vector<PartitionEntry>& PartitionedIndex::Load(const Slot& slot) const {
  using Parts = std::shared_ptr<const std::vector<PartitionEntry>>;
  std::promise<Parts> promise;
  std::shared_future<Parts> loading;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(page_mutex_);
    if (slot.parts) return *slot.parts;
    if (!slot.loading.valid()) {
      slot.loading = promise.get_future().share();
      ++page_fetches_;
      mine = true;
    }
    loading = slot.loading;
  }
  if (mine) {
    try {
      const std::string what = name_ + " root page " + slot.page->sha256;
      auto parts = std::make_shared<const std::vector<PartitionEntry>>(
          index::DecodeRootPage(pages_(*slot.page), *slot.page, what));
      {
        std::lock_guard<std::mutex> lock(page_mutex_);
        slot.parts = parts;
      }
      promise.set_value(std::move(parts));
    } catch (...) {
      {
        // A later use tries again.
        std::lock_guard<std::mutex> lock(page_mutex_);
        slot.loading = {};
      }
      promise.set_exception(std::current_exception());
    }
  }
  return *loading.get();
}

const PartitionEntry* PartitionedIndex::Holding(const Group& group, std::string_view key) const {
  auto slot = std::upper_bound(group.begin(), group.end(), key,
                               [](std::string_view k, const Slot& s) { return k < s.first_key; });
  if (slot == group.begin() || key > (slot - 1)->last_key) return nullptr;
  const std::vector<PartitionEntry>& parts = Load(*(slot - 1));
  auto it =
      std::upper_bound(parts.begin(), parts.end(), key,
                       [](std::string_view k, const PartitionEntry& p) { return k < p.first_key; });
  if (it == parts.begin()) return nullptr;
  const PartitionEntry* p = &*(it - 1);
  return key <= p->last_key ? p : nullptr;
}

std::vector<const PartitionEntry*> PartitionedIndex::Overlapping(const Group& group,
                                                                 std::string_view from,
                                                                 std::string_view to) const {
  std::vector<const PartitionEntry*> out;
  for (const Slot& slot : group) {
    if (slot.last_key < from || (!to.empty() && slot.first_key >= to)) continue;
    for (const PartitionEntry& p : Load(slot)) {
      if (p.last_key < from || (!to.empty() && p.first_key >= to)) continue;
      out.push_back(&p);
    }
  }
  return out;
}

std::shared_ptr<PartitionedIndex::Open> PartitionedIndex::OpenPartition(
    const index::PartitionEntry& entry) const {
  std::promise<std::shared_ptr<Open>> promise;
  std::shared_future<std::shared_ptr<Open>> opened;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = open_.find(entry.sha256);
    if (it != open_.end()) {
      opened = it->second.open;
      it->second.used = ++clock_;
    } else {
      CloseIdle();
      opened = promise.get_future().share();
      open_.emplace(entry.sha256, Opened{opened, ++clock_});
      ++fetches_;
      mine = true;
    }
  }
  if (mine) {
    try {
      const std::string path = fetch_(entry);
      auto open = std::make_shared<Open>();
      open->file = OpenPartitionFile(path, entry);
      promise.set_value(std::move(open));
    } catch (...) {
      {
        // A later use tries again.
        std::lock_guard<std::mutex> lock(mutex_);
        open_.erase(entry.sha256);
      }
      promise.set_exception(std::current_exception());
    }
  }
  return opened.get();
}

void PartitionedIndex::CloseIdle() const {
  if (open_.size() < kMaxOpenPartitions) return;
  // The idle ones (opened, and held by nothing but this map), oldest first.
  std::vector<std::pair<uint64_t, std::string>> idle;
  for (const auto& [sha, o] : open_) {
    if (o.open.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    try {
      if (o.open.get().use_count() == 1) idle.emplace_back(o.used, sha);
    } catch (...) {
      // A failed open is removed by the thread that tried it.
    }
  }
  std::sort(idle.begin(), idle.end());
  for (size_t i = 0; i < idle.size() && open_.size() >= kMaxOpenPartitions; ++i) {
    open_.erase(idle[i].second);
  }
}

std::optional<std::string> PartitionedIndex::Lookup(PartitionKind kind,
                                                    std::string_view key) const {
  for (const Group& level : levels_[static_cast<int>(kind)]) {
    const PartitionEntry* p = Holding(level, key);
    if (p == nullptr) continue;
    std::shared_ptr<Open> open = OpenPartition(*p);
    index::Txn txn = open->file->env->BeginRead();
    std::string_view value;
    if (txn.Get(open->file->dbi, key, &value)) return std::string(value);
  }
  return std::nullopt;
}

std::optional<index::VideoRecord> PartitionedIndex::FindVideo(std::string_view id) const {
  return Find(id, nullptr);
}

std::optional<index::VideoRecord> PartitionedIndex::FindVideoToRead(
    std::string_view id, const std::function<void(uint32_t chunk)>& chunk_known) const {
  return Find(id, &chunk_known);
}

std::optional<index::VideoRecord> PartitionedIndex::Find(
    std::string_view id, const std::function<void(uint32_t)>* chunk_known) const {
  const std::string where = "partitioned index " + name_;
  if (!clustered()) {
    std::optional<std::string> value = Lookup(PartitionKind::kVideos, id);
    if (!value || value->empty()) return std::nullopt;
    std::optional<index::VideoRecord> record =
        index::DecodeVideoRecord(index::Unseal(id, *value, index::RecordKind::kVideo, where), id);
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
  const PartitionEntry* p = Holding(order(), *order_key);
  if (p == nullptr) {
    throw CorruptionError("read id '" + std::string(id) + "' in " + where +
                          ": it names an order entry no order partition holds");
  }
  std::shared_ptr<Open> open = OpenPartition(*p);
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
      return index::DecodeVideoRecord(index::Unseal(id, v.record, index::RecordKind::kVideo, where),
                                      id);
    }
  }
  PartitionCorrupt(*p, open->file->path,
                   "no order entry for id '" + std::string(id) + "', which the index lists");
}

std::optional<std::string> PartitionedIndex::Hinted(std::string_view id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = hints_.find(std::string(id));
  if (it == hints_.end()) return std::nullopt;
  return it->second;
}

void PartitionedIndex::Hint(std::string_view id, std::string_view order_key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hints_.size() >= kMaxHints) hints_.clear();
  hints_.emplace(std::string(id), std::string(order_key));
}

std::optional<index::ChunkRecord> PartitionedIndex::Chunk(uint32_t chunk) const {
  const std::string key = index::ChunkKey(chunk);
  std::optional<std::string> value = Lookup(PartitionKind::kChunks, key);
  if (!value) return std::nullopt;
  const std::string what = "chunk " + std::to_string(chunk);
  return index::DecodeChunkRecord(
      index::Unseal(key, *value, index::RecordKind::kChunk, "partitioned index " + name_), what);
}

std::optional<std::string> PartitionedIndex::OrderAt(uint64_t position) const {
  if (position >= order_count_) return std::nullopt;
  const Group& group = order();
  auto slot = std::upper_bound(group.begin(), group.end(), position,
                               [](uint64_t pos, const Slot& s) { return pos < s.first_position; });
  const std::vector<PartitionEntry>& parts = Load(*(slot - 1));
  auto it = std::upper_bound(
      parts.begin(), parts.end(), position,
      [](uint64_t pos, const PartitionEntry& e) { return pos < e.first_position; });
  const PartitionEntry* p = &*(it - 1);
  std::shared_ptr<Open> open = OpenPartition(*p);
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
  for (const Group& level : levels_[static_cast<int>(kind)]) {
    // Only the partitions that overlap [from, to): a walk fetches no other.
    levels.push_back(std::make_unique<LevelCursor>(
        Overlapping(level, from, to), from,
        [this](const PartitionEntry& p, PartitionFile** file) -> std::shared_ptr<void> {
          std::shared_ptr<Open> open = OpenPartition(p);
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

std::vector<std::string> PartitionedIndex::MetaLookup(std::string_view field,
                                                      std::string_view json_value) const {
  std::vector<std::string> ids;
  const index::MetaFieldEntry* f = nullptr;
  for (const index::MetaFieldEntry& e : root_.meta_fields) {
    if (e.name == field) f = &e;
  }
  if (f == nullptr) return ids;
  const std::string prefix =
      index::MetaValuePrefix(f->number, f->form, MetaKeyValue(f->form, json_value));
  Scan(PartitionKind::kMetaIndex, prefix, {}, [&](std::string_view key, std::string_view id) {
    if (key.substr(0, prefix.size()) != prefix) return false;
    ids.emplace_back(id);
    return true;
  });
  return ids;
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
  for (const Slot& slot : order()) {
    for (const PartitionEntry& p : Load(slot)) out.push_back(p.first_position);
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
                                       "chunk " + std::to_string(chunk)));
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

}  // namespace gulpdb::engine
