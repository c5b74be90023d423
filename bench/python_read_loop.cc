// The read loop of bench/python_read_bench.py run entirely in C++: the
// baseline that tells the cost of the Python layer from the cost of the reads
// themselves. python_read_bench.py runs it once per measurement.
//
//   python_read_loop --dir D [--index-dir I] --clips FILE --length N
//                    [--threads T] [--decode-threads N] [--dct fast|accurate]
//
// FILE holds one clip per line, "<id><TAB><start>": clip i is frames
// [start, start + N) of that id, decoded as RGB with `dct`. T threads each
// take every T-th clip (as the Python benchmark splits them), on a dataset
// opened read-only with `decode_threads` (0: one per core). An untimed pass
// first opens the chunk files and warms the page cache, as the Python paths
// are warmed. Prints {"seconds": ..., "bytes": ...}: the timed pass and the
// bytes it decoded.
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "gulpdb/dataset.h"
#include "gulpdb/selection.h"

namespace gulpdb::bench {
namespace {

struct Clip {
  std::string id;
  int64_t start = 0;
};

std::vector<Clip> ReadClips(const std::string& path) {
  std::ifstream in(path);
  if (!in) Die("cannot read " + path);
  std::vector<Clip> clips;
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos) Die(path + ": a line without a tab: " + line);
    clips.push_back({line.substr(0, tab), std::stoll(line.substr(tab + 1))});
  }
  return clips;
}

// Reads every clip on `threads` threads; returns the bytes decoded.
uint64_t ReadAll(const Dataset& ds, const std::vector<Clip>& clips, int64_t length, size_t threads,
                 const DecodeOptions& options) {
  std::vector<uint64_t> bytes(threads, 0);
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = t; i < clips.size(); i += threads) {
        const Selection selection = Selection::Slice(clips[i].start, clips[i].start + length);
        bytes[t] += ds.ReadFrames(clips[i].id, selection, options).byte_size();
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  uint64_t total = 0;
  for (uint64_t b : bytes) total += b;
  return total;
}

int Main(int argc, char** argv) {
  Options args(argc, argv, 1,
               "python_read_loop --dir D [--index-dir I] --clips FILE --length N [--threads T] "
               "[--decode-threads N] [--dct fast|accurate]");
  OpenOptions open;
  open.read_only = true;
  const std::string dir = args.Required("dir");
  open.index_dir = args.Str("index-dir", "");
  const std::vector<Clip> clips = ReadClips(args.Required("clips"));
  const auto length = static_cast<int64_t>(args.Uint("length", 16));
  const size_t threads = args.Uint("threads", 1);
  open.decode_threads = args.Uint("decode-threads", 1);
  const std::string dct = args.Str("dct", "fast");
  args.Finish();
  if (threads == 0) args.Usage("--threads must be positive");
  if (dct != "fast" && dct != "accurate") args.Usage("--dct must be fast or accurate");
  DecodeOptions options;
  options.format = PixelFormat::kRGB;
  options.dct = dct == "fast" ? DctMethod::kFast : DctMethod::kAccurate;

  const std::unique_ptr<Dataset> ds = Dataset::Open(dir, open);
  ReadAll(*ds, clips, length, threads, options);  // warm: opens chunk files, starts the pool
  const Clock::time_point start = Clock::now();
  const uint64_t bytes = ReadAll(*ds, clips, length, threads, options);
  const double seconds = SecondsSince(start);
  Json().Number("seconds", seconds).Integer("bytes", static_cast<int64_t>(bytes)).Print();
  return 0;
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("python_read_loop");
  try {
    return gulpdb::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
