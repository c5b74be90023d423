// The recovery a writer runs when it takes the lock (WriterRecovery), as
// RocksDB's db_impl_open.cc: a journal left by a writer of this boot is
// settled, one from before a restart replayed (engine/core/journal.h; the
// record's bytes, write_batch.h), and whatever an interrupted writer left
// past the committed lengths is truncated, which finds the open chunk
// (chunk_rollover.h; docs/reliability.md). It owns no state of its own: it
// works on the dataset and the journal session it is given.
// Internal to engine/core.
// Thread safety: none; the holder of the dataset's writer lock uses it.
// Failure modes: I/O errors as the chunks, the index and the journal throw
// them; CorruptionError for a chunk shorter than its committed length, a
// record that does not decode, or a journal from before a restart that
// SettleLeftJournal may not settle.
#ifndef GULPDB_ENGINE_CORE_WRITER_RECOVERY_H_
#define GULPDB_ENGINE_CORE_WRITER_RECOVERY_H_

#include <string>

#include "engine/core/chunk_rollover.h"
#include "engine/core/dataset_impl.h"
#include "engine/core/journal.h"
#include "engine/core/journal_session.h"
#include "index/records.h"

namespace gulpdb::engine {

// Where the journal of `ds` lives.
inline std::string JournalPathOf(const DatasetImpl& ds) {
  return ds.index_dir + "/" + kJournalName;
}

class WriterRecovery {
 public:
  // `ds` and `journal` (the journal of `ds`) must outlive this object.
  WriterRecovery(DatasetImpl& ds, JournalSession& journal) : ds_(ds), journal_(journal) {}

  // A journal left with records past its checkpoint by a writer of this
  // boot is checkpointed and settled; one from before a restart is refused.
  void SettleLeftJournal();
  // Replays the records past the index's journal_lsn, then checkpoints.
  void ReplayJournal();
  // Truncates what an interrupted writer left past committed lengths, sets
  // `*info` to the committed DatasetInfo and makes the last chunk `*open`.
  void Recover(index::DatasetInfo* info, OpenChunk* open);

 private:
  DatasetImpl& ds_;
  JournalSession& journal_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_WRITER_RECOVERY_H_
