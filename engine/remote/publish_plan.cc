// The plan of a push (engine/remote/publish_plan.h; steps 1 and 2 of
// publish.cc's list): the dataset's identity, the copy of its index, the
// published manifest, its root and tags, the listing of the prefix, objects
// no push of this dataset wrote, and what older manifests promised.
#include "engine/remote/publish_plan.h"

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
#include "engine/gulpio/gmeta.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/partition_cache.h"
#include "engine/remote/published_objects.h"
#include "engine/remote/published_tags.h"
#include "engine/remote/push_verify.h"
#include "engine/remote/snapshot_cache.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/remote.h"
#include "s3/errors.h"
#include "s3/s3_url.h"
#include "util/crc32c.h"
#include "util/file_io.h"
#include "util/relative_name.h"
#include "util/sha256.h"
#include "util/thread_pool.h"

namespace gulpdb::engine {

namespace {

// The generation of a manifest copy's key ("gulpdb.manifests/<20 digits>.json"),
// or nullopt for another key.
std::optional<uint64_t> HistoryGeneration(const std::string& key) {
  const std::string dir = std::string(kManifestHistoryDir) + "/";
  if (key.size() != dir.size() + 25 || key.compare(0, dir.size(), dir) != 0 ||
      key.compare(key.size() - 5, 5, ".json") != 0) {
    return std::nullopt;
  }
  uint64_t g = 0;
  for (size_t i = dir.size(); i < key.size() - 5; ++i) {
    if (key[i] < '0' || key[i] > '9') return std::nullopt;
    if (g > (UINT64_MAX - 9) / 10) return std::nullopt;
    g = g * 10 + static_cast<uint64_t>(key[i] - '0');
  }
  return g;
}

}  // namespace

PrefixCrc CrcOfFile(const std::string& path, uint64_t length, uint64_t checkpoint) {
  util::UniqueFd fd = util::OpenFile(path, O_RDONLY);
  std::string block(static_cast<size_t>(std::min<uint64_t>(length, uint64_t{4} << 20)), '\0');
  PrefixCrc out;
  uint32_t crc = 0;
  for (uint64_t done = 0; done < length;) {
    uint64_t want = std::min<uint64_t>(block.size(), length - done);
    if (done < checkpoint) want = std::min(want, checkpoint - done);  // stop at the checkpoint
    const size_t got =
        util::PreadFull(fd.get(), block.data(), static_cast<size_t>(want), done, path);
    if (got != want) {
      throw CorruptionError("read " + path + ": the file ends at " + std::to_string(done + got) +
                            ", before its committed length " + std::to_string(length));
    }
    crc = util::Crc32c(block.data(), got, crc);
    done += got;
    if (done == checkpoint) out.at_checkpoint = crc;
  }
  if (checkpoint == 0) out.at_checkpoint = 0;
  out.whole = crc;
  return out;
}

// 1a. The dataset's identity. An index made before gulpdb recorded one
// gets one now, in one write transaction under the writer lock (so that no
// writer's commit, which rewrites the dataset info, can lose it).
void IndexCopy::EnsureIdentity() {
  OpenOptions options;
  options.allow_network_index = true;
  options.index_dir = push_.options.index_dir;
  if (!OpenLocalChecked(push_.dir, options)->Stats().uuid.empty()) return;
  try {
    options.read_only = false;
    const std::unique_ptr<Dataset> live = OpenLocalChecked(push_.dir, options);
    const util::FileLock lock(WriterLockPathOf(*live), std::chrono::seconds(30), push_.dir);
    const std::string uuid = util::RandomUuid();
    IndexTxn::Update(*live, [&](IndexTxn& txn) {
      index::DatasetInfo info = txn.Info();
      if (!info.uuid.empty()) return;
      info.uuid = uuid;
      txn.PutInfo(info);
    });
  } catch (const Error& e) {
    e.ThrowWithContext(push_.what +
                       ": the dataset has no identity yet (its index predates gulpdb's dataset "
                       "UUIDs), and recording one in its index failed: ");
  }
}

// 1b. A consistent, compacted copy of the index, opened as a dataset.
void IndexCopy::Make(const std::string& tmp) {
  OpenOptions live_options;
  live_options.allow_network_index = true;  // the pusher runs where the dataset is written
  live_options.index_dir = push_.options.index_dir;
  const std::unique_ptr<Dataset> live = OpenLocalChecked(push_.dir, live_options);
  const std::string index_dir = tmp + "/index";
  util::MakeDirectories(index_dir);
  file_ = index_dir + "/data.mdb";
  CopyIndexTo(*live, file_, /*compact=*/true);
  sha256_ = Sha256OfFile(file_, &size_);
  snapshot_ = OpenOnIndex(push_.dir, OpenOptions(), OpenSnapshotEnv(index_dir), nullptr);
  push_.dataset = snapshot_->Stats().uuid;
  if (push_.conditional && !IsUuid(push_.dataset)) {
    throw CorruptionError(push_.what + ": the index's dataset UUID '" + push_.dataset +
                          "' is not a UUID");
  }
}

// 1c. Every chunk of the snapshot and its keys.
//
// Keys: a chunk file directly in the dataset directory keeps its name. A
// chunk in a sub-directory (a shard attached by `merge` or by the
// distributed ingest) is published as data_<N>.gulp beside meta_<N>.gmeta,
// so that the bucket is one flat GulpIO directory whose every data file has
// its .gmeta; it keeps its path only if either name is taken by another
// chunk's file.
std::vector<ManifestChunk> IndexCopy::ChunkKeys() {
  std::vector<ManifestChunk> chunks;
  const std::vector<ChunkInfo> infos = snapshot_->Chunks();
  std::set<std::string> top_level;
  for (const ChunkInfo& c : infos) {
    if (c.file_name.find('/') == std::string::npos) top_level.insert(c.file_name);
    if (!c.meta_file.empty() && c.meta_file.find('/') == std::string::npos) {
      top_level.insert(c.meta_file);
    }
  }
  for (const ChunkInfo& c : infos) {
    if (!util::IsRelativeName(c.file_name) ||
        (!c.meta_file.empty() && !util::IsRelativeName(c.meta_file))) {
      throw CorruptionError("push " + push_.dir + ": chunk " + std::to_string(c.number) +
                            " names a file outside the dataset ('" + c.file_name + "')");
    }
    ManifestChunk m;
    m.number = c.number;
    m.key = c.file_name;
    std::string gmeta_key =
        c.meta_file.empty() ? "meta_" + std::to_string(c.number) + ".gmeta" : c.meta_file;
    if (push_.publish_chunks && c.file_name.find('/') != std::string::npos) {
      const std::string data = GulpioDataFileName(c.number);
      const std::string meta = "meta_" + std::to_string(c.number) + ".gmeta";
      if (top_level.count(data) == 0 && top_level.count(meta) == 0) {
        m.key = data;
        gmeta_key = meta;
        top_level.insert(data);
        top_level.insert(meta);
      }
    }
    remote::JoinKey("", m.key);  // a key the store accepts
    local_files_[m.key] = c.file_name;
    m.committed_length = c.committed_length;
    m.live_videos = c.live_videos;
    m.live_bytes = c.live_bytes;
    m.meta_edits = c.meta_edits;
    if (push_.publish_chunks) m.gmeta_key = gmeta_key;
    chunks.push_back(std::move(m));
  }
  return chunks;
}

// 2. What is published, and whether it is this dataset's.
void PublishedState::Read(const IndexCopy& local) {
  std::optional<Manifest> published;
  try {
    StoreObject info;
    manifest_text_ = push_.store.Get(kManifestKey, kMaxManifestBytes, &info);
    published = ParseManifest(*manifest_text_, push_.store.Name(kManifestKey));
    manifest_etag_ = info.etag;
  } catch (const NotFoundError&) {
  }
  // A version 3 manifest's chunk list is in its pages: needed for this
  // dataset's (or one without an identity, to see whether it is this
  // dataset's), not for another dataset's.
  if (published &&
      (!push_.conditional || published->dataset.empty() || published->dataset == push_.dataset)) {
    try {
      LoadChunkPages(push_.store, &*published, push_.what);
    } catch (const CorruptionError& e) {
      // Overwriting publishes every chunk again: a damaged chunk list is
      // replaced (its promises are lost with it).
      if (!push_.options.overwrite) throw DamagedIndex(e);
      published->chunks.clear();
    }
  }
  if (published && push_.publish_chunks != published->chunks_published) {
    throw InvalidArgumentError(push_.what + ": " + push_.store.Name(kManifestKey) +
                               " is the manifest of a " +
                               (published->chunks_published ? "pushed dataset" : "local snapshot") +
                               "; publish to another place");
  }
  for (StoreObject& o : push_.store.List()) listing_.emplace(o.key, std::move(o));
  for (const auto& [key, object] : listing_) {
    if (const std::optional<uint64_t> g = HistoryGeneration(key)) {
      base_generation_ = std::max(base_generation_, *g);
    }
  }
  if (published) base_generation_ = std::max(base_generation_, published->generation);
  if (!push_.conditional) {
    old_ = std::move(published);
  } else if (published && (published->dataset == push_.dataset ||
                           (published->dataset.empty() && AdoptLegacy(*published, local)))) {
    old_ = std::move(published);
  } else if (published) {
    foreign_manifest_ = std::move(published);
  }
  if (old_) {
    for (const ManifestChunk& c : old_->chunks) old_chunks_.emplace(c.key, c);
    for (const ManifestObsolete& o : old_->obsolete) old_obsolete_.emplace(o.key, o);
    if (old_->partitioned()) ReadRoot();
    if (push_.publish_chunks) ReadTags();
    old_named_ = NamedObjects(*old_, old_root_ ? &*old_root_ : nullptr);
    old_named_.insert(old_tag_named_.begin(), old_tag_named_.end());
  }
  if (push_.conditional) FindForeign();
}

// A manifest a gulpdb without dataset identities published is this
// dataset's if every chunk it names that the dataset still has holds the
// bytes it promised (CRC-32C of the local file's prefix), and there is at
// least one such chunk (or it names none).
bool PublishedState::AdoptLegacy(const Manifest& m, const IndexCopy& local) const {
  size_t matched = 0;
  for (const ManifestChunk& c : m.chunks) {
    const auto file = local.local_files().find(c.key);
    if (file == local.local_files().end()) continue;
    const std::string path = push_.dir + "/" + file->second;
    try {
      if (!c.crc32c || CrcOfFile(path, c.committed_length, c.committed_length).whole != *c.crc32c) {
        return false;
      }
    } catch (const CorruptionError&) {
      return false;  // shorter than promised
    }
    ++matched;
  }
  return matched > 0 || m.chunks.empty();
}

// The objects under the prefix that no push of this dataset wrote: not
// named by its published manifest, and not carrying its identity in their
// metadata (HEAD). Refused unless overwriting.
void PublishedState::FindForeign() {
  std::set<std::string> named = {kManifestKey, kPushLeaseKey};
  if (old_) {
    named = old_named_;
    named.insert(kManifestKey);
    named.insert(kPushLeaseKey);
    for (const ManifestObsolete& o : old_->obsolete) {
      named.insert(o.key);
      if (!o.gmeta_key.empty()) named.insert(o.gmeta_key);
    }
  }
  std::vector<std::string> unnamed;
  for (const auto& [key, object] : listing_) {
    if (named.count(key) == 0) unnamed.push_back(key);
  }
  std::mutex mutex;
  std::vector<std::string> foreign;
  std::atomic<size_t> found{0};
  util::ParallelFor(unnamed.size(), std::max<uint32_t>(push_.jobs, 8), [&](size_t i) {
    // Enough to refuse with.
    if (!push_.options.overwrite && found.load() >= kForeignListed) return;
    const std::optional<StoreObject> head = push_.store.Head(unnamed[i]);
    if (!head) return;  // deleted meanwhile
    const auto it = head->metadata.find(kMetaDataset);
    std::lock_guard<std::mutex> lock(mutex);
    if (it != head->metadata.end() && it->second == push_.dataset) {
      leftovers_.push_back(unnamed[i]);  // an interrupted push of this dataset
    } else {
      foreign.push_back(unnamed[i]);
      ++found;
    }
  });
  if (foreign_manifest_) foreign.push_back(kManifestKey);
  std::sort(foreign.begin(), foreign.end());
  std::sort(leftovers_.begin(), leftovers_.end());
  foreign_.insert(foreign.begin(), foreign.end());
  if (foreign.empty() || push_.options.overwrite) return;
  std::string list;
  for (size_t i = 0; i < foreign.size() && i < kForeignListed; ++i) {
    list += (i == 0 ? "" : ", ") + foreign[i];
  }
  if (foreign.size() > kForeignListed) list += ", ...";
  std::string whose;
  if (foreign_manifest_) {
    whose = foreign_manifest_->dataset.empty()
                ? " It holds a manifest (generation " +
                      std::to_string(foreign_manifest_->generation) +
                      ") of a dataset whose chunks differ from this one's."
                : " It holds the manifest of another dataset (" + foreign_manifest_->dataset +
                      ", generation " + std::to_string(foreign_manifest_->generation) +
                      "), not of this one (" + push_.dataset + ").";
  }
  throw InvalidArgumentError(
      push_.what + ": the prefix holds objects that pushes of this dataset did not write (" + list +
      ")." + whose +
      " Pushing would mix two datasets there (a GulpIO reader would see both); nothing was "
      "uploaded. Push to an empty prefix, or replace what is there with the overwrite option "
      "(gulpdb push --overwrite; Python push(..., overwrite=True); C++ PushOptions::overwrite)");
}

// The promise an object `key` is under: a chunk of the published manifest,
// or an obsolete data object whose grace period is not over.
std::optional<Promise> PublishedState::PromiseFor(const std::string& key) const {
  if (auto it = old_chunks_.find(key); it != old_chunks_.end()) {
    return Promise{it->second.committed_length, it->second.crc32c,
                   "generation " + std::to_string(old_->generation)};
  }
  if (auto it = old_obsolete_.find(key); it != old_obsolete_.end() &&
                                         it->second.committed_length > 0 &&
                                         !push_.Expired(it->second.since_unix)) {
    return Promise{it->second.committed_length, it->second.crc32c,
                   "an older generation; it is kept for its readers until " +
                       IsoTime(it->second.since_unix + push_.grace.count())};
  }
  return std::nullopt;
}

// 2b. The root the published manifest names, GET and verified (never
// more bytes than the manifest says): the build diffs against it, and the
// partitions it lists are named objects of the published dataset.
void PublishedState::ReadRoot() {
  // The store outlives the fetch; it holds it only meanwhile.
  std::shared_ptr<ObjectStore> store(&push_.store, [](ObjectStore*) {});
  try {
    old_root_ = ExpandPartitionRoot(FetchRoot(push_.store, *old_, push_.what),
                                    NodeCachePageFetch(store, push_.what),
                                    push_.store.Name(old_->root_key));
  } catch (const CorruptionError& e) {
    // Overwriting rebuilds the whole index: a damaged published root is
    // replaced, its partitions retired as leftovers of this dataset.
    if (!push_.options.overwrite) throw DamagedIndex(e);
  }
}

// 2d. What the published tags name: their tag objects, roots (with pages
// and partitions) and chunk lists, read from the store. A tag whose object
// or root cannot be read (damaged or deleted behind the manifest's back)
// names its object only: the push publishes the local tag of that name
// again, or retires the object.
void PublishedState::ReadTags() {
  std::shared_ptr<ObjectStore> store(&push_.store, [](ObjectStore*) {});
  for (const ManifestTag& tag : old_->tags) {
    old_tag_named_.insert(tag.key);
    try {
      Manifest m = TagManifest(*old_, FetchTagObject(push_.store, tag, push_.what, nullptr));
      const index::PartitionRoot root =
          ExpandPartitionRoot(FetchRoot(push_.store, m, push_.what),
                              NodeCachePageFetch(store, push_.what), push_.store.Name(m.root_key));
      LoadChunkPages(push_.store, &m, push_.what);
      const std::set<std::string> named = TagNamedObjects(tag, m, root);
      old_tag_named_.insert(named.begin(), named.end());
    } catch (const CorruptionError&) {
    } catch (const NotFoundError&) {
    }
  }
}

std::vector<std::string> PublishedState::OldIndexKeys() const {
  std::vector<std::string> keys;
  if (!old_) return keys;
  if (!old_->snapshot_key.empty()) keys.push_back(old_->snapshot_key);
  if (old_->partitioned()) keys.push_back(old_->root_key);
  for (const ManifestChunkPage& p : old_->chunk_pages) keys.push_back(p.key);
  if (old_root_) {
    for (const index::PartitionEntry& p : old_root_->partitions) {
      keys.push_back(PartitionKey(p.sha256));
    }
    for (const index::RootPage& p : old_root_->pages) keys.push_back(RootPageKey(p.sha256));
  }
  // What the published tags name: retired when no tag (nor the generation)
  // of the new manifest names it.
  keys.insert(keys.end(), old_tag_named_.begin(), old_tag_named_.end());
  return keys;
}

uint64_t PublishedState::read_generation() const {
  return old_ ? old_->generation : (foreign_manifest_ ? foreign_manifest_->generation : 0);
}

const ManifestChunk* PublishedState::OldChunk(const std::string& key) const {
  const auto it = old_chunks_.find(key);
  return it == old_chunks_.end() ? nullptr : &it->second;
}

const StoreObject* PublishedState::Listed(const std::string& key) const {
  const auto it = listing_.find(key);
  return it == listing_.end() ? nullptr : &it->second;
}

CorruptionError DamagedIndex(const Error& e) {
  return CorruptionError(std::string(e.what()) +
                         "; the published index is damaged: push with the overwrite option "
                         "(gulpdb push --overwrite; Python push(..., overwrite=True); C++ "
                         "PushOptions::overwrite) to build the whole index and upload what "
                         "the store lacks or holds damaged");
}

}  // namespace gulpdb::engine
