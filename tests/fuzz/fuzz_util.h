// Helpers shared by the fuzz targets in this directory (docs/fuzzing.md): how a
// target reports a broken property, scratch files, and the one macro that
// names a target's entry point.
//
// Each target defines its entry point as GULPDB_FUZZ_ENTRY. Built as a
// libFuzzer program that is LLVMFuzzerTestOneInput; built into
// gulpdb_fuzz_replay (gcc, no libFuzzer) each target gets its own name, so
// that one program can replay every target's corpus.
//
// Thread safety: the targets run one input at a time on one thread; so do
// these helpers.
#ifndef GULPDB_TESTS_FUZZ_FUZZ_UTIL_H_
#define GULPDB_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#ifndef GULPDB_FUZZ_ENTRY
#define GULPDB_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

namespace gulpdb::fuzz {

// Prints "fuzz <target>: <what>" to stderr, removes this process's scratch
// directories and aborts: libFuzzer records the input as a crash, the replay
// program dies and its CTest entry fails.
[[noreturn]] void Fail(const char* target, const std::string& what);

// A directory of its own for `target` in this process, created on first use
// under /dev/shm (or $TMPDIR when /dev/shm is missing) and removed with
// everything in it at exit or by Fail. Those left by fuzzer processes that
// died otherwise are removed when the next process creates its own. Aborts
// when it cannot be created.
const std::string& ScratchDir(const char* target);

// Replaces `path` with `bytes`; aborts on failure (the scratch space is
// ours, so a failure there is the environment's, never the input's).
void WriteFileOrDie(const std::string& path, std::string_view bytes);
std::string ReadFileOrDie(const std::string& path);
// Removes `path` and everything under it; a missing path is fine.
void RemoveTreeOrDie(const std::string& path);

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace gulpdb::fuzz

// Checks a property of the code under test; on failure aborts naming the
// target, the condition and `what` (a std::string expression, built only then).
#define FUZZ_CHECK(target, cond, what)                                                            \
  do {                                                                                            \
    if (!(cond)) ::gulpdb::fuzz::Fail(target, std::string("check failed: " #cond ": ") + (what)); \
  } while (false)

#endif  // GULPDB_TESTS_FUZZ_FUZZ_UTIL_H_
