// The writes of a push (engine/remote/publisher.h): the Uploader is the one
// way a push writes an object before its manifest. It owns the push lease
// (push_lease.h, taken before the first write, after which the manifest
// must still be the one the plan read), whether the store honours
// conditional writes and whether they are sent, the keys written so far,
// the count of named objects found missing or damaged and uploaded again,
// and the ETags checked (push_verify.h). Every write is conditional on what
// the listing showed (If-None-Match: * or If-Match); one that loses a race
// stops the push with BusyError. Internal to engine/remote.
// Thread safety: Writing, RequireManifestAsRead and ReleaseLease on the
// push's thread; the checks and writes from the upload pools too.
#ifndef GULPDB_ENGINE_REMOTE_PUBLISH_UPLOAD_H_
#define GULPDB_ENGINE_REMOTE_PUBLISH_UPLOAD_H_

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "engine/remote/publish_context.h"
#include "engine/remote/publish_plan.h"
#include "engine/remote/push_lease.h"
#include "engine/remote/push_verify.h"
#include "s3/s3_client.h"

namespace gulpdb::engine {

class Uploader {
 public:
  Uploader(PushContext& push, const PublishedState& published)
      : push_(push), published_(published), verified_(push.store.Identity()) {}

  // Before this push's first write: the push lease, and whether the store
  // honours conditions. From the push's thread only.
  void Writing();
  // 2c. The manifest must still be the one the plan read: BusyError (the
  // lease released) when another push published since.
  void RequireManifestAsRead();
  void CheckLease() const;
  void ReleaseLease();

  // Whether the object `key` that the new generation names with `size`
  // bytes must be uploaded: another dataset's, not in the listing, listed
  // with another size, or with an MD5 ETag that is not the one of `copy`
  // (this push's copy of its bytes, if it has one); with `unverified_too`,
  // also when its bytes cannot be checked (push_verify.h). One the published
  // generation named counts as repaired.
  bool NeedsUpload(const std::string& key, uint64_t size, const LocalCopy* copy,
                   bool unverified_too = false);
  // Whether the store lists `key` with the bytes of `copy` (its ETag the
  // copy's MD5), and the key is not another writer's.
  bool ListedWithText(const std::string& key, const LocalCopy& copy) const;

  // How this push writes `key`: with its metadata, and (S3) only if the
  // key is still absent, or still has the ETag the listing showed.
  remote::WriteOptions WriteFor(const std::string& key) const;
  // Writes `data` (or `length` bytes of the file `path`) to `key` under the
  // lease; BusyError when another push changed it. Returns its ETag.
  std::string Write(const std::string& key, std::string_view data,
                    const remote::WriteOptions& write);
  std::string WriteFile(const std::string& key, const std::string& path, uint64_t length,
                        const remote::WriteOptions& write);
  // Whether this push wrote `key`.
  bool Written(const std::string& key) const;

  // A named object found missing or damaged, to be uploaded again.
  void CountRepair() { repaired_.fetch_add(1); }
  uint64_t repaired() const { return repaired_.load(); }
  bool conditions_honoured() const { return conditions_honoured_; }
  bool send_conditions() const { return send_conditions_; }
  VerifiedEtags& verified() { return verified_; }

 private:
  BusyError Raced(const std::string& key, const std::exception& e) const;
  void Wrote(const std::string& key, const std::string& etag);

  PushContext& push_;
  const PublishedState& published_;
  std::unique_ptr<PushLease> lease_;
  bool conditions_honoured_ = true;  // false: told to push to a store without them
  bool send_conditions_ = true;      // false: the store refuses the headers
  mutable std::mutex written_mutex_;
  std::set<std::string> written_;
  std::atomic<uint64_t> repaired_{0};
  VerifiedEtags verified_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUBLISH_UPLOAD_H_
