// CRC-32C throughput of each path of util/crc32c.h against the loops it
// replaced, measured in the same run (bench/README.md, "CRC-32C"):
//
//   table_bytewise   one table lookup per byte (the portable path before)
//   sse42_1stream    the crc32 instruction over 8 bytes at a time, one chain
//                    (the SSE4.2 path before: each instruction waits for the
//                    previous one's result)
//   portable         util::Crc32cPortable: slicing-by-8
//   sse42_3streams   util::Crc32cHardware: three chains over three blocks,
//                    joined with shift-by-zeros tables
//
// over buffers of 1 KiB, 16 KiB (a JPEG frame), 256 KiB (a 16-frame clip)
// and 4 MiB (past the L2 cache), each method on the same buffer in turn, for
// several rounds; GB per second of wall time and per CPU-second (which other
// load on a shared machine disturbs much less) per method and size (median,
// min, max).
//
//   crc32c_bench [--sizes 1024,16384,...] [--rounds R] [--bytes B] | --smoke
//
// Every method's checksum of every buffer is compared with the others' first
// (a wrong fast path is never measured).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "util/crc32c.h"

namespace gulpdb::bench {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78;

uint32_t TableBytewise(const void* data, size_t size, uint32_t crc) {
  static const std::vector<uint32_t> table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ kPolynomial : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Sse42OneStream(const void* data, size_t size,
                                                          uint32_t crc32) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t crc = ~crc32;
  for (; size >= 8; p += 8, size -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = __builtin_ia32_crc32di(crc, word);
  }
  uint32_t c = static_cast<uint32_t>(crc);
  for (; size > 0; ++p, --size) c = __builtin_ia32_crc32qi(c, *p);
  return ~c;
}
#endif

struct Method {
  std::string name;
  std::function<uint32_t(const void*, size_t, uint32_t)> fn;
};

int Run(int argc, char** argv) {
  const std::string usage = "crc32c_bench [--sizes N,N,...] [--rounds R] [--bytes B] | --smoke";
  const bool smoke = argc >= 2 && std::string(argv[1]) == "--smoke";
  Options opt(argc, argv, smoke ? 2 : 1, usage);
  const std::vector<uint64_t> sizes =
      opt.UintList("sizes", smoke ? std::vector<uint64_t>{1024, 16384}
                                  : std::vector<uint64_t>{1024, 16384, 262144, 4194304});
  const uint64_t rounds = std::max<uint64_t>(1, opt.Uint("rounds", smoke ? 2 : 9));
  // Bytes checksummed per method, size and round (many passes over a small
  // buffer, so that each timing is long enough to read).
  const uint64_t bytes_per_round =
      std::max<uint64_t>(1, opt.Uint("bytes", smoke ? 1 << 20 : 256 << 20));
  opt.Finish();
  if (sizes.empty()) opt.Usage("--sizes is empty");
  for (uint64_t s : sizes) {
    if (s == 0 || s > (uint64_t{1} << 30)) opt.Usage("a size must be 1 .. 2^30 bytes");
  }

  std::vector<Method> methods;
  methods.push_back({"table_bytewise", TableBytewise});
  methods.push_back({"portable", util::Crc32cPortable});
#if defined(__x86_64__)
  if (util::Crc32cUsesHardware()) {
    methods.push_back({"sse42_1stream", Sse42OneStream});
    methods.push_back({"sse42_3streams", util::Crc32cHardware});
  }
#endif
  std::mt19937_64 rng(20261207);
  Json results;
  std::vector<Json> rows;
  for (uint64_t size : sizes) {
    // Offset by 3 bytes, as frames inside a chunk buffer are.
    std::vector<uint8_t> buffer(size + 3);
    for (uint8_t& b : buffer) b = static_cast<uint8_t>(rng());
    const uint8_t* data = buffer.data() + 3;
    const uint32_t want = methods.front().fn(data, size, 0);
    for (const Method& m : methods) {
      if (m.fn(data, size, 0) != want) Die(m.name + " gives another checksum");
    }
    const uint64_t passes = std::max<uint64_t>(1, bytes_per_round / size);
    std::vector<std::vector<double>> gbps(methods.size()), gb_per_cpu_s(methods.size());
    volatile uint32_t sink = 0;
    for (uint64_t r = 0; r < rounds + 1; ++r) {  // round 0 warms up
      for (size_t i = 0; i < methods.size(); ++i) {
        const double cpu = ProcessCpuSeconds();
        const auto start = Clock::now();
        uint32_t crc = 0;
        for (uint64_t p = 0; p < passes; ++p) crc ^= methods[i].fn(data, size, 0);
        const double seconds = SecondsSince(start);
        const double cpu_seconds = ProcessCpuSeconds() - cpu;
        sink = sink ^ crc;
        if (r == 0) continue;
        const double gb = static_cast<double>(passes * size) / 1e9;
        gbps[i].push_back(gb / seconds);
        gb_per_cpu_s[i].push_back(gb / std::max(cpu_seconds, 1e-9));
      }
    }
    Json row;
    row.Integer("bytes", static_cast<int64_t>(size));
    Json wall, cpu;
    for (size_t i = 0; i < methods.size(); ++i) {
      const Summary s = Summarize(gb_per_cpu_s[i]);
      const Summary w = Summarize(gbps[i]);
      Log("%8llu B  %-16s %7.2f GB per CPU-second (min %.2f, max %.2f); %.2f GB/s",
          static_cast<unsigned long long>(size), methods[i].name.c_str(), s.median, s.min, s.max,
          w.median);
      wall.Stats(methods[i].name, gbps[i]);
      cpu.Stats(methods[i].name, gb_per_cpu_s[i]);
    }
    row.Object("gb_per_s", wall).Object("gb_per_cpu_s", cpu);
    rows.push_back(row);
  }
  results.String("benchmark", "crc32c")
      .Boolean("sse42", util::Crc32cUsesHardware())
      .Integer("rounds", static_cast<int64_t>(rounds))
      .Objects("sizes", rows);
  results.Print();
  return 0;
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("crc32c_bench");
  try {
    return gulpdb::bench::Run(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
