// The subcommands of gulpdb, one file per family, and what they share. The
// table that names them is Commands() (commands.cc); each Run* takes its own
// arguments, returns the exit status and throws as cli/commands.h says.
//   build_commands.cc        create, ingest, merge
//   read_commands.cc         info, ls, show, extract
//   maintenance_commands.cc  remove, check, compact
//   interop_commands.cc      import, export
//   remote_commands.cc       push, snapshot
//   query_commands.cc        index, split (and ls --where/--split)
//   view_command.cc          view (the server and the static report of view/)
#ifndef GULPDB_CLI_COMMAND_FAMILIES_H_
#define GULPDB_CLI_COMMAND_FAMILIES_H_

#include <string>
#include <vector>

#include "gulpdb/dataset.h"

namespace gulpdb::cli {

// The DIR of a command that only reads: a URL of a pushed dataset works too.
inline constexpr const char* kReadableDir =
    "dataset directory, or s3://BUCKET/PREFIX of a dataset published with gulpdb push";

// "gulpdb <command>: warning: <warning>" on stderr, controls escaped.
void Warn(const char* command, const std::string& warning);

// --on-duplicate of ingest, merge and import: error, skip or replace
// (gulpdb::OnDuplicateFromName); anything else is a UsageError.
OnDuplicate ParseOnDuplicate(const std::string& text);

int RunCreate(const std::vector<std::string>& args);
int RunIngest(const std::vector<std::string>& args);
int RunMerge(const std::vector<std::string>& args);

int RunInfo(const std::vector<std::string>& args);
int RunLs(const std::vector<std::string>& args);
int RunShow(const std::vector<std::string>& args);
int RunExtract(const std::vector<std::string>& args);

int RunRemove(const std::vector<std::string>& args);
int RunCheck(const std::vector<std::string>& args);
int RunCompact(const std::vector<std::string>& args);

int RunImport(const std::vector<std::string>& args);
int RunExport(const std::vector<std::string>& args);

int RunPush(const std::vector<std::string>& args);
int RunSnapshot(const std::vector<std::string>& args);

int RunView(const std::vector<std::string>& args);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_COMMAND_FAMILIES_H_
