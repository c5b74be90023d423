// The uploads of a push (engine/remote/publisher.h; steps 3 and 4 of
// publish.cc's list): chunk objects, .gmeta and label files, and the
// conditional writes, the lease and the checks of the manifest read that
// guard every write of a push.
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
#include "engine/gulpio/gmeta.h"
#include "engine/partition/partitions.h"
#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"
#include "engine/remote/publisher.h"
#include "engine/remote/push_lease.h"
#include "engine/remote/push_verify.h"
#include "engine/remote/snapshot_cache.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "s3/errors.h"
#include "util/file_io.h"
#include "util/sha256.h"
#include "util/test_bug.h"
#include "util/thread_pool.h"

namespace gulpdb::engine {

std::string Sha256OfFile(const std::string& path, uint64_t* size) {
  util::UniqueFd fd = util::OpenFile(path, O_RDONLY);
  *size = util::FileSize(fd.get(), path);
  return util::Sha256HexOfFile(fd.get(), path, 0, *size);
}

// Before this push's first write: the push lease, and whether the store
// honours conditions. From the main thread only.
void Publisher::Writing() {
  if (!conditional_ || lease_) return;
  lease_ = std::make_unique<PushLease>(store_, what_, ThisProcessLease(push_id_, dataset_, now_),
                                       Metadata());
  std::string problem;
  const PushLease::Conditions conditions = lease_->Acquire(&problem);
  if (conditions == PushLease::Conditions::kHonoured) {
    RequireManifestAsRead();
    return;
  }
  if (!options_.allow_unconditional_writes) {
    lease_->Release();
    throw InvalidArgumentError(
        what_ + ": the store does not honour conditional writes (" + problem +
        "), so this push could not stop another from replacing objects a published manifest "
        "names; nothing was uploaded. Use a store that has them (AWS S3, MinIO, Ceph RGW, "
        "Cloudflare R2), or, if no two pushes to this place ever run at once, pass the "
        "allow-unconditional-writes option (gulpdb push --allow-unconditional-writes; Python "
        "push(..., allow_unconditional_writes=True); C++ "
        "PushOptions::allow_unconditional_writes)");
  }
  conditions_honoured_ = false;
  if (conditions == PushLease::Conditions::kRefused) {
    lease_->TakeUnconditionally();
    send_conditions_ = false;
  }
  RequireManifestAsRead();
}

// 2c. Under the lease, before anything else is written: the manifest must
// still be the one step 2 read. A push that planned while another held
// the lease (and listed the other's uploads, with their ETags) would
// otherwise check its chunks against a superseded generation's promises
// and replace objects the new one names. Throws BusyError, having written
// only the lease (released).
void Publisher::RequireManifestAsRead() {
  std::optional<std::string> text;
  StoreObject info;
  try {
    text = store_.Get(kManifestKey, kMaxManifestBytes, &info);
  } catch (const NotFoundError&) {
  }
  bool same = text.has_value() == manifest_text_.has_value();
  if (same && text) {
    same = !info.etag.empty() && !manifest_etag_.empty() ? info.etag == manifest_etag_
                                                         : *text == *manifest_text_;
  }
  if (same) return;
  std::string published = "a change (the manifest is gone)";
  if (text) {
    try {
      published = "generation " +
                  std::to_string(ParseManifest(*text, store_.Name(kManifestKey)).generation);
    } catch (const CorruptionError&) {
      published = "a manifest this push cannot read";
    }
  }
  const uint64_t read =
      old_ ? old_->generation : (foreign_manifest_ ? foreign_manifest_->generation : 0);
  if (lease_) lease_->Release();
  throw BusyError(
      what_ + ": another push published " + published + " after this push read " +
      store_.Name(kManifestKey) +
      (manifest_text_ ? " (generation " + std::to_string(read) + ")" : " (there was none)") +
      "; this push published nothing and replaced nothing: run it again");
}

void Publisher::CheckLease() const {
  if (lease_) lease_->Check();
}

// Whether the object `key` that the new generation names with `size`
// bytes must be uploaded: another dataset's, not in the listing, listed
// with another size, or with an MD5 ETag that is not the one of `copy`
// (this push's copy of its bytes, if it has one); with `unverified_too`,
// also when its bytes cannot be checked (push_verify.h). One the published
// generation named counts as repaired.
bool Publisher::NeedsUpload(const std::string& key, uint64_t size, const LocalCopy* copy,
                            bool unverified_too) {
  if (foreign_set_.count(key) != 0) return true;
  const auto listed = listing_.find(key);
  // (GULPDB_TEST_BUG=push-named-unchecked: by size alone, as before.)
  const NamedObjectState state =
      CheckNamedObject(key, listed == listing_.end() ? nullptr : &listed->second, size,
                       util::TestBugEnabled("push-named-unchecked") ? nullptr : copy, verified_);
  if (state == NamedObjectState::kGood ||
      (state == NamedObjectState::kUnverified && !unverified_too)) {
    return false;
  }
  if (old_named_.count(key) != 0 && copy != nullptr && copy->Md5()) repaired_.fetch_add(1);
  return true;
}

std::map<std::string, std::string> Publisher::Metadata() const {
  return {{kMetaDataset, dataset_}, {kMetaPush, push_id_}};
}

// How this push writes `key`: with its metadata, and (S3) only if the
// key is still absent, or still has the ETag the listing showed.
remote::WriteOptions Publisher::WriteFor(const std::string& key) const {
  remote::WriteOptions w;
  if (!conditional_) return w;
  w.metadata = Metadata();
  if (!send_conditions_) return w;
  const auto it = listing_.find(key);
  if (it == listing_.end()) {
    w.if_absent = true;
  } else {
    w.if_match = it->second.etag;
  }
  return w;
}

BusyError Publisher::Raced(const std::string& key, const std::exception& e) const {
  return BusyError(what_ + ": another push changed " + store_.Name(key) + " while this one ran (" +
                   e.what() + "); this push stopped, and published nothing: run it again");
}

std::string Publisher::Write(const std::string& key, std::string_view data,
                             const remote::WriteOptions& write) {
  CheckLease();
  try {
    const std::string etag = store_.Put(key, data, write);
    Wrote(key, etag);
    return etag;
  } catch (const remote::PreconditionFailedError& e) {
    throw Raced(key, e);
  }
}

std::string Publisher::WriteFile(const std::string& key, const std::string& path, uint64_t length,
                                 const remote::WriteOptions& write) {
  CheckLease();
  try {
    const std::string etag = store_.PutFile(key, path, length, 0, write);
    Wrote(key, etag);
    return etag;
  } catch (const remote::PreconditionFailedError& e) {
    throw Raced(key, e);
  }
}

void Publisher::Wrote(const std::string& key, const std::string& etag) {
  verified_.Add(key, etag);  // its bytes were checked on the way (Content-MD5, ETag)
  std::lock_guard<std::mutex> lock(written_mutex_);
  written_.insert(key);
  if (foreign_set_.count(key) != 0) ++report_.foreign_objects_replaced;
}

// 3b. Uploads new and grown chunk objects, never changing a promised prefix.
void Publisher::UploadChunks(std::vector<ManifestChunk>* chunks) {
  uint64_t total = 0;
  for (size_t i : uploads_) total += (*chunks)[i].committed_length;
  if (!uploads_.empty()) Writing();
  std::atomic<uint64_t> done{0};
  std::mutex progress_mutex;
  util::ParallelFor(uploads_.size(), std::max<uint32_t>(jobs_, 1), [&](size_t k) {
    ManifestChunk& c = (*chunks)[uploads_[k]];
    const std::string path = dir_ + "/" + local_files_.at(c.key);
    const std::optional<Promise> promise = PromiseFor(c.key);
    if (promise && promise->length > c.committed_length) {
      throw CorruptionError(
          "push " + dir_ + " to " + store_.url() + ": chunk " + c.key + " has " +
          std::to_string(c.committed_length) + " committed bytes, but " + promise->from +
          " promised its readers " + std::to_string(promise->length) +
          ": the local chunk was rewritten, and the push will not change bytes those readers "
          "may read; publish to a new prefix");
    }
    const PrefixCrc crc = CrcOfFile(path, c.committed_length, promise ? promise->length : 0);
    if (promise && promise->crc32c && crc.at_checkpoint != *promise->crc32c) {
      throw CorruptionError(
          "push " + dir_ + " to " + store_.url() + ": the first " +
          std::to_string(promise->length) + " bytes of chunk " + c.key + " differ from what " +
          promise->from +
          " published (CRC-32C mismatch): the local chunk was rewritten, and the push will not "
          "change bytes readers of the published dataset may read; publish to a new prefix");
    }
    c.crc32c = crc.whole;
    remote::WriteOptions write = WriteFor(c.key);
    if (conditional_ && promise && promise->crc32c) {
      write.metadata[kMetaPrefix] = PromiseText(promise->length, *promise->crc32c);
    }
    c.etag = WriteFile(c.key, path, c.committed_length, write);
    const uint64_t now_done = done.fetch_add(c.committed_length) + c.committed_length;
    if (options_.progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      options_.progress(now_done, total);
    }
  });
  report_.chunks_uploaded = uploads_.size();
  report_.bytes_uploaded = total;
}

// 4a. The .gmeta of every chunk whose videos changed since the last push.
void Publisher::UploadGmeta(const std::string& tmp, std::vector<ManifestChunk>* chunks) {
  const std::string gmeta_dir = tmp + "/gmeta";
  util::MakeDirectories(gmeta_dir);
  std::vector<size_t> todo;
  for (size_t i = 0; i < chunks->size(); ++i) {
    ManifestChunk& c = (*chunks)[i];
    const auto old = old_chunks_.find(c.key);
    const bool same =
        old != old_chunks_.end() && old->second.gmeta_key == c.gmeta_key &&
        !old->second.gmeta_sha256.empty() && old->second.committed_length == c.committed_length &&
        old->second.live_videos == c.live_videos && old->second.live_bytes == c.live_bytes &&
        old->second.meta_edits == c.meta_edits && listing_.count(c.gmeta_key) != 0 &&
        foreign_set_.count(c.gmeta_key) == 0;
    if (same && !options_.overwrite) {  // overwriting writes each one and checks it
      c.gmeta_sha256 = old->second.gmeta_sha256;
    } else {
      todo.push_back(i);
    }
  }
  if (!todo.empty()) Writing();
  std::atomic<uint64_t> uploaded{0};
  util::ParallelFor(todo.size(), std::max<uint32_t>(jobs_, 1), [&](size_t k) {
    ManifestChunk& c = (*chunks)[todo[k]];
    const std::string path = gmeta_dir + "/" + std::to_string(c.number) + ".gmeta";
    GmetaWriter writer(path);
    snapshot_->ForEachInChunk(c.number, [&](const VideoInfo& v) {
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
    const auto named = old_chunks_.find(c.key);
    const bool text_named = named != old_chunks_.end() && named->second.gmeta_key == c.gmeta_key &&
                            named->second.gmeta_sha256 == c.gmeta_sha256;
    if (text_named ? !NeedsUpload(c.gmeta_key, size, &copy) : ListedWithText(c.gmeta_key, copy)) {
      return;  // the same text
    }
    WriteFile(c.gmeta_key, path, size, WriteFor(c.gmeta_key));
    uploaded.fetch_add(1);
  });
  report_.gmeta_uploaded = uploaded.load();
}

// Whether the store lists `key` with the bytes of `copy` (its MD5 ETag).
bool Publisher::ListedWithText(const std::string& key, const LocalCopy& copy) const {
  if (foreign_set_.count(key) != 0) return false;
  const auto listed = listing_.find(key);
  return listed != listing_.end() && listed->second.size == copy.length() && copy.Md5() &&
         listed->second.etag == "\"" + *copy.Md5() + "\"";
}

// 4b. label2idx.json, when the dataset has one.
void Publisher::UploadLabels(Manifest* next) {
  const std::string path = dir_ + "/label2idx.json";
  if (!util::PathExists(path)) return;
  uint64_t size = 0;
  next->label2idx_key = "label2idx.json";
  next->label2idx_sha256 = Sha256OfFile(path, &size);
  const LocalCopy copy = LocalCopy::File(path, size);
  // As a .gmeta's text: another label map than the published one (a
  // relabel added labels) is uploaded unless the store lists its bytes.
  const bool text_named = old_ && old_->label2idx_key == next->label2idx_key &&
                          old_->label2idx_sha256 == next->label2idx_sha256;
  if (text_named ? !NeedsUpload(next->label2idx_key, size, &copy)
                 : ListedWithText(next->label2idx_key, copy)) {
    return;
  }
  Writing();
  WriteFile(next->label2idx_key, path, size, WriteFor(next->label2idx_key));
}

}  // namespace gulpdb::engine
