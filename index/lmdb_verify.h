// Verification of an LMDB data file with bounds-checked reads.
//
// LMDB trusts its pages: a flipped byte in a branch page, a truncated
// data.mdb or a damaged node header makes it read outside the page or the
// file, which ends the process (SIGSEGV, SIGBUS or an assertion). Before
// gulpdb lets LMDB walk a tree it does not trust, it walks the file itself
// with pread and checks every page LMDB would touch: page numbers and types,
// node offsets and sizes, key order (and key ranges against the parent),
// tree depth, overflow runs, sub-database records, the free list, and that
// no page is used twice. The layout is LMDB 0.9's on-disk format
// (docs/format/index_format.md, "Verifying the LMDB file").
//
// Thread safety: free functions; safe from any thread. The file may be
// written concurrently only if the caller holds an LMDB read transaction on
// the snapshot it verifies (its pages are then never reused).
#ifndef GULPDB_INDEX_LMDB_VERIFY_H_
#define GULPDB_INDEX_LMDB_VERIFY_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gulpdb::index {

struct IndexFileReport {
  uint64_t txnid = 0;  // the snapshot verified
  uint64_t page_size = 0;
  uint64_t pages = 0;  // pages the snapshot says exist
  uint64_t branch_pages = 0;
  uint64_t leaf_pages = 0;
  uint64_t overflow_pages = 0;
  uint64_t free_pages = 0;
  uint64_t entries = 0;               // key/value pairs in every database but the free list
  std::vector<std::string> problems;  // "<file>: page N: <what>"; empty: healthy
  bool healthy() const { return problems.empty(); }
};

// Cheap (two page reads): the meta pages have LMDB's magic and version, the
// page size is sane, and the file holds every page the newest meta counts.
// An empty file passes (LMDB initialises it).
// Throws CorruptionError naming `data_path` and what is wrong, or IoError.
void CheckIndexFileHeader(const std::string& data_path);

// Tests only: `hook` runs after the data file is opened and before its meta
// pages are read (nullptr: none), where a concurrent commit is most harmful.
void SetBeforeMetaReadHookForTesting(void (*hook)());

// Walks every database of the snapshot `txnid` (0: the newest meta's). Reads
// each reachable page once. Never throws for damage (it is reported, at most
// `max_problems` of it); throws IoError if the file cannot be read.
IndexFileReport VerifyIndexFile(const std::string& data_path, uint64_t txnid = 0,
                                size_t max_problems = 20);

}  // namespace gulpdb::index

#endif  // GULPDB_INDEX_LMDB_VERIFY_H_
