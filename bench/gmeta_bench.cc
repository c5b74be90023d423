// .gmeta reading: gulpdb's streaming reader against whole-document parsers.
//
//   gmeta_bench [--size-mb N] [--smoke] [--json PATH] [--dir DIR] [--block-kb K]
//               [--repeat R] [--methods a,b,...] [--keep]
//
// Generates a synthetic .gmeta of about N MB (default 1024) with GmetaWriter:
// entries like GulpIO2's (numeric ids, 30-60 [offset, pad, length] triples,
// meta_data with an id, a label, a template and a few fields; ~2% of labels
// carry \u escapes). It holds no NaN or integers above 2**64 so that every
// alternative can parse it.
//
// Then measures each method in a fresh child process (this program re-run
// with --measure), so that peak memory (VmHWM) counts only what that method
// needed, not the generator's buffers. Methods:
//   read_only          read(2) of the whole file in blocks: the I/O ceiling
//   gulpdb             GmetaReader (streaming, validating, Python dialect)
//   gulpdb_normalize   the same plus NormalizeJson on every meta_data
//   simdjson_ondemand  padded_string::load + On-Demand, ids, frame_info, raw meta text
//   simdjson_dom       padded_string::load + DOM parse, meta re-serialized (minify)
//   rapidjson_sax      RapidJSON SAX over a 64 KiB FileReadStream, NaN/Inf and
//                      numbers-as-strings flags, meta re-serialized by a Writer
//                      (when RapidJSON's headers are available)
// Every method extracts the same things and the counts and a checksum over
// all frame_info numbers must agree, or the run fails. Each method runs R
// times (default 3); the best wall time is reported, and next to it the CPU
// time of that run (user + system), which other load on the machine disturbs
// less than wall time.
//
// Targets for gulpdb: >= 200 MB/s and peak memory < 25% of the file size.
// The file is freshly written, so reads come from the page cache: these are
// parser figures, not disk figures. Timings are reported, never asserted.
//
// --smoke: a ~1 MB file, all methods, agreement checked, well under a second.
#include <fcntl.h>
#include <simdjson.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#if __has_include(<rapidjson/reader.h>)
#include <rapidjson/filereadstream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#define GULPDB_BENCH_HAVE_RAPIDJSON 1
#else
#define GULPDB_BENCH_HAVE_RAPIDJSON 0
#endif

#include "engine/gulpio/gmeta.h"
#include "engine/json/json_text.h"

extern char** environ;

namespace {

using gulpdb::FrameInfo;
using gulpdb::engine::GmetaEntry;
using gulpdb::engine::GmetaReader;
using gulpdb::engine::GmetaReadOptions;
using gulpdb::engine::GmetaWriter;

// simdjson compiles On-Demand for one kernel, picked from this translation
// unit's target flags (the same test as simdjson.h's own).
#if SIMDJSON_CAN_ALWAYS_RUN_ICELAKE
constexpr const char* kOnDemandKernel = "icelake";
#elif SIMDJSON_CAN_ALWAYS_RUN_HASWELL
constexpr const char* kOnDemandKernel = "haswell";
#elif SIMDJSON_CAN_ALWAYS_RUN_WESTMERE
constexpr const char* kOnDemandKernel = "westmere";
#else
constexpr const char* kOnDemandKernel = "fallback";
#endif

constexpr double kTargetMbPerSecond = 200.0;
constexpr double kTargetPeakRatio = 0.25;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "gmeta_bench: %s\n", message.c_str());
  std::exit(1);
}

double CpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// This process's peak resident set (VmHWM), in bytes.
uint64_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// What every method extracts, to check they agree.
struct Tally {
  uint64_t entries = 0;
  uint64_t frames = 0;
  uint64_t id_bytes = 0;
  uint64_t meta_bytes = 0;
  uint64_t checksum = 0;     // over every frame_info number, order-sensitive
  double load_seconds = 0;   // whole-document methods: reading the file into memory
  double parse_seconds = 0;  // DOM: building the tree, before walking it

  void AddFrame(uint64_t offset, uint64_t pad, uint64_t length) {
    ++frames;
    checksum = checksum * 1000003 + offset;
    checksum = checksum * 1000003 + pad;
    checksum = checksum * 1000003 + length;
  }
};

// ---------------------------------------------------------------------------
// Generation

const char* const kVerbs[] = {"Pushing", "Pulling", "Moving", "Dropping", "Holding",
                              "Turning", "Putting", "Taking", "Lifting",  "Tearing"};
