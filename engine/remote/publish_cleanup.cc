// The cleanup of a push (engine/remote/publish_cleanup.h; step 7 of publish.cc's
// list): what the new manifest lists as obsolete, what it may never delete,
// and the foreign objects an overwriting push removes.
#include "engine/remote/publish_cleanup.h"

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
#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/published_objects.h"
#include "engine/remote/push_lease.h"
#include "s3/errors.h"
#include "util/thread_pool.h"

namespace gulpdb::engine {

// The obsolete list of `next`: the published one without what `next`
// names again and without what expired (returned in `expired`, to delete
// after publishing), plus what `next` supersedes now, and what interrupted
// pushes of this dataset left (kept for the grace period too). An entry
// naming what either generation names is not the published list's to
// retire: the one `next` supersedes is listed afresh, from now.
std::vector<ManifestObsolete> Retirement::Obsolete(const Manifest& next,
                                                   std::vector<std::string>* expired) {
  const std::set<std::string> named = NamedByNext(next);
  const std::set<std::string> kept = Untouchable(next);
  std::vector<ManifestObsolete> out;
  std::set<std::string> listed;  // keys in `out`
  const auto supersede = [&](const std::string& key) {
    if (named.count(key) != 0 || !listed.insert(key).second) return;
    ManifestObsolete o;
    o.key = key;
    o.since_unix = push_.now;
    out.push_back(std::move(o));
  };
  if (const std::optional<Manifest>& old = published_.old()) {
    for (const ManifestObsolete& o : old->obsolete) {
      if (kept.count(o.key) != 0 || !listed.insert(o.key).second) continue;
      if (push_.Expired(o.since_unix)) {
        expired->push_back(o.key);
        if (!o.gmeta_key.empty()) expired->push_back(o.gmeta_key);
      } else {
        out.push_back(o);
      }
    }
    // Chunks that are gone (emptied by compaction): their data objects stay
    // for the grace period; their .gmeta is emptied now, so that GulpIO
    // readers see each video once (and every data file keeps its .gmeta).
    std::set<std::string> data_objects;  // never emptied as a .gmeta
    for (const ManifestChunk& c : old->chunks) data_objects.insert(c.key);
    for (const ManifestChunk& c : next.chunks) data_objects.insert(c.key);
    std::set<std::string> next_gmeta;  // the .gmeta of the new generation's chunks
    for (const ManifestChunk& c : next.chunks) next_gmeta.insert(c.gmeta_key);
    for (const ManifestChunk& c : old->chunks) {
      // A chunk gone from the generation that a tag still reads keeps its
      // data object (named by the tag); its .gmeta is emptied all the same.
      const bool for_tags = tags_.OnlyTagsRead(c.key);
      // A local snapshot's chunks are the dataset's own files, not objects.
      if ((named.count(c.key) != 0 && !for_tags) || !old->chunks_published ||
          IsGulpdbObject(c.key)) {
        continue;
      }
      ManifestObsolete o;
      o.key = c.key;
      o.since_unix = push_.now;
      o.committed_length = c.committed_length;
      o.crc32c = c.crc32c;
      const bool gmeta_free =
          for_tags ? next_gmeta.count(c.gmeta_key) == 0 : named.count(c.gmeta_key) == 0;
      if (!c.gmeta_key.empty() && gmeta_free && data_objects.count(c.gmeta_key) == 0 &&
          !IsGulpdbObject(c.gmeta_key)) {
        o.gmeta_key = c.gmeta_key;
        if (published_.Listed(c.gmeta_key) != nullptr) {
          uploader_.Writing();
          uploader_.Write(c.gmeta_key, "{}", uploader_.WriteFor(c.gmeta_key));
        }
      }
      ++removed_chunks_;
      if (for_tags) continue;
      if (listed.insert(o.key).second) out.push_back(std::move(o));
    }
    uint64_t superseded = 0;
    for (const std::string& key : published_.OldIndexKeys()) {
      if (named.count(key) == 0 && listed.count(key) == 0) ++superseded;
      supersede(key);
    }
    if (!old->label2idx_key.empty()) supersede(old->label2idx_key);
    push_.report.objects_obsoleted = removed_chunks_ + superseded;
  }
  for (const std::string& key : published_.leftovers()) supersede(key);
  std::vector<std::string> deletable;
  for (std::string& key : *expired) {
    if (kept.count(key) == 0) deletable.push_back(std::move(key));
  }
  *expired = std::move(deletable);
  return out;
}

// 7. What this push never deletes, whatever an obsolete list says: the
// manifest and the lease, what `next` names, and what the published
// generation names (its readers read it for the grace period yet).
std::set<std::string> Retirement::Untouchable(const Manifest& next) const {
  std::set<std::string> kept = NamedByNext(next);
  kept.insert(kManifestKey);
  kept.insert(kPushLeaseKey);
  kept.insert(published_.old_named().begin(), published_.old_named().end());
  return kept;
}

std::set<std::string> Retirement::NamedByNext(const Manifest& next) const {
  std::set<std::string> named = NamedObjects(next, nullptr);
  named.insert(index_.keys().begin(), index_.keys().end());
  return named;
}

// 7b. With the overwrite option: what no push of this dataset wrote and
// this push did not replace.
void Retirement::DeleteForeign(const Manifest& next) {
  if (published_.foreign().empty()) return;
  const std::set<std::string> kept = Untouchable(next);
  std::vector<std::string> doomed;
  for (const std::string& key : published_.foreign()) {
    if (kept.count(key) == 0 && !uploader_.Written(key)) doomed.push_back(key);
  }
  if (doomed.empty()) return;
  uploader_.CheckLease();
  push_.store.Delete(doomed);
  push_.report.foreign_objects_deleted = doomed.size();
}

}  // namespace gulpdb::engine
