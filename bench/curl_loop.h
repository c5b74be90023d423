// The baseline of the remote benchmarks: ranged GETs driven by hand through
// one libcurl multi handle with a fixed number of easy handles reused across
// batches (so their connections are kept alive, as gulpdb's client does),
// signed the same way (CURLOPT_AWS_SIGV4, or anonymous), bytes copied into
// the caller's buffers. It checks nothing but the transfer's result: it is
// the floor of what any client can do with the same connections.
//
// Header-only so that each benchmark program links libcurl itself.
// Thread safety: one thread drives a CurlLoop.
#ifndef GULPDB_BENCH_CURL_LOOP_H_
#define GULPDB_BENCH_CURL_LOOP_H_

#include <curl/curl.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace gulpdb::bench {

struct CurlRange {
  std::string key;  // object key in the bucket
  uint64_t offset = 0;
  uint64_t length = 0;
};

class CurlLoop {
 public:
  // `key` empty: anonymous requests.
  CurlLoop(const std::string& endpoint, const std::string& bucket, size_t connections,
           std::string key = "", std::string secret = "")
      : multi_(curl_multi_init()), key_(std::move(key)), secret_(std::move(secret)) {
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(connections));
    for (size_t i = 0; i < connections; ++i) easies_.push_back(curl_easy_init());
    base_ = endpoint + "/" + bucket + "/";
  }
  ~CurlLoop() {
    for (CURL* e : easies_) curl_easy_cleanup(e);
    curl_multi_cleanup(multi_);
  }
  CurlLoop(const CurlLoop&) = delete;
  CurlLoop& operator=(const CurlLoop&) = delete;

  uint64_t connections() const { return connections_; }

  // Reads every range into out[i] (which must hold ranges[i].length bytes).
  void Run(const std::vector<CurlRange>& ranges, const std::vector<char*>& out) {
    std::vector<Slot> slots(easies_.size());
    std::vector<size_t> idle;
    for (size_t i = 0; i < easies_.size(); ++i) idle.push_back(i);
    size_t next = 0;
    size_t done = 0;
    const auto start = [&](size_t slot_index) {
      const CurlRange& r = ranges[next];
      Slot& s = slots[slot_index];
      CURL* e = easies_[slot_index];
      s.dst = out[next];
      s.got = 0;
      s.url = base_ + r.key;
      curl_slist_free_all(s.headers);
      s.headers = nullptr;
      s.headers = curl_slist_append(
          s.headers,
          "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
      const std::string range = "Range: bytes=" + std::to_string(r.offset) + "-" +
                                std::to_string(r.offset + r.length - 1);
      s.headers = curl_slist_append(s.headers, range.c_str());
      curl_easy_reset(e);
      curl_easy_setopt(e, CURLOPT_URL, s.url.c_str());
      curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(e, CURLOPT_HTTPHEADER, s.headers);
      if (!key_.empty()) {
        curl_easy_setopt(e, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
        curl_easy_setopt(e, CURLOPT_USERNAME, key_.c_str());
        curl_easy_setopt(e, CURLOPT_PASSWORD, secret_.c_str());
      }
      curl_easy_setopt(e, CURLOPT_PRIVATE, &s);
      curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &CurlLoop::OnWrite);
      curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
      curl_multi_add_handle(multi_, e);
      ++next;
    };
    while (done < ranges.size()) {
      while (!idle.empty() && next < ranges.size()) {
        start(idle.back());
        idle.pop_back();
      }
      int running = 0;
      curl_multi_perform(multi_, &running);
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
        if (msg->msg != CURLMSG_DONE) continue;
        if (msg->data.result != CURLE_OK) {
          Die(std::string("baseline GET: ") + curl_easy_strerror(msg->data.result));
        }
        long connects = 0;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_NUM_CONNECTS, &connects);
        connections_ += static_cast<uint64_t>(connects);
        curl_multi_remove_handle(multi_, msg->easy_handle);
        for (size_t i = 0; i < easies_.size(); ++i) {
          if (easies_[i] == msg->easy_handle) idle.push_back(i);
        }
        ++done;
      }
      if (done < ranges.size() && (idle.empty() || next == ranges.size())) {
        curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
      }
    }
    for (Slot& s : slots) curl_slist_free_all(s.headers);
  }

 private:
  struct Slot {
    char* dst = nullptr;
    size_t got = 0;
    curl_slist* headers = nullptr;
    std::string url;
  };
  static size_t OnWrite(char* data, size_t size, size_t n, void* p) {
    auto* s = static_cast<Slot*>(p);
    std::memcpy(s->dst + s->got, data, size * n);
    s->got += size * n;
    return size * n;
  }

  CURLM* multi_;
  std::vector<CURL*> easies_;
  std::string base_;
  std::string key_;
  std::string secret_;
  uint64_t connections_ = 0;
};

}  // namespace gulpdb::bench

#endif  // GULPDB_BENCH_CURL_LOOP_H_