const char* const kObjects[] = {"a cup",   "a pen",    "a box", "paper",  "a bottle",
                                "a phone", "a remote", "keys",  "a book", "a spoon"};
const char* const kWhere[] = {"from left to right", "from right to left",     "onto a table",
                              "into a drawer",      "behind a chair",         "upside down",
                              "next to a glass",    "without letting it drop"};

size_t Digits(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

uint64_t Generate(const std::string& path, uint64_t target_bytes, double* write_seconds) {
  std::mt19937_64 rng(42);
  GmetaWriter writer(path);
  const auto start = std::chrono::steady_clock::now();
  uint64_t expected_bytes = 2;
  uint64_t video = 100000;
  uint64_t offset = 0;
  std::vector<FrameInfo> frames;
  std::string meta;
  while (expected_bytes < target_bytes) {
    const std::string id = std::to_string(video++);
    frames.clear();
    const size_t n = 30 + rng() % 31;
    for (size_t i = 0; i < n; ++i) {
      const auto jpeg = static_cast<uint32_t>(2000 + rng() % 18000);
      const uint32_t pad = gulpdb::PadFor(jpeg);
      frames.push_back(FrameInfo{offset, pad, jpeg + pad});
      offset += jpeg + pad;
    }
    const char* verb = kVerbs[rng() % std::size(kVerbs)];
    const char* object = kObjects[rng() % std::size(kObjects)];
    const char* where = kWhere[rng() % std::size(kWhere)];
    std::string label = std::string(verb) + " " + object + " " + where;
    if (rng() % 50 == 0) label += " (caf\\u00e9 \\u2713)";
    meta = "[{\"id\": \"" + id + "\", \"label\": \"" + label + "\", \"template\": \"" + verb +
           " [something] " + where + "\", \"placeholders\": [\"" + object +
           "\"], \"idx\": " + std::to_string(rng() % 174) +
           ", \"fps\": 12.5, \"width\": 427, \"height\": 240}]";
    writer.Add(id, frames, meta);
    // The exact size of what Add wrote: ", " "<id>" ': {"frame_info": [' ...
    // '], "meta_data": ' <meta> '}'.
    expected_bytes +=
        (writer.entry_count() > 1 ? 2 : 0) + id.size() + 2 + 18 + 16 + meta.size() + 1;
    for (const FrameInfo& f : frames) {
      expected_bytes += 6 + Digits(f.offset) + Digits(f.pad) + Digits(f.length);
    }
    expected_bytes += 2 * (frames.size() - 1);
  }
  writer.Commit();
  *write_seconds = Seconds(start);
  const uint64_t size = std::filesystem::file_size(path);
  if (size != expected_bytes)
    Die("generated " + std::to_string(size) + " bytes, expected " + std::to_string(expected_bytes));
  return size;
}

// ---------------------------------------------------------------------------
// Methods (run in a child process)

Tally MeasureReadOnly(const std::string& path, size_t block) {
  Tally tally;
  std::vector<char> buf(block);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Die("open " + path);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) Die("read " + path);
    if (n == 0) break;
    tally.meta_bytes += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return tally;
}

Tally MeasureGulpdb(const std::string& path, size_t block, bool normalize) {
  Tally tally;
  GmetaReader reader(path, GmetaReadOptions{block});
  GmetaEntry entry;
  while (reader.Next(&entry)) {
    ++tally.entries;
    tally.id_bytes += entry.id.size();
    for (const FrameInfo& f : entry.frame_info) tally.AddFrame(f.offset, f.pad, f.length);
    if (normalize) {
      tally.meta_bytes += gulpdb::engine::NormalizeJson(entry.meta_data).size();
    } else {
      tally.meta_bytes += entry.meta_data.size();
    }
  }
  return tally;
}

Tally MeasureSimdjsonOnDemand(const std::string& path) {
  Tally tally;
  const auto start = std::chrono::steady_clock::now();
  const simdjson::padded_string json = simdjson::padded_string::load(path).value();
  tally.load_seconds = Seconds(start);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc = parser.iterate(json).value();
  std::string id;
  std::string meta;
  for (auto field : doc.get_object()) {
    id = std::string_view(field.unescaped_key().value());
    ++tally.entries;
    tally.id_bytes += id.size();
    for (auto member : field.value().get_object()) {
      const std::string_view key = member.unescaped_key().value();
      if (key == "frame_info") {
        for (auto triple : member.value().get_array()) {
          uint64_t v[3] = {0, 0, 0};
          size_t i = 0;
          for (auto number : triple.get_array()) {
            if (i < 3) v[i] = number.get_uint64().value();
            ++i;
          }
          if (i != 3) Die("simdjson: bad triple");
          tally.AddFrame(v[0], v[1], v[2]);
        }
      } else if (key == "meta_data") {
        simdjson::ondemand::array list = member.value().get_array().value();
        meta = std::string_view(list.raw_json().value());
        tally.meta_bytes += meta.size();
      } else {
        Die("simdjson: unknown key");
      }
    }
  }
  return tally;
}

