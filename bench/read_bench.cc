// Raw (undecoded) read throughput of JPEG bytes, against bare system calls on
// the same bytes measured in the same run.
//
//   read_bench random --dir D --clips FILE [--reps R]
//       Random clips (FILE: "id<TAB>start<TAB>count" lines), page cache warm.
//       gulpdb: Dataset::ReadJpegs(id, start:start+count), every frame's
//       CRC-32C checked (the default), and once more opened with
//       verify_checksums = false (what the check costs). Baseline: one bare
//       pread per clip at offsets resolved beforehand, from descriptors opened
//       beforehand, into one reused buffer.
//   read_bench scan --dir D [--reps R]
//       Every frame of the dataset in chunk order, page cache warm.
//       gulpdb: ForEach + ReadJpegs(id) per video, checked and unchecked as
//       above. Baseline: each chunk file
//       read with one large pread into one reused buffer; a second baseline
//       reads each file sequentially in 1 MiB preads. Also measured: the
//       index walk alone (ForEach), and ForEach + one large pread per chunk with
//       the frames handed out as views of it (what a chunk-at-a-time scan API
//       inside the engine could do).
//   read_bench cold --dir D --jboj J --clips FILE --method gulpdb|jboj [--evict fadvise|none]
//       One pass over the clips in this process, from a cold page cache: the
//       caller drops the cache before starting it (or --evict fadvise drops
//       the files' pages here, before timing). gulpdb opens the dataset and
//       reads with ReadJpegs; jboj opens and reads one file per frame
//       (J/<id>/<frame:05d>.jpg).
//   read_bench --smoke
//
// Repetitions are interleaved (method A, B, A, B, ...) so that drifting
// machine load hits every method alike; an untimed pass warms up first.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "gulpdb/dataset.h"
#include "gulpdb/jpeg.h"

