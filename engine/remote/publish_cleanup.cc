// The cleanup of a push (engine/remote/publisher.h; step 7 of publish.cc's
// list): what the new manifest lists as obsolete, what it may never delete,
// and the foreign objects an overwriting push removes.
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
#include "engine/remote/publisher.h"
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
std::vector<ManifestObsolete> Publisher::Obsolete(const Manifest& next,
                                                  std::vector<std::string>* expired) {
  const std::set<std::string> named = NamedByNext(next);
  const std::set<std::string> kept = Untouchable(next);
  std::vector<ManifestObsolete> out;
  std::set<std::string> listed;  // keys in `out`
  const auto supersede = [&](const std::string& key) {
    if (named.count(key) != 0 || !listed.insert(key).second) return;
    ManifestObsolete o;
    o.key = key;
    o.since_unix = now_;
    out.push_back(std::move(o));
  };
  if (old_) {
    for (const ManifestObsolete& o : old_->obsolete) {
      if (kept.count(o.key) != 0 || !listed.insert(o.key).second) continue;
      if (Expired(o.since_unix)) {
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
    for (const ManifestChunk& c : old_->chunks) data_objects.insert(c.key);
    for (const ManifestChunk& c : next.chunks) data_objects.insert(c.key);
    std::set<std::string> next_gmeta;  // the .gmeta of the new generation's chunks
    for (const ManifestChunk& c : next.chunks) next_gmeta.insert(c.gmeta_key);
    for (const ManifestChunk& c : old_->chunks) {
      // A chunk gone from the generation that a tag still reads keeps its
      // data object (named by the tag); its .gmeta is emptied all the same.
      const bool for_tags = tag_only_chunks_.count(c.key) != 0;
      // A local snapshot's chunks are the dataset's own files, not objects.
      if ((named.count(c.key) != 0 && !for_tags) || !old_->chunks_published ||
          IsGulpdbObject(c.key)) {
        continue;
      }
      ManifestObsolete o;
      o.key = c.key;
      o.since_unix = now_;
      o.committed_length = c.committed_length;
      o.crc32c = c.crc32c;
      const bool gmeta_free =
          for_tags ? next_gmeta.count(c.gmeta_key) == 0 : named.count(c.gmeta_key) == 0;
      if (!c.gmeta_key.empty() && gmeta_free && data_objects.count(c.gmeta_key) == 0 &&
          !IsGulpdbObject(c.gmeta_key)) {
        o.gmeta_key = c.gmeta_key;
        if (listing_.count(c.gmeta_key) != 0) {
          Writing();
          Write(c.gmeta_key, "{}", WriteFor(c.gmeta_key));
        }
      }
      ++removed_chunks_;
      if (for_tags) continue;
      if (listed.insert(o.key).second) out.push_back(std::move(o));
    }
    uint64_t superseded = 0;
    for (const std::string& key : OldIndexKeys()) {
      if (named.count(key) == 0 && listed.count(key) == 0) ++superseded;
      supersede(key);
    }
    if (!old_->label2idx_key.empty()) supersede(old_->label2idx_key);
    report_.objects_obsoleted = removed_chunks_ + superseded;
  }
  for (const std::string& key : leftovers_) supersede(key);
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
std::set<std::string> Publisher::Untouchable(const Manifest& next) const {
  std::set<std::string> kept = NamedByNext(next);
  kept.insert(kManifestKey);
  kept.insert(kPushLeaseKey);
  if (old_) {
    for (const std::string& key : NamedObjects(*old_, old_root_ ? &*old_root_ : nullptr)) {
      kept.insert(key);
    }
    kept.insert(old_tag_named_.begin(), old_tag_named_.end());
  }
  return kept;
}

// 7b. With the overwrite option: what no push of this dataset wrote and
// this push did not replace.
void Publisher::DeleteForeign(const Manifest& next) {
  if (foreign_set_.empty()) return;
  const std::set<std::string> kept = Untouchable(next);
  std::vector<std::string> doomed;
  for (const std::string& key : foreign_set_) {
    if (kept.count(key) == 0 && written_.count(key) == 0) doomed.push_back(key);
  }
  if (doomed.empty()) return;
  CheckLease();
  store_.Delete(doomed);
  report_.foreign_objects_deleted = doomed.size();
}

}  // namespace gulpdb::engine
