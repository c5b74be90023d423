// The push lease (docs/format/remote_format.md, "One push at a time"): the
// object kPushLeaseKey, created with If-None-Match: *, renewed with If-Match
// by a thread every quarter of its duration ($GULPDB_PUSH_LEASE, default 2
// minutes), deleted when the push ends; taken over (If-Match on its ETag)
// once it has expired. Acquiring it also finds out whether the store honours
// conditions: a second If-None-Match PUT of the key, and an If-Match PUT with
// an ETag it cannot have, must both fail. The publisher (publish.cc) holds
// one while it writes.
//
// Failures: Acquire throws BusyError naming the push that holds the lease;
// Check throws BusyError once the lease is no longer this push's (replaced by
// another process, or not renewed in time), so that the push stops before
// its next write. The store's errors otherwise.
//
// Thread safety: Check may be called from any thread; the rest from the
// thread that made the lease.
#ifndef GULPDB_ENGINE_REMOTE_PUSH_LEASE_H_
#define GULPDB_ENGINE_REMOTE_PUSH_LEASE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"

namespace gulpdb::engine {

// Seconds since the epoch, now.
int64_t NowUnix();

// The lease record of a push `push_id` of the dataset `dataset` made by this
// process (its host and pid), started at `started_unix`.
PushLeaseRecord ThisProcessLease(std::string push_id, std::string dataset, int64_t started_unix);

class PushLease {
 public:
  enum class Conditions { kHonoured, kIgnored, kRefused };

  // Holds nothing yet. `what` names the push in messages; `metadata` goes on
  // every write of the lease. `store` must outlive the lease.
  PushLease(ObjectStore& store, std::string what, PushLeaseRecord record,
            std::map<std::string, std::string> metadata);
  ~PushLease() { Release(); }
  PushLease(const PushLease&) = delete;
  PushLease& operator=(const PushLease&) = delete;

  // Takes the lease, or throws BusyError naming the push that holds it.
  // Returns whether the store honours conditions (and, in `problem`, what
  // showed it does not). With kRefused (the store refused a conditional
  // PUT outright) the lease is not held; TakeUnconditionally then takes it
  // with plain PUTs, for a push told to go on anyway.
  Conditions Acquire(std::string* problem);

  // For a push told to go on without conditions: plain PUTs from now on.
  void TakeUnconditionally();

  // Throws BusyError if the lease is no longer this push's (another process
  // replaced it, or it could not be renewed in time).
  void Check() const;

  // Stops renewing and deletes the lease if it is still this push's.
  void Release();

 private:
  remote::WriteOptions Write() const;
  std::string Body() const;
  // The lease is there: take it over if it has expired.
  void TakeOver();
  void Held();
  // After the probes, which write the lease too.
  void StartRenewing();
  void Renew();

  ObjectStore& store_;
  const std::string what_;
  const std::string name_;
  const PushLeaseRecord record_;
  const std::map<std::string, std::string> metadata_;
  const std::chrono::seconds duration_;
  bool conditional_ = true;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  bool stop_ = false;
  bool held_ = false;
  std::string etag_;
  std::string lost_;
  std::chrono::steady_clock::time_point renewed_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_PUSH_LEASE_H_
