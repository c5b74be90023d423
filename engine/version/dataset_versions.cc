// The Dataset calls about versions (gulpdb/dataset.h): tag, list, delete,
// reclaim, bytes held, diff. Tag, DeleteTag and ReclaimVersions hold the
// writer lock (a Writer made for it) while they change gulpdb.versions:
// one changer at a time, ordered with compaction, which keeps the chunk
// files a tag may read (engine/core/obsolete_files.h).
#include <memory>
#include <optional>

#include "engine/core/chunk_source.h"
#include "engine/core/dataset_view.h"
#include "engine/json/json_text.h"
#include "engine/partition/partitions.h"
#include "engine/version/version_diff.h"
#include "engine/version/version_store.h"
#include "gulpdb/error.h"

namespace gulpdb {

namespace {

// Throws InvalidArgumentError unless `dataset` is a local dataset opened
// for writing; returns a Writer that holds its writer lock.
std::unique_ptr<Writer> LockForVersions(Dataset& dataset, const std::string& operation) {
  if (dataset.read_only() || engine::IndexSourceOf(dataset) != nullptr ||
      engine::ChunkSourceOf(dataset) != nullptr) {
    throw InvalidArgumentError(operation +
                               ": tags are made and deleted on a local dataset opened for "
                               "writing (this one is read-only)");
  }
  return dataset.NewWriter();
}

// Dataset::Tag: the index's partitions built against the newest tag's (so
// that unchanged ones are shared), the tag written, the change record
// restarted at it.
VersionInfo MakeTag(Dataset& dataset, const std::string& name, const std::string& message) {
  const std::string operation = "tag " + dataset.dir();
  engine::CheckTagName(name, operation);
  try {
    (void)engine::PythonJsonString(message);
  } catch (const InvalidArgumentError&) {
    throw InvalidArgumentError(operation + " " + name + ": the message is not valid UTF-8");
  }
  const std::unique_ptr<Writer> lock = LockForVersions(dataset, operation + " " + name);
  for (const VersionInfo& tag : engine::ListTags(dataset.dir())) {
    if (tag.name == name) {
      throw InvalidArgumentError(operation + ": the name '" + name +
                                 "' is in use (gulpdb tag DIR " + name + " --delete frees it)");
    }
  }
  const std::vector<VersionInfo> tags = engine::ListTags(dataset.dir());
  const std::string objects = engine::ObjectsDir(dataset.dir());
  // Against the newest tag, so that unchanged partitions are shared.
  std::optional<index::PartitionRoot> previous;
  if (!tags.empty()) previous = engine::ReadRoot(dataset.dir(), tags.back().root, /*expand=*/true);
  engine::PartitionOptions options;
  options.previous = engine::DirectoryFetch(objects);
  // The change record since that tag, when it covers it, spares reading the
  // whole index.
  if (!tags.empty()) options.previous_sha256 = tags.back().root;
  const engine::BuildResult built =
      engine::BuildPartitions(dataset, previous ? &*previous : nullptr, options, objects);
  const DatasetStats stats = dataset.Stats();  // the same state: the writer lock is held
  VersionInfo info;
  info.name = name;
  info.created = static_cast<double>(engine::NowMs()) / 1000.0;
  info.videos = stats.videos;
  info.frames = stats.frames;
  info.message = message;
  info.root = built.root_sha256;
  engine::WriteTag(dataset.dir(), info);
  // The tag's own durable step: the change record starts again at it. A
  // crash before this commit leaves the record at the previous tag, which
  // is no longer the newest: the next tag reads the whole index.
  engine::StartChangeRecord(dataset, built.root_sha256);
  return info;
}

}  // namespace

VersionInfo Dataset::Tag(const std::string& name, const std::string& message) {
  return MakeTag(*this, name, message);
}

std::vector<VersionInfo> Dataset::Versions() const {
  // A dataset in a bucket: the tags its manifest lists.
  if (const engine::ChunkSource* source = engine::ChunkSourceOf(*this)) {
    if (std::optional<std::vector<VersionInfo>> published = source->PublishedVersions()) {
      return *std::move(published);
    }
  }
  return engine::ListTags(dir());
}

void Dataset::DeleteTag(const std::string& name, std::chrono::seconds grace) {
  const std::string operation = "delete tag " + name + " of " + dir();
  if (grace.count() < 0) throw InvalidArgumentError(operation + ": a negative grace period");
  engine::ReadTag(dir(), name, operation);
  const std::unique_ptr<Writer> lock = LockForVersions(*this, operation);
  engine::ReadTag(dir(), name, operation);  // still there under the lock
  engine::MoveTagToDeleted(dir(), name, grace);
  engine::Reclaim(dir());
}

uint64_t Dataset::ReclaimVersions() {
  const std::unique_ptr<Writer> lock = LockForVersions(*this, "reclaim versions of " + dir());
  return engine::Reclaim(dir());
}

uint64_t Dataset::VersionBytes() const { return engine::StoredVersionBytes(dir()); }

VersionDiff Dataset::Diff(const std::string& a, const std::string& b) const {
  return engine::DiffVersions(*this, a, b);
}

}  // namespace gulpdb
