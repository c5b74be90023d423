#include "cli/cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>

#include "gulpdb/error.h"
#include "util/file_io.h"

namespace gulpdb::cli {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Entry names of directory `dir` (without . and ..); empty when unreadable.
std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> names;
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return names;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.insert(name);
  }
  return names;
}

// Takes the writer lock of a new dataset, if its lock file exists, for as
// long as the object lives: nothing is removed while another process writes
// (two runs that raced to create the same dataset).
class WriterLockProbe {
 public:
  explicit WriterLockProbe(const std::string& path) {
    if (path.empty()) return;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    held_elsewhere_ = fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0;
  }
  ~WriterLockProbe() {
    if (fd_ >= 0) ::close(fd_);
  }
  WriterLockProbe(const WriterLockProbe&) = delete;
  WriterLockProbe& operator=(const WriterLockProbe&) = delete;
  bool held_elsewhere() const { return held_elsewhere_; }

 private:
  int fd_ = -1;
  bool held_elsewhere_ = false;
};

}  // namespace

bool IsDatasetFileName(const std::string& name) {
  // Chunk files are data_<N>.gulp; atomically written files get a
  // ".tmp.<pid>..." suffix until renamed.
  return StartsWith(name, "gulpdb.index") || StartsWith(name, "label2idx.json") ||
         (StartsWith(name, "data_") && name.find(".gulp") != std::string::npos) ||
         name.find(".gmeta") != std::string::npos;
}

bool IsIndexFileName(const std::string& name) {
  return StartsWith(name, "data.mdb") || StartsWith(name, "lock.mdb") ||
         StartsWith(name, "writer.lock");
}

std::string ResumeHint(OnDuplicate on_duplicate) {
  return on_duplicate == OnDuplicate::kSkip
             ? "re-run the same command to resume: ids already present are skipped"
             : std::string("re-run it with --on-duplicate skip to resume (not ") +
                   OnDuplicateName(on_duplicate) + "): ids already present are then skipped";
}

std::string CreatedPaths::KeepCommitted(const std::string& resume) {
  if (keep_ || decided_ || new_dataset_dir_.empty()) return "";
  WriterLockProbe lock(writer_lock_);
  if (lock.held_elsewhere()) return "";  // the destructor says what it leaves, and why
  return Decide(resume);
}

std::string CreatedPaths::Decide(const std::string& resume) {
  decided_ = true;
  std::string kept;
  try {
    if (!Dataset::Exists(new_dataset_dir_, new_index_dir_)) return "";
    OpenOptions open;
    open.index_dir = new_index_dir_;
    open.allow_network_index = true;  // one look at the index, not a long-lived reader
    const DatasetStats stats = Dataset::Open(new_dataset_dir_, open)->Stats();
    if (stats.committed_videos == 0) return "";
    kept = "kept " + new_dataset_dir_ + ": " + std::to_string(stats.videos) +
           (stats.videos == 1 ? " video" : " videos") + " committed before the failure";
  } catch (const std::exception& e) {
    kept = "kept " + new_dataset_dir_ + ": could not tell whether it holds committed videos (" +
           e.what() + ")";
  }
  keep_ = true;
  return resume.empty() ? kept : kept + "; " + resume;
}

CreatedPaths::~CreatedPaths() {
  if (keep_) return;
  // Held (when it exists) until everything is removed.
  WriterLockProbe lock(writer_lock_);
  if (lock.held_elsewhere()) {
    std::fprintf(stderr,
                 "gulpdb: left what this failed run made in %s: another process is writing "
                 "that dataset\n",
                 new_dataset_dir_.c_str());
    return;
  }
  if (!new_dataset_dir_.empty() && !decided_) {
    if (const std::string kept = Decide(""); !kept.empty()) {
      std::fprintf(stderr, "gulpdb: %s\n", kept.c_str());
      return;
    }
  }
  for (auto it = tracked_.rbegin(); it != tracked_.rend(); ++it) {
    std::vector<std::string> doomed;
    if (!it->existed) {
      doomed.push_back(it->path);
    } else if (it->is_dir) {
      for (const std::string& name : Entries(it->path)) {
        if (it->entries.count(name) == 0 && it->ours && it->ours(name))
          doomed.push_back(it->path + "/" + name);
      }
    }
    for (const std::string& path : doomed) {
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0) continue;  // never made, or already gone
      try {
        util::RemoveTree(path);
      } catch (const Error& e) {
        std::fprintf(stderr, "gulpdb: could not remove what the failed run made: %s\n", e.what());
      }
    }
  }
}

void CreatedPaths::Track(const std::string& path, NameFilter ours) {
  Tracked t;
  t.path = path;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    t.existed = true;
    // A symbolic link to a directory counts as that directory (its new
    // entries are this run's); the link itself is never removed.
    struct stat target;
    t.is_dir = S_ISDIR(st.st_mode) || (S_ISLNK(st.st_mode) && ::stat(path.c_str(), &target) == 0 &&
                                       S_ISDIR(target.st_mode));
    if (t.is_dir) t.entries = Entries(path);
  } else if (errno != ENOENT) {
    t.existed = true;  // cannot tell (a file in its path, no permission): never touch it
  }
  t.ours = std::move(ours);
  tracked_.push_back(std::move(t));
}

void CreatedPaths::TrackNewDataset(const DatasetPath& path) {
  if (Dataset::Exists(path.dir, path.index_dir)) return;
  Track(path.dir, IsDatasetFileName);
  if (!path.index_dir.empty()) Track(path.index_dir, IsIndexFileName);
  new_dataset_dir_ = path.dir;
  new_index_dir_ = path.index_dir;
  writer_lock_ =
      (path.index_dir.empty() ? path.dir + "/gulpdb.index" : path.index_dir) + "/writer.lock";
}

}  // namespace gulpdb::cli
