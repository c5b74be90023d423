// gulpdb_hostile: damaged index and chunk files must give clear errors or
// correct data, never a crash, a hang or wrong bytes.
//
// Each trial copies a healthy dataset, damages the copy in one way, and then,
// in a child process with a time limit, opens it, reads every video (with
// checksum verification) and runs a deep check. The trial's outcome is one of
//   harmless   every read returned the original data and check is healthy
//              (the damage hit bytes nothing uses, e.g. free space);
//   detected   an operation threw a gulpdb::Error or check reported problems;
//   silent     some read returned data that differs from the original
//              without an error, or a committed id vanished and check did
//              not report it (must be 0);
//   crashed    the child died of a signal or an unexpected exception, or hung
//              (must be 0).
// Damage kinds: flipped bytes in one page of data.mdb (any page: meta,
// branch, leaf, overflow or free), a page overwritten with random bytes or
// zeros, data.mdb truncated, and a chunk file truncated or with flipped bytes.
//
//   gulpdb_hostile [--trials N] [--seed S] [--videos V] [--verbose]
//
// Quick mode (CTest reliability_hostile): the default trial count. Long mode:
// --trials 5000 (scripts/reliability.sh).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "tests/reliability/common.h"

namespace gulpdb::reliability {
namespace {

namespace fs = std::filesystem;

constexpr int kOutcomeHarmless = 10;
constexpr int kOutcomeDetected = 11;
constexpr int kOutcomeSilent = 12;
constexpr int kChildSeconds = 20;
constexpr size_t kPageSize = 4096;

struct Expected {
  std::map<std::string, std::pair<std::vector<std::string>, std::string>> videos;
};

std::string IdFor(int i) {
  // Varying lengths spread the keys over many leaf pages.
  return "video/" + std::to_string(i) + "/" + std::string(static_cast<size_t>(i % 23), 'k');
}

Expected Build(const std::string& dir, int videos, uint64_t seed) {
  CreateOptions create;
  create.videos_per_chunk = 50;
  auto ds = Dataset::Create(dir, create);
  auto w = ds->NewWriter();
  Expected e;
  for (int i = 0; i < videos; ++i) {
    const uint64_t video_seed = seed * 100000 + static_cast<uint64_t>(i);
    std::vector<std::string> frames = MakeFrames(video_seed, 1 + i % 4);
    // Some long meta, so that some records take overflow pages.
    std::string meta = R"({"label": )" + std::to_string(i % 7) + R"(, "note": ")" +
                       std::string(i % 50 == 0 ? 6000 : static_cast<size_t>(i % 40), 'm') + "\"}";
    w->Append(IdFor(i), Views(frames), meta);
    e.videos[IdFor(i)] = {frames, "[" + meta + "]"};
    if (i % 100 == 99) w->Commit();
  }
  w->Commit();
  // Some removals, so that the index has free pages.
  w.reset();
  std::vector<std::string> gone;
  for (int i = 3; i < videos; i += 17) gone.push_back(IdFor(i));
  ds->Remove(gone);
  for (const std::string& id : gone) e.videos.erase(id);
  return e;
}

void CopyDir(const std::string& from, const std::string& to) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

// What a child finds in a damaged copy; returns an outcome code.
int Probe(const std::string& dir, const Expected& expected, bool verbose) {
  bool detected = false;
  bool silent = false;    // wrong bytes or meta returned as if valid
  bool vanished = false;  // a committed id not found (an error, but the wrong one)
  bool check_found = false;
  auto say = [&](const std::string& what) {
    if (verbose) std::fprintf(stderr, "  %s\n", what.c_str());
  };
  try {
    OpenOptions open;
    open.verify_checksums = true;
    open.verify_index = true;
    open.decode_threads = 1;
    auto ds = Dataset::Open(dir, open);
    for (const auto& [id, want] : expected.videos) {
      try {
        const std::optional<VideoInfo> info = ds->Find(id);
        if (!info) {
          // The reader gets "no such video": an error, not wrong data, but
          // only check can say that the index is damaged.
          vanished = true;
          say("missing " + id);
          continue;
        }
        const StoredFrames jpegs = ds->ReadJpegs(id);
        bool same = jpegs.size() == want.first.size() && info->meta_data == want.second;
        for (size_t i = 0; same && i < jpegs.size(); ++i) same = jpegs[i] == want.first[i];
        if (!same) {
          silent = true;
          say("different data for " + id);
        }
      } catch (const Error& e) {
        detected = true;
        say(std::string("read: ") + e.what());
      }
    }
    try {
      uint64_t listed = 0;
      ds->ForEach([&](const VideoInfo& v) {
        ++listed;
        if (expected.videos.count(v.id) == 0) {
          silent = true;
          say("unexpected id " + v.id);
        }
        return true;
      });
      if (listed != expected.videos.size()) say("listed " + std::to_string(listed));
    } catch (const Error& e) {
      detected = true;
      say(std::string("list: ") + e.what());
    }
  } catch (const Error& e) {
    detected = true;
    say(std::string("open: ") + e.what());
  }
  try {
    CheckOptions deep;
    deep.deep = true;
    const CheckReport report = Check(dir, deep);
    if (!report.healthy()) {
      detected = true;
      check_found = true;
      say("check: " + report.problems[0].where + ": " + report.problems[0].what);
    }
  } catch (const Error& e) {
    detected = true;
    check_found = true;
    say(std::string("check: ") + e.what());
  }
  // Wrong data returned without an error is silent even when check or
  // another read found damage: a reader that never ran check would use it.
  if (silent) return kOutcomeSilent;
  if (vanished && !check_found) return kOutcomeSilent;  // a lost id nobody reports
  return detected || vanished ? kOutcomeDetected : kOutcomeHarmless;
}

std::string ReadWhole(const std::string& path) {
  std::string bytes(fs::file_size(path), '\0');
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr || std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    throw std::runtime_error("read " + path);
  }
  std::fclose(f);
  return bytes;
}

