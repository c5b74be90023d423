// The writer's journal: one durable write per small commit.
//
// A small commit writes its frames into the chunk without syncing, appends
// one record (the frames with their chunk offsets, and the index delta) to
// the journal file gulpdb.index/journal and fdatasyncs it — the commit's one
// durable write — and only then commits the index with MDB_NOSYNC, which
// makes it visible. Durable before visible. A checkpoint makes the chunks and
// the index durable and writes a new header holding copies of LMDB's meta
// pages; the writer pins that snapshot (index::Env::Pin) until the next
// checkpoint, so the pages those metas reach are never overwritten. The
// format is docs/format/journal_format.md; the protocol and its recovery
// docs/reliability.md ("One durable write per small commit").
//
// This class owns the file: creating and preallocating it (appends never
// change its size, so fdatasync flushes data only), its two header slots,
// appending and scanning records. What a record means (frames, index delta)
// belongs to the writer (engine/core/journal_record.cc), and replaying it to
// its recovery (engine/core/writer_recovery.cc).
//
// Thread safety: none; the holder of the dataset's writer lock uses it.
// Failure modes: I/O errors are IoError naming the journal's path; a record
// that fails its checksum ends the scan (a torn append was never
// acknowledged); a header slot that fails its checksum is ignored (the other
// slot holds the previous checkpoint).
#ifndef GULPDB_ENGINE_CORE_JOURNAL_H_
#define GULPDB_ENGINE_CORE_JOURNAL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/file_io.h"

namespace gulpdb::engine {

inline constexpr const char* kJournalName = "journal";

// The id of the running kernel's boot (/proc/sys/kernel/random/boot_id).
// GULPDB_TEST_BOOT_ID overrides it — for gulpdb's tests only (the power-loss
// simulator recovers its crash states "after a reboot" with it); never set
// it elsewhere: a wrong boot id makes recovery trust pages a power cut lost.
std::string CurrentBootId();

class Journal {
 public:
  struct Header {
    uint64_t seq = 0;             // which header write this is (slot = seq % 2)
    uint64_t generation = 0;      // records of this generation follow the header
    uint64_t checkpoint_lsn = 0;  // the last record the checkpoint made durable
    std::string boot_id;          // the boot of the writer that wrote it
    std::string meta_pages;       // LMDB's meta pages at the checkpoint
  };
  struct Record {
    uint64_t lsn = 0;
    std::string payload;
  };

  static constexpr uint64_t kSlotBytes = 32 << 10;
  static constexpr uint64_t kRecordsStart = 2 * kSlotBytes;
  // A new journal's size; Grow doubles it up to kMaxBytes.
  static constexpr uint64_t kDefaultBytes = 4 << 20;
  static constexpr uint64_t kMaxBytes = 32 << 20;

  // The size of a new journal: kDefaultBytes, or GULPDB_TEST_JOURNAL_BYTES —
  // for gulpdb's tests only (the power-loss simulator fills and grows a
  // small journal with a few commits); ignored outside 68 KiB..kMaxBytes.
  static uint64_t InitialBytes();
  // Opens the journal at `path`. Returns null when it does not exist (or has
  // no valid header) and `create` is false; with `create`, makes it: a file
  // of `bytes` zeros, synced, its directory synced, and no header yet.
  static std::unique_ptr<Journal> Open(const std::string& path, bool create,
                                       uint64_t bytes = InitialBytes());

  bool has_header() const { return has_header_; }
  const Header& header() const { return header_; }
  // The records past the checkpoint, as scanned by Open or appended since.
  const std::vector<uint64_t>& record_lsns() const { return lsns_; }
  // Reads the records past the checkpoint (payloads), in order.
  std::vector<Record> ReadRecords() const;
  uint64_t next_lsn() const { return next_lsn_; }
  uint64_t size() const { return size_; }
  // True when a record with a payload of `payload_bytes` fits after the last.
  bool Fits(size_t payload_bytes) const;
  static uint64_t RecordBytes(size_t payload_bytes);

  // Appends record next_lsn() and fdatasyncs the journal. Needs a header.
  // On failure the record may be partly written; the writer then checkpoints
  // or fails its commit (an unacknowledged record is never visible: replay
  // accepts it only whole, and the index never saw it).
  // `sync` false is only for the seeded bug skip-journal-sync (util/test_bug.h).
  void Append(std::string_view payload, bool sync = true);
  // Extends the file to `bytes` with zeros and fdatasyncs it (nothing when
  // it is that long already). Only with no records past the checkpoint
  // (InvalidArgumentError otherwise), i.e. right after Checkpoint: records
  // are found only by following the chain from the header, so a power cut
  // during it leaves a longer file whose tail no scan reads as records. On
  // failure (a full disk) the journal keeps its size and stays usable.
  void Grow(uint64_t bytes);
  // Writes a new header (the other slot; generation + 1, no records) with
  // `meta_pages` and the current boot id, and fdatasyncs it.
  void Checkpoint(std::string meta_pages);

 private:
  Journal(std::string path, util::UniqueFd fd, uint64_t size);
  void Load();
  void WriteHeader(const Header& header);

  std::string path_;
  util::UniqueFd fd_;
  uint64_t size_;
  bool has_header_ = false;
  Header header_;
  std::vector<uint64_t> lsns_;
  std::vector<uint64_t> offsets_;  // of each record in lsns_
  uint64_t end_ = kRecordsStart;   // where the next record goes
  uint64_t next_lsn_ = 1;
};

// Recovery after a power cut, at the open of a dataset (any mode), before
// its index is opened: when the journal holds records past its checkpoint
// written in another boot, the index's pages since the checkpoint may be
// lost or torn. Takes the writer lock (waits up to 30 s; BusyError), writes
// the checkpoint's meta pages back into the index and returns the lock; the
// caller opens the index and calls DatasetAccess::ReplayJournal with it,
// which rewrites the records' frames and applies their deltas, durably.
// Returns nullopt when there is nothing to recover. A dataset whose index
// directory is not writable cannot be recovered: IoError naming it (a
// reader must not read an index a power cut may have torn).
std::optional<util::FileLock> PrepareJournalRecovery(const std::string& dir,
                                                     const std::string& index_dir);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_JOURNAL_H_