Tally MeasureSimdjsonDom(const std::string& path) {
  Tally tally;
  auto start = std::chrono::steady_clock::now();
  const simdjson::padded_string json = simdjson::padded_string::load(path).value();
  tally.load_seconds = Seconds(start);
  start = std::chrono::steady_clock::now();
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parser.parse(json).value();
  tally.parse_seconds = Seconds(start);
  std::string id;
  std::string meta;
  const simdjson::dom::object root = doc.get_object().value();
  for (const auto field : root) {
    id = std::string(field.key);
    ++tally.entries;
    tally.id_bytes += id.size();
    const simdjson::dom::object entry = field.value.get_object().value();
    const simdjson::dom::array frame_info = entry["frame_info"].get_array().value();
    for (const auto triple : frame_info) {
      const simdjson::dom::array t = triple.get_array().value();
      if (t.size() != 3) Die("simdjson dom: bad triple");
      tally.AddFrame(t.at(0).get_uint64().value(), t.at(1).get_uint64().value(),
                     t.at(2).get_uint64().value());
    }
    meta = simdjson::minify(entry["meta_data"].value());
    tally.meta_bytes += meta.size();
  }
  return tally;
}

#if GULPDB_BENCH_HAVE_RAPIDJSON
// Rebuilds the same entries from SAX events. meta_data can only be
// re-serialized (RapidJSON's own formatting), never captured verbatim.
class SaxHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, SaxHandler> {
 public:
  explicit SaxHandler(Tally* tally) : tally_(tally), writer_(meta_) {}

  bool Key(const char* s, rapidjson::SizeType n, bool /*copy*/) {
    if (in_meta_) return writer_.Key(s, n);
    if (depth_ == 1) {
      id_.assign(s, n);
      ++tally_->entries;
      tally_->id_bytes += id_.size();
    } else if (depth_ == 2) {
      field_ = std::string_view(s, n) == "frame_info"  ? Field::kFrameInfo
               : std::string_view(s, n) == "meta_data" ? Field::kMetaData
                                                       : Field::kOther;
      if (field_ == Field::kOther) return false;
    }
    return true;
  }
  bool StartObject() { return Open(true); }
  bool EndObject(rapidjson::SizeType /*members*/) { return Close(true); }
  bool StartArray() { return Open(false); }
  bool EndArray(rapidjson::SizeType /*elements*/) { return Close(false); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool /*copy*/) {
    if (in_meta_) return writer_.RawValue(s, n, rapidjson::kNumberType);
    if (field_ != Field::kFrameInfo || depth_ != 4 || triple_size_ >= 3) return false;
    uint64_t v = 0;
    const auto result = std::from_chars(s, s + n, v);
    if (result.ec != std::errc() || result.ptr != s + n) return false;
    triple_[triple_size_++] = v;
    return true;
  }
  bool Double(double d) { return in_meta_ && writer_.Double(d); }  // NaN, Infinity
  bool String(const char* s, rapidjson::SizeType n, bool /*copy*/) {
    return in_meta_ && writer_.String(s, n);
  }
  bool Bool(bool b) { return in_meta_ && writer_.Bool(b); }
  bool Null() { return in_meta_ && writer_.Null(); }
  bool Default() { return false; }

 private:
  enum class Field { kNone, kFrameInfo, kMetaData, kOther };

  bool Open(bool object) {
    ++depth_;
    if (depth_ == 3 && field_ == Field::kMetaData && !object) {
      in_meta_ = true;
      meta_.Clear();
      writer_.Reset(meta_);
    }
    if (in_meta_) return object ? writer_.StartObject() : writer_.StartArray();
    if (depth_ == 4 && field_ == Field::kFrameInfo) triple_size_ = 0;
    return true;
  }
  bool Close(bool object) {
    bool ok = true;
    if (in_meta_) {
      ok = object ? writer_.EndObject() : writer_.EndArray();
      if (depth_ == 3) {
        in_meta_ = false;
        tally_->meta_bytes += meta_.GetSize();
      }
    } else if (depth_ == 4 && field_ == Field::kFrameInfo) {
      if (triple_size_ != 3) return false;
      tally_->AddFrame(triple_[0], triple_[1], triple_[2]);
    }
    --depth_;
    return ok;
  }

