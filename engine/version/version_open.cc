#include "engine/version/version_open.h"

#include "engine/core/dataset_view.h"
#include "engine/partition/partitions.h"
#include "engine/version/version_store.h"
#include "gulpdb/error.h"
#include "util/file_io.h"

namespace gulpdb::engine {

std::shared_ptr<const PartitionedIndex> OpenVersionIndex(const std::string& dir,
                                                         const std::string& name,
                                                         const std::string& operation) {
  const VersionInfo tag = ReadTag(dir, name, operation);
  index::PartitionRoot root = ReadRoot(dir, tag.root, /*expand=*/false);
  return std::make_shared<const PartitionedIndex>(std::move(root), DirectoryFetch(ObjectsDir(dir)),
                                                  dir + " (version " + name + ")",
                                                  DirectoryPageFetch(ObjectsDir(dir)));
}

std::unique_ptr<Dataset> OpenVersion(const std::string& dir, const OpenOptions& options) {
  const std::string operation = "open version " + options.version + " of " + dir;
  if (!options.read_only) {
    throw InvalidArgumentError(operation + ": a version is read-only (open it with read_only)");
  }
  if (!options.index_dir.empty()) {
    throw InvalidArgumentError(operation + ": a version has no index directory of its own");
  }
  if (!util::IsDirectory(dir)) throw NotFoundError("open dataset " + dir + ": no such directory");
  std::unique_ptr<Dataset> ds =
      OpenOnIndexSource(dir, options, OpenVersionIndex(dir, options.version, operation), nullptr);
  SetRetainedChunkDir(*ds, KeptChunksDir(dir));
  return ds;
}

}  // namespace gulpdb::engine
