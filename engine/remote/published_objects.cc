#include "engine/remote/published_objects.h"

namespace gulpdb::engine {

std::set<std::string> NamedObjects(const Manifest& manifest, const index::PartitionRoot* root) {
  std::set<std::string> keys = {ManifestHistoryKey(manifest.generation)};
  if (!manifest.snapshot_key.empty()) keys.insert(manifest.snapshot_key);
  if (manifest.partitioned()) keys.insert(manifest.root_key);
  if (root != nullptr) {
    for (const index::PartitionEntry& p : root->partitions) keys.insert(PartitionKey(p.sha256));
    for (const index::RootPage& p : root->pages) keys.insert(RootPageKey(p.sha256));
  }
  for (const ManifestChunkPage& p : manifest.chunk_pages) keys.insert(p.key);
  for (const ManifestChunk& c : manifest.chunks) {
    keys.insert(c.key);
    if (!c.gmeta_key.empty()) keys.insert(c.gmeta_key);
  }
  if (!manifest.label2idx_key.empty()) keys.insert(manifest.label2idx_key);
  return keys;
}

bool IsGulpdbObject(std::string_view key) { return key.substr(0, 7) == "gulpdb."; }

}  // namespace gulpdb::engine
