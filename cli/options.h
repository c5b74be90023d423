// Command-line parsing shared by every subcommand, so that an option means the
// same thing, and is checked the same way, wherever it appears: the
// positional arguments, --help, the dataset location (DIR and --index-dir)
// and numbers. Numbers are registered as text and converted here, never by
// Boost.Program_options, which reads "-5" into an unsigned by wrapping it
// around: a negative, fractional, out-of-range or huge value is a UsageError
// naming the option and the value. Not thread-safe (call from main's thread).
#ifndef GULPDB_CLI_OPTIONS_H_
#define GULPDB_CLI_OPTIONS_H_

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "gulpdb/dataset.h"

namespace gulpdb::cli {

namespace po = boost::program_options;

// Parses `args` against `options` and the named positionals (a name ending in
// "..." takes the rest, one ending in "?" may be left out). Prints the help
// and throws HelpShown when --help is given; throws UsageError (or a
// po::error) for a bad command line.
po::variables_map Parse(const std::vector<std::string>& args, const char* usage,
                        po::options_description options,
                        const std::vector<std::string>& positionals);

// Where a dataset lives: its directory, and its index when --index-dir moves
// it out of <dir>/gulpdb.index (e.g. for a read-only directory).
struct DatasetPath {
  std::string dir;
  std::string index_dir;  // empty: <dir>/gulpdb.index
  std::string version;    // --version: a tag (empty: the live dataset)
};

// Adds --index-dir, with the same meaning for every command; `dataset` names
// the positional it applies to in the help ("DIR", or "OUT" for merge).
void AddIndexDirOption(po::options_description* options, const std::string& dataset = "DIR");

// Adds --wait S, how long a command that writes waits for another writer
// (default 0: BusyError at once), with the same meaning for every command.
void AddWaitOption(po::options_description* options);
// --wait as a lock timeout (Options::lock_timeout). Throws UsageError for a
// value that is not a number of seconds from 0 to 10^9.
std::chrono::milliseconds WaitOption(const po::variables_map& vm);

// Adds --version NAME (a tag to read instead of the live dataset) to a
// command that only reads.
void AddVersionOption(po::options_description* options);

// The dataset named by positional `name` and --index-dir. An empty DIR or
// --index-dir is a UsageError.
DatasetPath DatasetArg(const po::variables_map& vm, const std::string& name = "dir");

// Throws UsageError for each of the options `names` given as an empty string
// (an empty path or list would otherwise read as "not given").
void RequireNonEmpty(const po::variables_map& vm, const std::vector<std::string>& names);

// Throws InvalidArgumentError "<operation> <path>: not a directory" when DIR
// or --index-dir exists but is not a directory, or has a file where one of
// its directories should be. A missing one is left to the caller (an error,
// or created).
void RequireDirectories(const DatasetPath& path, const std::string& operation = "open dataset");

// Commands that write refuse a URL (UsageError): published datasets are
// read-only.
void RequireLocal(const std::string& dir);

// Opens the dataset at `path`, after RequireDirectories, with `options`
// (their read_only and index_dir are set from here); the rest of the errors
// are Dataset::Open's.
std::unique_ptr<Dataset> OpenDataset(const DatasetPath& path, bool read_only,
                                     OpenOptions options = {});

// Refuses an id that no dataset can hold (empty, or longer than the 511
// bytes of an index key) as IdNotFoundError ("no such video"), the error a
// lookup of any other absent id gives.
void RequirePossibleId(const DatasetPath& path, const std::string& id);
bool IsPossibleId(const std::string& id);

// A numeric option's value as text, shown as `default_text` in --help (no
// default when null). Read it with UnsignedOption or RealOption.
po::typed_value<std::string>* NumberValue(const char* default_text = nullptr);

// The value of numeric option `name`: a whole number in [min, max], written
// in decimal digits only. Absent (and no default): nullopt.
std::optional<uint64_t> UnsignedOption(const po::variables_map& vm, const std::string& name,
                                       uint64_t min = 0,
                                       uint64_t max = std::numeric_limits<uint64_t>::max());

// As UnsignedOption for a finite decimal number (e.g. 0.5, 1e-3) in [min, max].
std::optional<double> RealOption(const po::variables_map& vm, const std::string& name, double min,
                                 double max);

// True when option `name` was given on the command line (not defaulted).
bool Given(const po::variables_map& vm, const std::string& name);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_OPTIONS_H_
