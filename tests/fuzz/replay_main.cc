// gulpdb_fuzz_replay: runs the committed inputs of every fuzz target through
// that target, without libFuzzer, in the ordinary builds (CTest entry
// fuzz_replay). Each target's LLVMFuzzerTestOneInput is compiled into this
// program under its own name (fuzz_util.h).
//
//   gulpdb_fuzz_replay FUZZ_DIR [TARGET...]
//       every file of FUZZ_DIR/corpus/<target>/ (which must hold at least
//       one) and FUZZ_DIR/regressions/<target>/ (optional), for every target
//       or the ones named
//   gulpdb_fuzz_replay --target TARGET FILE...
//       just these files (a crash input from a fuzzing run, say)
//
// A broken property aborts (the target prints which one); an exception
// escaping a target is reported and fails the run. Exit 0 when every input
// passed, 1 otherwise, 2 for a bad command line.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"

extern "C" int GulpdbFuzz_gmeta_parse(const uint8_t* data, size_t size);
extern "C" int GulpdbFuzz_gmeta_import(const uint8_t* data, size_t size);
extern "C" int GulpdbFuzz_record(const uint8_t* data, size_t size);
extern "C" int GulpdbFuzz_jpeg(const uint8_t* data, size_t size);
extern "C" int GulpdbFuzz_selection(const uint8_t* data, size_t size);
extern "C" int GulpdbFuzz_meta_value(const uint8_t* data, size_t size);
extern "C" int GulpdbFuzz_query(const uint8_t* data, size_t size);
extern "C" int GulpdbFuzz_published(const uint8_t* data, size_t size);
#ifdef GULPDB_WITH_H264
extern "C" int GulpdbFuzz_h264(const uint8_t* data, size_t size);
#endif

namespace {

namespace fs = std::filesystem;

struct Target {
  const char* name;
  int (*entry)(const uint8_t*, size_t);
};

constexpr Target kTargets[] = {
    {"gmeta_parse", GulpdbFuzz_gmeta_parse},
    {"gmeta_import", GulpdbFuzz_gmeta_import},
    {"record", GulpdbFuzz_record},
    {"jpeg", GulpdbFuzz_jpeg},
    {"selection", GulpdbFuzz_selection},
    {"meta_value", GulpdbFuzz_meta_value},
    {"query", GulpdbFuzz_query},
    {"published", GulpdbFuzz_published},
#ifdef GULPDB_WITH_H264
    {"h264", GulpdbFuzz_h264},
#endif
};

const Target* FindTarget(const std::string& name) {
  for (const Target& t : kTargets) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

// Runs one file; false when an exception escaped the target.
bool RunFile(const Target& target, const std::string& path) {
  const std::string bytes = gulpdb::fuzz::ReadFileOrDie(path);
  // An exact-size heap copy, as libFuzzer hands inputs over, so that ASan
  // catches a read one byte past the input.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size()]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  try {
    target.entry(copy.get(), bytes.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s: uncaught exception: %s\n", target.name, path.c_str(), e.what());
    return false;
  } catch (...) {
    std::fprintf(stderr, "%s: %s: uncaught exception of unknown type\n", target.name, path.c_str());
    return false;
  }
  return true;
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines before an abort reach the log
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "--target") {
    const Target* target = FindTarget(args[1]);
    if (target == nullptr) {
      std::fprintf(stderr, "unknown fuzz target %s\n", args[1].c_str());
      return 2;
    }
    bool ok = true;
    for (size_t i = 2; i < args.size(); ++i) ok = RunFile(*target, args[i]) && ok;
    std::printf("%s: %zu inputs %s\n", target->name, args.size() - 2, ok ? "passed" : "FAILED");
    return ok ? 0 : 1;
  }
  if (args.empty()) {
    std::fprintf(stderr,
                 "usage: gulpdb_fuzz_replay FUZZ_DIR [TARGET...]\n"
                 "       gulpdb_fuzz_replay --target TARGET FILE...\n");
    return 2;
  }
  const std::string root = args[0];
  std::vector<const Target*> targets;
  for (size_t i = 1; i < args.size(); ++i) {
    const Target* t = FindTarget(args[i]);
    if (t == nullptr) {
      std::fprintf(stderr, "unknown fuzz target %s\n", args[i].c_str());
      return 2;
    }
    targets.push_back(t);
  }
  if (targets.empty()) {
    for (const Target& t : kTargets) targets.push_back(&t);
  }
  int failed = 0;
  for (const Target* t : targets) {
    const std::vector<std::string> corpus = FilesIn(root + "/corpus/" + t->name);
    const std::vector<std::string> regressions = FilesIn(root + "/regressions/" + t->name);
    if (corpus.empty()) {
      std::fprintf(stderr, "%s: no seed corpus in %s/corpus/%s\n", t->name, root.c_str(), t->name);
      ++failed;
      continue;
    }
    bool ok = true;
    for (const std::string& path : corpus) ok = RunFile(*t, path) && ok;
    for (const std::string& path : regressions) ok = RunFile(*t, path) && ok;
    std::printf("%-13s %4zu corpus + %3zu regression inputs: %s\n", t->name, corpus.size(),
                regressions.size(), ok ? "passed" : "FAILED");
    if (!ok) ++failed;
  }
  std::printf("fuzz replay: %zu of %zu targets passed\n",
              targets.size() - static_cast<size_t>(failed), targets.size());
  return failed == 0 ? 0 : 1;
}
