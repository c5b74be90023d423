// The writes of a push (engine/remote/publish_upload.h): the conditional
// writes, the lease and the checks of the manifest read that guard every
// write of a push.
#include "engine/remote/publish_upload.h"

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

void Uploader::Writing() {
  if (!push_.conditional || lease_) return;
  lease_ = std::make_unique<PushLease>(push_.store, push_.what,
                                       ThisProcessLease(push_.push_id, push_.dataset, push_.now),
                                       push_.Metadata());
  std::string problem;
  const PushLease::Conditions conditions = lease_->Acquire(&problem);
  if (conditions == PushLease::Conditions::kHonoured) {
    RequireManifestAsRead();
    return;
  }
  if (!push_.options.allow_unconditional_writes) {
    lease_->Release();
    throw InvalidArgumentError(
        push_.what + ": the store does not honour conditional writes (" + problem +
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
void Uploader::RequireManifestAsRead() {
  std::optional<std::string> text;
  StoreObject info;
  try {
    text = push_.store.Get(kManifestKey, kMaxManifestBytes, &info);
  } catch (const NotFoundError&) {
  }
  const std::optional<std::string>& read = published_.manifest_text();
  const std::string& read_etag = published_.manifest_etag();
  bool same = text.has_value() == read.has_value();
  if (same && text) {
    same = !info.etag.empty() && !read_etag.empty() ? info.etag == read_etag : *text == *read;
  }
  if (same) return;
  std::string published = "a change (the manifest is gone)";
  if (text) {
    try {
      published = "generation " +
                  std::to_string(ParseManifest(*text, push_.store.Name(kManifestKey)).generation);
    } catch (const CorruptionError&) {
      published = "a manifest this push cannot read";
    }
  }
  if (lease_) lease_->Release();
  throw BusyError(push_.what + ": another push published " + published + " after this push read " +
                  push_.store.Name(kManifestKey) +
                  (read ? " (generation " + std::to_string(published_.read_generation()) + ")"
                        : " (there was none)") +
                  "; this push published nothing and replaced nothing: run it again");
}

void Uploader::CheckLease() const {
  if (lease_) lease_->Check();
}

void Uploader::ReleaseLease() {
  if (lease_) lease_->Release();
}

bool Uploader::NeedsUpload(const std::string& key, uint64_t size, const LocalCopy* copy,
                           bool unverified_too) {
  if (published_.Foreign(key)) return true;
  // (GULPDB_TEST_BUG=push-named-unchecked: by size alone, as before.)
  const NamedObjectState state =
      CheckNamedObject(key, published_.Listed(key), size,
                       util::TestBugEnabled("push-named-unchecked") ? nullptr : copy, verified_);
  if (state == NamedObjectState::kGood ||
      (state == NamedObjectState::kUnverified && !unverified_too)) {
    return false;
  }
  if (published_.old_named().count(key) != 0 && copy != nullptr && copy->Md5()) CountRepair();
  return true;
}

remote::WriteOptions Uploader::WriteFor(const std::string& key) const {
  remote::WriteOptions w;
  if (!push_.conditional) return w;
  w.metadata = push_.Metadata();
  if (!send_conditions_) return w;
  if (const StoreObject* listed = published_.Listed(key)) {
    w.if_match = listed->etag;
  } else {
    w.if_absent = true;
  }
  return w;
}

BusyError Uploader::Raced(const std::string& key, const std::exception& e) const {
  return BusyError(push_.what + ": another push changed " + push_.store.Name(key) +
                   " while this one ran (" + e.what() +
                   "); this push stopped, and published nothing: run it again");
}

std::string Uploader::Write(const std::string& key, std::string_view data,
                            const remote::WriteOptions& write) {
  CheckLease();
  try {
    const std::string etag = push_.store.Put(key, data, write);
    Wrote(key, etag);
    return etag;
  } catch (const remote::PreconditionFailedError& e) {
    throw Raced(key, e);
  }
}

std::string Uploader::WriteFile(const std::string& key, const std::string& path, uint64_t length,
                                const remote::WriteOptions& write) {
  CheckLease();
  try {
    const std::string etag = push_.store.PutFile(key, path, length, 0, write);
    Wrote(key, etag);
    return etag;
  } catch (const remote::PreconditionFailedError& e) {
    throw Raced(key, e);
  }
}

void Uploader::Wrote(const std::string& key, const std::string& etag) {
  verified_.Add(key, etag);  // its bytes were checked on the way (Content-MD5, ETag)
  std::lock_guard<std::mutex> lock(written_mutex_);
  written_.insert(key);
  if (published_.Foreign(key)) ++push_.report.foreign_objects_replaced;
}

bool Uploader::Written(const std::string& key) const {
  std::lock_guard<std::mutex> lock(written_mutex_);
  return written_.count(key) != 0;
}

bool Uploader::ListedWithText(const std::string& key, const LocalCopy& copy) const {
  if (published_.Foreign(key)) return false;
  const StoreObject* listed = published_.Listed(key);
  return listed != nullptr && listed->size == copy.length() && copy.Md5() &&
         listed->etag == "\"" + *copy.Md5() + "\"";
}

}  // namespace gulpdb::engine
