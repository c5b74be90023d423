// The public names of a dataset's files (gulpdb/dataset.h IndexDirectory,
// gulpdb/interop.h GulpIO file names), for callers outside the engine: the
// Python package asks these instead of writing the rules again.
#include <cstdint>
#include <string>

#include "engine/core/dataset_impl.h"
#include "engine/core/gulpio_names.h"
#include "gulpdb/dataset.h"
#include "gulpdb/interop.h"

namespace gulpdb {

std::string IndexDirectory(const std::string& dir, const std::string& index_dir) {
  return index_dir.empty() ? dir + "/" + kIndexDirName : index_dir;
}

bool IsGulpioDataFileName(const std::string& name) { return engine::IsGulpioDataName(name); }

bool IsGulpioMetaFileName(const std::string& name) { return engine::IsGulpioMetaName(name); }

std::string GulpioDataFileName(uint32_t chunk) { return "data_" + std::to_string(chunk) + ".gulp"; }

std::string GulpioMetaFileName(uint32_t chunk) {
  return "meta_" + std::to_string(chunk) + ".gmeta";
}

}  // namespace gulpdb