namespace gulpdb::bench {
namespace {

// The block size of the second sequential baseline: large enough to amortise
// the system call, small enough to stay in the CPU caches.
constexpr uint64_t kBlockBytes = uint64_t{1} << 20;

// Owns a read-only descriptor.
class Fd {
 public:
  explicit Fd(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) Die("open " + path + ": " + std::strerror(errno));
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// pread of exactly `size` bytes.
void PreadExact(int fd, char* dst, uint64_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, dst, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die(std::string("pread: ") + (n == 0 ? "short file" : std::strerror(errno)));
    dst += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

double TimeIt(const std::function<void()>& fn) {
  const auto start = Clock::now();
  fn();
  return SecondsSince(start);
}

// One method's repeated passes: seconds per pass and the bytes one pass reads.
struct Series {
  std::string name;
  std::function<uint64_t()> pass;  // returns the JPEG bytes it read
  std::vector<double> seconds;
  std::vector<double> cpu_seconds;
  uint64_t bytes = 0;
};

// Runs every series once untimed, then `reps` interleaved timed rounds.
// All series must read the same bytes.
void RunSeries(std::vector<Series>* series, uint64_t reps) {
  for (Series& s : *series) s.bytes = s.pass();
  for (const Series& s : *series) {
    if (s.bytes != series->front().bytes) {
      Die(s.name + " read " + std::to_string(s.bytes) + " bytes, " + series->front().name +
          " read " + std::to_string(series->front().bytes));
    }
  }
  for (uint64_t r = 0; r < reps; ++r) {
    for (Series& s : *series) {
      const double cpu = ProcessCpuSeconds();
      s.seconds.push_back(TimeIt([&] { s.pass(); }));
      s.cpu_seconds.push_back(ProcessCpuSeconds() - cpu);
    }
  }
}

Json SeriesJson(const Series& s, double units_per_pass) {
  std::vector<double> mbps, units, mb_per_cpu_s;
  for (double sec : s.seconds) {
    mbps.push_back(static_cast<double>(s.bytes) / 1e6 / sec);
    units.push_back(units_per_pass / sec);
  }
  for (double sec : s.cpu_seconds) mb_per_cpu_s.push_back(static_cast<double>(s.bytes) / 1e6 / sec);
  Json json;
  json.Stats("mb_per_s", mbps)
      .Stats("units_per_s", units)
      .Stats("seconds", s.seconds)
      .Stats("mb_per_cpu_s", mb_per_cpu_s);
  return json;
}

void LogSeries(const Series& s) {
  std::vector<double> mbps;
  for (double sec : s.seconds) mbps.push_back(static_cast<double>(s.bytes) / 1e6 / sec);
  const Summary m = Summarize(mbps);
  Log("%-24s %9.0f MB/s (min %.0f, max %.0f)", s.name.c_str(), m.median, m.min, m.max);
}

// The dataset opened without CRC-32C checks, to measure what they cost.
std::unique_ptr<Dataset> OpenUnverified(const std::string& dir) {
  OpenOptions o;
  o.verify_checksums = false;
  return Dataset::Open(dir, o);
}

int RunRandom(const std::string& dir, const std::string& clips_path, uint64_t reps) {
  const std::vector<Clip> clips = ReadClips(clips_path);
  std::unique_ptr<Dataset> ds = Dataset::Open(dir);
  std::unique_ptr<Dataset> unverified = OpenUnverified(dir);
  const std::vector<ClipExtent> extents = ResolveClips(*ds, clips);
  std::map<std::string, Fd> fds;
  std::vector<int> clip_fd;
  uint64_t largest = 0;
  for (const ClipExtent& e : extents) {
    auto it = fds.find(e.chunk_path);
    if (it == fds.end()) it = fds.emplace(e.chunk_path, Fd(e.chunk_path)).first;
    clip_fd.push_back(it->second.get());
    largest = std::max(largest, e.size);
  }
  std::vector<char> buffer(largest);
  std::vector<Selection> selections;
  for (const Clip& c : clips) {
    selections.push_back(Selection::Slice(c.start, int64_t{c.start} + c.count));
  }

  std::vector<Series> series(3);
  series[0].name = "pread";
  series[0].pass = [&] {
    uint64_t bytes = 0;
    for (size_t i = 0; i < extents.size(); ++i) {
      PreadExact(clip_fd[i], buffer.data(), extents[i].size, extents[i].offset);
      bytes += extents[i].jpeg_bytes;
    }
    return bytes;
  };
  const auto read_clips = [&](const Dataset& from) {
    uint64_t bytes = 0;
    for (size_t i = 0; i < clips.size(); ++i) {
      const StoredFrames frames = from.ReadJpegs(clips[i].id, selections[i]);
      for (size_t f = 0; f < frames.size(); ++f) bytes += frames[f].size();
    }
    return bytes;
  };
  series[1].name = "gulpdb_read_jpegs";
  series[1].pass = [&] { return read_clips(*ds); };
  series[2].name = "gulpdb_read_jpegs_unverified";
  series[2].pass = [&] { return read_clips(*unverified); };
  RunSeries(&series, reps);
  for (const Series& s : series) LogSeries(s);
  const auto n = static_cast<double>(clips.size());
  Json methods;
  for (const Series& s : series) methods.Object(s.name, SeriesJson(s, n));
  Json json;
  json.String("benchmark", "random_read")
      .Integer("clips", static_cast<int64_t>(clips.size()))
      .Integer("frames_per_clip", clips.front().count)
      .Integer("bytes_per_pass", static_cast<int64_t>(series[0].bytes))
      .String("units", "clips")
      .Object("methods", methods);
  json.Print();
  return 0;
}

int RunScan(const std::string& dir, uint64_t reps) {
  std::unique_ptr<Dataset> ds = Dataset::Open(dir);
  std::unique_ptr<Dataset> unverified = OpenUnverified(dir);
  std::vector<ChunkInfo> chunks = ds->Chunks();
  std::map<uint32_t, size_t> chunk_index;
  uint64_t largest = 0;
  std::vector<Fd> fds;
  for (size_t i = 0; i < chunks.size(); ++i) {
    chunk_index[chunks[i].number] = i;
    largest = std::max(largest, chunks[i].committed_length);
    fds.emplace_back(dir + "/" + chunks[i].file_name);
  }
  std::vector<char> buffer(largest);
  const DatasetStats stats = ds->Stats();

  std::vector<char> block(kBlockBytes);
  std::vector<Series> series(5);
  series[3].name = "block_reads";
  series[3].pass = [&] {
    uint64_t bytes = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      for (uint64_t at = 0; at < chunks[i].committed_length; at += kBlockBytes) {
        const uint64_t n = std::min<uint64_t>(kBlockBytes, chunks[i].committed_length - at);
        PreadExact(fds[i].get(), block.data(), n, at);
        bytes += n;
      }
    }
    return bytes;
  };
  series[0].name = "one_read_per_chunk";
  series[0].pass = [&] {
    uint64_t bytes = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      PreadExact(fds[i].get(), buffer.data(), chunks[i].committed_length, 0);
      bytes += chunks[i].committed_length;
    }
    return bytes;
  };
  const auto scan = [&](const Dataset& from) {
    uint64_t bytes = 0;
    from.ForEach([&](const VideoInfo& video) {
      const StoredFrames frames = from.ReadJpegs(video.id);
      for (size_t f = 0; f < frames.size(); ++f) {
        bytes += frames[f].size() + PadFor(frames[f].size());
      }
      return true;
    });
    return bytes;
  };
  series[1].name = "gulpdb_foreach_read_jpegs";
  series[1].pass = [&] { return scan(*ds); };
  series[4].name = "gulpdb_foreach_read_jpegs_unverified";
  series[4].pass = [&] { return scan(*unverified); };
  // The engine's index walk with the baseline's I/O: what a scan API that
  // reads a chunk at a time would cost.
  series[2].name = "gulpdb_foreach_chunk_read";
  series[2].pass = [&] {
    uint64_t bytes = 0;
    size_t loaded = SIZE_MAX;
    ds->ForEach([&](const VideoInfo& video) {
      const size_t c = chunk_index.at(video.chunk);
      if (c != loaded) {
        PreadExact(fds[c].get(), buffer.data(), chunks[c].committed_length, 0);
        loaded = c;
      }
      for (const FrameInfo& f : video.frames) {
        const std::string_view jpeg(buffer.data() + f.offset, f.jpeg_size());
        bytes += jpeg.size() + f.pad;
      }
      return true;
    });
    return bytes;
  };
  RunSeries(&series, reps);
  // The index walk alone, for the breakdown.
  Series walk;
  walk.name = "gulpdb_foreach_only";
  walk.pass = [&] {
    uint64_t frames = 0;
    ds->ForEach([&](const VideoInfo& video) {
      frames += video.frames.size();
      return true;
    });
    return frames;
  };
  walk.pass();
  for (uint64_t r = 0; r < reps; ++r) walk.seconds.push_back(TimeIt([&] { walk.pass(); }));
  for (const Series& s : series) LogSeries(s);

