// The chunk objects of a push (engine/remote/publisher.h; steps 3 and 4 of
// publish.cc's list): which chunk objects are new or grew, their uploads
// (never changing a prefix a published manifest promised), the .gmeta of
// every chunk whose videos changed, and label2idx.json. It owns the list of
// chunks to upload; what is published comes from the plan, every write goes
// through the Uploader. Internal to engine/remote.
// Thread safety: called on the push's thread; the uploads run on a pool.
#ifndef GULPDB_ENGINE_REMOTE_PUBLISH_CHUNKS_H_
#define GULPDB_ENGINE_REMOTE_PUBLISH_CHUNKS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "engine/remote/manifest.h"
#include "engine/remote/publish_context.h"
#include "engine/remote/publish_plan.h"
#include "engine/remote/publish_upload.h"

namespace gulpdb::engine {

class ChunkUploads {
 public:
  ChunkUploads(PushContext& push, const IndexCopy& local, const PublishedState& published,
               Uploader& uploader)
      : push_(push), local_(local), published_(published), uploader_(uploader) {}

  // 3a. Which of `chunks` need uploading; the others take the published
  // ETag and CRC-32C.
  void Plan(std::vector<ManifestChunk>* chunks);
  // 3b. Uploads new and grown chunk objects, setting their ETag and CRC-32C.
  void UploadChunks(std::vector<ManifestChunk>* chunks);
  // 4a. Writes (in `tmp`/gmeta) and uploads the .gmeta of every chunk whose
  // videos changed, setting each chunk's .gmeta SHA-256.
  void UploadGmeta(const std::string& tmp, std::vector<ManifestChunk>* chunks);
  // 4b. label2idx.json, when the dataset has one.
  void UploadLabels(Manifest* next);

 private:
  PushContext& push_;
  const IndexCopy& local_;
  const PublishedState& published_;
  Uploader& uploader_;
  std::vector<size_t> uploads_;  // indices into the new chunk list
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISH_CHUNKS_H_
