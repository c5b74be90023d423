#include "engine/core/obsolete_files.h"

#include <unistd.h>

#include <cerrno>

#include "engine/core/dataset_view.h"
#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "util/file_io.h"
#include "util/relative_name.h"
#include "util/sys_error.h"
#include "util/test_bug.h"

namespace gulpdb::engine {

bool IsInsideDataset(std::string_view name) { return util::IsRelativeName(name); }

void CheckInsideDataset(const DatasetImpl& ds, const std::string& operation,
                        const std::string& whose, std::string_view name) {
  if (IsInsideDataset(name)) return;
  throw CorruptionError(operation + " " + ds.dir + ": " + whose + " '" + PrintableBytes(name) +
                        "' is not inside the dataset (a damaged index?); nothing was deleted");
}

namespace {

// A chunk's data file (data_<N>.gulp, or another .gulp an import indexed),
// not its .gmeta.
bool IsDataFileName(const std::string& name) {
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".gulp") == 0;
}

}  // namespace

bool TagsMayReadChunks(const std::string& dir) {
  if (util::TestBugEnabled("tag-drops-chunks")) return false;
  const std::string versions = dir + "/" + kVersionsDirName;
  for (const char* roots : {"/tags", "/deleted"}) {
    if (!util::IsDirectory(versions + roots)) continue;
    if (!util::ListDirectory(versions + roots).empty()) return true;
  }
  return false;
}

void RemoveObsoleteFiles(DatasetImpl& ds, const std::string& operation,
                         std::vector<std::string>* removed) {
  index::DatasetInfo info;
  {
    index::Txn txn = ds.env->BeginRead();
    info = ds.GetInfo(txn);
  }
  if (info.obsolete_files.empty()) return;
  for (const std::string& name : info.obsolete_files) {
    CheckInsideDataset(ds, operation, "the index lists as an obsolete file", name);
  }
  // A chunk file a tag may read moves to gulpdb.versions/chunks under its
  // name (numbers are never reused) instead of being deleted; what no tag
  // reads any more is freed when tags are (engine/version). A crash between
  // the move and the list's update leaves the name listed and the file
  // gone: the next deletion finds nothing to do for it.
  const std::string kept_dir = ds.dir + "/" + kVersionsDirName + "/chunks";
  const bool keep_chunks = TagsMayReadChunks(ds.dir);
  bool kept = false;
  for (const std::string& name : info.obsolete_files) {
    const std::string path = ds.ChunkPath(name);
    if (keep_chunks && IsDataFileName(name) && util::PathExists(path)) {
      const std::string to = util::JoinRelative(kept_dir, name, operation + " " + ds.dir,
                                                "the index lists as an obsolete file");
      const std::string parent = to.substr(0, to.rfind('/'));
      util::MakeDirectories(parent);
      util::Rename(path, to);
      if (parent != kept_dir) util::SyncDirectory(parent);
      kept = true;
    } else {
      util::RemoveFile(path);
    }
    if (removed != nullptr) removed->push_back(name);
  }
  if (kept) util::SyncDirectory(kept_dir);
  util::SyncDirectory(ds.dir);
  ds.env->Update([&](index::Txn& txn) {
    index::DatasetInfo current = ds.GetInfo(txn);
    current.obsolete_files.clear();
    txn.Put(ds.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(current));
  });
}

}  // namespace gulpdb::engine
