// The state of a Writer (gulpdb/dataset.h) and the orchestration of its
// write path. Writer::Impl owns the batch being built (engine::WriteBatch,
// write_batch.h; its journal record, journal_record.cc), the open chunk and
// its rollover (engine::OpenChunk, chunk_rollover.h) and the journal session
// (journal_session.h); it validates appends and meta edits and chooses how a
// batch commits: through the journal or directly, and how each is made
// durable (writer.cc). The recovery it runs when it opens is
// engine::WriterRecovery's (writer_recovery.h). The commit protocol is
// docs/format/index_format.md.
// Internal to engine/core.
// Thread safety: none; one Writer belongs to one thread at a time.
#ifndef GULPDB_ENGINE_CORE_WRITER_IMPL_H_
#define GULPDB_ENGINE_CORE_WRITER_IMPL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/chunk_rollover.h"
#include "engine/core/dataset_impl.h"
#include "engine/core/journal_session.h"
#include "engine/core/write_batch.h"
#include "engine/core/writer_recovery.h"

namespace gulpdb {

struct Writer::Impl {
  std::shared_ptr<engine::DatasetImpl> ds;  // shared: the Writer may outlive its Dataset
  WriterOptions options;
  util::FileLock lock;
  index::DatasetInfo info;  // as last committed (settings are fixed)

  engine::OpenChunk open;    // the chunk appends go to
  engine::WriteBatch batch;  // what this batch stages

  // The journal, opened at the first journaled commit, and its checkpoints.
  engine::JournalSession journal;
  Impl(std::shared_ptr<engine::DatasetImpl> dataset, const WriterOptions& opts)
      : ds(std::move(dataset)),
        options(opts),
        lock(ds->index_dir + "/" + kWriterLockName, opts.lock_timeout, ds->dir),
        journal(*ds->env, engine::JournalPathOf(*ds)) {}

  // The recovery of this writer's dataset and journal.
  engine::WriterRecovery Recovery() { return engine::WriterRecovery(*ds, journal); }

  bool JournalEligible() const;
  void CommitJournaled();
  void CommitDirect();
  void StartNewChunk() { open.StartNew(*ds, batch, journal, &info); }
  void ValidateAppend(std::string_view id, const std::vector<std::string_view>& jpegs,
                      bool jpeg) const;
  std::string NormalizeMeta(std::string_view id, std::string_view json, bool is_list) const;

  // What an H.264 append adds to the record (AppendH264).
  struct H264Extra {
    std::vector<uint32_t> keyframes;
    index::H264Params params;
  };
  bool Append(std::string_view id_view, const std::vector<std::string_view>& jpegs,
              std::string_view meta_json, bool meta_is_list, const H264Extra* h264 = nullptr);
  bool EditMeta(std::string_view id_view, std::string_view json, bool merge);
  void Commit(bool last = false);
  void ClearBatch();
  void Discard() noexcept;
};

}  // namespace gulpdb

#endif  // GULPDB_ENGINE_CORE_WRITER_IMPL_H_
