#include "engine/frame_cache/frame_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "gulpdb/error.h"
#include "util/file_io.h"
#include "util/sha256.h"

namespace gulpdb::engine {
namespace {

// The bytes one round of fills holds in memory at most.
constexpr uint64_t kRoundBytes = uint64_t{64} << 20;

// Holds an flock on a descriptor it owns, released (and the file closed) on
// destruction. The release is explicit: a DataLoader worker forked while the
// lock was held shares the open file, and would otherwise keep it locked.
class HeldLock {
 public:
  HeldLock() = default;
  explicit HeldLock(util::UniqueFd fd) : fd_(std::move(fd)) {}
  HeldLock(HeldLock&&) = default;
  HeldLock& operator=(HeldLock&&) = default;
  ~HeldLock() {
    if (fd_.valid()) ::flock(fd_.get(), LOCK_UN);
  }
  bool held() const { return fd_.valid(); }

 private:
  util::UniqueFd fd_;
};

// Tries once (wait 0) or polls up to `wait` for an exclusive flock on `path`
// (created as needed). An invalid lock when it was not had.
HeldLock LockFile(const std::string& path, std::chrono::milliseconds wait) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (fd < 0) return HeldLock();
  util::UniqueFd owner(fd);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  auto pause = std::chrono::microseconds(500);
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return HeldLock(std::move(owner));
    if (errno != EWOULDBLOCK && errno != EINTR) return HeldLock();
    if (std::chrono::steady_clock::now() >= deadline) return HeldLock();
    std::this_thread::sleep_for(pause);
    // At most 2 ms between looks: a reader waiting for a block read-ahead is
    // filling would otherwise sleep up to 20 ms past its arrival, a part of
    // the latency read-ahead is there to hide. A look is one system call.
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(2));
  }
}

bool ProcessGone(const std::string& name) {
  const long pid = std::strtol(name.c_str(), nullptr, 10);
  return pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

struct FrameCache::Piece {
  uint64_t offset = 0;  // in the block
  uint64_t size = 0;
  char* out = nullptr;
};

struct FrameCache::Block {
  const CachedObject* object = nullptr;
  uint64_t number = 0;
  BlockId id;
  std::vector<Piece> pieces;
  bool done = false;
};

FrameCache::FrameCache(FrameCacheConfig config)
    : config_(std::move(config)), stats_(config_.dir + "/stats") {
  for (const char* sub : {"", "/blocks", "/tmp", "/locks"}) {
    const std::string dir = config_.dir + sub;
    if (!util::IsDirectory(dir)) {
      util::MakeDirectories(dir);
      ::chmod(dir.c_str(), 0700);
    }
  }
}

std::string FrameCache::PathOf(const std::string& name) const {
  return config_.dir + "/blocks/" + name.substr(0, 2) + "/" + name;
}

std::vector<FrameCache::Block> FrameCache::BlocksOf(const std::vector<CacheRange>& ranges) const {
  const uint64_t size = config_.block_bytes;
  std::vector<Block> blocks;
  std::map<std::pair<std::string, uint64_t>, size_t> at;
  for (const CacheRange& r : ranges) {
    if (r.length == 0) continue;
    const CachedObject& o = *r.object;
    for (uint64_t n = r.offset / size; n * size < r.offset + r.length; ++n) {
      const auto [it, added] = at.emplace(std::make_pair(o.identity, n), blocks.size());
      if (added) {
        Block b;
        b.object = &o;
        b.number = n;
        b.id.offset = n * size;
        b.id.length = std::min(size, o.committed_length - std::min(o.committed_length, n * size));
        b.id.name =
            util::Sha256Hex(o.identity + "\n" + std::to_string(size) + "\n" + std::to_string(n));
        blocks.push_back(std::move(b));
      }
      Block& b = blocks[it->second];
      const uint64_t begin = std::max(r.offset, b.id.offset);
      const uint64_t end = std::min(r.offset + r.length, b.id.offset + size);
      if (r.out != nullptr) {
        b.pieces.push_back(Piece{begin - b.id.offset, end - begin, r.out + (begin - r.offset)});
      }
    }
  }
  return blocks;
}

bool FrameCache::CopyOut(const Block& block, CacheCounters* delta) const {
  const std::string path = PathOf(block.id.name);
  // O_NONBLOCK: a FIFO put under a block's name must not hang the reader
  // (regular files ignore it); the fstat below refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    // Something that is not a block file (a link, a socket): out of the way.
    struct stat named {};
    if (::lstat(path.c_str(), &named) == 0 && !S_ISDIR(named.st_mode) &&
        ::unlink(path.c_str()) == 0) {
      ++delta->damaged;
    }
    return false;
  }
  util::UniqueFd owner(fd);
  // A shared lock while copying: an eviction pass leaves the block alone.
  while (::flock(fd, LOCK_SH) != 0) {
    if (errno != EINTR) return false;
  }
  const HeldLock shared(std::move(owner));
  struct stat st {};
  std::string problem;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = "not a regular file";
    if (S_ISDIR(st.st_mode)) {  // a folder under a block's name: removed if empty
      ::rmdir(path.c_str());
      ++delta->damaged;
      return false;
    }
  } else if (block.pieces.empty()) {
    problem = ReadBlockBytes(fd, static_cast<uint64_t>(st.st_size), block.id, 0, 0, nullptr);
  } else {
    for (const Piece& p : block.pieces) {
      problem =
          ReadBlockBytes(fd, static_cast<uint64_t>(st.st_size), block.id, p.offset, p.size, p.out);
      if (!problem.empty()) break;
    }
  }
  if (!problem.empty()) {
    // Damaged, truncated or foreign: out of the way, fetched again.
    struct stat named {};
    if (::stat(path.c_str(), &named) == 0 && named.st_ino == st.st_ino &&
        ::unlink(path.c_str()) == 0) {
      delta->bytes -= static_cast<int64_t>(st.st_size);
    }
    ++delta->damaged;
    return false;
  }
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // used now (LRU order)
  return true;
}