void WriteWhole(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    throw std::runtime_error("write " + path);
  }
  std::fclose(f);
}

void XorBytes(const std::string& path, uint64_t offset, const std::vector<uint8_t>& mask) {
  std::string bytes = ReadWhole(path);
  for (size_t i = 0; i < mask.size() && offset + i < bytes.size(); ++i) {
    bytes[offset + i] = static_cast<char>(static_cast<uint8_t>(bytes[offset + i]) ^ mask[i]);
  }
  WriteWhole(path, bytes);
}

enum class Damage {
  kFlipPageBytes,
  kRandomPage,
  kZeroPage,
  kTruncateIndex,
  kTruncateChunk,
  kFlipChunkBytes
};
constexpr int kDamageKinds = 6;
const char* DamageName(Damage d) {
  switch (d) {
    case Damage::kFlipPageBytes:
      return "flip_index_page_bytes";
    case Damage::kRandomPage:
      return "random_index_page";
    case Damage::kZeroPage:
      return "zero_index_page";
    case Damage::kTruncateIndex:
      return "truncate_index";
    case Damage::kTruncateChunk:
      return "truncate_chunk";
    case Damage::kFlipChunkBytes:
      return "flip_chunk_bytes";
  }
  return "?";
}

// Damages the dataset copy in `dir`; returns a description for messages.
std::string Inflict(const std::string& dir, Damage kind, std::mt19937_64& rng) {
  const std::string index = dir + "/gulpdb.index/data.mdb";
  const uint64_t pages = fs::file_size(index) / kPageSize;
  const uint64_t page = rng() % pages;
  auto random_bytes = [&](size_t n, bool nonzero) {
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = static_cast<uint8_t>(nonzero ? 1 + rng() % 255 : rng() % 256);
    return v;
  };
  switch (kind) {
    case Damage::kFlipPageBytes: {
      const size_t flips = 1 + rng() % 8;
      std::string what = "data.mdb page " + std::to_string(page) + " bytes";
      for (size_t i = 0; i < flips; ++i) {
        const uint64_t at = page * kPageSize + rng() % kPageSize;
        XorBytes(index, at, random_bytes(1, true));
        what += " " + std::to_string(at % kPageSize);
      }
      return what;
    }
    case Damage::kRandomPage:
      XorBytes(index, page * kPageSize, random_bytes(kPageSize, false));
      return "data.mdb page " + std::to_string(page) + " randomised";
    case Damage::kZeroPage: {
      std::string bytes = ReadWhole(index);
      std::memset(bytes.data() + page * kPageSize, 0, kPageSize);
      WriteWhole(index, bytes);
      return "data.mdb page " + std::to_string(page) + " zeroed";
    }
    case Damage::kTruncateIndex: {
      const uint64_t keep = rng() % (pages * kPageSize);
      fs::resize_file(index, keep);
      return "data.mdb truncated to " + std::to_string(keep);
    }
    case Damage::kTruncateChunk:
    case Damage::kFlipChunkBytes: {
      std::vector<std::string> chunks;
      for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() == ".gulp") chunks.push_back(e.path().string());
      }
      const std::string chunk = chunks[rng() % chunks.size()];
      const uint64_t size = fs::file_size(chunk);
      if (kind == Damage::kTruncateChunk) {
        const uint64_t keep = size == 0 ? 0 : rng() % size;
        fs::resize_file(chunk, keep);
        return fs::path(chunk).filename().string() + " truncated to " + std::to_string(keep);
      }
      const uint64_t at = size == 0 ? 0 : rng() % size;
      XorBytes(chunk, at, random_bytes(1 + rng() % 4, true));
      return fs::path(chunk).filename().string() + " flipped at " + std::to_string(at);
    }
  }
  return "";
}

