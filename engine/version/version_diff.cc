#include "engine/version/version_diff.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine/core/dataset_view.h"
#include "engine/core/index_source.h"
#include "engine/partition/partitions.h"
#include "engine/version/version_open.h"
#include "engine/version/version_store.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {

namespace {

// Ids read from one side per batch.
constexpr size_t kBatch = 4096;

struct Side {
  std::unique_ptr<Dataset> owned;
  const Dataset* dataset = nullptr;
  std::shared_ptr<const IndexSource> index;
};

Side OpenSide(const Dataset& self, const std::string& name, const std::string& operation) {
  Side side;
  if (name == kHeadVersion) {
    if (IndexSourceOf(self) == nullptr && ChunkSourceOf(self) == nullptr) {
      side.dataset = &self;
    } else {
      side.owned = OpenLocalDataset(self.dir(), OpenOptions());
      side.dataset = side.owned.get();
    }
  } else {
    ReadTag(self.dir(), name, operation);  // an unknown name: NameNotFoundError
    OpenOptions options;
    options.version = name;
    side.owned = OpenVersion(self.dir(), options);
    side.dataset = side.owned.get();
  }
  side.index = SnapshotOf(*side.dataset);
  return side;
}

struct Video {
  std::string id;
  index::VideoRecord record;
};

bool HasChecksums(const index::VideoRecord& r) { return r.crc32c.size() == r.frames.size(); }

bool SameFrames(const Side& a, const Video& va, const Side& b, const Video& vb) {
  const index::VideoRecord &ra = va.record, &rb = vb.record;
  if (ra.frames.size() != rb.frames.size()) return false;
  for (size_t i = 0; i < ra.frames.size(); ++i) {
    if (ra.frames[i].length - ra.frames[i].pad != rb.frames[i].length - rb.frames[i].pad) {
      return false;
    }
  }
  if (HasChecksums(ra) && HasChecksums(rb)) return ra.crc32c == rb.crc32c;
  // No CRC on a side: the bytes themselves.
  const StoredFrames fa = a.dataset->ReadJpegs(va.id), fb = b.dataset->ReadJpegs(vb.id);
  if (fa.size() != fb.size()) return false;
  for (size_t i = 0; i < fa.size(); ++i) {
    if (fa[i] != fb[i]) return false;
  }
  return true;
}

// The order table of one side, read in batches: (order key, id) in key order.
class OrderStream {
 public:
  explicit OrderStream(const Side& side) : side_(side) { Fill(); }
  bool Valid() const { return next_ < batch_.size(); }
  const std::pair<std::string, std::string>& Peek() const { return batch_[next_]; }
  void Pop() {
    if (++next_ == batch_.size() && !done_) Fill();
  }

 private:
  void Fill() {
    batch_.clear();
    next_ = 0;
    side_.index->ScanOrder(from_, "", [&](std::string_view key, std::string_view id) {
      batch_.emplace_back(std::string(key), std::string(id));
      return batch_.size() < kBatch;
    });
    done_ = batch_.size() < kBatch;
    if (!batch_.empty()) from_ = batch_.back().first + std::string(1, '\0');
  }
  const Side& side_;
  std::string from_;
  std::vector<std::pair<std::string, std::string>> batch_;
  size_t next_ = 0;
  bool done_ = false;
};

Video Record(const Side& side, const std::string& id) {
  std::optional<index::VideoRecord> record = side.index->FindVideo(id);
  if (!record) {
    throw CorruptionError("diff " + side.dataset->dir() + ": id '" + id +
                          "' is in the order table but has no record");
  }
  return Video{id, std::move(*record)};
}

// Two tags whose videos and order partitions are the same objects
// hold the same videos at the same places: only records changed in place
// can differ, and the record delta levels (format 4) hold every one of
// them with the base record both share. The diff then reads those levels
// alone. False (nothing compared) when the two do not share their order
// table that way.
bool DiffByRecordDeltas(const Side& left, const Side& right,
                        const std::function<void(const Video&, const Video&)>& compare) {
  const auto* a = dynamic_cast<const PartitionedIndex*>(left.index.get());
  const auto* b = dynamic_cast<const PartitionedIndex*>(right.index.get());
  if (a == nullptr || b == nullptr || !a->SameVideosAs(*b)) return false;
  struct Delta {
    Video now;
    index::VideoRecord base;
  };
  const auto read = [](const PartitionedIndex& index) {
    std::map<std::string, Delta> out;  // by order key
    index.ScanRecordDeltas([&](std::string_view order_key, std::string_view id,
                               const index::VideoRecord& now, const index::VideoRecord& base) {
      out.emplace(std::string(order_key), Delta{Video{std::string(id), now}, base});
      return true;
    });
    return out;
  };
  const std::map<std::string, Delta> in_a = read(*a), in_b = read(*b);
  for (const auto& [key, da] : in_a) {
    const auto other = in_b.find(key);
    compare(da.now, other != in_b.end() ? other->second.now : Video{da.now.id, da.base});
  }
  for (const auto& [key, db] : in_b) {
    if (in_a.count(key) == 0) compare(Video{db.now.id, db.base}, db.now);
  }
  return true;
}

}  // namespace

