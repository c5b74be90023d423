#include "engine/remote/push_lease.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>

#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "s3/errors.h"
#include "util/env.h"
#include "util/host_name.h"

namespace gulpdb::engine {
namespace {

// On the probes that check a store honours conditions (never stored).
constexpr const char* kMetaProbe = "gulpdb-probe";

// The lease's duration: $GULPDB_PUSH_LEASE (a duration), else 2 minutes.
std::chrono::seconds LeaseDuration() {
  const std::optional<std::chrono::seconds> d = util::EnvDuration("GULPDB_PUSH_LEASE");
  if (!d) return std::chrono::minutes(2);
  if (d->count() < 1) {
    throw InvalidArgumentError("GULPDB_PUSH_LEASE '" +
                               util::EnvText("GULPDB_PUSH_LEASE").value_or("") + "': at least 1 s");
  }
  return *d;
}
}  // namespace

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

PushLeaseRecord ThisProcessLease(std::string push_id, std::string dataset, int64_t started_unix) {
  PushLeaseRecord record;
  record.push_id = std::move(push_id);
  record.dataset = std::move(dataset);
  record.host = util::HostName();
  record.pid = ::getpid();
  record.started_unix = started_unix;
  return record;
}

PushLease::PushLease(ObjectStore& store, std::string what, PushLeaseRecord record,
                     std::map<std::string, std::string> metadata)
    : store_(store),
      what_(std::move(what)),
      name_(store.Name(kPushLeaseKey)),
      record_(std::move(record)),
      metadata_(std::move(metadata)),
      duration_(LeaseDuration()) {}

PushLease::Conditions PushLease::Acquire(std::string* problem) {
  conditional_ = true;
  remote::WriteOptions create = Write();
  create.if_absent = true;
  try {
    etag_ = store_.Put(kPushLeaseKey, Body(), create);
  } catch (const remote::PreconditionFailedError&) {
    TakeOver();
  } catch (const AccessDeniedError&) {
    throw;
  } catch (const IoError& e) {
    *problem = std::string("a PUT with If-None-Match: * failed: ") + e.what();
    return Conditions::kRefused;
  }
  Held();
  // The probes: both must fail their condition.
  for (int probe = 0; probe < 2; ++probe) {
    remote::WriteOptions again = Write();
    again.metadata[kMetaProbe] = std::to_string(probe + 1);
    if (probe == 0) {
      again.if_absent = true;
    } else {
      again.if_match = "\"00000000000000000000000000000000\"";
    }
    try {
      const std::string etag = store_.Put(kPushLeaseKey, Body(), again);
      std::lock_guard<std::mutex> lock(mutex_);
      etag_ = etag;  // the same lease, stored again
      *problem = probe == 0 ? "a second PUT of " + name_ + " with If-None-Match: * was accepted"
                            : "a PUT of " + name_ + " with an If-Match ETag it does not have " +
                                  "was accepted";
      StartRenewing();
      return Conditions::kIgnored;
    } catch (const remote::PreconditionFailedError&) {
      // As it should.
    } catch (const AccessDeniedError&) {
      throw;
    } catch (const IoError& e) {
      *problem = std::string("a conditional PUT failed: ") + e.what();
      return Conditions::kIgnored;
    }
  }
  StartRenewing();
  return Conditions::kHonoured;
}

void PushLease::TakeUnconditionally() {
  conditional_ = false;
  etag_ = store_.Put(kPushLeaseKey, Body(), Write());
  Held();
  StartRenewing();
}

void PushLease::Check() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!held_) return;
  if (!lost_.empty()) {
    throw BusyError(what_ + ": " + lost_ + "; the push stopped before its next write");
  }
  const auto since = std::chrono::steady_clock::now() - renewed_;
  if (since >= duration_ * 3 / 4) {
    throw BusyError(
        what_ + ": the push lease " + name_ + " was not renewed for " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(since).count()) +
        " s; the push stopped before its next write");
  }
}

void PushLease::Release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!held_) return;
  held_ = false;
  // Only while surely held: deleting a lease another push took over would
  // make that push stop (its renewal then fails), never corrupt anything.
  if (lost_.empty() && std::chrono::steady_clock::now() - renewed_ < duration_ / 2) {
    try {
      store_.Delete({kPushLeaseKey});
    } catch (const Error&) {
      // It expires by itself.
    }
  }
}

remote::WriteOptions PushLease::Write() const {
  remote::WriteOptions w;
  w.metadata = metadata_;
  return w;
}

std::string PushLease::Body() const {
  PushLeaseRecord r = record_;
  r.expires_unix = NowUnix() + duration_.count();
  return SerializePushLease(r);
}

void PushLease::TakeOver() {
  StoreObject info;
  std::string text;
  try {
    text = store_.Get(kPushLeaseKey, 1 << 20, &info);
  } catch (const NotFoundError&) {
    // Released meanwhile: one more try to create it.
    remote::WriteOptions create = Write();
    create.if_absent = true;
    try {
      etag_ = store_.Put(kPushLeaseKey, Body(), create);
      return;
    } catch (const remote::PreconditionFailedError&) {
      throw BusyError(what_ + ": another push took the push lease " + name_ +
                      " first; run this push again after it has finished");
    }
  }
  PushLeaseRecord held;
  try {
    held = ParsePushLease(text, name_);
  } catch (const CorruptionError& e) {
    throw BusyError(what_ + ": " + name_ + " is not a push lease this gulpdb understands (" +
                    e.what() + "); if no push to this place is running, delete it");
  }
  const int64_t now = NowUnix();
  if (held.expires_unix > now) {
    throw BusyError(what_ + ": another push holds the push lease " + name_ + ": push " +
                    held.push_id + " from " + held.host + " (pid " + std::to_string(held.pid) +
                    "), running since " + IsoTime(held.started_unix) +
                    ", its lease renewed until " + IsoTime(held.expires_unix) +
                    "; run this push again after it has finished (a push that died leaves "
                    "its lease to expire at that time)");
  }
  remote::WriteOptions take = Write();
  take.if_match = info.etag;
  try {
    etag_ = store_.Put(kPushLeaseKey, Body(), take);
  } catch (const remote::PreconditionFailedError&) {
    throw BusyError(what_ + ": another push took over the expired push lease " + name_ +
                    " first; run this push again after it has finished");
  }
}

void PushLease::Held() {
  std::lock_guard<std::mutex> lock(mutex_);
  held_ = true;
  stop_ = false;
  renewed_ = std::chrono::steady_clock::now();
}

void PushLease::StartRenewing() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Renew(); });
}

void PushLease::Renew() {
  const auto period = std::max<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(duration_) / 4,
      std::chrono::milliseconds(250));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, period, [&] { return stop_; });
    if (stop_) break;
    remote::WriteOptions w = Write();
    if (conditional_) w.if_match = etag_;
    lock.unlock();
    std::string etag;
    std::string failure;
    bool replaced = false;
    try {
      etag = store_.Put(kPushLeaseKey, Body(), w);
    } catch (const remote::PreconditionFailedError& e) {
      replaced = true;
      failure = e.what();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    lock.lock();
    if (!etag.empty() || (failure.empty() && !replaced)) {
      etag_ = etag;
      renewed_ = std::chrono::steady_clock::now();
    } else if (replaced) {
      lost_ = "another process replaced or removed the push lease " + name_ + " (" + failure + ")";
      break;
    } else if (std::chrono::steady_clock::now() - renewed_ >= duration_ * 3 / 4) {
      lost_ = "the push lease " + name_ + " could not be renewed in time (" + failure + ")";
      break;
    }
  }
}

}  // namespace gulpdb::engine
