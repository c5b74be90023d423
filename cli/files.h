// The few file operations the gulpdb command does itself (the output folder
// of extract and export, the files extract writes, removing what a failed run
// made), and the one place where the command turns an errno value into a
// gulpdb::Error: "<operation> <path>: <strerror>", ENOENT as NotFoundError,
// ENOSPC/EDQUOT as ResourceExhaustedError, ENOTDIR and EEXIST as
// InvalidArgumentError, the rest as IoError. Thread-safe (no shared state).
#ifndef GULPDB_CLI_FILES_H_
#define GULPDB_CLI_FILES_H_

#include <string>
#include <string_view>

namespace gulpdb::cli {

[[noreturn]] void ThrowSystemError(const std::string& operation, const std::string& path, int err);

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

// Removes `path` and, for a directory, everything below it (symbolic links
// are removed, never followed). Returns false with `*error` set when some of
// it could not be removed.
bool RemoveTree(const std::string& path, std::string* error);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_FILES_H_
