#include "cli/options.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

#include "cli/text.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "gulpdb/remote.h"

namespace gulpdb::cli {
namespace {

constexpr size_t kMaxIdBytes = 511;  // LMDB's key size limit (docs/cpp_api.md: ids are 1-511 bytes)

// A positional's option name: "ids..." takes the rest, "name?" is optional.
std::string PositionalName(const std::string& p) {
  if (p.size() > 3 && p.compare(p.size() - 3, 3, "...") == 0) return p.substr(0, p.size() - 3);
  if (p.size() > 1 && p.back() == '?') return p.substr(0, p.size() - 1);
  return p;
}
bool TakesTheRest(const std::string& p) {
  return p.size() > 3 && p.compare(p.size() - 3, 3, "...") == 0;
}

// Refuses a path that exists but is not a directory (or that has a file
// where one of its directories should be).
void RequireDirectoryIfPresent(const std::string& what, const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw InvalidArgumentError(what + " " + path + ": not a directory");
  } else if (errno == ENOTDIR) {
    throw InvalidArgumentError(what + " " + path + ": not a directory (a file is in its path)");
  }
}

}  // namespace

po::variables_map Parse(const std::vector<std::string>& args, const char* usage,
                        po::options_description options,
                        const std::vector<std::string>& positionals) {
  po::variables_map vm;
  options.add_options()("help,h", "show this help");
  po::positional_options_description pos;
  for (const std::string& p : positionals) {
    pos.add(PositionalName(p).c_str(), TakesTheRest(p) ? -1 : 1);
  }
  po::store(po::command_line_parser(args).options(options).positional(pos).run(), vm);
  if (vm.count("help") != 0) {
    std::cout << "usage: " << usage << "\n\n" << options;
    throw HelpShown{};
  }
  po::notify(vm);
  for (const std::string& p : positionals) {
    if (p.back() == '?') continue;  // optional
    if (vm.count(PositionalName(p)) == 0) throw UsageError("missing argument " + PositionalName(p));
  }
  return vm;
}

void RequireLocal(const std::string& dir) {
  if (IsRemoteUrl(dir)) {
    throw UsageError(dir +
                     " is a dataset in object storage, which is read-only: change a local copy "
                     "and publish it with `gulpdb push DIR " +
                     dir + "`");
  }
}

void AddIndexDirOption(po::options_description* options, const std::string& dataset) {
  const std::string help = "the index lives here instead of " + dataset +
                           "/gulpdb.index (e.g. beside a read-only " + dataset + ")";
  options->add_options()("index-dir", po::value<std::string>(), help.c_str());  // copied
}

void AddWaitOption(po::options_description* options) {
  options->add_options()("wait", NumberValue("0"), "seconds to wait for another writer");
}

std::chrono::milliseconds WaitOption(const po::variables_map& vm) {
  const double seconds = *RealOption(vm, "wait", 0, 1e9);
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

void AddVersionOption(po::options_description* options) {
  options->add_options()("version", po::value<std::string>(),
                         "read the version tagged NAME (gulpdb tag) instead of the live dataset");
}

DatasetPath DatasetArg(const po::variables_map& vm, const std::string& name) {
  DatasetPath path;
  path.dir = vm[name].as<std::string>();
  if (path.dir.empty()) {
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    throw UsageError("the dataset directory " + upper + " is an empty string");
  }
  if (vm.count("index-dir") != 0) {
    path.index_dir = vm["index-dir"].as<std::string>();
    if (path.index_dir.empty()) throw UsageError("--index-dir is an empty string");
  }
  if (vm.count("version") != 0) {
    path.version = vm["version"].as<std::string>();
    if (path.version.empty()) throw UsageError("--version is an empty string");
  }
  return path;
}

void RequireNonEmpty(const po::variables_map& vm, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (vm.count(name) != 0 && vm[name].as<std::string>().empty()) {
      throw UsageError("--" + name + " is an empty string");
    }
  }
}

void RequireDirectories(const DatasetPath& path, const std::string& operation) {
  RequireDirectoryIfPresent(operation, path.dir);
  if (!path.index_dir.empty()) RequireDirectoryIfPresent(operation + " index", path.index_dir);
}

std::unique_ptr<Dataset> OpenDataset(const DatasetPath& path, bool read_only, OpenOptions options) {
  RequireDirectories(path);
  OpenOptions& o = options;
  o.read_only = read_only;
  o.index_dir = path.index_dir;
  o.version = path.version;
  o.verify_checksums = true;  // every frame the command reads is checked
  return Dataset::Open(path.dir, o);
}

bool IsPossibleId(const std::string& id) { return !id.empty() && id.size() <= kMaxIdBytes; }

void RequirePossibleId(const DatasetPath& path, const std::string& id) {
  if (!IsPossibleId(id)) {
    throw IdNotFoundError("look up id '" + EscapeForDisplay(id) + "' in " + path.dir +
                          ": no such video");
  }
}

po::typed_value<std::string>* NumberValue(const char* default_text) {
  po::typed_value<std::string>* v = po::value<std::string>();
  if (default_text != nullptr) v->default_value(default_text);
  return v;
}

std::optional<uint64_t> UnsignedOption(const po::variables_map& vm, const std::string& name,
                                       uint64_t min, uint64_t max) {
  if (vm.count(name) == 0) return std::nullopt;
  try {
    return ingest::ParseWholeNumber(name, vm[name].as<std::string>(), min, max);
  } catch (const InvalidArgumentError& e) {
    throw UsageError(e.what());
  }
}

std::optional<double> RealOption(const po::variables_map& vm, const std::string& name, double min,
                                 double max) {
  if (vm.count(name) == 0) return std::nullopt;
  try {
    return ingest::ParseNumber(name, vm[name].as<std::string>(), min, max);
  } catch (const InvalidArgumentError& e) {
    throw UsageError(e.what());
  }
}

bool Given(const po::variables_map& vm, const std::string& name) {
  return vm.count(name) != 0 && !vm[name].defaulted();
}

}  // namespace gulpdb::cli