bool FrameCache::Keep(const Block& block, const std::string& data) const noexcept {
  std::string tmp;
  try {
    const std::string header = EncodeBlockHeader(block.id, data);
    tmp = config_.dir + "/tmp/" + util::UniqueFileSuffix();
    util::UniqueFd fd = util::OpenFile(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
    struct iovec iov[2] = {{const_cast<char*>(header.data()), header.size()},
                           {const_cast<char*>(data.data()), data.size()}};
    util::PwritevFull(fd.get(), iov, 2, 0, tmp);
    fd = util::UniqueFd();
    const std::string path = PathOf(block.id.name);
    const std::string dir = path.substr(0, path.rfind('/'));
    struct stat st {};
    if ((::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) || ::lstat(dir.c_str(), &st) != 0 ||
        !S_ISDIR(st.st_mode)) {
      // Not a folder of ours (a link put there leads elsewhere): kept nowhere.
      util::RemoveFileQuietly(tmp);
      return false;
    }
    util::Rename(tmp, path);
    return true;
  } catch (...) {
    if (!tmp.empty()) util::RemoveFileQuietly(tmp);
    return false;
  }
}

void FrameCache::FetchAndKeep(std::vector<Block*>& blocks, const StoreFetch& fetch,
                              CacheCounters* delta) const {
  std::sort(blocks.begin(), blocks.end(), [](const Block* a, const Block* b) {
    return a->object->identity != b->object->identity ? a->object->identity < b->object->identity
                                                      : a->number < b->number;
  });
  size_t next = 0;
  while (next < blocks.size()) {
    // One round: runs of adjacent blocks, each one GET, up to kRoundBytes.
    struct Run {
      size_t first = 0, count = 0;
      std::string bytes;
    };
    std::vector<Run> runs;
    uint64_t round = 0;
    while (next < blocks.size() && (round == 0 || round + blocks[next]->id.length <= kRoundBytes)) {
      const Block* b = blocks[next];
      Run* last = runs.empty() ? nullptr : &runs.back();
      const Block* prev = last != nullptr ? blocks[last->first + last->count - 1] : nullptr;
      if (last != nullptr && prev->object == b->object && prev->number + 1 == b->number &&
          last->bytes.size() + b->id.length <= kMaxFillBytes) {
        ++last->count;
        last->bytes.resize(last->bytes.size() + b->id.length);
      } else {
        runs.push_back(Run{next, 1, std::string(b->id.length, '\0')});
      }
      round += b->id.length;
      ++next;
    }
    std::vector<StoreRead> reads;
    for (Run& run : runs) {
      const Block& first = *blocks[run.first];
      reads.push_back(
          StoreRead{first.object->key, first.id.offset, run.bytes.size(), run.bytes.data()});
    }
    fetch(reads);
    for (Run& run : runs) {
      uint64_t at = 0;
      for (size_t i = run.first; i < run.first + run.count; ++i) {
        Block& b = *blocks[i];
        const std::string data = run.bytes.substr(at, b.id.length);
        at += b.id.length;
        for (const Piece& p : b.pieces) std::memcpy(p.out, data.data() + p.offset, p.size);
        if (Keep(b, data))
          delta->bytes += static_cast<int64_t>(BlockHeaderSize(b.id.length) + b.id.length);
        delta->bytes_from_store += b.id.length;
        b.done = true;
      }
    }
  }
}

void FrameCache::Serve(std::vector<Block>& blocks, const StoreFetch& fetch, bool prefetch,
                       CacheCounters* delta) const {
  const auto served = [&](Block& b) {
    if (!CopyOut(b, delta)) return false;
    b.done = true;
    if (!prefetch) {
      ++delta->hits;
      for (const Piece& p : b.pieces) delta->bytes_from_cache += p.size;
    }
    return true;
  };
  std::map<std::string, std::vector<Block*>> missing;  // by stripe
  for (Block& b : blocks) {
    if (!served(b)) missing[b.id.name.substr(0, 3)].push_back(&b);
  }
  if (missing.empty()) return;
  const auto count_fetched = [&](const std::vector<Block*>& fetched) {
    (prefetch ? delta->prefetched : delta->misses) += fetched.size();
  };
  // Stripes no other filler holds: fill their blocks now, holding them.
  std::vector<Block*> mine;
  std::vector<std::pair<std::string, std::vector<Block*>>> theirs;
  {
    std::vector<HeldLock> held;
    for (auto& [stripe, list] : missing) {
      HeldLock lock = LockFile(config_.dir + "/locks/" + stripe, std::chrono::milliseconds(0));
      if (!lock.held()) {
        theirs.emplace_back(stripe, std::move(list));
        continue;
      }
      held.push_back(std::move(lock));
      for (Block* b : list) {
        if (!served(*b)) mine.push_back(b);  // another filler may have just finished it
      }
    }
    count_fetched(mine);
    FetchAndKeep(mine, fetch, delta);
  }
  // The others: wait for their filler, then read what it kept (or fetch).
  for (auto& [stripe, list] : theirs) {
    const HeldLock lock = LockFile(config_.dir + "/locks/" + stripe, config_.fill_wait);
    std::vector<Block*> left;
    for (Block* b : list) {
      if (!served(*b)) left.push_back(b);
    }
    count_fetched(left);
    FetchAndKeep(left, fetch, delta);
  }
}

void FrameCache::Read(const std::vector<CacheRange>& ranges, const StoreFetch& fetch) const {
  CacheCounters delta;
  std::vector<CacheRange> cached;
  std::vector<StoreRead> direct;
  for (const CacheRange& r : ranges) {
    // An object without an identity, or blocks larger than the bound: the store's bytes.
    if (r.object->identity.empty() || config_.block_bytes > config_.bound) {
      direct.push_back(StoreRead{r.object->key, r.offset, r.length, r.out});
      delta.bytes_from_store += r.length;
    } else {
      cached.push_back(r);
    }
  }
  try {
    if (!direct.empty()) fetch(direct);
    std::vector<Block> blocks = BlocksOf(cached);
    Serve(blocks, fetch, false, &delta);
  } catch (...) {
    stats_.Add(delta);
    throw;
  }
  stats_.Add(delta);
  if (delta.bytes > 0) MaybeEvict();
}

void FrameCache::Fill(const std::vector<CacheRange>& ranges, const StoreFetch& fetch) const {
  if (config_.block_bytes > config_.bound) return;
  std::vector<CacheRange> cached;
  for (const CacheRange& r : ranges) {
    if (!r.object->identity.empty()) cached.push_back(CacheRange{r.object, r.offset, r.length});
  }
  CacheCounters delta;
  std::vector<Block> blocks = BlocksOf(cached);
  try {
    Serve(blocks, fetch, true, &delta);
  } catch (...) {
    stats_.Add(delta);
    throw;
  }
  stats_.Add(delta);
  if (delta.bytes > 0) MaybeEvict();
}

bool FrameCache::Forget(const std::vector<CacheRange>& ranges) const noexcept {
  bool any = false;
  try {
    CacheCounters delta;
    std::vector<CacheRange> cached;
    for (const CacheRange& r : ranges) {
      if (!r.object->identity.empty()) cached.push_back(CacheRange{r.object, r.offset, r.length});
    }
    for (const Block& b : BlocksOf(cached)) {
      const std::string path = PathOf(b.id.name);
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && ::unlink(path.c_str()) == 0) {
        any = true;
        delta.bytes -= static_cast<int64_t>(st.st_size);
        ++delta.refetched;
      }
    }
    stats_.Add(delta);
  } catch (...) {
  }
  return any;
}

