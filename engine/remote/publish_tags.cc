// The tags of a push (engine/remote/publish_tags.h; step 5c of publish.cc's
// list, docs/versions.md "Tags in a bucket"): every local tag published as a
// tag object that the new manifest lists, with every object it names — its
// root, root pages and partitions (the version store's objects, content-
// addressed: those the store holds are not sent again), its chunk pages,
// and the chunk objects it reads that the generation no longer lists
// (chunks compaction emptied, kept locally in gulpdb.versions/chunks).
// The published tags' objects are named objects of the generation: nothing
// a tag in the manifest names is retired or deleted; a tag the new manifest
// no longer lists has its objects retired with the grace period, as a
// generation's are.
#include "engine/remote/publish_tags.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/partition_cache.h"
#include "engine/remote/published_objects.h"
#include "engine/remote/published_tags.h"
#include "engine/remote/push_verify.h"
#include "engine/version/version_store.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "util/file_io.h"
#include "util/relative_name.h"
#include "util/sha256.h"
#include "util/thread_pool.h"

namespace gulpdb::engine {

namespace {

// The key a push gives chunk `record` that the generation does not list
// (publish_plan.cc's rule for a chunk alone).
std::pair<std::string, std::string> TagChunkKeys(uint32_t number,
                                                 const index::ChunkRecord& record) {
  if (record.file_name.find('/') != std::string::npos) {
    return {GulpioDataFileName(number), "meta_" + std::to_string(number) + ".gmeta"};
  }
  return {record.file_name,
          record.meta_file.empty() || record.meta_file.find('/') != std::string::npos
              ? "meta_" + std::to_string(number) + ".gmeta"
              : record.meta_file};
}

}  // namespace

// 5c. The local tags, each as a tag object listed by `next`.
void TagPublisher::Publish(Manifest* next) {
  const std::string& dir = push_.dir;
  const std::vector<VersionInfo> local = ListTags(dir);
  if (local.empty()) return;
  const std::string objects = ObjectsDir(dir);
  std::map<uint32_t, const ManifestChunk*> generation_chunks;
  for (const ManifestChunk& c : next->chunks) generation_chunks.emplace(c.number, &c);
  // What to send: objects of the version store (key -> file, size, SHA-256),
  // texts (key -> bytes), and chunk files (key -> file, length).
  struct FileObject {
    std::string path;
    uint64_t size = 0;
    std::string sha256;
  };
  std::map<std::string, FileObject> files;
  std::map<std::string, std::string> texts;
  std::map<std::string, std::pair<std::string, uint64_t>> chunk_files;
  std::set<std::string> empty_gmeta;
  // The data objects and .gmeta keys of the chunks the tags read.
  std::set<std::string> tag_chunk_keys;
  for (const VersionInfo& info : local) {
    const index::PartitionRoot root = ReadRoot(dir, info.root, /*expand=*/true);
    const std::string root_path = objects + "/" + info.root;
    files[RootKey(info.root)] = {root_path, util::ReadFile(root_path).size(), info.root};
    for (const index::RootPage& p : root.pages) {
      files[RootPageKey(p.sha256)] = {objects + "/" + p.sha256, p.size, p.sha256};
    }
    for (const index::PartitionEntry& p : root.partitions) {
      files[PartitionKey(p.sha256)] = {objects + "/" + p.sha256, p.size, p.sha256};
    }
    // Its chunk list: the generation's keys, at the length the tag reads.
    std::vector<ManifestChunk> chunks;
    PartitionedIndex index(root, DirectoryFetch(objects), dir + " (version " + info.name + ")",
                           DirectoryPageFetch(objects));
    index.ScanChunks([&](uint32_t number, const index::ChunkRecord& record) {
      ManifestChunk c;
      c.number = number;
      c.committed_length = record.committed_length;
      c.live_videos = record.live_videos;
      c.live_bytes = record.live_bytes;
      // Names from the version store become keys and paths: inside the
      // dataset, and never one of gulpdb's own objects.
      if (!util::IsRelativeName(record.file_name) ||
          (!record.meta_file.empty() && !util::IsRelativeName(record.meta_file)) ||
          IsGulpdbObject(record.file_name) || IsGulpdbObject(record.meta_file)) {
        throw CorruptionError(push_.what + ": tag '" + info.name + "' reads chunk " +
                              std::to_string(number) + ", whose record names the file '" +
                              record.file_name + "' (.gmeta '" + record.meta_file +
                              "'): not a chunk file inside the dataset");
      }
      const auto in_generation = generation_chunks.find(number);
      if (in_generation != generation_chunks.end()) {
        c.key = in_generation->second->key;
        c.gmeta_key = in_generation->second->gmeta_key;
      } else {
        std::tie(c.key, c.gmeta_key) = TagChunkKeys(number, record);
        tag_only_chunks_.insert(c.key);
        // Its file: in the dataset, or where compaction kept it for tags.
        std::string path = dir + "/" + record.file_name;
        if (!util::PathExists(path)) path = KeptChunksDir(dir) + "/" + record.file_name;
        auto& [file, length] = chunk_files[c.key];
        file = path;
        length = std::max(length, record.committed_length);
        empty_gmeta.insert(c.gmeta_key);
      }
      chunks.push_back(std::move(c));
      return true;
    });
    std::sort(chunks.begin(), chunks.end(),
              [](const ManifestChunk& a, const ManifestChunk& b) { return a.number < b.number; });
    TagObject object(SummaryOf(info));
    object.root_key = RootKey(info.root);
    object.root_size = files[object.root_key].size;
    object.chunk_count = chunks.size();
    for (ChunkPageText& t : MakeChunkPages(chunks)) {
      texts[t.page.key] = std::move(t.text);
      object.chunk_pages.push_back(std::move(t.page));
    }
    for (const ManifestChunk& c : chunks) {
      tag_chunk_keys.insert(c.key);
      if (!c.gmeta_key.empty()) tag_chunk_keys.insert(c.gmeta_key);
    }
    const std::string text = SerializeTagObject(object);
    ManifestTag entry(object.summary());
    entry.sha256 = util::Sha256Hex(text);
    entry.key = TagObjectKey(entry.sha256);
    entry.size = text.size();
    texts[entry.key] = text;
    next->tags.push_back(std::move(entry));
  }
  std::sort(next->tags.begin(), next->tags.end(),
            [](const ManifestTag& a, const ManifestTag& b) { return a.name < b.name; });

  // The generation's objects were sent (or checked) by the steps before.
  const auto sent = [&](const std::string& key) {
    return uploader_.Written(key) || index_.Names(key);
  };
  std::vector<const std::pair<const std::string, FileObject>*> todo;
  for (const auto& entry : files) {
    if (!sent(entry.first)) todo.push_back(&entry);
  }
  std::vector<char> upload(todo.size(), 0);
  util::ParallelFor(todo.size(), std::max<uint32_t>(push_.jobs, 1), [&](size_t k) {
    const auto& [key, f] = *todo[k];
    const LocalCopy copy = LocalCopy::File(f.path, f.size, f.sha256);
    if (!uploader_.NeedsUpload(key, f.size, &copy)) return;
    if (!copy.Md5()) {
      throw CorruptionError(push_.what + ": the tag object " + f.path + " (" + key +
                            ") is missing or damaged: its bytes are not the ones its name "
                            "(SHA-256) says; `gulpdb check DIR --version NAME` names the tag");
    }
    upload[k] = 1;
  });
  std::vector<const std::pair<const std::string, FileObject>*> send;
  for (size_t k = 0; k < todo.size(); ++k) {
    if (upload[k] != 0) send.push_back(todo[k]);
  }
  if (!send.empty()) uploader_.Writing();
  util::ParallelFor(send.size(), std::max<uint32_t>(push_.jobs, 1), [&](size_t k) {
    const auto& [key, f] = *send[k];
    uploader_.WriteFile(key, f.path, f.size, uploader_.WriteFor(key));
  });
  for (const auto& [key, text] : texts) {
    if (sent(key)) continue;
    const LocalCopy copy = LocalCopy::Bytes(text);
    if (!uploader_.NeedsUpload(key, text.size(), &copy)) continue;
    uploader_.Writing();
    uploader_.Write(key, text, uploader_.WriteFor(key));
  }
  // Chunks only tags read: the store keeps the object a push uploaded
  // (chunk objects only grow); one it lacks, or holds shorter, is sent from
  // the local file, its promised prefix checked as any chunk's.
  for (const auto& [key, file] : chunk_files) {
    const auto& [path, length] = file;
    const StoreObject* listed = published_.Listed(key);
    if (sent(key) || (listed != nullptr && listed->size >= length && !published_.Foreign(key))) {
      continue;
    }
    if (const std::optional<Promise> promise = published_.PromiseFor(key);
        promise && promise->crc32c) {
      if (CrcOfFile(path, promise->length, promise->length).whole != *promise->crc32c) {
        throw CorruptionError(push_.what + ": the chunk file " + path +
                              " that a tag reads does not " + "hold the bytes " + promise->from +
                              " promised of " + push_.store.Name(key));
      }
    }
    uploader_.Writing();
    uploader_.WriteFile(key, path, length, uploader_.WriteFor(key));
  }
  // Every data object keeps a .gmeta (GulpIO lists them in pairs): an empty
  // one for a chunk only tags read, whose videos the generation has
  // elsewhere.
  for (const std::string& key : empty_gmeta) {
    if (sent(key) || published_.Listed(key) != nullptr) continue;
    uploader_.Writing();
    uploader_.Write(key, "{}", uploader_.WriteFor(key));
  }
  for (const std::string& key : tag_chunk_keys) index_.Name(key);
  for (const auto& entry : files) index_.Name(entry.first);
  for (const auto& entry : texts) index_.Name(entry.first);
}

}  // namespace gulpdb::engine
