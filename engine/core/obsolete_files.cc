#include "engine/core/obsolete_files.h"

#include <unistd.h>

#include <cerrno>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "util/file_io.h"
#include "util/relative_name.h"
#include "util/sys_error.h"

namespace gulpdb::engine {

bool IsInsideDataset(std::string_view name) { return util::IsRelativeName(name); }

void CheckInsideDataset(const DatasetImpl& ds, const std::string& operation,
                        const std::string& whose, std::string_view name) {
  if (IsInsideDataset(name)) return;
  throw CorruptionError(operation + " " + ds.dir + ": " + whose + " '" + PrintableBytes(name) +
                        "' is not inside the dataset (a damaged index?); nothing was deleted");
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
  for (const std::string& name : info.obsolete_files) {
    const std::string path = ds.ChunkPath(name);
    util::RemoveFile(path);
    if (removed != nullptr) removed->push_back(name);
  }
  util::SyncDirectory(ds.dir);
  ds.env->Update([&](index::Txn& txn) {
    index::DatasetInfo current = ds.GetInfo(txn);
    current.obsolete_files.clear();
    txn.Put(ds.info, index::kDatasetInfoKey, index::EncodeDatasetInfo(current));
  });
}

}  // namespace gulpdb::engine
