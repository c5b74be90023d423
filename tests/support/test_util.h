// Helpers shared by the test suites: temporary directories, fixture access,
// and small JPEG-like inputs.
#ifndef GULPDB_TESTS_SUPPORT_TEST_UTIL_H_
#define GULPDB_TESTS_SUPPORT_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace gulpdb::test {

// A fresh directory under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// Sets and unsets environment variables for its lifetime, restoring each to
// what it was (Dataset::Open and Push read their S3 configuration from the
// environment, as every S3 tool does). Not thread-safe: the environment is
// the process's.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv();
  void Set(const std::string& name, const std::string& value);
  void Unset(const std::string& name);

 private:
  void Save(const std::string& name);
  std::map<std::string, std::optional<std::string>> saved_;
};

std::string FixturesDir();
std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, std::string_view bytes);
uint64_t FileSizeOf(const std::string& path);

// Bytes that pass gulpdb's JPEG marker check (SOI ... EOI) with exactly
// `size` bytes (size >= 4), filled deterministically from `seed`.
std::string FakeJpeg(size_t size, uint32_t seed);
// The real JPEG frames of one video in tests/fixtures/frames_src/<name>/.
std::vector<std::string> FixtureFrames(const std::string& name);
std::vector<std::string_view> Views(const std::vector<std::string>& frames);

// CRC-32C computed bit by bit, straight from the definition (reflected
// polynomial 0x82F63B78): an independent reference for util::Crc32c.
uint32_t ReferenceCrc32c(const void* data, size_t size);

// Whether `text` holds `part` (for checking messages).
inline bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// `bytes` with everything but printable ASCII as \xNN, for messages.
std::string Printable(std::string_view bytes);

// Applies one to three random edits to `*text` (replace, insert or delete a
// character drawn from `alphabet`, or truncate), for fuzz-style tests.
void MutateText(std::string* text, std::string_view alphabet, std::mt19937& rng);

}  // namespace gulpdb::test

#endif  // GULPDB_TESTS_SUPPORT_TEST_UTIL_H_
