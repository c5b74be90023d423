// The engine's front door: which room opens what. Dataset::Exists and
// Dataset::Open take a local directory to the storage core (engine/core), a
// published dataset ("s3://...") or a local one whose index is on a network
// file system to the remote room (engine/remote), and check an imported
// dataset's GulpIO files against its index (engine/gulpio) before handing it
// out. The rooms below never call up to here (the link-level layering
// probes, tests/CMakeLists.txt, fail the build if one does).
#include "engine/open.h"

#include "engine/core/dataset_view.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/remote/remote_dataset.h"
#include "engine/version/version_open.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/maintenance.h"
#include "gulpdb/remote.h"
#include "util/file_io.h"
#include "util/url_text.h"

namespace gulpdb {

bool Dataset::Exists(const std::string& dir, const std::string& index_dir) {
  if (IsRemoteUrl(dir)) return engine::RemoteDatasetExists(dir);
  return engine::LocalDatasetExists(dir, index_dir);
}

std::unique_ptr<Dataset> Dataset::Open(const std::string& dir, const OpenOptions& options) {
  return engine::OpenDataset(dir, options, /*check_sources=*/true);
}

std::unique_ptr<Dataset> engine::OpenDataset(const std::string& dir, const OpenOptions& options,
                                             bool check_sources) {
  if (options.decode_threads > kMaxThreads) {
    throw InvalidArgumentError("open dataset " + util::RedactUrl(dir) + ": decode_threads " +
                               std::to_string(options.decode_threads) + " is more than " +
                               std::to_string(kMaxThreads));
  }
  const bool version = !options.version.empty() && options.version != "HEAD";
  // Published datasets (their tags too) and shared file systems:
  // engine/remote/remote_dataset.h.
  if (IsRemoteUrl(dir)) return engine::OpenRemoteDataset(dir, options);
  // Tags: engine/version.
  if (version) return engine::OpenVersion(dir, options);
  if (!util::IsDirectory(dir)) {
    if (const std::string typo = util::S3UrlTypo(util::RedactUrl(dir)); !typo.empty()) {
      throw InvalidArgumentError("open dataset " + util::RedactUrl(dir) +
                                 ": no such directory, and not an s3:// URL: " + typo);
    }
    throw NotFoundError("open dataset " + dir + ": no such directory");
  }
  if (options.read_only && !engine::NetworkIndexAllowed(options)) {
    const std::string fs = engine::NetworkFileSystemName(IndexDirOf(dir, options.index_dir));
    if (!fs.empty()) return engine::OpenFromPublishedSnapshot(dir, options, fs);
  }
  return engine::OpenLocalChecked(dir, options, check_sources);
}

// Here, not in the core that implements it: a merge opens its output and
// shards as users do, through the front door.
MergeReport Merge(const std::string& out, const std::vector<std::string>& shards,
                  const MergeOptions& options) {
  engine::DatasetOpener opener;
  opener.exists = [](const std::string& dir, const std::string& index_dir) {
    return Dataset::Exists(dir, index_dir);
  };
  opener.open = [](const std::string& dir, const OpenOptions& open) {
    return Dataset::Open(dir, open);
  };
  return engine::MergeDatasets(out, shards, options, opener);
}

}  // namespace gulpdb
