// The Publisher: one push of a dataset to an object store, or one snapshot of
// its index beside it (gulpdb/remote.h's Push and PublishSnapshot). It is
// the orchestrator of the steps publish.cc lists, each a class that owns the
// state of its step:
//   PushContext    (publish_context.h) what every step reads, and the report;
//   IndexCopy      (publish_plan.h)    the local copy of the index and chunks;
//   PublishedState (publish_plan.h)    the published generation and listing;
//   Uploader       (publish_upload.h)  the lease, conditional writes, checks;
//   ChunkUploads   (publish_chunks.h)  chunk objects, .gmeta and label files;
//   IndexPublisher (publish_index.h)   the snapshot, or partitions and root;
//   TagPublisher   (publish_tags.h)    the local tags' objects;
//   ManifestCommit (publish_commit.h)  the generation claimed, the swap;
//   Retirement     (publish_cleanup.h) the obsolete list, deletions.
// The layout it writes is docs/format/remote_format.md. Internal to
// engine/remote.
// Thread safety: one Publisher runs one push on the calling thread; its
// uploads run on pools of their own (publish_upload.h says what they share).
#ifndef GULPDB_ENGINE_REMOTE_PUBLISHER_H_
#define GULPDB_ENGINE_REMOTE_PUBLISHER_H_

#include <string>

#include "engine/remote/object_store.h"
#include "engine/remote/publish_chunks.h"
#include "engine/remote/publish_cleanup.h"
#include "engine/remote/publish_commit.h"
#include "engine/remote/publish_context.h"
#include "engine/remote/publish_index.h"
#include "engine/remote/publish_plan.h"
#include "engine/remote/publish_tags.h"
#include "engine/remote/publish_upload.h"
#include "gulpdb/remote.h"

namespace gulpdb::engine {

class Publisher {
 public:
  // Throws InvalidArgumentError for a negative grace period.
  Publisher(std::string dir, ObjectStore& store, bool publish_chunks, const PushOptions& options)
      : push_(std::move(dir), store, publish_chunks, options),
        local_(push_),
        published_(push_),
        uploader_(push_, published_),
        chunks_(push_, local_, published_, uploader_),
        index_(push_, local_, published_, uploader_),
        tags_(push_, published_, uploader_, index_),
        commit_(push_, published_, uploader_),
        retirement_(push_, published_, uploader_, index_, tags_) {}

  PushReport Run();

 private:
  // Whether this push publishes a partitioned snapshot (PushOptions::layout).
  bool Partitioned() const;

  PushContext push_;
  IndexCopy local_;
  PublishedState published_;
  Uploader uploader_;
  ChunkUploads chunks_;
  IndexPublisher index_;
  TagPublisher tags_;
  ManifestCommit commit_;
  Retirement retirement_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISHER_H_
