#include "engine/remote/cached_reads.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "engine/remote/remote_dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "util/env.h"

namespace gulpdb {
namespace engine {
namespace {

// The size `name` sets, `fallback` when unset; InvalidArgumentError naming
// the variable (util/env.h's form, after `what`) for a malformed one.
uint64_t SizeVariable(const char* name, uint64_t fallback, const std::string& what) {
  try {
    return util::EnvBytes(name).value_or(fallback);
  } catch (const InvalidArgumentError& e) {
    e.ThrowWithContext(what + ": ");
  }
}

uint64_t BlockBytes(const std::string& what) {
  const uint64_t block = SizeVariable("GULPDB_FRAME_CACHE_BLOCK", kDefaultFrameBlockBytes, what);
  if (block < (uint64_t{64} << 10) || block > (uint64_t{64} << 20) || (block & (block - 1)) != 0) {
    throw InvalidArgumentError(what + ": GULPDB_FRAME_CACHE_BLOCK '" +
                               util::EnvText("GULPDB_FRAME_CACHE_BLOCK").value_or("") +
                               "': the block size must be a power of two from 64K to 64M");
  }
  return block;
}

// Refuses a directory that someone other than this user can write.
void RequirePrivate(const std::string& dir, const std::string& what) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return;  // made below, by this user
  std::string problem;
  if (st.st_uid != ::geteuid()) {
    problem = "owned by another user (uid " + std::to_string(st.st_uid) + ")";
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    problem = std::string("writable by its group or by other users (mode ") + mode + ")";
  }
  if (problem.empty()) return;
  throw IoError(what + ": the frame cache directory " + dir + " is " + problem +
                ": whoever can write it could make gulpdb serve frames of their choosing (a "
                "CRC stops accidents, not forgery); use a directory only you can write (chmod "
                "go-w, or set GULPDB_CACHE elsewhere), or turn the frame cache off with "
                "GULPDB_FRAME_CACHE_BYTES=0");
}

std::atomic<bool> g_warned_network{false};

}  // namespace

std::optional<FrameCacheConfig> FrameCacheFromEnvironment(const std::string& what) {
  FrameCacheConfig config;
  config.bound = SizeVariable("GULPDB_FRAME_CACHE_BYTES", kDefaultFrameCacheBytes, what);
  config.block_bytes = BlockBytes(what);
  if (config.bound == 0) return std::nullopt;
  const std::string root = CacheDirectory();
  config.dir = root + "/frames";
  RequirePrivate(root, what);
  RequirePrivate(config.dir, what);
  if (const std::string fs = NetworkFileSystemName(root);
      !fs.empty() && !g_warned_network.exchange(true)) {
    std::fprintf(stderr,
                 "gulpdb: warning: the cache %s is on a network file system (%s): the frame "
                 "cache's locks may not hold between hosts, so nodes sharing it may fetch a "
                 "block twice; give each node a cache on a local disk (GULPDB_CACHE)\n",
                 root.c_str(), fs.c_str());
  }
  return config;
}

std::string CacheIdentity(const std::string& store_identity, const std::string& dataset,
                          const ManifestChunk& chunk) {
  std::string prefix;
  if (chunk.crc32c) {
    prefix = "crc32c " + std::to_string(*chunk.crc32c);
  } else if (!chunk.etag.empty()) {
    prefix = "etag " + chunk.etag;
  } else {
    return "";
  }
  return "gulpdb frame cache 1\n" + store_identity + "\n" + dataset + "\n" + chunk.key + "\n" +
         std::to_string(chunk.committed_length) + "\n" + prefix;
}

CachedReads::CachedReads(std::optional<FrameCacheConfig> cache, StoreFetch background,
                         uint64_t prefetch_memory)
    : cache_(cache ? std::make_shared<const FrameCache>(std::move(*cache)) : nullptr),
      background_(std::move(background)),
      prefetch_memory_(prefetch_memory) {}

const CachedObject& CachedReads::Object(const std::string& key,
                                        const std::function<CachedObject()>& make) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<CachedObject>& o = objects_[key];
  if (!o) o = std::make_unique<CachedObject>(make());
  return *o;
}

void CachedReads::Read(const std::vector<CacheRange>& ranges, const StoreFetch& fetch) const {
  const ReadAhead* ahead = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ahead = read_ahead_.get();
  }
  if (ahead != nullptr) {
    ahead->Read(ranges, fetch);
  } else if (cache_ != nullptr) {
    cache_->Read(ranges, fetch);
  } else {
    std::vector<StoreRead> reads;
    for (const CacheRange& r : ranges) {
      reads.push_back(StoreRead{r.object->key, r.offset, r.length, r.out});
    }
    fetch(reads);
  }
}

void CachedReads::Prefetch(std::vector<CacheRange> ranges) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!read_ahead_)
    read_ahead_ = std::make_unique<ReadAhead>(cache_, background_, prefetch_memory_);
  read_ahead_->Prefetch(std::move(ranges));
}

bool CachedReads::Forget(const std::vector<CacheRange>& ranges) const {
  return cache_ != nullptr && cache_->Forget(ranges);
}

std::optional<ReadAheadStats> CachedReads::read_ahead() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!read_ahead_) return std::nullopt;
  return read_ahead_->stats();
}

}  // namespace engine

FrameCacheStats GetFrameCacheStats() {
  const std::string what = "read the frame cache's counters";
  FrameCacheStats out;
  out.dir = CacheDirectory() + "/frames";
  out.bound =
      engine::SizeVariable("GULPDB_FRAME_CACHE_BYTES", engine::kDefaultFrameCacheBytes, what);
  out.block_bytes = engine::BlockBytes(what);
  out.enabled = out.bound != 0;
  const engine::CacheCounters c = engine::NodeStats(out.dir + "/stats").Read();
  static_cast<FrameCacheCounters&>(out) = c;
  out.bytes = static_cast<uint64_t>(c.bytes);
  return out;
}

}  // namespace gulpdb
