#include "cli/commands.h"

#include <cstdio>

#include "cli/command_families.h"
#include "cli/query_commands.h"
#include "cli/text.h"

namespace gulpdb::cli {

void Warn(const char* command, const std::string& warning) {
  std::fprintf(stderr, "gulpdb %s: warning: %s\n", command, EscapeControls(warning).c_str());
}

OnDuplicate ParseOnDuplicate(const std::string& text) {
  if (const std::optional<OnDuplicate> policy = OnDuplicateFromName(text)) return *policy;
  throw UsageError("--on-duplicate must be error, skip or replace, not '" + EscapeForDisplay(text) +
                   "'");
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"create", "create an empty dataset", RunCreate},
      {"ingest", "add videos, frame folders or images", RunIngest},
      {"info", "summary of a dataset", RunInfo},
      {"ls", "list ids with their frame counts", RunLs},
      {"show", "meta and frame_info of one video", RunShow},
      {"extract", "write a video's frames as .jpg files", RunExtract},
      {"remove", "remove videos from the index", RunRemove},
      {"import", "index a GulpIO/GulpIO2 directory in place", RunImport},
      {"export", "write .gmeta files that GulpIO2 reads", RunExport},
      {"check", "verify a dataset's files and index", RunCheck},
      {"compact", "rewrite chunks to drop removed and replaced bytes", RunCompact},
      {"merge", "attach or copy shard datasets into one", RunMerge},
      {"push", "publish a dataset to s3://BUCKET/PREFIX (or its changes)", RunPush},
      {"snapshot", "publish an index snapshot for readers on other hosts", RunSnapshot},
      {"index", "create, list or drop meta indexes (fast ls --where)", RunIndex},
      {"split", "set, list, show or remove named splits", RunSplit},
      {"view", "browse the dataset in a web page, or write a contact sheet", RunView},
  };
  return commands;
}

}  // namespace gulpdb::cli
