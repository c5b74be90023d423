// The engine's front door: which room opens what. Dataset::Exists and
// Dataset::Open take a local directory to the storage core (engine/core), a
// published dataset ("s3://...") or a local one whose index is on a network
// file system to the remote room (engine/remote), and check an imported
// dataset's GulpIO files against its index (engine/gulpio) before handing it
// out. The rooms below never call up to here except through the public API.
#include "engine/open.h"

#include "engine/core/dataset_impl.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/remote/remote_dataset.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
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
  // Published datasets and shared file systems: engine/remote/remote_dataset.h.
  if (IsRemoteUrl(dir)) return engine::OpenRemoteDataset(dir, options);
  if (!util::IsDirectory(dir)) {
    if (const std::string typo = util::S3UrlTypo(dir); !typo.empty()) {
      throw InvalidArgumentError("open dataset " + util::RedactUrls(dir) +
                                 ": no such directory, and not an s3:// URL: " + typo);
    }
    throw NotFoundError("open dataset " + dir + ": no such directory");
  }
  if (options.read_only && !engine::NetworkIndexAllowed(options)) {
    const std::string fs = engine::NetworkFileSystemName(IndexDirOf(dir, options.index_dir));
    if (!fs.empty()) return engine::OpenFromPublishedSnapshot(dir, options, fs);
  }
  index::DatasetInfo info;
  std::unique_ptr<Dataset> dataset = engine::OpenLocalDataset(dir, options, &info);
  // Only imported datasets record stamps; the others pay nothing here (no
  // stat of any chunk file).
  if (check_sources && info.source_stamps) {
    const engine::DatasetImpl& impl = engine::DatasetAccess::Of(*dataset);
    const engine::SourceReport sources = engine::CheckSources(impl);
    if (!sources.changes.empty()) {
      throw StaleIndexError(engine::SourceChangesMessage(impl, sources.changes));
    }
  }
  return dataset;
}

}  // namespace gulpdb
