// Publishing (gulpdb/remote.h): Push, a dataset to an object store, and
// PublishSnapshot, a snapshot of its index beside it for readers on a shared
// file system. One Publisher does both against engine/remote/object_store.h; the
// layout it writes, and what the lease and the conditions guarantee, is
// docs/format/remote_format.md.
//
// A push, in order:
//   1. copy the index (one read transaction, compacted: the copy of an
//      unchanged index is the same bytes, so an unchanged dataset publishes
//      nothing) and open the copy: everything below reads that one state. An
//      index made before gulpdb recorded dataset identities gets its UUID
//      first (one write transaction);
//   2. GET the published manifest (with its ETag) and LIST the prefix; HEAD
//      what no manifest of this dataset names, and refuse (nothing written)
//      a prefix holding objects that pushes of this dataset did not write,
//      unless told to overwrite them;
//   3. upload every chunk object that is new or grew (jobs at a time, large
//      ones in parallel parts). Before replacing an object that a published
//      manifest (or an obsolete entry still in its grace period) promised
//      L bytes of, check that the CRC-32C of the local file's first L bytes
//      is the promised one: a chunk rewritten locally is refused, so no
//      reader of an older manifest ever reads changed bytes;
//   4. write and upload the .gmeta of every chunk whose videos changed, and
//      label2idx.json; empty the .gmeta of chunks that are gone (a GulpIO
//      reader then sees their videos once, in their new chunk);
//   5. upload the snapshot (content-addressed: skipped when present); or,
//      partitioned (PushOptions::layout), build the partitions against
//      the published root (fetched and verified in step 2; the partitions it
//      lists come through the node cache) and upload those the store does
//      not hold, then the root (both content-addressed). Every object the
//      new generation names and this push does not upload is checked first
//      (push_verify.h): one missing or damaged is uploaded again from this
//      machine's copy, or the push stops naming it (the overwrite option
//      builds the whole index, and checks every chunk's bytes);
//   5c. publish the local tags (publish_tags.cc): each tag's objects (its
//      root, pages and partitions, content-addressed: those the store
//      holds are not sent), its chunk pages, the chunk objects only tags
//      read, then its tag object, all before the manifest that lists them;
//   6. claim the generation (its manifest copy, created only if absent), then
//      swap the manifest (only if it still has the ETag read in step 2): the
//      one step that makes the new state visible;
//   7. delete what older pushes made obsolete and whose grace period is over
//      (and, when overwriting, what pushes of this dataset did not write),
//      never what this generation or the one it replaces names, the
//      manifest or the lease (published_objects.h).
// On S3 the first write takes the push lease (push_lease.h) and then reads
// the manifest again: one published since step 2 stops the push (2c). Every
// write is conditional: If-None-Match: * for a key the listing did not show,
// If-Match on the listed ETag otherwise. Another push that changed an object
// meanwhile makes this one stop with BusyError, having replaced nothing a
// published manifest names.
//
// The Publisher's steps are classes in files of their own
// (engine/remote/publisher.h lists them).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <set>

#include "engine/core/dataset_view.h"
#include "engine/core/fault_injection.h"
#include "engine/gulpio/gmeta.h"
#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/publisher.h"
#include "engine/remote/push_lease.h"
#include "engine/remote/push_verify.h"
#include "engine/remote/snapshot_cache.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "s3/s3_config.h"
#include "util/env.h"
#include "util/file_io.h"
#include "util/thread_pool.h"
#include "util/url_text.h"

