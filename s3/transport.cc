// The Transport (s3/transport.h): pooled libcurl handles and the run of
// a batch of requests on one multi handle. One request's attempts are
// s3/transfer.h's (transport_attempt.cc, transport_finish.cc).
#include "s3/transport.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <random>

#include "s3/errors.h"
#include "s3/transfer.h"
#include "util/file_io.h"

namespace gulpdb::remote::internal {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] {
    const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) throw IoError(std::string("curl_global_init: ") + curl_easy_strerror(rc));
  });
}

}  // namespace

std::string ObjectName(std::string_view bucket, std::string_view key) {
  std::string s = "s3://" + std::string(bucket);
  if (!key.empty()) s += "/" + std::string(key);
  return s;
}

Transport::Impl::Impl(const S3Config& c) : config(c), pool_pid(::getpid()) {
  policy.max_attempts = c.max_attempts;
  policy.retry_budget_ms = c.retry_budget_ms;
  policy.backoff_base_ms = c.backoff_base_ms;
  policy.backoff_max_ms = c.backoff_max_ms;
  sigv4 = "aws:amz:" + c.region + ":s3";
}

Transport::Impl::~Impl() {
  if (::getpid() != pool_pid) return;  // a child after fork: the handles are the parent's
  for (CURL* e : easies) curl_easy_cleanup(e);
  for (CURLM* m : multis) curl_multi_cleanup(m);
}

CURLM* Transport::Impl::TakeMulti() {
  {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (::getpid() != pool_pid) {
      // Forked: abandon the parent's handles and connections, untouched.
      multis.clear();
      easies.clear();
      pool_pid = ::getpid();
    }
    if (!multis.empty()) {
      CURLM* m = multis.back();
      multis.pop_back();
      return m;
    }
  }
  CURLM* m = curl_multi_init();
  if (m == nullptr) throw IoError("curl_multi_init failed (out of memory?)");
  curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, static_cast<long>(config.max_connections));
  return m;
}

void Transport::Impl::ReturnMulti(CURLM* m) {
  std::lock_guard<std::mutex> lock(pool_mu);
  if (::getpid() != pool_pid) return;
  multis.push_back(m);
}

CURL* Transport::Impl::TakeEasy() {
  {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (!easies.empty() && ::getpid() == pool_pid) {
      CURL* e = easies.back();
      easies.pop_back();
      return e;
    }
  }
  CURL* e = curl_easy_init();
  if (e == nullptr) throw IoError("curl_easy_init failed (out of memory?)");
  return e;
}

void Transport::Impl::ReturnEasy(CURL* e) {
  curl_easy_reset(e);
  {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (::getpid() != pool_pid) return;
    if (easies.size() < kMaxIdleEasyHandles) {
      easies.push_back(e);
      return;
    }
  }
  curl_easy_cleanup(e);
}

namespace {

// Returns the multi handle to the pool, with every transfer removed, however
// Run ends.
class MultiLease {
 public:
  explicit MultiLease(Transport::Impl* impl) : impl_(impl), multi_(impl->TakeMulti()) {}
  ~MultiLease() { impl_->ReturnMulti(multi_); }
  MultiLease(const MultiLease&) = delete;
  MultiLease& operator=(const MultiLease&) = delete;
  CURLM* get() const { return multi_; }

 private:
  Transport::Impl* impl_;
  CURLM* multi_;
};

}  // namespace

Transport::Transport(const S3Config& config) {
  GlobalInit();
  config.Validate();
  impl_ = std::make_unique<Impl>(config);
}

Transport::~Transport() = default;

TransportStats Transport::stats() const {
  TransportStats s;
  s.requests = impl_->requests.load();
  s.attempts = impl_->attempts.load();
  s.retries = impl_->retries.load();
  s.connections = impl_->connections.load();
  s.bytes_received = impl_->bytes_received.load();
  s.bytes_sent = impl_->bytes_sent.load();
  return s;
}

void Transport::Run(const std::vector<Request*>& requests, uint32_t max_parallel) {
  if (requests.empty()) return;
  const size_t limit = max_parallel > 0 ? max_parallel : impl_->config.max_connections;
  MultiLease lease(impl_.get());
  CURLM* multi = lease.get();

  std::vector<std::unique_ptr<Transfer>> transfers;
  transfers.reserve(requests.size());
  for (Request* r : requests) transfers.push_back(std::make_unique<Transfer>(r, impl_.get()));
  std::deque<Transfer*> ready;
  for (auto& t : transfers) ready.push_back(t.get());
  std::vector<Transfer*> waiting;  // backing off before a retry
  std::vector<Transfer*> active;
  std::exception_ptr failure;

  const auto remove_active = [&](Transfer* t) {
    curl_multi_remove_handle(multi, t->easy());
    active.erase(std::find(active.begin(), active.end(), t));
  };
  // Whatever happens, no transfer stays in the multi handle.
  struct Cleanup {
    std::function<void()> fn;
    ~Cleanup() { fn(); }
  } cleanup{[&] {
    for (Transfer* t : active) curl_multi_remove_handle(multi, t->easy());
    active.clear();
  }};

  while (!failure) {
    const Clock::time_point now = Clock::now();
    for (auto it = waiting.begin(); it != waiting.end();) {
      if ((*it)->next_start() <= now) {
        ready.push_back(*it);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    while (!failure && active.size() < limit && !ready.empty()) {
      Transfer* t = ready.front();
      ready.pop_front();
      try {
        t->PrepareAttempt();
      } catch (...) {
        failure = std::current_exception();
        break;
      }
      const CURLMcode mc = curl_multi_add_handle(multi, t->easy());
      if (mc != CURLM_OK) {
        throw IoError(std::string("curl_multi_add_handle: ") + curl_multi_strerror(mc));
      }
      active.push_back(t);
    }
    if (failure || (active.empty() && ready.empty() && waiting.empty())) break;

    int running = 0;
    const CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK)
      throw IoError(std::string("curl_multi_perform: ") + curl_multi_strerror(mc));
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode rc = msg->data.result;
      remove_active(t);
      const Outcome outcome = t->Finish(rc);
      t->ReleaseEasy();
      switch (outcome) {
        case Outcome::kSuccess:
          break;
        case Outcome::kRetry:
          waiting.push_back(t);
          break;
        case Outcome::kFail:
          if (!failure) failure = t->failure();
          break;
      }
    }
    if (failure || (active.empty() && ready.empty() && waiting.empty())) break;

    // Sleep until there is socket activity, a curl timer, or a retry is due.
    int wait_ms = 1000;
    if (!ready.empty() && active.size() < limit) wait_ms = 0;
    for (Transfer* t : waiting) {
      const auto until =
          std::chrono::duration_cast<std::chrono::milliseconds>(t->next_start() - Clock::now());
      wait_ms = std::min<int>(wait_ms, static_cast<int>(std::max<int64_t>(0, until.count())));
    }
    if (!active.empty() || wait_ms > 0) {
      const CURLMcode pc = curl_multi_poll(multi, nullptr, 0, wait_ms, nullptr);
      if (pc != CURLM_OK) throw IoError(std::string("curl_multi_poll: ") + curl_multi_strerror(pc));
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace gulpdb::remote::internal
