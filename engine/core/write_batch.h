// The batch a Writer is building (gulpdb/dataset.h), as LevelDB's WriteBatch:
// it owns the videos appended in it (staged, their frames already written
// past the committed lengths), the ids it removes, the meta edits of
// committed videos, the split changes, the ids it has seen, and the chunks
// it wrote into. It knows what it does to the index (Apply, write_batch.cc)
// and its journal record (EncodeRecord / DecodeRecord, journal_record.cc;
// docs/format/journal_format.md). Which chunk is open and how a commit is
// made durable are not its business (chunk_rollover.h, writer.cc).
// Internal to engine/core.
// Thread safety: none; one Writer belongs to one thread at a time.
#ifndef GULPDB_ENGINE_CORE_WRITE_BATCH_H_
#define GULPDB_ENGINE_CORE_WRITE_BATCH_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/core/chunk_file.h"
#include "engine/core/dataset_impl.h"
#include "engine/core/journal.h"
#include "engine/core/meta_edit.h"
#include "engine/query/query_txn.h"
#include "gulpdb/dataset.h"
#include "index/lmdb_env.h"
#include "index/records.h"

namespace gulpdb::engine {

// The index entry (info database) holding the last journal record applied,
// and its value (journal_record.cc).
inline constexpr const char* kJournalLsnKey = "journal_lsn";
std::string EncodeLsn(uint64_t lsn);
uint64_t AppliedLsn(const DatasetImpl& ds, const index::Txn& txn);

struct WriteBatch {
  // A chunk this batch wrote into.
  struct Touched {
    std::shared_ptr<ChunkFile> file;
    uint64_t committed_length = 0;  // where the batch started writing
    uint64_t end = 0;               // where it stopped
  };
  struct Pending {
    std::string id;
    index::VideoRecord record;
    bool dropped = false;  // replaced later in the same batch
  };

  std::vector<Pending> pending;
  std::unordered_map<std::string, size_t> pending_by_id;
  std::unordered_set<std::string> removals;
  std::map<uint32_t, Touched> touched;
  std::vector<SplitOp> split_ops;  // SetSplit / RemoveSplit, in call order
  MetaEdits edits;                 // UpdateMeta / SetMeta of committed videos

  // True when the batch changes nothing.
  bool empty() const {
    return pending.empty() && removals.empty() && split_ops.empty() && edits.empty();
  }
  // Forgets everything staged (the bytes written stay where they are).
  void Clear();
  // Truncates what the batch wrote. Failures are swallowed: the bytes are
  // past the committed lengths, and the next writer truncates them.
  void TruncateWritten() noexcept;

  // Decides what an append of `id`, an id of `ds`'s, does under `policy`;
  // false means skip it. kReplace drops an append of it in this batch.
  bool ResolveDuplicate(const DatasetImpl& ds, OnDuplicate policy, const std::string& id);
  // Stages the removal of `id`; false when neither this batch nor the
  // dataset has it.
  bool Remove(const DatasetImpl& ds, std::string_view id_view);

  // Applies the batch to the index inside `txn`, `chunk` being the chunk
  // appends go to (none: a batch of split changes before any chunk). Runs
  // again from scratch if the map had to grow, so it only reads `this`.
  void Apply(DatasetImpl& ds, index::Txn& txn, std::optional<uint32_t> chunk,
             index::DatasetInfo* out_info,
             std::map<uint32_t, index::ChunkRecord>* out_chunks) const;

  // The journal record of this batch, appended to `chunk` (journal_record.cc).
  std::string EncodeRecord(uint32_t chunk) const;
  // The inverse of EncodeRecord for replay into an empty batch: reads record
  // `r` of the journal at `journal_path`, rewrites its frames at their
  // offsets (not synced) through `files` (opened as needed from `txn`'s
  // chunk records), and returns the chunk appends went to.
  uint32_t DecodeRecord(const DatasetImpl& ds, const Journal::Record& r,
                        const std::string& journal_path, const index::Txn& txn,
                        std::map<uint32_t, std::shared_ptr<ChunkFile>>* files);
  // The chunks record `r` wrote into, read without applying it.
  static std::vector<uint32_t> RecordChunks(const Journal::Record& r,
                                            const std::string& journal_path);
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_WRITE_BATCH_H_
