#include "engine/core/env_registry.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "gulpdb/error.h"
#include "index/change_record.h"
#include "index/query_keys.h"
#include "index/records.h"
#include "util/sys_error.h"

namespace gulpdb::engine {

// LMDB forbids opening one environment twice in a process (closing either
// would drop the other's locks), so Datasets on the same directory share
// their Env. Entries are per process: a child after fork() opens its own. An
// entry is reused only while data.mdb is still the file it opened: a
// re-index replaces the whole index directory, and the next open must see
// the new index, not the environment of the old one.
std::shared_ptr<index::Env> AcquireEnv(const std::string& index_dir,
                                       const index::EnvOptions& opts) {
  struct Entry {
    std::weak_ptr<index::Env> env;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  static std::mutex mutex;
  static std::map<std::string, Entry> envs;
  char* real = ::realpath(index_dir.c_str(), nullptr);
  if (real == nullptr) util::ThrowErrno("open index", index_dir, errno);
  const std::string key = std::to_string(::getpid()) + ":" + real;
  std::free(real);
  struct stat st {};
  const std::string data_file = index_dir + "/data.mdb";
  const bool have_file = ::stat(data_file.c_str(), &st) == 0;

  std::lock_guard<std::mutex> lock(mutex);
  Entry& entry = envs[key];
  if (auto env = entry.env.lock()) {
    if (!have_file || (entry.dev == st.st_dev && entry.ino == st.st_ino)) {
      if (env->read_only() && !opts.read_only) {
        throw InvalidArgumentError("open " + index_dir +
                                   " for writing: this process has it open read-only; close "
                                   "that Dataset first");
      }
      return env;
    }
  }
  // Open read-write whenever the files allow it, even for a read-only
  // Dataset, so that a later read-write Dataset in this process can share it;
  // read-only Datasets never write through it.
  index::EnvOptions rw = opts;
  rw.read_only = false;
  std::shared_ptr<index::Env> env;
  try {
    env = index::Env::Open(index_dir, rw);
  } catch (const IoError&) {
    if (!opts.read_only) throw;
    env = index::Env::Open(index_dir, opts);  // read-only media or permissions
  }
  // Every write of this process keeps the change record, once a tag has
  // started one (index/change_record.h).
  env->TrackChanges({{index::kVideosDb, index::kChangedVideo},
                     {index::kMetaIndexDb, index::kChangedMetaEntry},
                     {index::kOrderDb, index::kChangedOrder}},
                    index::kChangesDb);
  if (::stat(data_file.c_str(), &st) == 0) {
    entry.dev = st.st_dev;
    entry.ino = st.st_ino;
  }
  entry.env = env;
  return env;
}

}  // namespace gulpdb::engine