  Tally* tally_;
  int depth_ = 0;
  Field field_ = Field::kNone;
  bool in_meta_ = false;
  std::string id_;
  uint64_t triple_[3] = {0, 0, 0};
  size_t triple_size_ = 0;
  rapidjson::StringBuffer meta_;
  rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::ASCII<>,
                    rapidjson::CrtAllocator, rapidjson::kWriteNanAndInfFlag>
      writer_;
};

Tally MeasureRapidjson(const std::string& path) {
  Tally tally;
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) Die("open " + path);
  std::vector<char> buf(64 << 10);
  rapidjson::FileReadStream stream(file, buf.data(), buf.size());
  SaxHandler handler(&tally);
  rapidjson::Reader reader;
  constexpr unsigned kFlags = rapidjson::kParseNanAndInfFlag |
                              rapidjson::kParseNumbersAsStringsFlag |
                              rapidjson::kParseValidateEncodingFlag;
  const rapidjson::ParseResult ok = reader.Parse<kFlags>(stream, handler);
  std::fclose(file);
  if (!ok) Die("rapidjson: parse error at " + std::to_string(ok.Offset()));
  return tally;
}
#endif

std::vector<std::string> AvailableMethods() {
  std::vector<std::string> methods = {"read_only", "gulpdb", "gulpdb_normalize",
                                      "simdjson_ondemand", "simdjson_dom"};
#if GULPDB_BENCH_HAVE_RAPIDJSON
  methods.push_back("rapidjson_sax");
#endif
  return methods;
}

// Child side: runs one method and prints one line of key=value figures.
int RunMeasurement(const std::string& method, const std::string& path, size_t block) {
  const uint64_t baseline = PeakRssBytes();
  const double cpu_start = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  Tally tally;
  try {
    if (method == "read_only") {
      tally = MeasureReadOnly(path, block);
    } else if (method == "gulpdb") {
      tally = MeasureGulpdb(path, block, false);
    } else if (method == "gulpdb_normalize") {
      tally = MeasureGulpdb(path, block, true);
    } else if (method == "simdjson_ondemand") {
      tally = MeasureSimdjsonOnDemand(path);
    } else if (method == "simdjson_dom") {
      tally = MeasureSimdjsonDom(path);
#if GULPDB_BENCH_HAVE_RAPIDJSON
    } else if (method == "rapidjson_sax") {
      tally = MeasureRapidjson(path);
#endif
    } else {
      Die("unknown method " + method);
    }
  } catch (const std::exception& e) {
    Die(method + ": " + e.what());
  }
  const double seconds = Seconds(start);
  const double cpu_seconds = CpuSeconds() - cpu_start;
  std::printf(
      "load_seconds=%.6f parse_seconds=%.6f seconds=%.6f cpu_seconds=%.6f peak=%llu baseline=%llu "
      "entries=%llu frames=%llu checksum=%llu "
      "meta_bytes=%llu\n",
      tally.load_seconds, tally.parse_seconds, seconds, cpu_seconds,
      static_cast<unsigned long long>(PeakRssBytes()), static_cast<unsigned long long>(baseline),
      static_cast<unsigned long long>(tally.entries), static_cast<unsigned long long>(tally.frames),
      static_cast<unsigned long long>(tally.checksum),
      static_cast<unsigned long long>(tally.meta_bytes));
  return 0;
}

// ---------------------------------------------------------------------------
// Parent side

struct Result {
  std::string method;
  double seconds = 0;
  double cpu_seconds = 0;
  double load_seconds = 0;
  double parse_seconds = 0;
  uint64_t peak = 0;
  uint64_t baseline = 0;
  uint64_t entries = 0;
  uint64_t frames = 0;
  uint64_t checksum = 0;
};

// Runs this program again with `args`; returns what it printed.
std::string RunChild(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe(fds) != 0) Die("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) Die("posix_spawn failed");
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die(args[2] + " failed");
  return out;
}

