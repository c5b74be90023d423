// The state of a Writer (gulpdb/dataset.h) and the steps of its write path,
// one file per seam: the batch and its commit (writer.cc), the journal
// record of a batch (journal_record.cc), chunk rollover (chunk_rollover.cc)
// and the recovery a writer runs when it opens, with the replay of a journal
// (writer_recovery.cc). The commit protocol is docs/format/index_format.md.
// Internal to engine/core.
// Thread safety: none; one Writer belongs to one thread at a time.
#ifndef GULPDB_ENGINE_CORE_WRITER_IMPL_H_
#define GULPDB_ENGINE_CORE_WRITER_IMPL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/journal.h"
#include "engine/core/journal_session.h"
#include "engine/core/meta_edit.h"
#include "gulpdb/interop.h"

namespace gulpdb {
namespace engine {

inline constexpr int kMaxChunkNameAttempts = 1000;  // skips over foreign data_<N>.gulp files

// The GulpIO name of chunk `chunk`'s data file (gulpdb/interop.h, the one rule).
inline std::string ChunkFileName(uint32_t chunk) { return GulpioDataFileName(chunk); }

// The index entry (info database) holding the last journal record applied,
// and its value (journal_record.cc).
inline constexpr const char* kJournalLsnKey = "journal_lsn";
std::string EncodeLsn(uint64_t lsn);
uint64_t AppliedLsn(const DatasetImpl& ds, const index::Txn& txn);

}  // namespace engine

struct Writer::Impl {
  // A chunk this batch wrote into.
  struct Touched {
    std::shared_ptr<engine::ChunkFile> file;
    uint64_t committed_length = 0;  // where the batch started writing
    uint64_t end = 0;               // where it stopped
  };
  struct Pending {
    std::string id;
    index::VideoRecord record;
    bool dropped = false;  // replaced later in the same batch
  };
  std::shared_ptr<engine::DatasetImpl> ds;  // shared: the Writer may outlive its Dataset
  WriterOptions options;
  std::optional<util::FileLock> lock;  // empty: the caller holds it
  index::DatasetInfo info;             // as last committed (settings are fixed)

  bool have_chunk = false;
  uint32_t chunk = 0;                       // the chunk appends go to
  uint64_t next_chunk = 0;                  // the number a new chunk takes at the lowest
  index::ChunkRecord chunk_record;          // its committed state
  std::shared_ptr<engine::ChunkFile> file;  // its read-write handle
  uint64_t write_pos = 0;                   // next byte to write in it
  uint32_t batch_videos_in_chunk = 0;       // appended to it in this batch
  bool started_new_chunk = false;           // for WriterOptions::start_new_chunk

  std::vector<Pending> pending;
  std::unordered_map<std::string, size_t> pending_by_id;
  std::unordered_set<std::string> removals;
  std::map<uint32_t, Touched> touched;
  std::vector<engine::SplitOp> split_ops;  // SetSplit / RemoveSplit, in call order
  engine::MetaEdits edits;                 // UpdateMeta / SetMeta of committed videos

  // The journal, opened at the first journaled commit, and its checkpoints.
  engine::JournalSession journal;
  Impl(std::shared_ptr<engine::DatasetImpl> dataset, const WriterOptions& opts)
      : ds(std::move(dataset)),
        options(opts),
        lock(std::in_place, ds->index_dir + "/" + kWriterLockName, opts.lock_timeout, ds->dir),
        journal(*ds->env, ds->index_dir + "/" + engine::kJournalName) {}
  // For replaying a journal under a lock the caller already holds.
  Impl(std::shared_ptr<engine::DatasetImpl> dataset, std::optional<util::FileLock> held)
      : ds(std::move(dataset)),
        lock(std::move(held)),
        journal(*ds->env, ds->index_dir + "/" + engine::kJournalName) {}

  const std::string& JournalPath() const { return journal.path(); }

  bool JournalEligible() const;
  std::string EncodeBatch() const;
  void DecodeBatch(const engine::Journal::Record& r, const index::Txn& txn);
  void CommitJournaled();
  void CommitDirect();
  void SettleLeftJournal();
  void ReplayJournal();
  std::string ChunkPath(const std::string& name) const { return ds->ChunkPath(name); }

  void Recover();
  void RemoveAbandonedChunkFiles(uint64_t first);
  void SetDirty(const std::vector<uint32_t>& dirty);
  bool ChunkIsFull(uint64_t video_bytes) const;
  void StartNewChunk();
  void ValidateAppend(std::string_view id, const std::vector<std::string_view>& jpegs,
                      bool jpeg) const;
  bool ResolveDuplicate(const std::string& id);
  std::string NormalizeMeta(std::string_view id, std::string_view json, bool is_list) const;

  // What an H.264 append adds to the record (AppendH264).
  struct H264Extra {
    std::vector<uint32_t> keyframes;
    index::H264Params params;
  };
  bool Append(std::string_view id_view, const std::vector<std::string_view>& jpegs,
              std::string_view meta_json, bool meta_is_list, const H264Extra* h264 = nullptr);
  bool Remove(std::string_view id_view);
  bool EditMeta(std::string_view id_view, std::string_view json, bool merge);
  void ApplyBatch(index::Txn& txn, index::DatasetInfo* out_info,
                  std::map<uint32_t, index::ChunkRecord>* out_chunks) const;
  void Commit(bool last = false);
  void ClearBatch();
  void Discard() noexcept;
};

}  // namespace gulpdb

#endif  // GULPDB_ENGINE_CORE_WRITER_IMPL_H_
