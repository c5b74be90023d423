// Creating a dataset (Dataset::Create, engine::CreateDataset): its index
// built whole beside its place and renamed into it, and what creates killed
// before their rename left behind, removed.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/env_registry.h"
#include "engine/core/fault_injection.h"
#include "engine/core/gulpio_names.h"
#include "engine/json/json_text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "util/file_io.h"
#include "util/host_name.h"
#include "util/path.h"
#include "util/sys_error.h"
#include "util/test_bug.h"
#include "util/url_text.h"

namespace gulpdb {
namespace {

// Create builds an index in "<index dir>.building.<host>.<pid>.<n>" and
// renames it into place. (The host: on a shared file system another host's
// process ids mean nothing here.)
constexpr const char* kBuildingSuffix = ".building.";
// Removes what creates killed before their rename left beside `index_dir`
// ("<index dir>.building.<host>.<pid>.<n>" of a process of this host that
// no longer runs).
void RemoveAbandonedIndexBuilds(const std::string& index_dir) {
  const std::string parent = util::ParentOf(index_dir);
  std::string base = index_dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const std::string prefix =
      base.substr(base.rfind('/') + 1) + kBuildingSuffix + util::HostNameInFileName() + ".";
  std::vector<std::string> names;
  try {
    names = util::ListDirectory(parent);
  } catch (const Error&) {
    return;
  }
  for (const std::string& name : names) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (end == rest.c_str() || *end != '.' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running
    try {
      util::RemoveFlatDirectory(parent + "/" + name);
    } catch (const Error&) {
    }
  }
}

}  // namespace

std::unique_ptr<Dataset> Dataset::Create(const std::string& dir, const CreateOptions& options) {
  return engine::CreateDataset(dir, options, /*allow_gulpio_files=*/false);
}

std::unique_ptr<Dataset> engine::CreateDataset(const std::string& dir, const CreateOptions& options,
                                               bool allow_gulpio_files) {
  if (dir.empty()) throw InvalidArgumentError("create dataset: the directory name is empty");
  if (IsRemoteUrl(dir)) {
    const std::string url = util::RedactUrl(dir);
    throw InvalidArgumentError("create dataset " + url +
                               ": datasets in object storage are read-only; create it locally "
                               "and publish it with `gulpdb push DIR " +
                               url + "`");
  }
  if (const std::string typo = util::S3UrlTypo(util::RedactUrl(dir));
      !typo.empty() && !util::PathExists(dir)) {
    throw InvalidArgumentError("create dataset " + util::RedactUrl(dir) +
                               ": looks like a mistyped S3 URL (" + typo +
                               "); a dataset in object storage is made locally and published "
                               "with `gulpdb push DIR s3://BUCKET/PREFIX`");
  }
  if (options.videos_per_chunk == 0) {
    throw InvalidArgumentError("create dataset " + dir + ": videos_per_chunk must be positive");
  }
  if (options.codec != Codec::kJpeg && options.codec != Codec::kH264) {
    throw InvalidArgumentError("create dataset " + dir + ": unknown codec " +
                               std::to_string(static_cast<unsigned>(options.codec)));
  }
  engine::RequireCodecSupport(options.codec, "create dataset " + dir);
  if (util::MakeDirectory(dir, 0755, "create dataset")) {
    util::SyncDirectory(util::ParentOf(dir));  // the new directory's entry, before what goes in it
  }
  if (!util::IsDirectory(dir)) {
    throw InvalidArgumentError("create dataset " + dir + ": exists and is not a directory");
  }
  if (engine::LocalDatasetExists(dir, options.index_dir)) {
    throw InvalidArgumentError("create dataset " + dir + ": a gulpdb dataset is already there");
  }
  if (!allow_gulpio_files) {
    if (const std::optional<engine::GulpioChunkFiles> pair = engine::FirstGulpioPair(dir)) {
      throw InvalidArgumentError("create dataset " + dir + ": the directory holds GulpIO chunks (" +
                                 pair->data + ", " + pair->meta +
                                 ", ...) that an empty index would hide; run `gulpdb import " +
                                 dir + "` to index them, then open the dataset");
    }
  }
  // The index is built whole beside its place and renamed into it, so that a
  // crash (or a failure) at any point leaves either no index or a complete
  // one: an index directory whose databases were never all made would be a
  // dataset that exists but that no open accepts, and that create refuses.
  std::string index_dir = engine::IndexDirOf(dir, options.index_dir);
  while (index_dir.size() > 1 && index_dir.back() == '/') index_dir.pop_back();
  RemoveAbandonedIndexBuilds(index_dir);
  const std::string building =
      index_dir + kBuildingSuffix + util::HostNameInFileName() + "." + util::UniqueFileSuffix();
  struct Building {
    const std::string& path;
    ~Building() {
      try {
        util::RemoveFlatDirectory(path);
      } catch (const Error&) {
      }
    }
  } cleanup{building};
  if (!util::MakeDirectory(building, 0755, "create dataset")) {
    util::ThrowErrno("create dataset", building, EEXIST);
  }
  index::EnvOptions env_options;
  env_options.initial_map_size = options.initial_map_size;
  {
    std::unique_ptr<index::Env> env = index::Env::Open(building, env_options);
    const index::Dbi info_db = env->OpenDb(index::kInfoDb, true);
    for (const char* name : {index::kVideosDb, index::kChunksDb, index::kOrderDb}) {
      env->OpenDb(name, true);
    }
    index::DatasetInfo info;
    info.creator = "gulpdb " GULPDB_VERSION;
    info.uuid = util::RandomUuid();
    info.videos_per_chunk = options.videos_per_chunk;
    info.bytes_per_chunk = options.bytes_per_chunk;
    info.checksums = options.checksums;
    info.codec = static_cast<uint8_t>(options.codec);
    env->Update([&](index::Txn& txn) {
      txn.Put(info_db, index::kDatasetInfoKey, index::EncodeDatasetInfo(info));
    });
  }  // closed before it moves
  util::SyncDirectory(building);
  engine::fault::Reached(engine::fault::Point::kIndexBuilt);
  // Over a missing or empty directory only: another process's finished
  // index (a concurrent create) wins and stays.
  if (const int err = util::RenameOrErrno(building, index_dir); err != 0) {
    if (err != ENOTEMPTY && err != EEXIST) {
      util::ThrowErrno("create dataset: move index into place", index_dir, err);
    }
    if (engine::LocalDatasetExists(dir, options.index_dir)) {
      throw InvalidArgumentError("create dataset " + dir + ": a gulpdb dataset is already there");
    }
    std::string names;
    for (const std::string& name : util::ListDirectory(index_dir)) {
      names += (names.empty() ? "" : ", ") + engine::PrintableBytes(name);
    }
    throw InvalidArgumentError("create dataset " + dir + ": the index directory " + index_dir +
                               " holds files but no index (" + names +
                               "); remove it, or choose another directory");
  }
  if (!util::TestBugEnabled("no-dir-sync-create")) util::SyncDirectory(util::ParentOf(index_dir));
  // Kept until Open has shared it, so that the returned Dataset uses the
  // environment opened with options.initial_map_size.
  const std::shared_ptr<index::Env> env = engine::AcquireEnv(index_dir, env_options);
  OpenOptions open_options;
  open_options.read_only = false;
  open_options.index_dir = options.index_dir;
  return engine::OpenLocalDataset(dir, open_options);
}

}  // namespace gulpdb
