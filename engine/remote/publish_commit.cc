// The commit of a push (engine/remote/publisher.h; step 6 of publish.cc's
// list): whether anything changed, then the generation claimed and the
// manifest swapped, the one step that makes the new state visible.
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
#include "gulpdb/error.h"
#include "s3/errors.h"
#include "util/thread_pool.h"

namespace gulpdb::engine {

// Every object `next` names (its index objects as this push built them).
std::set<std::string> Publisher::NamedByNext(const Manifest& next) const {
  std::set<std::string> named = NamedObjects(next, nullptr);
  named.insert(next_index_keys_.begin(), next_index_keys_.end());
  return named;
}

// Whether `next` says anything the published manifest does not.
bool Publisher::Changed(const Manifest& next) const {
  if (next.snapshot_sha256 != old_->snapshot_sha256 || next.root_sha256 != old_->root_sha256 ||
      removed_chunks_ != 0) {
    return true;
  }
  if (next.dataset != old_->dataset) return true;
  if (next.chunks.size() != old_->chunks.size()) return true;
  for (size_t i = 0; i < next.chunks.size(); ++i) {
    const ManifestChunk& a = next.chunks[i];
    const ManifestChunk& b = old_->chunks[i];
    if (a.key != b.key || a.committed_length != b.committed_length || a.etag != b.etag ||
        a.crc32c != b.crc32c || a.gmeta_key != b.gmeta_key || a.gmeta_sha256 != b.gmeta_sha256) {
      return true;
    }
  }
  return next.label2idx_sha256 != old_->label2idx_sha256 ||
         next.grace_seconds != old_->grace_seconds || next.tags != old_->tags;
}

// 6. The manifest, last.
void Publisher::Publish(Manifest& next) {
  if (old_) {
    ManifestObsolete o;  // the previous generation's copy, for pinned readers
    o.key = ManifestHistoryKey(old_->generation);
    o.since_unix = now_;
    next.obsolete.push_back(std::move(o));
  }
  const std::string text = SerializeManifest(next);
  const std::string copy = ManifestHistoryKey(next.generation);
  Writing();
  if (!conditional_ || !conditions_honoured_) {
    // No conditions to rely on: refuse to overwrite a generation published
    // while this push ran (a window of the two PUTs below remains).
    RequireManifestAsRead();
    if (!conditional_) {
      store_.Put(copy, text);
      store_.Put(kManifestKey, text);
      return;
    }
  }
  // The generation is claimed by creating its copy: of two pushes building
  // on one manifest, the first claims it, the other stops here.
  remote::WriteOptions claim = WriteFor(copy);
  if (send_conditions_) {
    claim.if_absent = true;
    claim.if_match.clear();
  }
  CheckLease();
  try {
    store_.Put(copy, text, claim);
  } catch (const remote::PreconditionFailedError&) {
    throw BusyError(what_ + ": another push claimed generation " + std::to_string(next.generation) +
                    " (" + store_.Name(copy) +
                    ") while this one ran; this push published nothing: run it again");
  }
  // The swap: only if the manifest is still the one this push read.
  remote::WriteOptions swap = WriteFor(kManifestKey);
  if (send_conditions_) {
    swap.if_absent = manifest_etag_.empty();
    swap.if_match = manifest_etag_;
  }
  try {
    CheckLease();
    store_.Put(kManifestKey, text, swap);
  } catch (const remote::PreconditionFailedError&) {
    DeleteClaim(copy);
    throw BusyError(what_ +
                    ": another push published a new manifest while this one ran; "
                    "this push published nothing: run it again");
  } catch (const Error&) {
    DeleteClaim(copy);
    throw;
  }
}

// The copy of a generation this push claimed but did not publish: no
// manifest names it, and no other push writes it (they create copies only
// where there is none).
void Publisher::DeleteClaim(const std::string& copy) {
  try {
    store_.Delete({copy});
  } catch (const Error&) {
    // Left for a later push, which passes over it and deletes it after
    // the grace period.
  }
}

}  // namespace gulpdb::engine
