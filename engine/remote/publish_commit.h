// The commit of a push (engine/remote/publisher.h; step 6 of publish.cc's
// list): whether the new manifest says anything the published one does
// not, then the generation claimed (its manifest copy, created only if
// absent) and the manifest swapped (only if it still has the ETag the plan
// read): the one step that makes the new state visible. It owns no state
// of its own: the manifest read is the plan's, the lease and conditions the
// Uploader's. Internal to engine/remote.
// Thread safety: the push's thread only.
#ifndef GULPDB_ENGINE_REMOTE_PUBLISH_COMMIT_H_
#define GULPDB_ENGINE_REMOTE_PUBLISH_COMMIT_H_

#include <cstdint>
#include <string>

#include "engine/remote/manifest.h"
#include "engine/remote/publish_context.h"
#include "engine/remote/publish_plan.h"
#include "engine/remote/publish_upload.h"

namespace gulpdb::engine {

class ManifestCommit {
 public:
  ManifestCommit(const PushContext& push, const PublishedState& published, Uploader& uploader)
      : push_(push), published_(published), uploader_(uploader) {}

  // Whether `next` says anything the published manifest does not (which
  // must exist); `removed_chunks` chunks left the generation.
  bool Changed(const Manifest& next, uint64_t removed_chunks) const;
  // 6. Claims `next`'s generation and swaps the manifest; BusyError when
  // another push claimed it or published meanwhile (the claim deleted).
  void Publish(Manifest& next);

 private:
  void DeleteClaim(const std::string& copy);

  const PushContext& push_;
  const PublishedState& published_;
  Uploader& uploader_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISH_COMMIT_H_
