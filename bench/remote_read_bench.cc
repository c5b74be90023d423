// Remote datasets (gulpdb/remote.h) read from an S3 server: random clips and
// opening, each against a baseline measured in the same run.
//
//   remote_read_bench clips --dataset D --clips FILE --endpoint URL --bucket B --prefix P
//                     [--batch 64] [--batches 5] [--sequential 64] [--connections 16]
//                     [--reps 3] [--anonymous]
//       D (a local dataset) must be published at s3://B/P (`gulpdb push`).
//       FILE holds clips ("id<TAB>start<TAB>count", frames back to back).
//       Interleaved repetitions of:
//         gulpdb      Dataset::ReadJpegBatch of --batch clips at a time from
//                     the URL: one ranged GET per clip, all of a batch at
//                     once, each checked (status, Content-Range, CRC-32C)
//         bare_curl   the same byte ranges, --batch at a time, through a
//                     hand-driven libcurl multi loop with the same number of
//                     kept-alive connections (bench/curl_loop.h), no checks
//         sequential  Dataset::ReadJpegs of one clip at a time (the first
//                     --sequential clips): what reading without batches costs
//       With --anonymous every request is unsigned (an endpoint that needs no
//       credentials, such as the latency-emulating proxy run.py puts in front).
//
//   remote_read_bench open --dataset D --endpoint URL --bucket B --prefix P [--reps 5]
//       Open of the dataset published at s3://B/P, in this process: first open
//       (empty cache: manifest + snapshot download) and re-open (warm cache:
//       one GET of the manifest), with requests and bytes received; and, as a
//       baseline, Dataset::Open of the local directory D.
//
//   remote_read_bench --smoke
//       Starts s3rver, builds and pushes a small dataset, runs both modes.
//
// The S3 client is configured from the environment as every gulpdb program
// is (AWS_ENDPOINT_URL and the keys are set from the options here);
// GULPDB_CACHE points into a scratch folder.
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/curl_loop.h"
#include "gulpdb/dataset.h"
#include "gulpdb/jpeg.h"
#include "gulpdb/remote.h"
#include "tests/harness/s3_server.h"

