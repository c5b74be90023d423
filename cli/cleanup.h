// Undoing a failed command: a command that creates its target (a dataset, an
// index, an output folder, files in one) registers the target before it
// starts, and if the command fails, what the run made there is removed,
// unless a transaction committed into it. What existed before the run is
// never touched: a path that was absent is removed whole; in a directory that
// existed, only entries that appeared during the run and whose names the
// command writes are removed; anything else is left alone. A dataset that
// existed before the run is not tracked at all: its own transactions decide
// what stays (each committed batch of an ingest into it, each merged shard).
// A dataset the run created keeps its committed transactions the same way:
// when its index says a transaction committed videos into it
// (DatasetStats::committed_videos), the failed run removes nothing and says
// what it kept and how to resume; a failure before the first commit removes
// it whole. Not thread-safe (one per command run).
#ifndef GULPDB_CLI_CLEANUP_H_
#define GULPDB_CLI_CLEANUP_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cli/options.h"
#include "gulpdb/error.h"

namespace gulpdb::cli {

// Decides whether an entry name in a tracked directory is one the command
// writes (e.g. data_3.gulp), and so may be removed when it is new.
using NameFilter = std::function<bool(const std::string& name)>;

class CreatedPaths {
 public:
  CreatedPaths() = default;
  // Unless Keep() was called or the new dataset holds committed videos (see
  // KeepCommitted, whose note it then prints on stderr): removes what the run
  // made at the tracked paths, the last tracked first. A removal that fails
  // is reported on stderr.
  ~CreatedPaths();
  CreatedPaths(const CreatedPaths&) = delete;
  CreatedPaths& operator=(const CreatedPaths&) = delete;

  // Notes what is at `path` now (call before the command touches it): nothing
  // (then all of `path` goes on failure), a directory (then its new entries
  // that `ours` accepts go), or something else (then nothing goes).
  void Track(const std::string& path, NameFilter ours);

  // The dataset at `path`, unless one is there already: its directory (with
  // the names a dataset holds: gulpdb.index, data_N.gulp, label2idx.json,
  // .gmeta files) and its --index-dir (data.mdb, lock.mdb, writer.lock).
  // Nothing is removed while another process holds the new dataset's writer
  // lock (two runs that raced to create the same dataset: the loser's
  // failure must not delete the winner's work).
  void TrackNewDataset(const DatasetPath& path);

  // The run succeeded: keep everything.
  void Keep() { keep_ = true; }

  // After a failure: when the dataset tracked by TrackNewDataset holds
  // videos that a transaction of this run committed (its index says so), or
  // its index cannot be read to tell (committed work is never removed on a
  // guess), keeps everything the run made and returns what to tell the user:
  // "kept DIR: N videos committed before the failure; " + `resume`.
  // Otherwise returns "" and the destructor removes what the run made.
  // Never throws.
  std::string KeepCommitted(const std::string& resume);

 private:
  struct Tracked {
    std::string path;
    bool existed = false;
    bool is_dir = false;
    std::set<std::string> entries;  // of an existing directory, before the run
    NameFilter ours;
  };
  // KeepCommitted's decision, the writer lock already probed.
  std::string Decide(const std::string& resume);

  std::vector<Tracked> tracked_;
  std::string new_dataset_dir_;  // a tracked new dataset, its index and its writer lock
  std::string new_index_dir_;
  std::string writer_lock_;
  bool keep_ = false;
  bool decided_ = false;  // KeepCommitted ran
};

// Runs `body`, the part of a command that commits into the new dataset
// `created` tracks, and returns what it returns. When it throws a
// gulpdb::Error after a transaction committed into that dataset, the
// dataset stays and the error, of its own type, ends with what was kept and
// `resume` (one line, as every error the command prints).
template <typename Body>
auto KeepingCommitted(CreatedPaths* created, const std::string& resume, Body&& body)
    -> decltype(body()) {
  try {
    return body();
  } catch (const Error& e) {
    const std::string kept = created->KeepCommitted(resume);
    if (!kept.empty()) e.ThrowWithMessage(std::string(e.what()) + "; " + kept);
    throw;
  }
}

// What a re-run of a failed ingest or merge into a dataset that kept its
// committed videos must be told: ids already present are skipped by the
// default policy, so the same command resumes; under `error` they would
// stop it, so the hint names --on-duplicate skip.
std::string ResumeHint(OnDuplicate on_duplicate);

// Names a dataset directory holds that gulpdb writes.
bool IsDatasetFileName(const std::string& name);
// Names gulpdb writes in an index directory.
bool IsIndexFileName(const std::string& name);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_CLEANUP_H_
