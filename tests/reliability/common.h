// Shared by the reliability programs and suites (crash torture, fault
// injection, load, hostile input): deterministic real JPEG content that any
// process can regenerate and compare, a fingerprint of everything a reader
// can see in a dataset, and child processes.
#ifndef GULPDB_TESTS_RELIABILITY_COMMON_H_
#define GULPDB_TESTS_RELIABILITY_COMMON_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gulpdb::reliability {

// A small decodable baseline JPEG whose pixels (and so its bytes and size)
// follow from `seed`; the same seed gives the same bytes in every process.
std::string MakeJpeg(uint64_t seed, int width = 16, int height = 16);
// `count` frames of MakeJpeg, seeded from `video_seed`.
std::vector<std::string> MakeFrames(uint64_t video_seed, int count);
std::vector<std::string_view> Views(const std::vector<std::string>& frames);

// Everything a reader sees of a dataset: per id, a hash of its frame bytes,
// frame_info and meta. Two snapshots are equal exactly when no reader could
// tell the datasets apart.
struct Snapshot {
  std::map<std::string, uint64_t> videos;
  friend bool operator==(const Snapshot& a, const Snapshot& b) { return a.videos == b.videos; }
  friend bool operator!=(const Snapshot& a, const Snapshot& b) { return !(a == b); }
};
// Opens `dir` read-only and reads every video (throws what the reads throw).
Snapshot TakeSnapshot(const std::string& dir);
// A short human-readable account of how `after` differs from `before`
// (empty when they are equal).
std::string Difference(const Snapshot& before, const Snapshot& after);

// Runs `body` in a forked child and returns the child's wait status. The
// child exits with body's return value; an exception escaping body exits
// with 101 after printing it to stderr.
int RunInChild(const std::function<int()>& body);
// "exited with 3", "killed by signal 11 (Segmentation fault)", ...
std::string DescribeStatus(int wait_status);
bool ExitedWith(int wait_status, int code);

}  // namespace gulpdb::reliability

#endif  // GULPDB_TESTS_RELIABILITY_COMMON_H_
