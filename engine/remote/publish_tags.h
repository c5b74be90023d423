// The tags of a push (engine/remote/publisher.h; step 5c of publish.cc's
// list, docs/versions.md "Tags in a bucket"): every local tag published as a
// tag object that the new manifest lists, with every object it names. It
// owns the data objects of the chunks only tags read (the generation no
// longer lists them: their .gmeta is emptied, their data object kept); the
// objects it names join the index publisher's keys, and every write goes
// through the Uploader. Internal to engine/remote.
// Thread safety: called on the push's thread; the uploads run on a pool.
#ifndef GULPDB_ENGINE_REMOTE_PUBLISH_TAGS_H_
#define GULPDB_ENGINE_REMOTE_PUBLISH_TAGS_H_

#include <set>
#include <string>

#include "engine/remote/manifest.h"
#include "engine/remote/publish_context.h"
#include "engine/remote/publish_index.h"
#include "engine/remote/publish_plan.h"
#include "engine/remote/publish_upload.h"

namespace gulpdb::engine {

class TagPublisher {
 public:
  TagPublisher(const PushContext& push, const PublishedState& published, Uploader& uploader,
               IndexPublisher& index)
      : push_(push), published_(published), uploader_(uploader), index_(index) {}

  // 5c. The local tags, each as a tag object listed by `next`, after the
  // objects it names.
  void Publish(Manifest* next);

  // Whether `key` is the data object of a chunk only tags read.
  bool OnlyTagsRead(const std::string& key) const { return tag_only_chunks_.count(key) != 0; }

 private:
  const PushContext& push_;
  const PublishedState& published_;
  Uploader& uploader_;
  IndexPublisher& index_;
  std::set<std::string> tag_only_chunks_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISH_TAGS_H_
