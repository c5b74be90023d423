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

// Parses `args` against `options` and the named positionals (a name ending in
// "..." takes the rest). Returns false after printing help when --help is given.
bool Parse(const std::vector<std::string>& args, const char* usage,
           boost::program_options::options_description options,
           const std::vector<std::string>& positionals, boost::program_options::variables_map* vm);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_COMMANDS_H_