VersionDiff DiffVersions(const Dataset& self, const std::string& a, const std::string& b,
                         DiffCost* cost) {
  const std::string operation = "diff " + a + " " + b + " of " + self.dir();
  for (const std::string& name : {a, b}) {
    if (name != kHeadVersion) CheckTagName(name, operation);
  }
  if (IndexSourceOf(self) != nullptr && ChunkSourceOf(self) != nullptr) {
    throw InvalidArgumentError(operation + ": versions are those of a local dataset");
  }
  const Side left = OpenSide(self, a, operation);
  const Side right = OpenSide(self, b, operation);
  // Both order tables in key order. A key (chunk, insertion) names one
  // insertion of one video (chunk numbers are never reused): on both sides
  // it is the same video, whose records are compared. Keys on one side only
  // are videos appended, removed, or moved by a compaction or a replace:
  // kept (O(changed)) and matched by id at the end.
  VersionDiff diff;
  const auto compare = [&](const Video& was, const Video& now) {
    if (was.record.meta_data != now.record.meta_data) diff.meta_changed.push_back(was.id);
    if (!SameFrames(left, was, right, now)) diff.frames_changed.push_back(was.id);
  };
  const auto count_cost = [&](bool by_deltas) {
    if (cost == nullptr) return;
    *cost = DiffCost();
    cost->by_record_deltas = by_deltas;
    for (const Side* side : {&left, &right}) {
      if (const auto* p = dynamic_cast<const PartitionedIndex*>(side->index.get())) {
        cost->partitions += p->fetches();
        cost->bytes += p->fetched_bytes();
      }
    }
  };
  if (DiffByRecordDeltas(left, right, compare)) {
    for (std::vector<std::string>* ids : {&diff.meta_changed, &diff.frames_changed}) {
      std::sort(ids->begin(), ids->end());
    }
    count_cost(true);
    return diff;
  }
  std::map<std::string, Video> only_left, only_right;
  OrderStream l(left), r(right);
  while (l.Valid() || r.Valid()) {
    if (!r.Valid() || (l.Valid() && l.Peek().first < r.Peek().first)) {
      only_left.emplace(l.Peek().second, Record(left, l.Peek().second));
      l.Pop();
    } else if (!l.Valid() || r.Peek().first < l.Peek().first) {
      only_right.emplace(r.Peek().second, Record(right, r.Peek().second));
      r.Pop();
    } else {
      if (l.Peek().second != r.Peek().second) {
        // Another video at the same place: compare as moved ones.
        only_left.emplace(l.Peek().second, Record(left, l.Peek().second));
        only_right.emplace(r.Peek().second, Record(right, r.Peek().second));
      } else {
        compare(Record(left, l.Peek().second), Record(right, r.Peek().second));
      }
      l.Pop();
      r.Pop();
    }
  }
  for (const auto& [id, video] : only_left) {
    const auto other = only_right.find(id);
    if (other == only_right.end()) {
      diff.removed.push_back(id);
    } else {
      compare(video, other->second);
    }
  }
  for (const auto& [id, video] : only_right) {
    if (only_left.count(id) == 0) diff.added.push_back(id);
  }
  for (std::vector<std::string>* ids : {&diff.meta_changed, &diff.frames_changed}) {
    std::sort(ids->begin(), ids->end());
  }
  count_cost(false);
  return diff;
}

}  // namespace gulpdb::engine
