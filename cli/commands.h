// The gulpdb subcommands. Each takes its own arguments (after the subcommand
// name), returns the process exit status, and throws gulpdb::Error for
// failures and UsageError for bad command lines; main() turns both into one
// line on stderr.
#ifndef GULPDB_CLI_COMMANDS_H_
#define GULPDB_CLI_COMMANDS_H_

#include <boost/program_options.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gulpdb::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Command {
  const char* name;
  const char* summary;
  std::function<int(const std::vector<std::string>& args)> run;
};

const std::vector<Command>& Commands();

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_COMMANDS_H_
