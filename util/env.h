// The GULPDB_* environment variables: one table (name, kind, what applies
// when it is unset, one line of documentation) and the one parser of each
// kind, so that every variable is read, checked and reported the same way.
// The man page's ENVIRONMENT section lists every row (a test reads the table
// and the page); a variable that is not in the table cannot be read.
//
// Errors: a value that is not of the variable's kind is an
// InvalidArgumentError of one form, "<NAME> '<value>': <what is wrong>";
// reading a name that is not in the table is a std::logic_error (a bug).
// An unset or empty variable is unset.
//
// Thread safety: the table is constant; the readers call getenv, safe while
// no thread changes the environment.
#ifndef GULPDB_UTIL_ENV_H_
#define GULPDB_UTIL_ENV_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gulpdb::util {

enum class EnvKind {
  kText,      // any text (a path, a name)
  kFlag,      // 1, true or yes; 0, false or no
  kCount,     // a whole number in a range the reader gives
  kBytes,     // bytes, or a number with K, M, G or T (powers of 1024)
  kDuration,  // seconds, or a number with s, m, h or d
  kChoice,    // one of the words the documentation lists
};

struct EnvVariable {
  const char* name;
  EnvKind kind;
  const char* unset;  // what applies when it is not set
  const char* doc;    // what it sets, in one line
};

// Every GULPDB_* variable gulpdb reads, in the man page's order.
const std::vector<EnvVariable>& EnvVariables();

// The row of `name`; std::logic_error when there is none.
const EnvVariable& EnvVariableNamed(std::string_view name);

// The value of the variable `name` (in the table), or nullopt when it is
// unset or empty.
std::optional<std::string> EnvText(std::string_view name);

// Parsers of a value `text` of the variable `name`, for readers that look
// values up themselves (S3Config's injected environment). Each throws the
// one InvalidArgumentError form.
bool ParseEnvFlag(std::string_view name, std::string_view text);
uint64_t ParseEnvCount(std::string_view name, std::string_view text, uint64_t min, uint64_t max);
uint64_t ParseEnvBytes(std::string_view name, std::string_view text);
std::chrono::seconds ParseEnvDuration(std::string_view name, std::string_view text);

// EnvText, parsed: nullopt (or false) when unset.
bool EnvFlag(std::string_view name);
std::optional<uint64_t> EnvCount(std::string_view name, uint64_t min, uint64_t max);
std::optional<uint64_t> EnvBytes(std::string_view name);
std::optional<std::chrono::seconds> EnvDuration(std::string_view name);

// Durations as gulpdb reads them everywhere (GULPDB_PUSH_GRACE, --grace):
// whole seconds, or a number with s, m, h or d. InvalidArgumentError
// "duration '<text>': <why> (e.g. 3600, 90s, 30m, 24h, 7d)" otherwise.
std::chrono::seconds ParseDuration(std::string_view text);

}  // namespace gulpdb::util

#endif  // GULPDB_UTIL_ENV_H_
