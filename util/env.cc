#include "util/env.h"

#include <cstdlib>
#include <stdexcept>

#include "gulpdb/error.h"
#include "util/byte_size.h"

namespace gulpdb::util {
namespace {

[[noreturn]] void Bad(std::string_view name, std::string_view text, const std::string& why) {
  throw InvalidArgumentError(std::string(name) + " '" + std::string(text) + "': " + why);
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// The leading decimal digits of `s` as a number (at most 2^50 before the
// last digit); `*digits` their count, 0 when there are none or too many.
uint64_t LeadingNumber(std::string_view s, size_t* digits) {
  uint64_t n = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (n > (uint64_t{1} << 50)) {
      *digits = 0;
      return 0;
    }
    n = n * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  *digits = i;
  return n;
}

}  // namespace

const std::vector<EnvVariable>& EnvVariables() {
  using K = EnvKind;
  static const std::vector<EnvVariable> kTable = {
      {"GULPDB_S3_CONNECT_TIMEOUT_MS", K::kCount, "5000", "milliseconds to connect to the store"},
      {"GULPDB_S3_STALL_TIMEOUT_MS", K::kCount, "30000",
       "milliseconds a transfer may make no progress"},
      {"GULPDB_S3_REQUEST_TIMEOUT_MS", K::kCount, "600000",
       "milliseconds a request may take with its retries (0: no deadline)"},
      {"GULPDB_S3_MAX_ATTEMPTS", K::kCount, "5", "attempts per request before an error"},
      {"GULPDB_S3_RETRY_BUDGET_MS", K::kCount, "10000",
       "milliseconds a request keeps retrying transient failures past the attempts"},
      {"GULPDB_S3_BACKOFF_BASE_MS", K::kCount, "100", "the first backoff between attempts"},
      {"GULPDB_S3_BACKOFF_MAX_MS", K::kCount, "5000", "the longest backoff between attempts"},
      {"GULPDB_S3_MAX_CONNECTIONS", K::kCount, "16", "connections kept open to the store"},
      {"GULPDB_S3_PART_SIZE", K::kCount, "8388608", "the part size of multipart uploads"},
      {"GULPDB_S3_MULTIPART_THRESHOLD", K::kCount, "8388608",
       "the object size from which push uploads in parts"},
      {"GULPDB_S3_ADDRESSING_STYLE", K::kChoice, "auto",
       "auto, path or virtual: how a bucket is addressed"},
      {"GULPDB_PUSH_GRACE", K::kDuration, "24h",
       "how long push and snapshot keep the objects they make obsolete"},
      {"GULPDB_PUSH_LEASE", K::kDuration, "2m",
       "how long a push's lease on its prefix lasts without renewal"},
      {"GULPDB_CACHE", K::kText, "$XDG_CACHE_HOME/gulpdb, else ~/.cache/gulpdb",
       "the cache of index snapshots of remote datasets"},
      {"GULPDB_CACHE_DIR", K::kText, "as GULPDB_CACHE", "the older name of GULPDB_CACHE"},
      {"GULPDB_CACHE_BYTES", K::kBytes, "no bound", "a bound on the bytes of cached partitions"},
      {"GULPDB_FRAME_CACHE_BYTES", K::kBytes, "10G",
       "the bound of the frame cache of remote datasets (0: off)"},
      {"GULPDB_FRAME_CACHE_BLOCK", K::kBytes, "1M",
       "the frame cache's block size, a power of two from 64K to 64M"},
      {"GULPDB_PREFETCH_BYTES", K::kBytes, "256M",
       "the memory read-ahead may hold when the frame cache is off"},
      {"GULPDB_ALLOW_NETWORK_INDEX", K::kFlag, "0",
       "open the live index of a dataset on a network file system read-only"},
      {"GULPDB_TEST_FS_TYPE", K::kText, "the real one",
       "tests only: the file system type reported for an index directory"},
      {"GULPDB_TEST_BUG", K::kText, "none", "tests only: puts back the fixed bug it names"},
      {"GULPDB_TEST_BOOT_ID", K::kText, "/proc/sys/kernel/random/boot_id",
       "tests only: the boot id the index journal compares"},
      {"GULPDB_TEST_JOURNAL_BYTES", K::kCount, "4194304",
       "tests only: the size of a new index journal"},
      {"GULPDB_TEST_PARTITION_BYTES", K::kCount, "262144",
       "tests only: the size at which a partitioned push cuts a partition"},
      {"GULPDB_TEST_ROOT_PAGE_BYTES", K::kCount, "65536",
       "tests only: the page size of a two-level partition root"},
      {"GULPDB_TEST_META_KEY_FORM", K::kChoice, "ordered",
       "tests only: canonical makes new meta indexes in the first key form"},
  };
  return kTable;
}

const EnvVariable& EnvVariableNamed(std::string_view name) {
  for (const EnvVariable& v : EnvVariables()) {
    if (name == v.name) return v;
  }
  throw std::logic_error("the environment variable " + std::string(name) +
                         " is not in util/env.cc's table");
}

std::optional<std::string> EnvText(std::string_view name) {
  const EnvVariable& v = EnvVariableNamed(name);
  const char* value = std::getenv(v.name);
  if (value == nullptr || value[0] == '\0') return std::nullopt;
  return std::string(value);
}

bool ParseEnvFlag(std::string_view name, std::string_view text) {
  const std::string_view t = Trimmed(text);
  if (t == "1" || t == "true" || t == "yes") return true;
  if (t == "0" || t == "false" || t == "no" || t.empty()) return false;
  Bad(name, text, "expected 1, true or yes (or 0, false or no)");
}

uint64_t ParseEnvCount(std::string_view name, std::string_view text, uint64_t min, uint64_t max) {
  const std::string_view t = Trimmed(text);
  size_t digits = 0;
  const uint64_t n = LeadingNumber(t, &digits);
  if (digits == 0 || digits != t.size() || n < min || n > max) {
    Bad(name, text,
        "expected a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return n;
}

uint64_t ParseEnvBytes(std::string_view name, std::string_view text) {
  const std::optional<uint64_t> size = ParseByteSize(Trimmed(text));
  if (!size) Bad(name, text, "not a size (bytes, or a number with K, M, G or T)");
  return *size;
}

namespace {

constexpr const char* kDurationExamples = " (e.g. 3600, 90s, 30m, 24h, 7d)";

// `text` as a duration, or what is wrong with it in `*why`.
std::optional<std::chrono::seconds> DurationOf(std::string_view text, const char** why) {
  if (text.empty()) {
    *why = "empty";
    return std::nullopt;
  }
  size_t digits = 0;
  const uint64_t value = LeadingNumber(text, &digits);
  if (digits == 0) {
    *why = text[0] >= '0' && text[0] <= '9' ? "too large" : "not a number";
    return std::nullopt;
  }
  const std::string_view unit = text.substr(digits);
  uint64_t scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else if (unit == "d") {
    scale = 86400;
  } else {
    *why = "unknown unit";
    return std::nullopt;
  }
  if (value > (uint64_t{1} << 40)) {
    *why = "too large";
    return std::nullopt;
  }
  return std::chrono::seconds(static_cast<int64_t>(value * scale));
}

}  // namespace

std::chrono::seconds ParseDuration(std::string_view text) {
  const char* why = "";
  const std::optional<std::chrono::seconds> d = DurationOf(text, &why);
  if (!d) {
    throw InvalidArgumentError("duration '" + std::string(text) + "': " + why + kDurationExamples);
  }
  return *d;
}

std::chrono::seconds ParseEnvDuration(std::string_view name, std::string_view text) {
  const char* why = "";
  const std::optional<std::chrono::seconds> d = DurationOf(Trimmed(text), &why);
  if (!d) Bad(name, text, std::string("not a duration: ") + why + kDurationExamples);
  return *d;
}

bool EnvFlag(std::string_view name) {
  const std::optional<std::string> text = EnvText(name);
  return text && ParseEnvFlag(name, *text);
}

std::optional<uint64_t> EnvCount(std::string_view name, uint64_t min, uint64_t max) {
  const std::optional<std::string> text = EnvText(name);
  if (!text) return std::nullopt;
  return ParseEnvCount(name, *text, min, max);
}

std::optional<uint64_t> EnvBytes(std::string_view name) {
  const std::optional<std::string> text = EnvText(name);
  if (!text) return std::nullopt;
  return ParseEnvBytes(name, *text);
}

std::optional<std::chrono::seconds> EnvDuration(std::string_view name) {
  const std::optional<std::string> text = EnvText(name);
  if (!text) return std::nullopt;
  return ParseEnvDuration(name, *text);
}

}  // namespace gulpdb::util