int Main(int argc, char** argv) {
  int trials = 120;
  int videos = 600;
  uint64_t seed =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) % 1000000;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--trials") {
      trials = std::stoi(next());
    } else if (a == "--seed") {
      seed = std::stoull(next());
    } else if (a == "--videos") {
      videos = std::stoi(next());
    } else if (a == "--verbose") {
      verbose = true;
    } else {
      std::fprintf(stderr,
                   "usage: gulpdb_hostile [--trials N] [--seed S] [--videos V] [--verbose]\n");
      return 2;
    }
  }
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  const std::string root =
      fs::temp_directory_path() / ("gulpdb_hostile_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string base = root + "/base";
  const std::string copy = root + "/copy";
  const Expected expected = Build(base, videos, seed);

  // The control: an undamaged copy must verify and read back exactly, or
  // every "detected" below could be a false alarm.
  CopyDir(base, copy);
  const int control = RunInChild([&] { return Probe(copy, expected, true); });
  if (!ExitedWith(control, kOutcomeHarmless)) {
    std::printf("FAIL control: the undamaged dataset does not verify (%s)\n",
                DescribeStatus(control).c_str());
    return 1;
  }

  std::mt19937_64 rng(seed);
  std::map<std::string, std::map<int, int>> outcomes;  // damage -> outcome -> count
  int failures = 0;
  for (int t = 0; t < trials; ++t) {
    // Most trials damage the index, the part LMDB trusts blindly.
    const uint64_t pick = rng() % 10;
    const Damage kind = pick < 4   ? Damage::kFlipPageBytes
                        : pick < 6 ? Damage::kRandomPage
                        : pick < 7 ? Damage::kZeroPage
                                   : static_cast<Damage>(3 + (rng() % 3));
    CopyDir(base, copy);
    const std::string what = Inflict(copy, kind, rng);
    if (verbose) std::fprintf(stderr, "trial %d: %s\n", t, what.c_str());
    const int status = RunInChild([&] {
      ::alarm(kChildSeconds);  // a hang ends as SIGALRM, counted as a crash
      return Probe(copy, expected, verbose);
    });
    int outcome = -1;
    if (WIFEXITED(status)) outcome = WEXITSTATUS(status);
    if (outcome != kOutcomeHarmless && outcome != kOutcomeDetected) {
      ++failures;
      std::printf("FAIL trial %d (%s): %s\n", t, what.c_str(),
                  outcome == kOutcomeSilent ? "wrong data returned without any error"
                                            : DescribeStatus(status).c_str());
      std::fflush(stdout);
      outcome = outcome == kOutcomeSilent ? kOutcomeSilent : -1;
    }
    ++outcomes[DamageName(kind)][outcome];
  }
  int crashed = 0, silent = 0, detected = 0, harmless = 0;
  for (const auto& [damage, counts] : outcomes) {
    auto get = [&](int k) {
      auto it = counts.find(k);
      return it == counts.end() ? 0 : it->second;
    };
    std::printf("damage %-22s harmless %4d detected %4d silent %4d crashed %4d\n", damage.c_str(),
                get(kOutcomeHarmless), get(kOutcomeDetected), get(kOutcomeSilent), get(-1));
    harmless += get(kOutcomeHarmless);
    detected += get(kOutcomeDetected);
    silent += get(kOutcomeSilent);
    crashed += get(-1);
  }
  std::printf("trials %d\nharmless %d\ndetected %d\nsilent corruption %d\ncrashed or hung %d\n",
              trials, harmless, detected, silent, crashed);
  fs::remove_all(root);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gulpdb::reliability

int main(int argc, char** argv) {
  try {
    return gulpdb::reliability::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gulpdb_hostile: %s\n", e.what());
    return 2;
  }
}
