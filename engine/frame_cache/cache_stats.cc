#include "engine/frame_cache/cache_stats.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/crc32c.h"

namespace gulpdb::engine {
namespace {

constexpr char kMagic[8] = {'G', 'D', 'B', 'F', 'S', 'T', 'A', '2'};
constexpr size_t kFields = 10;
constexpr size_t kRecordBytes = sizeof kMagic + 8 * kFields + 4;

uint64_t* Field(CacheCounters& c, size_t i) {
  uint64_t* fields[kFields] = {
      &c.hits,      &c.misses,        &c.prefetched, &c.bytes_from_store, &c.bytes_from_cache,
      &c.evictions, &c.bytes_evicted, &c.damaged,    &c.refetched,        nullptr};
  return fields[i];
}

CacheCounters Decode(const char* p, size_t size) {
  CacheCounters c;
  if (size != kRecordBytes || std::memcmp(p, kMagic, sizeof kMagic) != 0) return c;
  uint32_t crc = 0;
  std::memcpy(&crc, p + kRecordBytes - 4, 4);
  if (util::Crc32c(p, kRecordBytes - 4) != crc) return c;
  for (size_t i = 0; i < kFields; ++i) {
    uint64_t v = 0;
    std::memcpy(&v, p + sizeof kMagic + 8 * i, 8);
    if (uint64_t* f = Field(c, i)) {
      *f = v;
    } else {
      c.bytes = static_cast<int64_t>(v & (~uint64_t{0} >> 1));
    }
  }
  return c;
}

void Encode(CacheCounters c, char* p) {
  std::memcpy(p, kMagic, sizeof kMagic);
  for (size_t i = 0; i < kFields; ++i) {
    uint64_t* f = Field(c, i);
    const uint64_t v = f != nullptr ? *f : static_cast<uint64_t>(c.bytes < 0 ? 0 : c.bytes);
    std::memcpy(p + sizeof kMagic + 8 * i, &v, 8);
  }
  const uint32_t crc = util::Crc32c(p, kRecordBytes - 4);
  std::memcpy(p + kRecordBytes - 4, &crc, 4);
}

// Holds an flock for its lifetime.
class Flock {
 public:
  Flock(int fd, int how) : fd_(fd) {
    while (::flock(fd_, how) != 0) {
      if (errno != EINTR) {
        fd_ = -1;
        return;
      }
    }
  }
  ~Flock() {
    if (fd_ >= 0) ::flock(fd_, LOCK_UN);
  }
  Flock(const Flock&) = delete;
  Flock& operator=(const Flock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_;
};

}  // namespace

bool CacheCounters::empty() const {
  return hits == 0 && misses == 0 && prefetched == 0 && bytes_from_store == 0 &&
         bytes_from_cache == 0 && evictions == 0 && bytes_evicted == 0 && damaged == 0 &&
         refetched == 0 && bytes == 0;
}

template <typename Change>
void NodeStats::Update(const Change& change) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fd_.valid()) {
    const int fd =
        ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0) return;
    fd_ = util::UniqueFd(fd);
  }
  const Flock held(fd_.get(), LOCK_EX);
  if (!held.held()) return;
  char record[kRecordBytes];
  const ssize_t got = ::pread(fd_.get(), record, sizeof record, 0);
  CacheCounters c = Decode(record, got < 0 ? 0 : static_cast<size_t>(got));
  change(c);
  Encode(c, record);
  if (::pwrite(fd_.get(), record, sizeof record, 0) != static_cast<ssize_t>(sizeof record)) return;
  struct stat st {};
  if (::fstat(fd_.get(), &st) == 0 && st.st_size > static_cast<off_t>(sizeof record)) {
    if (::ftruncate(fd_.get(), sizeof record) != 0) return;  // a foreign file: ours now
  }
}

void NodeStats::Add(const CacheCounters& d) noexcept {
  if (d.empty()) return;
  Update([&](CacheCounters& c) {
    for (size_t i = 0; i + 1 < kFields; ++i) {
      *Field(c, i) += *Field(const_cast<CacheCounters&>(d), i);
    }
    c.bytes = std::max<int64_t>(0, c.bytes + d.bytes);
  });
}

void NodeStats::SetBytes(uint64_t bytes) noexcept {
  Update([&](CacheCounters& c) { c.bytes = static_cast<int64_t>(bytes); });
}

CacheCounters NodeStats::Read() const noexcept {
  // O_NONBLOCK: a FIFO in the stats file's place must not hang a reader.
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return CacheCounters();
  const util::UniqueFd owner(fd);
  const Flock held(fd, LOCK_SH);
  char record[kRecordBytes + 1];
  const ssize_t got = ::pread(fd, record, sizeof record, 0);
  return Decode(record, got < 0 ? 0 : static_cast<size_t>(got));
}

}  // namespace gulpdb::engine
