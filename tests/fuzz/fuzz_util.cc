// Helpers shared by the fuzz targets (fuzz_util.h).
#include "tests/fuzz/fuzz_util.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

namespace gulpdb::fuzz {
namespace {

// The process's scratch root; removed by an atexit handler.
std::string& Root() {
  static std::string root;
  return root;
}

void RemoveRoot() {
  if (Root().empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(Root(), ec);
}

// Removes the scratch directories of fuzzer processes that died without
// cleaning up (a sanitizer report or a signal skips the atexit handler).
void RemoveStale(const std::string& base) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "gulpdb_fuzz.";
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    std::filesystem::remove_all(entry.path(), ignored);
  }
}

}  // namespace

void Fail(const char* target, const std::string& what) {
  std::fprintf(stderr, "fuzz %s: %s\n", target, what.c_str());
  std::fflush(stderr);
  RemoveRoot();
  std::abort();
}

const std::string& ScratchDir(const char* target) {
  static std::map<std::string, std::string> dirs;
  auto it = dirs.find(target);
  if (it != dirs.end()) return it->second;
  if (Root().empty()) {
    std::string base = "/dev/shm";
    if (::access(base.c_str(), W_OK) != 0) {
      const char* tmp = std::getenv("TMPDIR");
      base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    }
    RemoveStale(base);
    std::string templ = base + "/gulpdb_fuzz." + std::to_string(::getpid()) + ".XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr)
      Fail(target, "cannot create a scratch directory in " + base);
    Root() = templ;
    std::atexit(RemoveRoot);
  }
  const std::string dir = Root() + "/" + target;
  if (::mkdir(dir.c_str(), 0755) != 0) Fail(target, "cannot create " + dir);
  return dirs.emplace(target, dir).first->second;
}

void WriteFileOrDie(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) Fail("util", "cannot write " + path);
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  if (!f) Fail("util", "cannot read " + path);
  return s.str();
}

void RemoveTreeOrDie(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) Fail("util", "cannot remove " + path + ": " + ec.message());
}

}  // namespace gulpdb::fuzz
