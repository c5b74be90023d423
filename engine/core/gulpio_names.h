// The GulpIO files of a directory: data*.gulp / meta*.gmeta pairs, numbered
// by the first run of digits in the file name (as GulpIO and GulpIO2 name
// them). The storage core owns these names because it must know them
// without the GulpIO room: Dataset::Create refuses a directory holding a
// pair, merge refuses to take one as a shard, and the public file-name
// functions (gulpdb/interop.h) answer from here. The importer reads chunks
// through FindGulpioFiles.
//
// Thread safety: free functions, safe from any thread.
#ifndef GULPDB_ENGINE_CORE_GULPIO_NAMES_H_
#define GULPDB_ENGINE_CORE_GULPIO_NAMES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace gulpdb::engine {

// The chunk number of a GulpIO file name: its first run of digits; none when
// it has no digits or the number does not fit 32 bits.
std::optional<uint32_t> GulpioChunkNumber(const std::string& name);
bool IsGulpioDataName(const std::string& name);  // data*.gulp
bool IsGulpioMetaName(const std::string& name);  // meta*.gmeta

// One chunk number's files (names relative to the directory; either may be
// empty when the directory lacks it).
struct GulpioChunkFiles {
  uint32_t number = 0;
  std::string data;
  std::string meta;
};

// Every data*.gulp and meta*.gmeta of `dir` by chunk number. Throws
// InvalidArgumentError "<operation> <dir>: ..." for a name without a chunk
// number or two files claiming one number.
std::map<uint32_t, GulpioChunkFiles> FindGulpioFiles(const std::string& dir,
                                                     const std::string& operation);

// The first chunk of `dir` that has both its data and its meta file, if any.
// Names that FindGulpioFiles would refuse are ignored here.
std::optional<GulpioChunkFiles> FirstGulpioPair(const std::string& dir);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_GULPIO_NAMES_H_