Result Measure(const std::string& method, const std::string& path, size_t block) {
  const std::string out = RunChild({"gmeta_bench", "--measure", method, "--file", path,
                                    "--block-kb", std::to_string(block >> 10)});
  std::map<std::string, std::string> kv;
  std::istringstream in(out);
  std::string token;
  while (in >> token) {
    const size_t eq = token.find('=');
    if (eq != std::string::npos) kv[token.substr(0, eq)] = token.substr(eq + 1);
  }
  if (kv.count("seconds") == 0) Die(method + ": no figures in output: " + out);
  Result r;
  r.method = method;
  r.seconds = std::stod(kv["seconds"]);
  r.cpu_seconds = std::stod(kv["cpu_seconds"]);
  r.load_seconds = std::stod(kv["load_seconds"]);
  r.parse_seconds = std::stod(kv["parse_seconds"]);
  r.peak = std::stoull(kv["peak"]);
  r.baseline = std::stoull(kv["baseline"]);
  r.entries = std::stoull(kv["entries"]);
  r.frames = std::stoull(kv["frames"]);
  r.checksum = std::stoull(kv["checksum"]);
  return r;
}

struct Config {
  uint64_t size_mb = 1024;
  bool smoke = false;
  bool keep = false;
  std::string json_path;
  std::string dir;
  size_t block = size_t{1} << 20;
  int repeat = 3;
  std::vector<std::string> methods;
};

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> parts;
  std::stringstream in(list);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

