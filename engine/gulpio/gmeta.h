// Reading and writing GulpIO `.gmeta` files.
//
// A .gmeta file is what GulpIO/GulpIO2 write with Python's json.dump: one JSON
// object mapping each video id to {"frame_info": [[offset, pad, length], ...],
// "meta_data": [...]}, on one line, in insertion order. gulpdb reads it to
// import a GulpIO directory and writes it to export one; for an unchanged
// dataset the exported file is byte-identical to the original (see
// engine/json/json_text.h for the exact text form).
//
// Files reach several GB, so the reader streams: one pass, fixed-size reads,
// memory bounded by the block size plus the largest single entry.
//
// Thread safety: a GmetaReader or GmetaWriter is used by one thread at a time;
// distinct instances are independent.
#ifndef GULPDB_ENGINE_GULPIO_GMETA_H_
#define GULPDB_ENGINE_GULPIO_GMETA_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/types.h"

namespace gulpdb::engine {

// One video of a .gmeta file.
struct GmetaEntry {
  std::string id;                     // the key, decoded to UTF-8
  std::vector<FrameInfo> frame_info;  // in file order, possibly empty
  // The meta_data list's JSON text exactly as in the file, validated in
  // Python's dialect (NaN, Infinity, big integers kept as written). Files
  // written by json.dump hold it in canonical form; for other files pass it
  // through NormalizeJson before relying on that.
  std::string meta_data;
  uint64_t offset = 0;  // byte offset in the file of the opening quote of the id
};

// What a reader read or a writer wrote of a file: its bytes and their
// CRC-32C (util/crc32c.h), the content fingerprint an imported dataset
// keeps of each .gmeta (docs/format/index_format.md "Source stamps").
struct GmetaContent {
  uint64_t size = 0;
  uint32_t crc32c = 0;
};

struct GmetaReadOptions {
  // Bytes requested per read(2). The buffer grows beyond this only to hold an
  // entry that does not fit in it.
  size_t block_size = size_t{1} << 20;
};

// Streams the entries of one .gmeta file in file order.
//
// Accepted: exactly one JSON object (whitespace anywhere JSON allows it) whose
// values are objects holding exactly the keys "frame_info" and "meta_data", in
// any order. frame_info is a list of [offset, pad, length] lists of
// non-negative integers fitting uint64, uint32 and uint32; meta_data is a JSON
// list. `{}` is a valid file with no entries. Ids are not checked for
// uniqueness (that would cost memory growing with the file): a repeated id
// comes back once per occurrence, and the caller decides (Python's json.load
// would keep the last one).
//
// Every malformed input throws CorruptionError
// "read gmeta <path>: byte <offset>: <what is wrong>"; a missing file
// NotFoundError, other system failures IoError. After an exception the reader
// must not be used again.
class GmetaReader {
 public:
  // Opens `path`. Throws NotFoundError or IoError.
  explicit GmetaReader(const std::string& path, GmetaReadOptions options = GmetaReadOptions());
  ~GmetaReader();
  GmetaReader(GmetaReader&&) noexcept;
  GmetaReader& operator=(GmetaReader&&) noexcept;
  GmetaReader(const GmetaReader&) = delete;
  GmetaReader& operator=(const GmetaReader&) = delete;

  // Reads the next entry into *entry (must not be null), reusing its storage,
  // and returns true; returns false once the object is closed and only
  // whitespace follows it. Throws as described above; *entry is then
  // unspecified.
  bool Next(GmetaEntry* entry);

  const std::string& path() const;
  // The bytes read so far; once Next returned false, the whole file as it
  // was parsed (a fingerprint of exactly what the entries came from).
  GmetaContent content() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Calls on_entry for every entry of `path`, in file order, and returns the
// file's content fingerprint (GmetaReader::content() at the end). Throws what
// GmetaReader throws, and whatever on_entry throws (reading stops there).
GmetaContent ReadGmeta(const std::string& path, const std::function<void(GmetaEntry&&)>& on_entry,
                       GmetaReadOptions options = GmetaReadOptions());

// Writes a .gmeta file exactly as Python's json.dump would, replacing the file
// at `path` atomically: entries go to a temporary file in the same directory
// ("<path>.tmp.<pid>.<n>"), Commit() syncs it and renames it over `path`.
// Until Commit() returns, a file already at `path` is untouched; a writer
// destroyed without Commit() deletes its temporary file. The new file gets
// mode 0666 minus the umask, as Python's open() gives.
class GmetaWriter {
 public:
  // Creates the temporary file. Throws NotFoundError when the directory does
  // not exist, IoError or ResourceExhaustedError for other failures.
  explicit GmetaWriter(std::string path);
  ~GmetaWriter();
  GmetaWriter(GmetaWriter&&) noexcept;
  GmetaWriter& operator=(GmetaWriter&&) noexcept;
  GmetaWriter(const GmetaWriter&) = delete;
  GmetaWriter& operator=(const GmetaWriter&) = delete;

  // Appends one entry. `id_utf8` is escaped as Python does; `meta_data_json`
  // must be one JSON list (Python dialect, no surrounding whitespace) and is
  // written verbatim, so it should already be in canonical form (see
  // NormalizeJson). Throws InvalidArgumentError for invalid UTF-8 in the id, a
  // meta_data that is not a valid JSON list, or a call after Commit() (the file
  // is then unchanged by this call); IoError or ResourceExhaustedError when a
  // write fails (the writer is then unusable).
  void Add(std::string_view id_utf8, const std::vector<FrameInfo>& frame_info,
           std::string_view meta_data_json);

  // Closes the object, flushes, fsyncs, renames over the final path and fsyncs
  // the directory. Throws IoError or ResourceExhaustedError, or
  // InvalidArgumentError when called twice. After a failure before the rename,
  // the destination is untouched and the temporary file is removed by the
  // destructor; if only the final directory fsync fails, the new file is
  // already in place but its rename may not survive a crash.
  void Commit();

  // A moved-from writer may only be destroyed or assigned to.
  const std::string& path() const;
  // The temporary file being written (gone after Commit()).
  const std::string& temp_path() const;
  size_t entry_count() const;
  // The bytes written so far; after Commit(), the whole file.
  GmetaContent content() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_GULPIO_GMETA_H_
