// The few file operations the gulpdb command does itself: the output folder
// of extract and export, and the files extract writes, through the file
// layer (util/file_io.h); errno values become errors in util/sys_error.h.
// Thread-safe (no shared state).
#ifndef GULPDB_CLI_FILES_H_
#define GULPDB_CLI_FILES_H_

#include <string>
#include <string_view>

namespace gulpdb::cli {

// Creates directory `path` unless it is one already (its parent must exist).
// Throws InvalidArgumentError ("not a directory") when something else is
// there, or the error of mkdir.
void MakeDirectory(const std::string& path);

enum class Overwrite { kNever, kReplace };

// Writes `bytes` to a new file `path`. kNever: an existing file is an
// InvalidArgumentError and is left alone. kReplace: an existing file, or a
// symbolic link (which is removed, never followed), is replaced. Errors name
// the file and the errno text.
void WriteNewFile(const std::string& path, std::string_view bytes, Overwrite overwrite);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_FILES_H_
