#include "engine/version/version_diff.h"

#include <memory>
#include <vector>

#include "engine/core/dataset_view.h"
#include "engine/core/index_source.h"
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
  const JpegFrames fa = a.dataset->ReadJpegs(va.id), fb = b.dataset->ReadJpegs(vb.id);
  if (fa.size() != fb.size()) return false;
  for (size_t i = 0; i < fa.size(); ++i) {
    if (fa[i] != fb[i]) return false;
  }
  return true;
}

// Up to `limit` videos of `side` with from <= id < to (`to` empty: no bound).
std::vector<Video> Read(const Side& side, const std::string& from, const std::string& to,
                        size_t limit) {
  std::vector<Video> out;
  side.index->ScanVideos(from, to, [&](std::string_view id, const index::VideoRecord& record) {
    out.push_back(Video{std::string(id), record});
    return out.size() < limit;
  });
  return out;
}

}  // namespace

VersionDiff DiffVersions(const Dataset& self, const std::string& a, const std::string& b) {
  const std::string operation = "diff " + a + " " + b + " of " + self.dir();
  for (const std::string& name : {a, b}) {
    if (name != kHeadVersion) CheckTagName(name, operation);
  }
  if (IndexSourceOf(self) != nullptr && ChunkSourceOf(self) != nullptr) {
    throw InvalidArgumentError(operation + ": versions are those of a local dataset");
  }
  const Side left = OpenSide(self, a, operation);
  const Side right = OpenSide(self, b, operation);
  VersionDiff diff;
  std::string from;
  for (;;) {
    const std::vector<Video> batch = Read(left, from, "", kBatch);
    // The right side's videos up to and including the batch's last id.
    const bool last = batch.size() < kBatch;
    const std::string to = last ? std::string() : batch.back().id + std::string(1, '\0');
    const std::vector<Video> other = Read(right, from, to, SIZE_MAX);
    size_t i = 0, j = 0;
    while (i < batch.size() || j < other.size()) {
      if (j == other.size() || (i < batch.size() && batch[i].id < other[j].id)) {
        diff.removed.push_back(batch[i++].id);
      } else if (i == batch.size() || other[j].id < batch[i].id) {
        diff.added.push_back(other[j++].id);
      } else {
        if (batch[i].record.meta_data != other[j].record.meta_data) {
          diff.meta_changed.push_back(batch[i].id);
        }
        if (!SameFrames(left, batch[i], right, other[j]))
          diff.frames_changed.push_back(batch[i].id);
        ++i;
        ++j;
      }
    }
    if (last) break;
    from = to;
  }
  return diff;
}

}  // namespace gulpdb::engine