int RunBenchmark(const Config& config) {
  const std::string dir =
      config.dir.empty() ? std::filesystem::temp_directory_path().string() : config.dir;
  const std::string path = dir + "/gmeta_bench_" + std::to_string(::getpid()) + ".gmeta";
  const uint64_t target = config.smoke ? (uint64_t{1} << 20) : config.size_mb << 20;

  double write_seconds = 0;
  const uint64_t file_bytes = Generate(path, target, &write_seconds);
  const double file_mb = static_cast<double>(file_bytes) / 1e6;
  std::printf("file %s: %.1f MB (%llu bytes); GmetaWriter wrote it at %.0f MB/s\n", path.c_str(),
              file_mb, static_cast<unsigned long long>(file_bytes), file_mb / write_seconds);
  std::printf(
      "simdjson %d.%d.%d: DOM runs the '%s' kernel (chosen at run time); On-Demand was "
      "compiled for '%s'\n",
      simdjson::SIMDJSON_VERSION_MAJOR, simdjson::SIMDJSON_VERSION_MINOR,
      simdjson::SIMDJSON_VERSION_REVISION, simdjson::get_active_implementation()->name().c_str(),
      kOnDemandKernel);
  std::printf("%-18s %8s %8s %10s %12s %12s %12s %10s\n", "method", "wall s", "cpu s", "MB/s",
              "MB/cpu-s", "peak RSS MB", "above base", "peak/file");

  std::vector<Result> results;
  bool agree = true;
  const Result* reference = nullptr;
  const int repeat = config.smoke ? 1 : std::max(1, config.repeat);
  for (const std::string& method : config.methods) {
    Result best = Measure(method, path, config.block);
    for (int i = 1; i < repeat; ++i) {
      Result r = Measure(method, path, config.block);
      if (r.seconds < best.seconds) best = r;
    }
    results.push_back(best);
  }
  for (const Result& r : results) {
    const double mbps = file_mb / r.seconds;
    const double ratio = static_cast<double>(r.peak) / static_cast<double>(file_bytes);
    std::printf("%-18s %8.3f %8.3f %10.1f %12.1f %12.1f %12.1f %9.2f%%\n", r.method.c_str(),
                r.seconds, r.cpu_seconds, mbps, file_mb / r.cpu_seconds,
                static_cast<double>(r.peak) / 1e6,
                static_cast<double>(r.peak - std::min(r.peak, r.baseline)) / 1e6, 100 * ratio);
    if (r.load_seconds > 0) {
      std::printf(
          "  %s: %.3f s of it loading the file into memory%s\n", r.method.c_str(), r.load_seconds,
          r.parse_seconds > 0
              ? (", " + std::to_string(r.parse_seconds) + " s parsing, the rest walking").c_str()
              : "");
    }
    if (r.method == "read_only") continue;
    if (reference == nullptr) {
      reference = &r;
    } else if (r.entries != reference->entries || r.frames != reference->frames ||
               r.checksum != reference->checksum) {
      std::printf("  MISMATCH: %s saw %llu entries / %llu frames, %s saw %llu / %llu\n",
                  r.method.c_str(), static_cast<unsigned long long>(r.entries),
                  static_cast<unsigned long long>(r.frames), reference->method.c_str(),
                  static_cast<unsigned long long>(reference->entries),
                  static_cast<unsigned long long>(reference->frames));
      agree = false;
    }
  }
  if (reference != nullptr) {
    std::printf("all methods agree: %s (%llu entries, %llu frames)\n", agree ? "yes" : "NO",
                static_cast<unsigned long long>(reference->entries),
                static_cast<unsigned long long>(reference->frames));
  }

  const Result* ours = nullptr;
  for (const Result& r : results) {
    if (r.method == "gulpdb") ours = &r;
  }
  if (ours != nullptr) {
    const double mbps = file_mb / ours->seconds;
    const double ratio = static_cast<double>(ours->peak) / static_cast<double>(file_bytes);
    std::printf(
        "gulpdb: %.0f MB/s wall, %.0f MB per CPU-second (target >= %.0f: %s), peak %.1f MB "
        "= %.2f%% of the file (target < %.0f%%: %s)%s\n",
        mbps, file_mb / ours->cpu_seconds, kTargetMbPerSecond,
        mbps >= kTargetMbPerSecond ? "met" : "NOT met", static_cast<double>(ours->peak) / 1e6,
        100 * ratio, 100 * kTargetPeakRatio, ratio < kTargetPeakRatio ? "met" : "NOT met",
        config.smoke ? " [smoke run: figures meaningless]" : "");
    for (const Result& r : results) {
      if (&r == ours || r.method == "read_only") continue;
      std::printf("  vs %-18s speed x%.2f, peak memory x%.2f\n", r.method.c_str(),
                  r.seconds / ours->seconds,
                  static_cast<double>(r.peak) / static_cast<double>(ours->peak));
    }
  }

  if (!config.json_path.empty()) {
    std::ofstream out(config.json_path);
    out << "{\"benchmark\": \"gmeta_read\", \"smoke\": " << (config.smoke ? "true" : "false")
        << ", \"file_bytes\": " << file_bytes << ", \"block_bytes\": " << config.block
        << ", \"writer_mb_per_s\": " << file_mb / write_seconds
        << ", \"targets\": {\"mb_per_s\": " << kTargetMbPerSecond
        << ", \"peak_ratio\": " << kTargetPeakRatio << "}, \"results\": [";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      out << (i ? ", " : "") << "{\"method\": \"" << r.method << "\", \"seconds\": " << r.seconds
          << ", \"cpu_seconds\": " << r.cpu_seconds << ", \"load_seconds\": " << r.load_seconds
          << ", \"parse_seconds\": " << r.parse_seconds << ", \"mb_per_s\": " << file_mb / r.seconds
          << ", \"peak_rss_bytes\": " << r.peak << ", \"baseline_rss_bytes\": " << r.baseline
          << ", \"peak_ratio\": " << static_cast<double>(r.peak) / static_cast<double>(file_bytes)
          << ", \"entries\": " << r.entries << ", \"frames\": " << r.frames << "}";
    }
    out << "], \"agree\": " << (agree ? "true" : "false") << "}\n";
    if (!out) Die("cannot write " + config.json_path);
  }
  if (!config.keep) std::filesystem::remove(path);
  return agree ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  std::string measure;
  std::string file;
  std::string methods;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--size-mb") {
      config.size_mb = std::stoull(value());
    } else if (arg == "--smoke") {
      config.smoke = true;
    } else if (arg == "--keep") {
      config.keep = true;
    } else if (arg == "--json") {
      config.json_path = value();
    } else if (arg == "--dir") {
      config.dir = value();
    } else if (arg == "--block-kb") {
      config.block = std::max<size_t>(1, std::stoull(value())) << 10;
    } else if (arg == "--repeat") {
      config.repeat = std::stoi(value());
    } else if (arg == "--methods") {
      methods = value();
    } else if (arg == "--measure") {
      measure = value();
    } else if (arg == "--file") {
      file = value();
    } else {
      Die("unknown argument " + arg +
          " (usage: gmeta_bench [--size-mb N] [--smoke] [--json PATH] [--dir DIR] "
          "[--block-kb K] [--repeat R] [--methods a,b] [--keep])");
    }
  }
  if (!measure.empty()) return RunMeasurement(measure, file, config.block);
  config.methods = methods.empty() ? AvailableMethods() : Split(methods);
  try {
    return RunBenchmark(config);
  } catch (const std::exception& e) {
    Die(e.what());
  }
}
