// The gulpdb subcommands. Each takes its own arguments (after the subcommand
// name), returns the process exit status, and throws gulpdb::Error for
// failures, UsageError for bad command lines and HelpShown after --help;
// main() turns the first two into one line on stderr (and, for a query that
// does not parse, the query with a caret under the byte where it went wrong).
#ifndef GULPDB_CLI_COMMANDS_H_
#define GULPDB_CLI_COMMANDS_H_

#include <boost/program_options.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gulpdb::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // With lines shown under the message as they are (already made printable:
  // a query and a caret under the byte that is wrong).
  UsageError(const std::string& message, std::string detail)
      : std::runtime_error(message), detail_(std::move(detail)) {}
  const std::string& detail() const { return detail_; }

 private:
  std::string detail_;
};

// Thrown by a command once it has printed its help (--help; cli::Parse):
// main() ends the command there, with exit status 0.
struct HelpShown {};

struct Command {
  const char* name;
  const char* summary;
  std::function<int(const std::vector<std::string>& args)> run;
};

const std::vector<Command>& Commands();

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_COMMANDS_H_
