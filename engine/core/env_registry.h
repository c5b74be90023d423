// The process's registry of open LMDB environments: LMDB forbids opening
// one environment twice in a process (closing either would drop the other's
// locks), so every Dataset on the same index directory shares one Env. Used
// by opening and creating a dataset (dataset.cc, dataset_create.cc).
//
// Thread safety: AcquireEnv may be called from any thread.
#ifndef GULPDB_ENGINE_CORE_ENV_REGISTRY_H_
#define GULPDB_ENGINE_CORE_ENV_REGISTRY_H_

#include <memory>
#include <string>

#include "index/lmdb_env.h"

namespace gulpdb::engine {

// The environment of `index_dir`, shared with every open Dataset of this
// process on it, or opened now (read-write whenever the files allow, so
// that a later writer can share it). InvalidArgumentError when `opts` asks
// for writing and this process has it open read-only; IoError for what
// LMDB cannot open.
std::shared_ptr<index::Env> AcquireEnv(const std::string& index_dir, const index::EnvOptions& opts);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_ENV_REGISTRY_H_