namespace gulpdb {

std::chrono::seconds ParseDuration(std::string_view text) { return util::ParseDuration(text); }

std::chrono::seconds DefaultGracePeriod() {
  return util::EnvDuration("GULPDB_PUSH_GRACE").value_or(std::chrono::hours(24));
}

namespace engine {

PushContext::PushContext(std::string dir_in, ObjectStore& store_in, bool publish_chunks_in,
                         const PushOptions& options_in)
    : dir(std::move(dir_in)),
      store(store_in),
      publish_chunks(publish_chunks_in),
      conditional(publish_chunks_in && store_in.SupportsConditions()),
      options(options_in),
      grace(options_in.grace ? *options_in.grace : DefaultGracePeriod()),
      jobs(options_in.jobs == 0 ? 1 : options_in.jobs),
      what((publish_chunks_in ? "push " + dir + " to " : "snapshot " + dir + " to ") +
           store_in.url()) {
  if (grace.count() < 0) throw InvalidArgumentError("push: the grace period is negative");
}

std::map<std::string, std::string> PushContext::Metadata() const {
  return {{kMetaDataset, dataset}, {kMetaPush, push_id}};
}

PushReport Publisher::Run() {
  const auto start = Clock::now();
  push_.now = NowUnix();
  push_.push_id = util::RandomUuid();
  if (push_.conditional) local_.EnsureIdentity();
  CacheTempDir tmp;
  local_.Make(tmp.path());
  const bool partitioned = Partitioned();
  std::vector<ManifestChunk> chunks = local_.ChunkKeys();
  published_.Read(local_);
  Manifest next;
  next.generation = published_.base_generation() + 1;
  next.created_unix = push_.now;
  next.creator = "gulpdb " GULPDB_VERSION;
  next.dataset = push_.dataset;
  next.push_id = push_.push_id;
  next.chunks_published = push_.publish_chunks;
  if (partitioned) {
    index_.Build(tmp.path(), &next);
  } else {
    index_.NameSnapshot(&next);
  }
  const DatasetStats stats = local_.snapshot().Stats();
  next.videos = stats.videos;
  next.frames = stats.frames;
  next.grace_seconds = push_.grace.count();
  chunks_.Plan(&chunks);
  next.chunks = std::move(chunks);
  PushReport& report = push_.report;
  report.chunks = next.chunks.size();
  fault::Reached(fault::Point::kPushPlanned);
  if (push_.publish_chunks) {
    chunks_.UploadChunks(&next.chunks);
    chunks_.UploadGmeta(tmp.path(), &next.chunks);
    chunks_.UploadLabels(&next);
  }
  if (partitioned) {
    index_.UploadChunkPages(&next);
    index_.UploadPartitions(next);
  } else {
    index_.UploadSnapshot(next);
  }
  if (push_.publish_chunks) tags_.Publish(&next);
  std::vector<std::string> expired;
  next.obsolete = retirement_.Obsolete(next, &expired);
  const std::optional<Manifest>& old = published_.old();
  if (!old || commit_.Changed(next, retirement_.removed_chunks()) || !expired.empty()) {
    fault::Reached(fault::Point::kPushBeforePublish);
    commit_.Publish(next);
    report.published = true;
    report.generation = next.generation;
    // What older pushes made obsolete and whose grace period is over. The
    // new manifest no longer lists them.
    if (!expired.empty()) {
      uploader_.CheckLease();
      push_.store.Delete(expired);
      report.objects_deleted = expired.size();
    }
    retirement_.DeleteForeign(next);
  } else {
    report.generation = old->generation;
  }
  uploader_.ReleaseLease();
  if (partitioned) index_.SeedCache();
  report.objects_repaired = uploader_.repaired();
  if (push_.conditional) uploader_.verified().Save(retirement_.NamedByNext(next));
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

bool Publisher::Partitioned() const {
  switch (push_.options.layout) {
    case IndexLayout::kPartitioned:
      return true;
    case IndexLayout::kWhole:
      return false;
    case IndexLayout::kAuto:
      return true;
  }
  return false;
}

namespace {

void RequireLocalDataset(const std::string& dir, const char* operation) {
  if (IsRemoteUrl(dir)) {
    throw InvalidArgumentError(std::string(operation) + " " + dir +
                               ": the dataset to publish must be a local directory");
  }
  if (!util::IsDirectory(dir))
    throw NotFoundError(std::string(operation) + " " + dir + ": no such directory");
}

}  // namespace
}  // namespace engine

PushReport Push(const std::string& dir, const std::string& url, const PushOptions& options) {
  engine::RequireLocalDataset(dir, "push");
  if (!IsRemoteUrl(url)) {
    throw InvalidArgumentError("push " + dir + " to '" + util::RedactUrl(url) +
                               "': the destination must be an s3://bucket/prefix URL");
  }
  std::unique_ptr<engine::ObjectStore> store =
      engine::OpenS3Store(url, remote::S3Config::FromEnvironment());
  return engine::Publisher(dir, *store, /*publish_chunks=*/true, options).Run();
}

const char* IndexLayoutName(IndexLayout layout) {
  switch (layout) {
    case IndexLayout::kAuto:
      return "auto";
    case IndexLayout::kPartitioned:
      return "partitioned";
    case IndexLayout::kWhole:
      return "whole";
  }
  return "unknown";
}

std::optional<IndexLayout> IndexLayoutFromName(std::string_view name) {
  if (name == "auto") return IndexLayout::kAuto;
  if (name == "partitioned") return IndexLayout::kPartitioned;
  if (name == "whole") return IndexLayout::kWhole;
  return std::nullopt;
}

PushReport PublishSnapshot(const std::string& dir, const PushOptions& options) {
  engine::RequireLocalDataset(dir, "snapshot");
  std::unique_ptr<engine::ObjectStore> store =
      engine::OpenLocalStore(dir + "/" + engine::kLocalSnapshotStore);
  return engine::Publisher(dir, *store, /*publish_chunks=*/false, options).Run();
}

}  // namespace gulpdb
