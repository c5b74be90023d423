#include "engine/core/journal.h"

#include <fcntl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "engine/core/dataset_view.h"
#include "gulpdb/error.h"
#include "index/lmdb_env.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/env.h"
#include "util/file_io.h"
#include "util/test_bug.h"

namespace gulpdb::engine {
namespace {

// Layouts: docs/format/journal_format.md.
constexpr char kHeaderMagic[8] = {'G', 'U', 'L', 'P', 'J', 'R', 'N', 'L'};
constexpr uint32_t kFormat = 1;
constexpr size_t kHeaderFixed = 8 + 4 + 4 + 8 + 8 + 8 + 64 + 4;  // crc last
constexpr uint32_t kRecordMagic = 0x4a524543;                    // "JREC"
constexpr size_t kRecordFixed = 4 + 4 + 8 + 8 + 4 + 4;

void WriteAt(int fd, std::string_view bytes, uint64_t offset, const std::string& path) {
  struct iovec iov {
    const_cast<char*>(bytes.data()), bytes.size()
  };
  util::PwritevFull(fd, &iov, 1, offset, path);
}

}  // namespace

std::string CurrentBootId() {
  if (std::optional<std::string> test = util::EnvText("GULPDB_TEST_BOOT_ID")) return *test;
  std::string id = util::ReadFile("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

Journal::Journal(std::string path, util::UniqueFd fd, uint64_t size)
    : path_(std::move(path)), fd_(std::move(fd)), size_(size) {}

uint64_t Journal::InitialBytes() {
  return util::EnvCount("GULPDB_TEST_JOURNAL_BYTES", kRecordsStart + 4096, kMaxBytes)
      .value_or(kDefaultBytes);
}

std::unique_ptr<Journal> Journal::Open(const std::string& path, bool create, uint64_t bytes) {
  util::UniqueFd fd;
  if (util::PathExists(path)) {
    fd = util::OpenFile(path, create ? O_RDWR : O_RDONLY);
  } else if (!create) {
    return nullptr;
  }
  if (fd.valid()) {
    std::unique_ptr<Journal> j(new Journal(path, std::move(fd), 0));
    j->size_ = util::FileSize(j->fd_.get(), path);
    if (j->size_ >= kRecordsStart) j->Load();
    if (j->has_header_ || !create) return j->has_header_ ? std::move(j) : nullptr;
    util::RemoveFile(path);  // a journal whose creation was cut short
  }
  // Zeros, not fallocate: writing into preallocated but unwritten extents
  // still changes file system metadata at each fdatasync.
  const std::string tmp = path + ".tmp";
  util::RemoveFileQuietly(tmp);
  try {
    util::UniqueFd out = util::OpenFile(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
    const std::string zeros(size_t{1} << 20, '\0');
    for (uint64_t off = 0; off < bytes; off += zeros.size()) {
      WriteAt(out.get(),
              std::string_view(zeros).substr(0, std::min<uint64_t>(zeros.size(), bytes - off)), off,
              tmp);
    }
    util::DataSync(out.get(), tmp);
  } catch (...) {
    util::RemoveFileQuietly(tmp);  // a full disk leaves nothing behind
    throw;
  }
  util::Rename(tmp, path);
  const size_t slash = path.rfind('/');
  util::SyncDirectory(slash == std::string::npos ? "." : path.substr(0, slash));
  return std::unique_ptr<Journal>(new Journal(path, util::OpenFile(path, O_RDWR), bytes));
}

void Journal::Load() {
  std::string slots(kRecordsStart, '\0');
  util::PreadFull(fd_.get(), slots.data(), slots.size(), 0, path_);
  for (uint64_t s = 0; s < 2; ++s) {
    std::string_view slot = std::string_view(slots).substr(s * kSlotBytes, kSlotBytes);
    if (std::memcmp(slot.data(), kHeaderMagic, 8) != 0 ||
        util::GetFixed32Little(slot, 8) != kFormat)
      continue;
    const uint32_t meta_len = util::GetFixed32Little(slot, 12);
    if (meta_len > kSlotBytes - kHeaderFixed) continue;
    std::string copy(slot.substr(0, kHeaderFixed + meta_len));
    const uint32_t crc = util::GetFixed32Little(copy, kHeaderFixed - 4);
    std::memset(copy.data() + kHeaderFixed - 4, 0, 4);
    if (util::Crc32c(copy.data(), copy.size()) != crc) continue;
    Header h;
    h.seq = util::GetFixed64Little(slot, 16);
    if (has_header_ && h.seq <= header_.seq) continue;
    h.generation = util::GetFixed64Little(slot, 24);
    h.checkpoint_lsn = util::GetFixed64Little(slot, 32);
    std::string_view boot = slot.substr(40, 64);
    h.boot_id = std::string(boot.substr(0, boot.find('\0')));
    h.meta_pages = std::string(slot.substr(kHeaderFixed, meta_len));
    header_ = std::move(h);
    has_header_ = true;
  }
  if (!has_header_) return;
  // The records of this generation, in order, each whole and checked.
  next_lsn_ = header_.checkpoint_lsn + 1;
  end_ = kRecordsStart;
  std::string fixed(kRecordFixed, '\0');
  while (end_ + kRecordFixed <= size_) {
    util::PreadFull(fd_.get(), fixed.data(), fixed.size(), end_, path_);
    if (util::GetFixed32Little(fixed, 0) != kRecordMagic ||
        util::GetFixed64Little(fixed, 8) != next_lsn_ ||
        util::GetFixed64Little(fixed, 16) != header_.generation) {
      break;
    }
    const uint32_t len = util::GetFixed32Little(fixed, 4);
    if (end_ + RecordBytes(len) > size_) break;
    std::string record(kRecordFixed + len, '\0');
    util::PreadFull(fd_.get(), record.data(), record.size(), end_, path_);
    const uint32_t crc = util::GetFixed32Little(record, 24);
    std::memset(record.data() + 24, 0, 4);
    if (util::Crc32c(record.data(), record.size()) != crc) break;
    lsns_.push_back(next_lsn_);
    offsets_.push_back(end_);
    ++next_lsn_;
    end_ += RecordBytes(len);
  }
}

uint64_t Journal::RecordBytes(size_t payload_bytes) {
  return (kRecordFixed + payload_bytes + 7) / 8 * 8;
}

bool Journal::Fits(size_t payload_bytes) const {
  return end_ + RecordBytes(payload_bytes) <= size_;
}

std::vector<Journal::Record> Journal::ReadRecords() const {
  std::vector<Record> out;
  std::string fixed(kRecordFixed, '\0');
  for (size_t i = 0; i < lsns_.size(); ++i) {
    util::PreadFull(fd_.get(), fixed.data(), fixed.size(), offsets_[i], path_);
    Record r;
    r.lsn = lsns_[i];
    r.payload.resize(util::GetFixed32Little(fixed, 4));
    util::PreadFull(fd_.get(), r.payload.data(), r.payload.size(), offsets_[i] + kRecordFixed,
                    path_);
    out.push_back(std::move(r));
  }
  return out;
}

void Journal::Append(std::string_view payload, bool sync) {
  if (!has_header_) {
    throw InvalidArgumentError("append to journal " + path_ + ": no checkpoint header yet");
  }
  if (!Fits(payload.size())) {
    throw InvalidArgumentError("append to journal " + path_ + ": a record of " +
                               std::to_string(payload.size()) + " bytes does not fit");
  }
  std::string record;
  record.reserve(RecordBytes(payload.size()));
  util::PutFixed32Little(&record, kRecordMagic);
  util::PutFixed32Little(&record, static_cast<uint32_t>(payload.size()));
  util::PutFixed64Little(&record, next_lsn_);
  util::PutFixed64Little(&record, header_.generation);
  util::PutFixed32Little(&record, 0);  // crc32c of the whole record with this field zero
  util::PutFixed32Little(&record, 0);
  record.append(payload);
  const uint32_t crc = util::Crc32c(record.data(), record.size());
  std::string crc_bytes;
  util::PutFixed32Little(&crc_bytes, crc);
  record.replace(24, 4, crc_bytes);
  record.resize(RecordBytes(payload.size()), '\0');
  WriteAt(fd_.get(), record, end_, path_);
  if (sync) util::DataSync(fd_.get(), path_);
  lsns_.push_back(next_lsn_);
  offsets_.push_back(end_);
  ++next_lsn_;
  end_ += record.size();
}

void Journal::Grow(uint64_t bytes) {
  if (!lsns_.empty()) {
    throw InvalidArgumentError("grow journal " + path_ + ": it holds " +
                               std::to_string(lsns_.size()) + " records past its checkpoint");
  }
  if (bytes <= size_) return;
  const std::string zeros(size_t{1} << 20, '\0');
  for (uint64_t off = size_; off < bytes; off += zeros.size()) {
    WriteAt(fd_.get(),
            std::string_view(zeros).substr(0, std::min<uint64_t>(zeros.size(), bytes - off)), off,
            path_);
  }
  util::DataSync(fd_.get(), path_);
  size_ = bytes;
}

void Journal::WriteHeader(const Header& h) {
  if (kHeaderFixed + h.meta_pages.size() > kSlotBytes) {
    throw InvalidArgumentError("checkpoint journal " + path_ + ": LMDB meta pages of " +
                               std::to_string(h.meta_pages.size()) + " bytes do not fit");
  }
  std::string slot(kHeaderMagic, 8);
  util::PutFixed32Little(&slot, kFormat);
  util::PutFixed32Little(&slot, static_cast<uint32_t>(h.meta_pages.size()));
  util::PutFixed64Little(&slot, h.seq);
  util::PutFixed64Little(&slot, h.generation);
  util::PutFixed64Little(&slot, h.checkpoint_lsn);
  std::string boot = h.boot_id.substr(0, 63);
  boot.resize(64, '\0');
  slot += boot;
  util::PutFixed32Little(&slot, 0);
  slot += h.meta_pages;
  std::string crc_bytes;
  util::PutFixed32Little(&crc_bytes, util::Crc32c(slot.data(), slot.size()));
  slot.replace(kHeaderFixed - 4, 4, crc_bytes);
  WriteAt(fd_.get(), slot, (h.seq % 2) * kSlotBytes, path_);
  util::DataSync(fd_.get(), path_);
}

void Journal::Checkpoint(std::string meta_pages) {
  Header h;
  h.seq = has_header_ ? header_.seq + 1 : 1;
  h.generation = has_header_ ? header_.generation + 1 : 1;
  h.checkpoint_lsn = next_lsn_ - 1;
  h.boot_id = CurrentBootId();
  h.meta_pages = std::move(meta_pages);
  WriteHeader(h);
  header_ = std::move(h);
  has_header_ = true;
  lsns_.clear();
  offsets_.clear();
  end_ = kRecordsStart;
}

std::optional<util::FileLock> PrepareJournalRecovery(const std::string& dir,
                                                     const std::string& index_dir) {
  const std::string path = index_dir + "/" + kJournalName;
  auto needs = [&]() {
    std::unique_ptr<Journal> j = Journal::Open(path, /*create=*/false);
    return j && !j->record_lsns().empty() && j->header().boot_id != CurrentBootId();
  };
  if (!needs()) return std::nullopt;
  const auto refuse = [&](const Error& e) {
    return IoError("open dataset " + dir + ": the journal " + path +
                   " holds commits from before a power cut or reboot, and recovering them needs "
                   "write access to " +
                   index_dir + " (" + e.what() + "); open it once where it is writable");
  };
  std::optional<util::FileLock> lock;
  try {
    lock.emplace(index_dir + "/" + kWriterLockName, std::chrono::seconds(30), dir);
  } catch (const BusyError&) {
    throw;
  } catch (const Error& e) {
    throw refuse(e);
  }
  if (!needs()) return std::nullopt;  // recovered by another process meanwhile
  std::unique_ptr<Journal> j = Journal::Open(path, /*create=*/false);
  if (!util::TestBugEnabled("no-meta-restore")) {
    try {
      index::Env::RestoreMetaPages(index_dir, j->header().meta_pages);
    } catch (const IoError& e) {
      throw refuse(e);
    }
  }
  return lock;
}

}  // namespace gulpdb::engine