namespace gulpdb::bench {
namespace {

struct Endpoint {
  std::string url;
  std::string bucket;
  std::string prefix;
  bool anonymous = false;
};

std::string DatasetUrl(const Endpoint& e) { return "s3://" + e.bucket + "/" + e.prefix; }

// Points the S3 configuration of this process at `e` (Dataset::Open and
// Push read it from the environment).
void Configure(const Endpoint& e, uint64_t connections, const std::string& cache) {
  ::setenv("AWS_ENDPOINT_URL", e.url.c_str(), 1);
  if (e.anonymous) {
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null", 1);
  } else {
    ::setenv("AWS_ACCESS_KEY_ID", test::S3rverServer::kAccessKey, 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", test::S3rverServer::kSecretKey, 1);
  }
  ::setenv("GULPDB_S3_MAX_CONNECTIONS", std::to_string(connections).c_str(), 1);
  ::setenv("GULPDB_CACHE", cache.c_str(), 1);
  // Every repetition reads from the store, as the bare loop does: the frame
  // cache has a benchmark of its own (bench/frame_cache_bench.py).
  ::setenv("GULPDB_FRAME_CACHE_BYTES", "0", 1);
}

Json RunClips(const std::string& dataset_dir, const std::string& clips_path, const Endpoint& e,
              uint64_t batch, uint64_t batches, uint64_t sequential, uint64_t connections,
              uint64_t reps) {
  const std::string cache = ScratchDir("remote_read_bench_cache");
  RemoveTree(cache);
  Configure(e, connections, cache);
  std::unique_ptr<Dataset> local = Dataset::Open(dataset_dir);
  std::vector<Clip> clips = ReadClips(clips_path);
  if (clips.size() < batch * batches) Die("the clips file holds fewer than batch * batches clips");
  clips.resize(batch * batches);
  const std::vector<ClipExtent> extents = ResolveClips(*local, clips);
  std::map<uint32_t, std::string> chunk_keys;
  for (const ChunkInfo& c : local->Chunks()) chunk_keys[c.number] = e.prefix + "/" + c.file_name;

  std::unique_ptr<Dataset> ds = Dataset::Open(DatasetUrl(e));
  std::vector<std::vector<FrameRequest>> requests(batches);
  std::vector<std::vector<CurlRange>> ranges(batches);
  uint64_t total_bytes = 0, max_size = 0;
  for (size_t b = 0; b < batches; ++b) {
    for (size_t i = b * batch; i < (b + 1) * batch; ++i) {
      const Clip& c = clips[i];
      requests[b].push_back(
          FrameRequest{c.id, Selection::Slice(static_cast<int64_t>(c.start),
                                              static_cast<int64_t>(c.start + c.count), 1)});
      ranges[b].push_back(
          CurlRange{chunk_keys.at(extents[i].chunk), extents[i].offset, extents[i].size});
      total_bytes += extents[i].size;
      max_size = std::max(max_size, extents[i].size);
    }
  }
  std::vector<std::string> buffers(batch, std::string(max_size, '\0'));
  std::vector<char*> out;
  for (std::string& b : buffers) out.push_back(b.data());
  CurlLoop loop(e.url, e.bucket, connections, e.anonymous ? "" : test::S3rverServer::kAccessKey,
                e.anonymous ? "" : test::S3rverServer::kSecretKey);

  const auto run_gulpdb = [&] {
    for (const auto& r : requests) {
      const std::vector<StoredFrames> got = ds->ReadJpegBatch(r);
      if (got.size() != r.size()) Die("gulpdb: short batch");
    }
  };
  const auto run_curl = [&] {
    for (const auto& r : ranges) loop.Run(r, out);
  };
  const auto run_sequential = [&] {
    for (uint64_t i = 0; i < sequential; ++i) {
      const std::vector<FrameRequest>& r = requests[i / batch];
      ds->ReadJpegs(r[i % batch].id, r[i % batch].selection);
    }
  };
  // Warm-up (connections, the server's page cache); check what both read.
  const uint64_t requests_before = GetRemoteInfo(*ds)->requests;
  run_gulpdb();
  const double requests_per_clip =
      static_cast<double>(GetRemoteInfo(*ds)->requests - requests_before) /
      static_cast<double>(batch * batches);
  run_curl();
  {
    const std::vector<StoredFrames> got = ds->ReadJpegBatch(requests.back());
    for (size_t i = 0; i < got.size(); ++i) {
      const size_t k = (batches - 1) * batch + i;
      size_t pos = 0;
      for (size_t f = 0; f < got[i].size(); ++f) {
        if (std::string_view(out[i] + pos, got[i][f].size()) != got[i][f]) {
          Die("gulpdb and the curl loop read different bytes for clip " + std::to_string(k));
        }
        pos += extents[k].frames[f].length;
      }
    }
  }
  const double clip_count = static_cast<double>(batch * batches);
  const double mb = static_cast<double>(total_bytes) / 1e6;
  std::vector<double> g_cps, g_mbps, g_cpu, c_cps, c_mbps, c_cpu, s_cps;
  for (uint64_t rep = 0; rep < reps; ++rep) {
    for (int method = 0; method < 3; ++method) {
      const double cpu0 = ProcessCpuSeconds();
      const auto t0 = Clock::now();
      if (method == 0) run_gulpdb();
      if (method == 1) run_curl();
      if (method == 2) run_sequential();
      const double seconds = SecondsSince(t0);
      const double cpu_us = (ProcessCpuSeconds() - cpu0) * 1e6;
      if (method == 0) {
        g_cps.push_back(clip_count / seconds);
        g_mbps.push_back(mb / seconds);
        g_cpu.push_back(cpu_us / clip_count);
      } else if (method == 1) {
        c_cps.push_back(clip_count / seconds);
        c_mbps.push_back(mb / seconds);
        c_cpu.push_back(cpu_us / clip_count);
      } else {
        s_cps.push_back(static_cast<double>(sequential) / seconds);
      }
      Log("rep %llu %s: %.0f clips/s", static_cast<unsigned long long>(rep),
          method == 0   ? "gulpdb batch"
          : method == 1 ? "bare curl"
                        : "one clip at a time",
          method == 2 ? static_cast<double>(sequential) / seconds : clip_count / seconds);
    }
  }
  Json params;
  params.String("url", DatasetUrl(e))
      .String("endpoint", e.url)
      .Boolean("anonymous", e.anonymous)
      .Integer("clips_per_batch", static_cast<int64_t>(batch))
      .Integer("batches", static_cast<int64_t>(batches))
      .Integer("sequential_clips", static_cast<int64_t>(sequential))
      .Integer("connections", static_cast<int64_t>(connections))
      .Integer("reps", static_cast<int64_t>(reps))
      .Integer("frames_per_clip", clips.front().count)
      .Number("mean_clip_bytes", static_cast<double>(total_bytes) / clip_count);
  Json gulpdb, curl, seq;
  gulpdb.Stats("clips_per_s", g_cps)
      .Stats("mb_per_s", g_mbps)
      .Stats("cpu_us_per_clip", g_cpu)
      .Number("requests_per_clip", requests_per_clip);
  curl.Stats("clips_per_s", c_cps).Stats("mb_per_s", c_mbps).Stats("cpu_us_per_clip", c_cpu);
  seq.Stats("clips_per_s", s_cps);
  Json json;
  json.String("benchmark", "remote_clips")
      .Object("params", params)
      .Object("gulpdb_batch", gulpdb)
      .Object("bare_curl", curl)
      .Object("gulpdb_sequential", seq)
      .Number("batch_x_curl", Summarize(g_cps).median / Summarize(c_cps).median)
      .Number("batch_x_sequential", Summarize(g_cps).median / Summarize(s_cps).median);
  ds.reset();
  RemoveTree(cache);
  return json;
}

Json RunOpen(const std::string& dataset_dir, const Endpoint& e, uint64_t reps) {
  const std::string scratch = ScratchDir("remote_open_bench");
  RemoveTree(scratch);
  std::vector<double> first_ms, first_bytes, first_requests, again_ms, again_bytes, again_requests,
      local_ms;
  uint64_t snapshot_bytes = 0, videos = 0;
  for (uint64_t rep = 0; rep < reps; ++rep) {
    Configure(e, 16, scratch + "/cache" + std::to_string(rep));
    for (int pass = 0; pass < 2; ++pass) {
      const auto t0 = Clock::now();
      std::unique_ptr<Dataset> ds = Dataset::Open(DatasetUrl(e));
      const double ms = SecondsSince(t0) * 1e3;
      const RemoteInfo info = *GetRemoteInfo(*ds);
      if (info.partitioned) Die("open measures the whole snapshot: push it with --layout whole");
      if (info.snapshot_downloaded != (pass == 0)) Die("the cache did not behave as expected");
      (pass == 0 ? first_ms : again_ms).push_back(ms);
      (pass == 0 ? first_bytes : again_bytes).push_back(static_cast<double>(info.bytes_received));
      (pass == 0 ? first_requests : again_requests).push_back(static_cast<double>(info.requests));
      snapshot_bytes = info.snapshot_bytes;
      videos = ds->Count();
    }
    const auto t0 = Clock::now();
    std::unique_ptr<Dataset> local = Dataset::Open(dataset_dir);
    local_ms.push_back(SecondsSince(t0) * 1e3);
    Log("rep %llu: first open %.1f ms, re-open %.2f ms, local open %.2f ms",
        static_cast<unsigned long long>(rep), first_ms.back(), again_ms.back(), local_ms.back());
  }
  RemoveTree(scratch);
  Json first, again, local;
  first.Stats("ms", first_ms).Stats("bytes", first_bytes).Stats("requests", first_requests);
  again.Stats("ms", again_ms).Stats("bytes", again_bytes).Stats("requests", again_requests);
  local.Stats("ms", local_ms);
  Json json;
  json.String("benchmark", "remote_open")
      .String("url", DatasetUrl(e))
      .Integer("videos", static_cast<int64_t>(videos))
      .Integer("snapshot_bytes", static_cast<int64_t>(snapshot_bytes))
      .Object("first_open", first)
      .Object("reopen", again)
      .Object("local_open", local);
  return json;
}

int RunSmoke() {
  test::S3rverServer server;
  const std::string root = ScratchDir("remote_read_bench_smoke");
  RemoveTree(root);
  if (::mkdir(root.c_str(), 0755) != 0) Die("mkdir " + root);
  const std::string dir = root + "/ds", clips = root + "/clips.tsv";
  {
    std::vector<uint8_t> rgb(32 * 24 * 3, 100);
    CreateOptions create;
    create.videos_per_chunk = 3;
    std::unique_ptr<Dataset> ds = Dataset::Create(dir, create);
    std::unique_ptr<Writer> w = ds->NewWriter();
    std::string lines;
    for (int v = 0; v < 8; ++v) {
      std::vector<std::string> jpegs;
      for (int f = 0; f < 18; ++f) {
        rgb[static_cast<size_t>(f)] = static_cast<uint8_t>(v * 18 + f);
        jpegs.push_back(ThreadLocalEncoder().Encode(rgb.data(), 32, 24, 3));
      }
      w->Append(VideoId(static_cast<uint64_t>(v)),
                std::vector<std::string_view>(jpegs.begin(), jpegs.end()));
      lines += VideoId(static_cast<uint64_t>(v)) + "\t" + std::to_string(v % 3) + "\t16\n";
    }
    w->Commit();
    WriteWholeFile(clips, lines);
  }
  Endpoint e{server.endpoint(), server.bucket(), "smoke", false};
  Configure(e, 4, root + "/cache");
  // `open` measures the whole snapshot (bench/run_remote.py pushes it so);
  // partitioned snapshots are bench/partition_bench.py's.
  PushOptions whole;
  whole.layout = IndexLayout::kWhole;
  Push(dir, DatasetUrl(e), whole);
  RunClips(dir, clips, e, 4, 2, 4, 4, 1).Print();
  RunOpen(dir, e, 1).Print();
  RemoveTree(root);
  return 0;
}

int Main(int argc, char** argv) {
  SetProgramName("remote_read_bench");
  const std::string usage =
      "clips --dataset D --clips FILE --endpoint URL --bucket B --prefix P [--batch 64] "
      "[--batches 5] [--sequential 64] [--connections 16] [--reps 3] [--anonymous] | open "
      "--dataset D --endpoint URL --bucket B --prefix P [--reps 5] [--anonymous] | --smoke";
  if (argc >= 2 && std::string(argv[1]) == "--smoke") return RunSmoke();
  if (argc < 2) {
    Options(argc, argv, 1, usage).Usage("a mode is needed");
  }
  const std::string mode = argv[1];
  Options opt(argc, argv, 2, usage);
  Endpoint e;
  const std::string dataset = opt.Required("dataset");
  e.url = opt.Required("endpoint");
  e.bucket = opt.Required("bucket");
  e.prefix = opt.Required("prefix");
  e.anonymous = opt.Flag("anonymous");
  if (mode == "clips") {
    const std::string clips = opt.Required("clips");
    const uint64_t batch = opt.Uint("batch", 64);
    const uint64_t batches = opt.Uint("batches", 5);
    const uint64_t sequential = opt.Uint("sequential", 64);
    const uint64_t connections = opt.Uint("connections", 16);
    const uint64_t reps = opt.Uint("reps", 3);
    opt.Finish();
    if (batch == 0 || batches == 0 || connections == 0 || reps == 0 || sequential == 0 ||
        sequential > batch * batches) {
      opt.Usage("counts must be positive, and --sequential at most batch * batches");
    }
    RunClips(dataset, clips, e, batch, batches, sequential, connections, reps).Print();
    return 0;
  }
  if (mode == "open") {
    const uint64_t reps = opt.Uint("reps", 5);
    opt.Finish();
    RunOpen(dataset, e, reps == 0 ? 1 : reps).Print();
    return 0;
  }
  opt.Usage("unknown mode " + mode);
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  try {
    return gulpdb::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
