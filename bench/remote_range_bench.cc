// Ranged reads from an object store: gulpdb's S3 client against a bare
// libcurl loop, on a local s3rver, in the same run.
//
//   remote_range_bench [--objects 4] [--object-mb 32] [--frame-bytes 12000]
//                      [--frames 16] [--batch 64] [--batches 30]
//                      [--connections 8] [--reps 5]
//   remote_range_bench --smoke
//
// The objects hold random bytes; each read is the bytes of `--frames`
// adjacent frames (sizes drawn around --frame-bytes) at a random place of a
// random object, what one clip of a remote dataset costs. Reads come in
// batches (a DataLoader batch of clips); every batch is issued concurrently
// over at most --connections kept-alive connections.
//
//   gulpdb    S3Client::GetRanges(batch): signed requests, each response
//             checked (status, Content-Range, byte count), retries armed.
//   baseline  one libcurl multi handle driven by hand, with the same number
//             of easy handles reused across batches, the same SigV4 signing
//             (CURLOPT_AWS_SIGV4), the same ranges, bytes copied into the
//             same buffers; it checks nothing.
//
// Both run the same batches, interleaved (gulpdb, baseline, gulpdb, ...)
// after one untimed warm-up pass each, and report requests/s, MB/s and the
// client's CPU time per request (the server, a Node.js process, is usually
// what limits requests/s on one machine; CPU per request shows the client's
// own cost). s3rver comes from scripts/setup.sh.
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/curl_loop.h"
#include "s3/s3_client.h"
#include "tests/harness/s3_server.h"

namespace gulpdb::bench {
namespace {

struct Params {
  uint64_t objects = 4;
  uint64_t object_mb = 32;
  uint64_t frame_bytes = 12000;
  uint64_t frames = 16;
  uint64_t batch = 64;
  uint64_t batches = 30;
  uint64_t connections = 8;
  uint64_t reps = 5;
};

struct Range {
  size_t object = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

std::string ObjectKey(size_t i) { return "bench/object_" + std::to_string(i); }

Json Run(const Params& p) {
  test::S3rverServer server;
  remote::S3Config config;
  config.endpoint = server.endpoint();
  config.credentials.access_key_id = test::S3rverServer::kAccessKey;
  config.credentials.secret_access_key = test::S3rverServer::kSecretKey;
  config.max_connections = static_cast<uint32_t>(p.connections);
  remote::S3Client client(config, server.bucket());

  // The objects.
  const uint64_t object_bytes = p.object_mb << 20;
  std::vector<std::string> objects;
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < p.objects; ++i) {
    std::string data(object_bytes, '\0');
    for (size_t k = 0; k + 8 <= data.size(); k += 8) {
      const uint64_t v = rng();
      std::memcpy(&data[k], &v, 8);
    }
    client.Put(ObjectKey(i), data);
    objects.push_back(std::move(data));
  }

  // The ranges: `frames` frames of sizes around frame_bytes.
  std::normal_distribution<double> frame_size(static_cast<double>(p.frame_bytes),
                                              static_cast<double>(p.frame_bytes) / 4);
  std::vector<std::vector<Range>> batches(p.batches);
  uint64_t total_bytes = 0;
  for (auto& batch : batches) {
    for (size_t i = 0; i < p.batch; ++i) {
      uint64_t length = 0;
      for (size_t f = 0; f < p.frames; ++f) {
        length += static_cast<uint64_t>(std::max(1000.0, frame_size(rng)));
      }
      Range r;
      r.object = rng() % p.objects;
      r.length = std::min(length, object_bytes);
      r.offset = rng() % (object_bytes - r.length + 1);
      batch.push_back(r);
      total_bytes += r.length;
    }
  }
  std::vector<std::string> buffers(p.batch);
  std::vector<char*> out(p.batch);
  uint64_t max_length = 0;
  for (const auto& batch : batches) {
    for (const Range& r : batch) max_length = std::max(max_length, r.length);
  }
  for (size_t i = 0; i < p.batch; ++i) {
    buffers[i].assign(max_length, '\0');
    out[i] = buffers[i].data();
  }

  CurlLoop loop(server.endpoint(), server.bucket(), p.connections, test::S3rverServer::kAccessKey,
                test::S3rverServer::kSecretKey);
  std::vector<std::vector<CurlRange>> curl_batches;
  for (const auto& batch : batches) {
    std::vector<CurlRange>& c = curl_batches.emplace_back();
    for (const Range& r : batch) c.push_back(CurlRange{ObjectKey(r.object), r.offset, r.length});
  }
  const auto run_gulpdb = [&] {
    for (const auto& batch : batches) {
      std::vector<remote::RangeRead> reads;
      for (size_t i = 0; i < batch.size(); ++i) {
        reads.push_back({ObjectKey(batch[i].object), batch[i].offset, batch[i].length, out[i]});
      }
      client.GetRanges(reads);
    }
  };
  const auto run_baseline = [&] {
    for (const auto& batch : curl_batches) loop.Run(batch, out);
  };
  const auto check_last_batch = [&](const char* who) {
    const auto& batch = batches.back();
    for (size_t i = 0; i < batch.size(); ++i) {
      const Range& r = batch[i];
      if (std::memcmp(out[i], objects[r.object].data() + r.offset, r.length) != 0) {
        Die(std::string(who) + ": wrong bytes in range " + std::to_string(i));
      }
    }
  };

