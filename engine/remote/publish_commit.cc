// The commit of a push (engine/remote/publish_commit.h; step 6 of publish.cc's
// list): whether anything changed, then the generation claimed and the
// manifest swapped, the one step that makes the new state visible.
#include "engine/remote/publish_commit.h"

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
#include "gulpdb/error.h"
#include "s3/errors.h"
#include "util/thread_pool.h"

namespace gulpdb::engine {

// Whether `next` says anything the published manifest does not.
bool ManifestCommit::Changed(const Manifest& next, uint64_t removed_chunks) const {
  const Manifest& old = *published_.old();
  if (next.snapshot_sha256 != old.snapshot_sha256 || next.root_sha256 != old.root_sha256 ||
      removed_chunks != 0) {
    return true;
  }
  if (next.dataset != old.dataset) return true;
  if (next.chunks.size() != old.chunks.size()) return true;
  for (size_t i = 0; i < next.chunks.size(); ++i) {
    const ManifestChunk& a = next.chunks[i];
    const ManifestChunk& b = old.chunks[i];
    if (a.key != b.key || a.committed_length != b.committed_length || a.etag != b.etag ||
        a.crc32c != b.crc32c || a.gmeta_key != b.gmeta_key || a.gmeta_sha256 != b.gmeta_sha256) {
      return true;
    }
  }
  return next.label2idx_sha256 != old.label2idx_sha256 || next.grace_seconds != old.grace_seconds ||
         next.tags != old.tags;
}

// 6. The manifest, last.
void ManifestCommit::Publish(Manifest& next) {
  if (const std::optional<Manifest>& old = published_.old()) {
    ManifestObsolete o;  // the previous generation's copy, for pinned readers
    o.key = ManifestHistoryKey(old->generation);
    o.since_unix = push_.now;
    next.obsolete.push_back(std::move(o));
  }
  const std::string text = SerializeManifest(next);
  const std::string copy = ManifestHistoryKey(next.generation);
  ObjectStore& store = push_.store;
  uploader_.Writing();
  if (!push_.conditional || !uploader_.conditions_honoured()) {
    // No conditions to rely on: refuse to overwrite a generation published
    // while this push ran (a window of the two PUTs below remains).
    uploader_.RequireManifestAsRead();
    if (!push_.conditional) {
      store.Put(copy, text);
      store.Put(kManifestKey, text);
      return;
    }
  }
  // The generation is claimed by creating its copy: of two pushes building
  // on one manifest, the first claims it, the other stops here.
  remote::WriteOptions claim = uploader_.WriteFor(copy);
  if (uploader_.send_conditions()) {
    claim.if_absent = true;
    claim.if_match.clear();
  }
  uploader_.CheckLease();
  try {
    store.Put(copy, text, claim);
  } catch (const remote::PreconditionFailedError&) {
    throw BusyError(push_.what + ": another push claimed generation " +
                    std::to_string(next.generation) + " (" + store.Name(copy) +
                    ") while this one ran; this push published nothing: run it again");
  }
  // The swap: only if the manifest is still the one this push read.
  remote::WriteOptions swap = uploader_.WriteFor(kManifestKey);
  if (uploader_.send_conditions()) {
    swap.if_absent = published_.manifest_etag().empty();
    swap.if_match = published_.manifest_etag();
  }
  try {
    uploader_.CheckLease();
    store.Put(kManifestKey, text, swap);
  } catch (const remote::PreconditionFailedError&) {
    DeleteClaim(copy);
    throw BusyError(push_.what +
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
void ManifestCommit::DeleteClaim(const std::string& copy) {
  try {
    push_.store.Delete({copy});
  } catch (const Error&) {
    // Left for a later push, which passes over it and deletes it after
    // the grace period.
  }
}

}  // namespace gulpdb::engine
