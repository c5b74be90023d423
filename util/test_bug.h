// A switch for gulpdb's own tests: the environment variable
// GULPDB_TEST_BUG=<name> puts back one bug that was fixed, so that the
// model-based lifecycle test (tests/python/test_lifecycle_finds_bugs.py) can
// show that it finds it. Each name is tested where the fix is:
//
//   copy-mtime         an imported dataset's .gmeta counts as changed when its
//                      modification time differs from the one recorded at
//                      import, whatever its content (so `cp -r` copies are
//                      refused): engine/gulpio/gulpio_files.cc, CheckSources
//   compact-newest     compaction leaves a chunk it deleted in the dataset
//                      info's list of chunks being written:
//                      engine/core/maintenance.cc, Compact
//   pickle-generation  a copy of a remote reader opens its generation of the
//                      URL without checking that it is the same snapshot of
//                      the same dataset: engine/remote/remote_dataset.cc
//   unverified-reads   local reads check no frame's CRC-32C (every dataset
//                      opened as with verify_checksums = false, the command's
//                      included), so a damaged frame is served:
//                      engine/core/dataset.cc, Dataset::Impl
//   reindex-blesses-rot  import --reindex ignores the checksums of the index
//                      it replaces, so a frame damaged on disk gets a fresh
//                      one and reads as clean: engine/gulpio/import.cc,
//                      Importer::ImportChunk
//   push-named-unchecked  a push names objects it did not upload after
//                      checking only their size in the listing (a damaged
//                      root, page or partition stays named):
//                      engine/remote/publish.cc, NeedsUpload and
//                      PublishedRootIsWhole
//
// and durability bugs seeded for the power-loss simulator
// (tests/powerloss, which must find each; none was a bug of a release):
//
//   skip-chunk-sync     a commit does not fdatasync the chunks it wrote before
//                       the index commit: engine/core/writer.cc, Commit
//   rename-before-sync  an atomic file replace renames the temporary file
//                       before its data is synced: util/file_io.cc,
//                       AtomicFile::Commit
//   no-dir-sync-create  create does not sync the directory it renamed the new
//                       index into: engine/core/dataset.cc, CreateDataset
//   skip-journal-sync   a journaled commit does not fdatasync its journal
//                       record: engine/core/writer.cc, CommitJournaled
//   no-meta-restore     recovery after a power cut does not write the
//                       checkpoint's meta pages back into the index:
//                       engine/core/journal.cc, PrepareJournalRecovery
//   no-pin              a checkpoint does not pin its snapshot, so LMDB may
//                       reuse its pages: engine/core/journal_session.cc, Pin
//   stale-checkpoint    a writer takes over the journal's last checkpoint
//                       although a commit changed the index since:
//                       engine/core/journal_session.cc, CheckpointIsCurrent
//   frame-trust-blocks  the frame cache serves a block file without checking
//                       its size, header or page CRCs, so what a power cut
//                       left of it reaches the frames' own checks:
//                       engine/frame_cache/block_file.cc, ReadBlockBytes
//
// and one bug of the index's size, found by journal_test
// (the_index_bound_fails_without_the_pin_budget):
//
//   unbounded-pin       a writer's pin between checkpoints holds every page
//                       its commits free, however many:
//                       engine/core/journal_session.cc, PinIsFull
//
// and one seeded bug of the query room, for the power-loss simulator:
//
//   meta-rebuild-split  rebuilding a meta index in the ordered key form
//                       commits the new form without its entries, which a
//                       second transaction adds: engine/query/query_txn.cc,
//                       BuildMetaIndex
//
// and one seeded bug of meta edits, for the power-loss simulator:
//
//   edit-not-journaled  a journaled commit's record leaves out the batch's
//                       meta edits, so recovery after a power cut loses
//                       them: engine/core/writer.cc, EncodeBatch
//
// and seeded bugs of versions (docs/versions.md), which the power-loss
// simulator finds (the first also the lifecycle test and version_test):
//
//   tag-drops-chunks    compaction deletes the chunk files it emptied even
//                       while a tag reads them: engine/core/obsolete_files.cc,
//                       TagsMayReadChunks
//   tag-file-unsynced   a tag's file is renamed into place without its bytes
//                       synced first: engine/version/version_store.cc,
//                       WriteTag
//   tag-delete-unsynced a deleted tag's move to deleted/ is not synced
//                       before the reclaim deletes what it named:
//                       engine/version/version_store.cc, MoveTagToDeleted
//                       and Reclaim
//   change-record-skips-meta
//                       a write to a video's record is not kept in the
//                       change record (a meta edit the next tag would miss
//                       if it trusted the record): index/lmdb_env.cc,
//                       Txn::RecordChange
//
// Never set it outside gulpdb's tests: it makes gulpdb give wrong answers.
//
// Thread safety: reads the environment (getenv) at each call; safe while no
// thread changes the environment.
#ifndef GULPDB_UTIL_TEST_BUG_H_
#define GULPDB_UTIL_TEST_BUG_H_

#include <string_view>

namespace gulpdb::util {

// True when GULPDB_TEST_BUG is set to exactly `name`; false otherwise (unset,
// empty, or another name).
bool TestBugEnabled(std::string_view name);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_TEST_BUG_H_
