#include "tests/reliability/common.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <random>

#include "gulpdb/dataset.h"
#include "gulpdb/jpeg.h"

namespace gulpdb::reliability {
namespace {

// FNV-1a, 64-bit: enough to tell frames apart in a snapshot.
uint64_t Hash(uint64_t h, std::string_view bytes) {
  for (char c : bytes) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  return h;
}
uint64_t HashNumber(uint64_t h, uint64_t value) {
  return Hash(h, std::string_view(reinterpret_cast<const char*>(&value), sizeof value));
}

}  // namespace

std::string MakeJpeg(uint64_t seed, int width, int height) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + 1);
  const size_t w = static_cast<size_t>(width);
  const size_t h = static_cast<size_t>(height);
  std::vector<uint8_t> pixels(w * h * 3);
  // A smooth gradient plus seeded noise: sizes vary from seed to seed.
  const uint64_t noise = 1 + rng() % 64;
  for (size_t y = 0; y < h; ++y) {
    for (size_t x = 0; x < w; ++x) {
      for (size_t c = 0; c < 3; ++c) {
        const uint64_t base = x * 7 + y * 5 + c * 60 + seed % 97;
        pixels[(y * w + x) * 3 + c] = static_cast<uint8_t>((base + rng() % noise) & 0xff);
      }
    }
  }
  return ThreadLocalEncoder().Encode(pixels.data(), width, height, 3);
}

std::vector<std::string> MakeFrames(uint64_t video_seed, int count) {
  std::vector<std::string> frames;
  frames.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    frames.push_back(MakeJpeg(video_seed * 1000 + static_cast<uint64_t>(i)));
  }
  return frames;
}

std::vector<std::string_view> Views(const std::vector<std::string>& frames) {
  return std::vector<std::string_view>(frames.begin(), frames.end());
}

Snapshot TakeSnapshot(const std::string& dir) {
  auto ds = Dataset::Open(dir);
  Snapshot snap;
  ds->ForEach([&](const VideoInfo& info) {
    uint64_t h = 0xcbf29ce484222325ULL;
    h = Hash(h, info.meta_data);
    for (const FrameInfo& f : info.frames) {
      h = HashNumber(h, f.offset);
      h = HashNumber(h, f.pad);
      h = HashNumber(h, f.length);
    }
    const StoredFrames frames = ds->ReadJpegs(info.id);
    for (size_t i = 0; i < frames.size(); ++i) h = Hash(h, frames[i]);
    snap.videos.emplace(info.id, h);
    return true;
  });
  return snap;
}

std::string Difference(const Snapshot& before, const Snapshot& after) {
  std::string out;
  int shown = 0;
  auto note = [&](const std::string& line) {
    if (shown++ < 5) out += line + "\n";
  };
  for (const auto& [id, h] : before.videos) {
    auto it = after.videos.find(id);
    if (it == after.videos.end()) {
      note("lost '" + id + "'");
    } else if (it->second != h) {
      note("changed '" + id + "'");
    }
  }
  for (const auto& [id, h] : after.videos) {
    if (before.videos.count(id) == 0) note("gained '" + id + "'");
  }
  if (shown > 5) out += "... " + std::to_string(shown - 5) + " more differences\n";
  return out;
}

int RunInChild(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int code = 101;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

std::string DescribeStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    return "killed by signal " + std::to_string(WTERMSIG(wait_status)) + " (" +
           ::strsignal(WTERMSIG(wait_status)) + ")";
  }
  return "wait status " + std::to_string(wait_status);
}

bool ExitedWith(int wait_status, int code) {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == code;
}

}  // namespace gulpdb::reliability