void FrameCache::MaybeEvict() const noexcept {
  // A pass that could not get under the bound (every block held) is not
  // repeated by this process for a second.
  static std::atomic<int64_t> last_failed_pass{0};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now - last_failed_pass.load() < 1000) return;
  if (static_cast<uint64_t>(stats_.Read().bytes) <= config_.bound) return;
  Evict();
  if (static_cast<uint64_t>(stats_.Read().bytes) > config_.bound) last_failed_pass.store(now);
}

uint64_t FrameCache::Evict() const noexcept {
  uint64_t removed = 0;
  try {
    const HeldLock pass = LockFile(config_.dir + "/evict", std::chrono::milliseconds(0));
    if (!pass.held()) return 0;  // another process is at it
    struct File {
      std::string path;
      uint64_t size;
      int64_t used_ns;
    };
    std::vector<File> blocks;
    uint64_t total = 0;
    struct stat st {};
    for (const char* name : {"/stats", "/evict"}) {
      if (::stat((config_.dir + name).c_str(), &st) == 0)
        total += static_cast<uint64_t>(st.st_size);
    }
    for (const std::string& name : util::ListDirectory(config_.dir + "/tmp")) {
      const std::string path = config_.dir + "/tmp/" + name;
      if (ProcessGone(name)) {
        util::RemoveFileQuietly(path);  // a fill its process never finished
      } else if (::lstat(path.c_str(), &st) == 0) {
        total += static_cast<uint64_t>(st.st_size);
      }
    }
    const std::string root = config_.dir + "/blocks";
    for (const std::string& sub : util::ListDirectory(root)) {
      if (::lstat((root + "/" + sub).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      for (const std::string& name : util::ListDirectory(root + "/" + sub)) {
        const std::string path = root + "/" + sub + "/" + name;
        if (::lstat(path.c_str(), &st) != 0) continue;
        total += static_cast<uint64_t>(st.st_size);
        blocks.push_back(File{path, static_cast<uint64_t>(st.st_size), MtimeNs(st)});
      }
    }
    CacheCounters delta;
    if (total > config_.bound) {
      const uint64_t target = config_.bound - config_.bound / 10;
      std::sort(blocks.begin(), blocks.end(),
                [](const File& a, const File& b) { return a.used_ns < b.used_ns; });
      for (const File& f : blocks) {
        if (total <= target) break;
        // Unlinked under an exclusive lock: a reader copying it out holds a
        // shared one, and the block waits for the next pass.
        HeldLock held;
        const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd >= 0) {
          util::UniqueFd owner(fd);
          if (::flock(fd, LOCK_EX | LOCK_NB) != 0) continue;
          held = HeldLock(std::move(owner));
        }
        if (::unlink(f.path.c_str()) != 0) continue;
        total -= f.size;
        removed += f.size;
        ++delta.evictions;
        delta.bytes_evicted += f.size;
      }
    }
    stats_.Add(delta);
    stats_.SetBytes(total);
  } catch (...) {
    // Only a cache: a failure leaves it larger.
  }
  return removed;
}

}  // namespace gulpdb::engine