  run_gulpdb();  // warm-up: connections, page cache of the server
  check_last_batch("gulpdb");
  run_baseline();
  check_last_batch("baseline");

  const double requests = static_cast<double>(p.batches * p.batch);
  const double mb = static_cast<double>(total_bytes) / 1e6;
  std::vector<double> g_rps, g_mbps, g_cpu, b_rps, b_mbps, b_cpu;
  const uint64_t g_conn_before = client.stats().connections;
  const uint64_t b_conn_before = loop.connections();
  for (uint64_t rep = 0; rep < p.reps; ++rep) {
    for (int method = 0; method < 2; ++method) {
      const double cpu0 = ProcessCpuSeconds();
      const auto t0 = Clock::now();
      if (method == 0) {
        run_gulpdb();
      } else {
        run_baseline();
      }
      const double seconds = SecondsSince(t0);
      const double cpu_us = (ProcessCpuSeconds() - cpu0) * 1e6 / requests;
      (method == 0 ? g_rps : b_rps).push_back(requests / seconds);
      (method == 0 ? g_mbps : b_mbps).push_back(mb / seconds);
      (method == 0 ? g_cpu : b_cpu).push_back(cpu_us);
      Log("rep %llu %s: %.0f requests/s, %.1f MB/s, %.0f us CPU/request",
          static_cast<unsigned long long>(rep), method == 0 ? "gulpdb" : "baseline",
          requests / seconds, mb / seconds, cpu_us);
    }
  }
  check_last_batch("baseline");

  Json params;
  params.Integer("objects", static_cast<int64_t>(p.objects))
      .Integer("object_mb", static_cast<int64_t>(p.object_mb))
      .Integer("frame_bytes", static_cast<int64_t>(p.frame_bytes))
      .Integer("frames_per_range", static_cast<int64_t>(p.frames))
      .Integer("ranges_per_batch", static_cast<int64_t>(p.batch))
      .Integer("batches", static_cast<int64_t>(p.batches))
      .Integer("connections", static_cast<int64_t>(p.connections))
      .Integer("reps", static_cast<int64_t>(p.reps))
      .Number("mean_range_bytes", static_cast<double>(total_bytes) / requests);
  Json gulpdb;
  gulpdb.Stats("requests_per_s", g_rps)
      .Stats("mb_per_s", g_mbps)
      .Stats("cpu_us_per_request", g_cpu)
      .Integer("connections_opened",
               static_cast<int64_t>(client.stats().connections - g_conn_before));
  Json baseline;
  baseline.Stats("requests_per_s", b_rps)
      .Stats("mb_per_s", b_mbps)
      .Stats("cpu_us_per_request", b_cpu)
      .Integer("connections_opened", static_cast<int64_t>(loop.connections() - b_conn_before));
  Json json;
  json.String("benchmark", "remote_range")
      .Object("params", params)
      .Object("gulpdb", gulpdb)
      .Object("baseline_curl_multi", baseline)
      .Number("requests_per_s_x_baseline", Summarize(g_rps).median / Summarize(b_rps).median)
      .Number("cpu_per_request_x_baseline", Summarize(g_cpu).median / Summarize(b_cpu).median);
  return json;
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  using namespace gulpdb::bench;
  SetProgramName("remote_range_bench");
  Options opt(argc, argv, 1,
              "[--objects N] [--object-mb M] [--frame-bytes B] [--frames F] [--batch R] "
              "[--batches K] [--connections C] [--reps N] | --smoke");
  Params p;
  if (opt.Flag("smoke")) {
    p.objects = 2;
    p.object_mb = 2;
    p.batch = 16;
    p.batches = 3;
    p.connections = 4;
    p.reps = 1;
  }
  p.objects = opt.Uint("objects", p.objects);
  p.object_mb = opt.Uint("object-mb", p.object_mb);
  p.frame_bytes = opt.Uint("frame-bytes", p.frame_bytes);
  p.frames = opt.Uint("frames", p.frames);
  p.batch = opt.Uint("batch", p.batch);
  p.batches = opt.Uint("batches", p.batches);
  p.connections = opt.Uint("connections", p.connections);
  p.reps = opt.Uint("reps", p.reps);
  opt.Finish();
  if (p.objects == 0 || p.object_mb == 0 || p.batch == 0 || p.batches == 0 || p.connections == 0 ||
      p.reps == 0 || p.frames == 0) {
    opt.Usage("every count must be at least 1");
  }
  try {
    Run(p).Print();
  } catch (const std::exception& e) {
    Die(e.what());
  }
  return 0;
}
