// The cleanup of a push (engine/remote/publisher.h; step 7 of publish.cc's
// list): the obsolete list of the new manifest (what it no longer names,
// kept for the grace period; what expired, to delete after the swap), the
// .gmeta of chunks that left the generation emptied, what a push never
// deletes (published_objects.h), and the foreign objects an overwriting push
// removes. It owns the count of chunks that left the generation.
// Internal to engine/remote.
// Thread safety: the push's thread only.
#ifndef GULPDB_ENGINE_REMOTE_PUBLISH_CLEANUP_H_
#define GULPDB_ENGINE_REMOTE_PUBLISH_CLEANUP_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "engine/remote/manifest.h"
#include "engine/remote/publish_context.h"
#include "engine/remote/publish_index.h"
#include "engine/remote/publish_plan.h"
#include "engine/remote/publish_tags.h"
#include "engine/remote/publish_upload.h"

namespace gulpdb::engine {

class Retirement {
 public:
  Retirement(PushContext& push, const PublishedState& published, Uploader& uploader,
             const IndexPublisher& index, const TagPublisher& tags)
      : push_(push), published_(published), uploader_(uploader), index_(index), tags_(tags) {}

  // The obsolete list of `next`; sets `expired` to what to delete once it
  // is published.
  std::vector<ManifestObsolete> Obsolete(const Manifest& next, std::vector<std::string>* expired);
  // 7b. With the overwrite option: deletes what no push of this dataset
  // wrote and this push did not replace.
  void DeleteForeign(const Manifest& next);
  // Every object `next` names (its index objects as this push built them).
  std::set<std::string> NamedByNext(const Manifest& next) const;
  // Chunks that left the generation (set by Obsolete).
  uint64_t removed_chunks() const { return removed_chunks_; }

 private:
  std::set<std::string> Untouchable(const Manifest& next) const;

  PushContext& push_;
  const PublishedState& published_;
  Uploader& uploader_;
  const IndexPublisher& index_;
  const TagPublisher& tags_;
  uint64_t removed_chunks_ = 0;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISH_CLEANUP_H_
