// gulpdb: build, inspect and check gulpdb datasets from the command line.
// Every error leaves through main, with the user information of any URL in
// it redacted (util/url_text.h).
#include <boost/program_options/errors.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/text.h"
#include "gulpdb/error.h"
#include "util/url_text.h"

namespace {

void PrintUsage(std::FILE* out) {
  std::fprintf(out, "usage: gulpdb <command> [options]\n\ncommands:\n");
  for (const auto& c : gulpdb::cli::Commands()) std::fprintf(out, "  %-9s %s\n", c.name, c.summary);
  std::fprintf(out, "\nRun 'gulpdb <command> --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(stdout);
    return 0;
  }
  if (name == "--version") {
    std::printf("gulpdb %s\n", GULPDB_VERSION);
    return 0;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& command : gulpdb::cli::Commands()) {
    if (name != command.name) continue;
    try {
      int status = 0;
      try {
        status = command.run(args);
      } catch (const gulpdb::cli::HelpShown&) {
        // the help was the output
      }
      // Output that could not be written (a full disk, a closed pipe) is a
      // failure, not a silent loss: the output is what the command is for.
      if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
        std::fprintf(stderr, "gulpdb %s: write the output: %s\n", command.name,
                     std::strerror(errno));
        return 1;
      }
      return status;
    } catch (const gulpdb::cli::UsageError& e) {
      std::fprintf(stderr, "gulpdb %s: %s\n%s%s(see 'gulpdb %s --help')\n", command.name,
                   gulpdb::cli::EscapeControls(gulpdb::util::RedactUrls(e.what())).c_str(),
                   e.detail().c_str(), e.detail().empty() ? "" : "\n", command.name);
      return 2;
    } catch (const boost::program_options::error& e) {
      std::fprintf(stderr, "gulpdb %s: %s\n(see 'gulpdb %s --help')\n", command.name,
                   gulpdb::cli::EscapeControls(gulpdb::util::RedactUrls(e.what())).c_str(),
                   command.name);
      return 2;
    } catch (const gulpdb::Error& e) {
      std::fprintf(stderr, "gulpdb: %s: %s\n", gulpdb::ErrorCodeName(e.code()),
                   gulpdb::cli::EscapeControls(gulpdb::util::RedactUrls(e.what())).c_str());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gulpdb: %s\n",
                   gulpdb::cli::EscapeControls(gulpdb::util::RedactUrls(e.what())).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "gulpdb: unknown command '%s'\n",
               gulpdb::cli::EscapeForDisplay(name).c_str());
  PrintUsage(stderr);
  return 2;
}
