#include "engine/remote/published_tags.h"

#include <algorithm>
#include <cmath>

#include "engine/remote/published_objects.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {

const ManifestTag& FindPublishedTag(const Manifest& manifest, const std::string& name,
                                    const std::string& url, const std::string& what) {
  for (const ManifestTag& t : manifest.tags) {
    if (t.name == name) return t;
  }
  std::string known;
  for (const VersionInfo& t : PublishedVersions(manifest)) {
    known += (known.empty() ? "" : ", ") + t.name;
  }
  throw NameNotFoundError(what + ": no tag '" + name + "' in " + url + " (generation " +
                          std::to_string(manifest.generation) + ")" +
                          (known.empty() ? " (it has no tags; push publishes a dataset's tags)"
                                         : " (tags: " + known + ")"));
}

TagObject FetchTagObject(ObjectStore& store, const ManifestTag& tag, const std::string& what,
                         const BadObjectScope* remember) {
  const std::string name = store.Name(tag.key);
  const NamedObject object = NameObject(
      store, tag.key, tag.size, tag.sha256,
      what + ": the tag object " + name + " of tag '" + tag.name + "' that the manifest names",
      "the manifest");
  TagObject parsed;
  GetVerified(store, object, remember,
              [&](std::string_view bytes) { parsed = ParseTagObject(bytes, name); });
  if (parsed.name != tag.name || parsed.root_sha256 != tag.root_sha256) {
    throw CorruptionError("read tag " + name + ": it is the tag '" + parsed.name + "' of root " +
                          parsed.root_sha256 + ", the manifest lists it as '" + tag.name +
                          "' of root " + tag.root_sha256);
  }
  return parsed;
}

Manifest TagManifest(const Manifest& published, const TagObject& tag) {
  Manifest m = published;
  m.version = kManifestVersionChunkPages;
  m.snapshot_key.clear();
  m.snapshot_size = 0;
  m.snapshot_sha256.clear();
  m.root_key = tag.root_key;
  m.root_size = tag.root_size;
  m.root_sha256 = tag.root_sha256;
  m.videos = tag.videos;
  m.frames = tag.frames;
  m.chunks.clear();
  m.chunk_pages = tag.chunk_pages;
  m.chunk_count = tag.chunk_count;
  m.obsolete.clear();
  return m;
}

TagSummary SummaryOf(const VersionInfo& local) {
  TagSummary t;
  t.name = local.name;
  t.created_ms = std::llround(local.created * 1000.0);
  t.videos = local.videos;
  t.frames = local.frames;
  t.message = local.message;
  t.root_sha256 = local.root;
  return t;
}

VersionInfo VersionOf(const TagSummary& published) {
  VersionInfo v;
  v.name = published.name;
  v.created = static_cast<double>(published.created_ms) / 1000.0;
  v.videos = published.videos;
  v.frames = published.frames;
  v.message = published.message;
  v.root = published.root_sha256;
  return v;
}

std::vector<VersionInfo> PublishedVersions(const Manifest& manifest) {
  std::vector<VersionInfo> out;
  for (const ManifestTag& t : manifest.tags) {
    out.push_back(VersionOf(t));
  }
  // As a local dataset lists them: oldest first.
  std::stable_sort(out.begin(), out.end(), [](const VersionInfo& a, const VersionInfo& b) {
    return a.created != b.created ? a.created < b.created : a.name < b.name;
  });
  return out;
}

std::set<std::string> TagNamedObjects(const ManifestTag& tag, const Manifest& tag_manifest,
                                      const index::PartitionRoot& root) {
  std::set<std::string> keys = NamedObjects(tag_manifest, &root);
  // A tag has no manifest copy of its own: the one NamedObjects adds is
  // its generation's, named by that generation.
  keys.erase(ManifestHistoryKey(tag_manifest.generation));
  if (!tag_manifest.label2idx_key.empty()) keys.erase(tag_manifest.label2idx_key);
  keys.insert(tag.key);
  return keys;
}

}  // namespace gulpdb::engine
