// A writer's side of the journal protocol (journal.h, docs/reliability.md):
// the journal file, the checkpoint whose snapshot is pinned, the chunks
// written by journaled commits since, and when the next checkpoint is due.
//
// A checkpoint makes the journaled chunks and the index durable, writes the
// index's meta pages into a new journal header and pins that snapshot
// (index::Env::Pin) until the next checkpoint. It is due before a journaled
// commit when the writer holds no current checkpoint, when the journal has no
// room (it then doubles, Grow), and when the pin keeps more freed index pages
// from reuse than its budget (PinIsFull): every commit copies the pages it
// changes, and while the pin holds LMDB reuses none it freed, so the index
// file grows by the budget at most between checkpoints. A checkpoint the
// journal holds already is taken over instead when it is still the index's
// state (CheckpointIsCurrent), as after another writer's close.
//
// What a record means (frames, index delta) belongs to the writer
// (engine/core/journal_record.cc), and replaying it to its recovery
// (engine/core/writer_recovery.cc).
//
// Thread safety: none; the holder of the dataset's writer lock uses it.
// Failure modes: I/O errors from the chunks, the index and the journal, as
// their owners throw them; a failed checkpoint leaves the previous one (and
// its records) in the journal, which recovery replays.
#ifndef GULPDB_ENGINE_CORE_JOURNAL_SESSION_H_
#define GULPDB_ENGINE_CORE_JOURNAL_SESSION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "engine/core/chunk_file.h"
#include "engine/core/journal.h"
#include "index/lmdb_env.h"

namespace gulpdb::engine {

class JournalSession {
 public:
  // The journal at `path` of the index `env`, which must outlive this object.
  JournalSession(index::Env& env, std::string path) : env_(env), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  // Opens the journal, creating it when missing (Journal::Open); nothing when
  // open already. Throws as Journal::Open (a full disk: ResourceExhaustedError
  // or IoError), leaving it closed.
  void Open();
  // The journal; null until Open.
  Journal* journal() const { return journal_.get(); }
  // True when the journal is open and holds records past its checkpoint.
  bool has_records() const { return journal_ && !journal_->record_lsns().empty(); }

  // Before a journaled commit whose payload has `payload_bytes`: takes over
  // or writes the checkpoint it needs (see above). Needs Open. Afterwards
  // the journal may still have no room for it (a payload too big for an
  // empty journal): the caller checks Fits.
  void PrepareAppend(size_t payload_bytes);
  // After a journaled commit's record: `file`, chunk `chunk`, is synced by the
  // next checkpoint.
  void AddChunk(uint32_t chunk, std::shared_ptr<ChunkFile> file) {
    chunks_[chunk] = std::move(file);
  }
  // The chunks journaled since the checkpoint (replay writes into them).
  std::map<uint32_t, std::shared_ptr<ChunkFile>>& chunks() { return chunks_; }
  // The journal's checkpoint no longer holds the index's state (a record was
  // appended but its index commit failed): the next journaled commit checkpoints.
  void Invalidate() { current_ = false; }

  // Makes the journaled chunks and the index durable, writes the index's
  // meta pages into a new journal header and pins that snapshot. Needs Open.
  void Checkpoint();
  // Before a commit that does not go through the journal: a checkpoint if
  // records are past the last one (else a recovery after a power cut would
  // restore its meta pages over that commit), then no pin.
  void Settle();

 private:
  void Pin();
  bool CheckpointIsCurrent() const;
  bool PinIsFull() const;
  void Grow();

  index::Env& env_;
  std::string path_;
  std::unique_ptr<Journal> journal_;
  // The journal's header holds the index's durable state, and it is pinned:
  // journaled commits may follow. False after any direct commit.
  bool current_ = false;
  std::map<uint32_t, std::shared_ptr<ChunkFile>> chunks_;
  uint64_t pin_budget_ = 0;  // bytes of freed pages the pin may hold (Pin)
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_JOURNAL_SESSION_H_