  const auto videos = static_cast<double>(stats.videos);
  Json methods;
  for (const Series& s : series) methods.Object(s.name, SeriesJson(s, videos));
  Json walk_json;
  walk_json.Stats("seconds", walk.seconds);
  methods.Object(walk.name, walk_json);
  Json json;
  json.String("benchmark", "sequential_scan")
      .Integer("videos", static_cast<int64_t>(stats.videos))
      .Integer("frames", static_cast<int64_t>(stats.frames))
      .Integer("chunks", static_cast<int64_t>(chunks.size()))
      .Integer("bytes_per_pass", static_cast<int64_t>(series[0].bytes))
      .String("units", "videos")
      .Object("methods", methods);
  json.Print();
  return 0;
}

int RunCold(const std::string& dir, const std::string& jboj, const std::string& clips_path,
            const std::string& method, const std::string& evict) {
  const std::vector<Clip> clips = ReadClips(clips_path);
  uint64_t evicted = 0;
  if (evict == "fadvise") {
    evicted = EvictFromPageCache(method == "gulpdb" ? dir : jboj);
  } else if (evict != "none") {
    Die("--evict must be fadvise or none");
  }
  std::vector<double> latencies_ms;
  uint64_t bytes = 0;
  const auto start = Clock::now();
  if (method == "gulpdb") {
    std::unique_ptr<Dataset> ds = Dataset::Open(dir);
    for (const Clip& c : clips) {
      const auto t0 = Clock::now();
      const StoredFrames frames = ds->ReadJpegs(c.id, Selection::Slice(c.start, c.start + c.count));
      for (size_t f = 0; f < frames.size(); ++f) bytes += frames[f].size();
      latencies_ms.push_back(SecondsSince(t0) * 1e3);
    }
  } else if (method == "jboj") {
    std::vector<char> buffer(size_t{1} << 20);
    for (const Clip& c : clips) {
      const auto t0 = Clock::now();
      for (uint32_t f = c.start; f < c.start + c.count; ++f) {
        char name[32];
        std::snprintf(name, sizeof(name), "/%05u.jpg", f);
        const Fd fd(jboj + "/" + c.id + name);
        for (;;) {
          const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) Die(std::string("read: ") + std::strerror(errno));
          if (n == 0) break;
          bytes += static_cast<uint64_t>(n);
        }
      }
      latencies_ms.push_back(SecondsSince(t0) * 1e3);
    }
  } else {
    Die("--method must be gulpdb or jboj");
  }
  const double seconds = SecondsSince(start);
  std::vector<double> sorted = latencies_ms;
  Json json;
  json.String("benchmark", "cold_read")
      .String("method", method)
      .String("evict", evict)
      .Integer("evicted_files", static_cast<int64_t>(evicted))
      .Integer("clips", static_cast<int64_t>(clips.size()))
      .Integer("bytes", static_cast<int64_t>(bytes))
      .Number("seconds", seconds)
      .Number("clips_per_s", static_cast<double>(clips.size()) / seconds)
      .Number("mb_per_s", static_cast<double>(bytes) / 1e6 / seconds)
      .Number("p50_ms", Percentile(&sorted, 50))
      .Number("p99_ms", Percentile(&sorted, 99));
  json.Print();
  return 0;
}

// Builds a tiny dataset with a folder-of-JPEGs twin and runs every mode on it.
int RunSmoke() {
  const std::string root = ScratchDir("read_bench_smoke");
  RemoveTree(root);
  if (::mkdir(root.c_str(), 0755) != 0) Die("mkdir " + root);
  const std::string dir = root + "/ds", jboj = root + "/jboj", clips = root + "/clips.tsv";
  if (::mkdir(jboj.c_str(), 0755) != 0) Die("mkdir " + jboj);
  std::vector<uint8_t> rgb(32 * 24 * 3, 128);
  std::unique_ptr<Dataset> ds = Dataset::Create(dir);
  {
    std::unique_ptr<Writer> w = ds->NewWriter();
    std::string lines;
    for (int v = 0; v < 6; ++v) {
      std::vector<std::string> jpegs;
      for (int f = 0; f < 20; ++f) {
        rgb[static_cast<size_t>(f)] = static_cast<uint8_t>(v * 20 + f);
        jpegs.push_back(ThreadLocalEncoder().Encode(rgb.data(), 32, 24, 3));
      }
      const std::string id = VideoId(static_cast<uint64_t>(v));
      const std::string folder = jboj + "/" + id;
      if (::mkdir(folder.c_str(), 0755) != 0) Die("mkdir " + folder);
      for (size_t f = 0; f < jpegs.size(); ++f) {
        char name[32];
        std::snprintf(name, sizeof(name), "/%05zu.jpg", f);
        WriteWholeFile(folder + name, jpegs[f]);
      }
      w->Append(id, std::vector<std::string_view>(jpegs.begin(), jpegs.end()));
      lines += id + "\t" + std::to_string(v % 4) + "\t16\n";
    }
    w->Commit();
    WriteWholeFile(clips, lines);
  }
  ds.reset();
  int rc = RunRandom(dir, clips, 1);
  rc |= RunScan(dir, 1);
  rc |= RunCold(dir, jboj, clips, "gulpdb", "fadvise");
  rc |= RunCold(dir, jboj, clips, "jboj", "fadvise");
  RemoveTree(root);
  return rc;
}

int Run(int argc, char** argv) {
  const std::string usage =
      "read_bench random --dir D --clips FILE [--reps R] | scan --dir D [--reps R] | "
      "cold --dir D --jboj J --clips FILE --method gulpdb|jboj [--evict fadvise|none] | --smoke";
  if (argc >= 2 && std::string(argv[1]) == "--smoke") return RunSmoke();
  if (argc < 2) Options(argc, argv, 1, usage).Usage("missing mode");
  const std::string mode = argv[1];
  Options opt(argc, argv, 2, usage);
  const std::string dir = opt.Required("dir");
  const uint64_t reps = std::max<uint64_t>(1, opt.Uint("reps", 5));
  if (mode == "random") {
    const std::string clips = opt.Required("clips");
    opt.Finish();
    return RunRandom(dir, clips, reps);
  }
  if (mode == "scan") {
    opt.Finish();
    return RunScan(dir, reps);
  }
  if (mode == "cold") {
    const std::string jboj = opt.Required("jboj");
    const std::string clips = opt.Required("clips");
    const std::string method = opt.Required("method");
    const std::string evict = opt.Str("evict", "none");
    opt.Finish();
    return RunCold(dir, jboj, clips, method, evict);
  }
  opt.Usage("unknown mode " + mode);
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("read_bench");
  try {
    return gulpdb::bench::Run(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
