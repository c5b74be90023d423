// The chunk objects of a push (engine/remote/publish_chunks.h; steps 3 and
// 4 of publish.cc's list): chunk objects, .gmeta and label files.
#include "engine/remote/publish_chunks.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>

#include "engine/core/dataset_view.h"
#include "engine/gulpio/gmeta.h"
#include "engine/remote/push_verify.h"
#include "gulpdb/error.h"
#include "util/file_io.h"
#include "util/thread_pool.h"

namespace gulpdb::engine {

// 3a. Which chunk objects need uploading.
void ChunkUploads::Plan(std::vector<ManifestChunk>* chunks) {
  if (!push_.publish_chunks) return;
  for (size_t i = 0; i < chunks->size(); ++i) {
    ManifestChunk& m = (*chunks)[i];
    const ManifestChunk* old = published_.OldChunk(m.key);
    const StoreObject* object = published_.Listed(m.key);
    bool unchanged = old != nullptr && old->committed_length == m.committed_length &&
                     old->crc32c.has_value() && object != nullptr &&
                     object->size == m.committed_length &&
                     (object->etag.empty() || object->etag == old->etag);
    // Overwriting checks the bytes too (one local read of every chunk),
    // and uploads again what it cannot check.
    if (unchanged && push_.options.overwrite) {
      const LocalCopy copy = LocalCopy::File(local_.PathOf(m.key), m.committed_length);
      unchanged = !uploader_.NeedsUpload(m.key, m.committed_length, &copy, /*unverified_too=*/true);
    } else if (!unchanged && old != nullptr && old->committed_length == m.committed_length &&
               old->crc32c.has_value()) {
      uploader_.CountRepair();  // missing, or replaced behind the manifest's back
    }
    if (unchanged) {
      m.etag = old->etag;
      m.crc32c = old->crc32c;
      // Overwriting does not take the published CRC-32C on trust either
      // (the object's bytes are the local ones, checked above).
      if (push_.options.overwrite) {
        const std::string path = local_.PathOf(m.key);
        m.crc32c = CrcOfFile(path, m.committed_length, m.committed_length).whole;
      }
    } else {
      uploads_.push_back(i);
    }
  }
}

// 3b. Uploads new and grown chunk objects, never changing a promised prefix.
void ChunkUploads::UploadChunks(std::vector<ManifestChunk>* chunks) {
  uint64_t total = 0;
  for (size_t i : uploads_) total += (*chunks)[i].committed_length;
  if (!uploads_.empty()) uploader_.Writing();
  std::atomic<uint64_t> done{0};
  std::mutex progress_mutex;
  util::ParallelFor(uploads_.size(), std::max<uint32_t>(push_.jobs, 1), [&](size_t k) {
    ManifestChunk& c = (*chunks)[uploads_[k]];
    const std::string path = local_.PathOf(c.key);
    const std::optional<Promise> promise = published_.PromiseFor(c.key);
    if (promise && promise->length > c.committed_length) {
      throw CorruptionError(
          "push " + push_.dir + " to " + push_.store.url() + ": chunk " + c.key + " has " +
          std::to_string(c.committed_length) + " committed bytes, but " + promise->from +
          " promised its readers " + std::to_string(promise->length) +
          ": the local chunk was rewritten, and the push will not change bytes those readers "
          "may read; publish to a new prefix");
    }
    const PrefixCrc crc = CrcOfFile(path, c.committed_length, promise ? promise->length : 0);
    if (promise && promise->crc32c && crc.at_checkpoint != *promise->crc32c) {
      throw CorruptionError(
          "push " + push_.dir + " to " + push_.store.url() + ": the first " +
          std::to_string(promise->length) + " bytes of chunk " + c.key + " differ from what " +
          promise->from +
          " published (CRC-32C mismatch): the local chunk was rewritten, and the push will not "
          "change bytes readers of the published dataset may read; publish to a new prefix");
    }
    c.crc32c = crc.whole;
    remote::WriteOptions write = uploader_.WriteFor(c.key);
    if (push_.conditional && promise && promise->crc32c) {
      write.metadata[kMetaPrefix] = PromiseText(promise->length, *promise->crc32c);
    }
    c.etag = uploader_.WriteFile(c.key, path, c.committed_length, write);
    const uint64_t now_done = done.fetch_add(c.committed_length) + c.committed_length;
    if (push_.options.progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      push_.options.progress(now_done, total);
    }
  });
  push_.report.chunks_uploaded = uploads_.size();
  push_.report.bytes_uploaded = total;
}

// 4a. The .gmeta of every chunk whose videos changed since the last push.
void ChunkUploads::UploadGmeta(const std::string& tmp, std::vector<ManifestChunk>* chunks) {
  const std::string gmeta_dir = tmp + "/gmeta";
  util::MakeDirectories(gmeta_dir);
  std::vector<size_t> todo;
  for (size_t i = 0; i < chunks->size(); ++i) {
    ManifestChunk& c = (*chunks)[i];
    const ManifestChunk* old = published_.OldChunk(c.key);
    const bool same = old != nullptr && old->gmeta_key == c.gmeta_key &&
                      !old->gmeta_sha256.empty() && old->committed_length == c.committed_length &&
                      old->live_videos == c.live_videos && old->live_bytes == c.live_bytes &&
                      old->meta_edits == c.meta_edits &&
                      published_.Listed(c.gmeta_key) != nullptr && !published_.Foreign(c.gmeta_key);
    if (same && !push_.options.overwrite) {  // overwriting writes each one and checks it
      c.gmeta_sha256 = old->gmeta_sha256;
    } else {
      todo.push_back(i);
    }
  }
  if (!todo.empty()) uploader_.Writing();
  std::atomic<uint64_t> uploaded{0};
  util::ParallelFor(todo.size(), std::max<uint32_t>(push_.jobs, 1), [&](size_t k) {
    ManifestChunk& c = (*chunks)[todo[k]];
    const std::string path = gmeta_dir + "/" + std::to_string(c.number) + ".gmeta";
    GmetaWriter writer(path);
    local_.snapshot().ForEachInChunk(c.number, [&](const VideoInfo& v) {
      writer.Add(v.id, v.frames, v.meta_data);
      return true;
    });
    writer.Commit();
    uint64_t size = 0;
    c.gmeta_sha256 = Sha256OfFile(path, &size);
    const LocalCopy copy = LocalCopy::File(path, size);
    // A text the published generation names is checked as every named
    // object is (a damaged one is uploaded again, a repair). Another text (a
    // meta edit or an append rewrote it) may be listed with the old text's
    // size and an ETag an earlier push verified (push_verify.h): that ETag
    // vouches for the old text, so only the listed bytes' MD5 spares the
    // upload, which is not a repair.
    const ManifestChunk* named = published_.OldChunk(c.key);
    const bool text_named = named != nullptr && named->gmeta_key == c.gmeta_key &&
                            named->gmeta_sha256 == c.gmeta_sha256;
    if (text_named ? !uploader_.NeedsUpload(c.gmeta_key, size, &copy)
                   : uploader_.ListedWithText(c.gmeta_key, copy)) {
      return;  // the same text
    }
    uploader_.WriteFile(c.gmeta_key, path, size, uploader_.WriteFor(c.gmeta_key));
    uploaded.fetch_add(1);
  });
  push_.report.gmeta_uploaded = uploaded.load();
}

// 4b. label2idx.json, when the dataset has one.
void ChunkUploads::UploadLabels(Manifest* next) {
  const std::string path = push_.dir + "/label2idx.json";
  if (!util::PathExists(path)) return;
  uint64_t size = 0;
  next->label2idx_key = "label2idx.json";
  next->label2idx_sha256 = Sha256OfFile(path, &size);
  const LocalCopy copy = LocalCopy::File(path, size);
  // As a .gmeta's text: another label map than the published one (a
  // relabel added labels) is uploaded unless the store lists its bytes.
  const std::optional<Manifest>& old = published_.old();
  const bool text_named = old && old->label2idx_key == next->label2idx_key &&
                          old->label2idx_sha256 == next->label2idx_sha256;
  if (text_named ? !uploader_.NeedsUpload(next->label2idx_key, size, &copy)
                 : uploader_.ListedWithText(next->label2idx_key, copy)) {
    return;
  }
  uploader_.Writing();
  uploader_.WriteFile(next->label2idx_key, path, size, uploader_.WriteFor(next->label2idx_key));
}

}  // namespace gulpdb::engine
