#include "bench/bench_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"

namespace gulpdb::bench {
namespace {

const char* program_name = "bench";

std::string FormatNumber(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", value);
  return buf;
}

// The entries of directory `path` as full paths, sorted; dies on error.
std::vector<std::string> ChildPaths(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) Die("opendir " + path + ": " + std::strerror(errno));
  std::vector<std::string> children;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") children.push_back(path + "/" + name);
  }
  ::closedir(dir);
  std::sort(children.begin(), children.end());
  return children;
}

// Calls fn(path) for every regular file below `path` (or `path` itself).
template <typename Fn>
void ForEachFile(const std::string& path, Fn&& fn) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) Die("stat " + path + ": " + std::strerror(errno));
  if (S_ISREG(st.st_mode)) {
    fn(path);
    return;
  }
  if (!S_ISDIR(st.st_mode)) return;
  for (const std::string& child : ChildPaths(path)) ForEachFile(child, fn);
}

// The first run of digits in `name`, or UINT64_MAX when it has none.
uint64_t ChunkNumberOf(const std::string& name) {
  const auto first = std::find_if(
      name.begin(), name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (first == name.end()) return UINT64_MAX;
  uint64_t n = 0;
  for (auto it = first; it != name.end() && std::isdigit(static_cast<unsigned char>(*it)); ++it) {
    n = n * 10 + static_cast<uint64_t>(*it - '0');
  }
  return n;
}

}  // namespace

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double ProcessCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void SetProgramName(const char* name) { program_name = name; }

void Die(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_name, message.c_str());
  std::exit(1);
}

void Log(const char* format, ...) {
  std::fprintf(stderr, "%s: ", program_name);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
}

Summary Summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  s.min = values.front();
  s.max = values.back();
  const size_t mid = values.size() / 2;
  s.median = values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  double total = 0;
  for (double v : values) total += v;
  s.mean = total / static_cast<double>(values.size());
  return s;
}

double Percentile(std::vector<double>* values, double p) {
  if (values->empty()) return 0;
  std::sort(values->begin(), values->end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values->size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return (*values)[std::min(index, values->size() - 1)];
}

// ---- Json ----------------------------------------------------------------------

std::string JsonQuote(std::string_view text) { return engine::PythonJsonString(text); }

void Json::Key(std::string_view key) {
  if (!body_.empty()) body_ += ", ";
  body_ += JsonQuote(key);
  body_ += ": ";
}

Json& Json::Number(std::string_view key, double value) {
  Key(key);
  body_ += FormatNumber(value);
  return *this;
}

Json& Json::Integer(std::string_view key, int64_t value) {
  Key(key);
  body_ += std::to_string(value);
  return *this;
}

Json& Json::String(std::string_view key, std::string_view value) {
  Key(key);
  body_ += JsonQuote(value);
  return *this;
}

Json& Json::Boolean(std::string_view key, bool value) {
  Key(key);
  body_ += value ? "true" : "false";
  return *this;
}

Json& Json::Object(std::string_view key, const Json& value) {
  Key(key);
  body_ += value.str();
  return *this;
}

Json& Json::Objects(std::string_view key, const std::vector<Json>& values) {
  Key(key);
  body_ += "[";
  for (size_t i = 0; i < values.size(); ++i) body_ += (i ? ", " : "") + values[i].str();
  body_ += "]";
  return *this;
}

Json& Json::Numbers(std::string_view key, const std::vector<double>& values) {
  Key(key);
  body_ += "[";
  for (size_t i = 0; i < values.size(); ++i) body_ += (i ? ", " : "") + FormatNumber(values[i]);
  body_ += "]";
  return *this;
}

Json& Json::Stats(std::string_view key, const std::vector<double>& values, bool with_values) {
  const Summary s = Summarize(values);
  Json stats;
  stats.Number("median", s.median)
      .Number("min", s.min)
      .Number("max", s.max)
      .Number("mean", s.mean)
      .Integer("count", static_cast<int64_t>(s.count));
  if (with_values) stats.Numbers("values", values);
  return Object(key, stats);
}

std::string Json::str() const { return "{" + body_ + "}"; }

void Json::Print() const {
  std::fputs(str().c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// ---- Options -------------------------------------------------------------------

Options::Options(int argc, char** argv, int first, std::string usage) : usage_(std::move(usage)) {
  for (int i = first; i < argc; ++i) args_.emplace_back(argv[i]);
  used_.assign(args_.size(), false);
  for (const std::string& a : args_) {
    if (a == "--help" || a == "-h") {
      std::printf("usage: %s\n", usage_.c_str());
      std::exit(0);
    }
  }
}

void Options::Usage(const std::string& problem) const {
  std::fprintf(stderr, "%s: %s\nusage: %s\n", program_name, problem.c_str(), usage_.c_str());
  std::exit(2);
}

bool Options::Flag(std::string_view name) {
  const std::string option = "--" + std::string(name);
  bool found = false;
  for (size_t i = 0; i < args_.size(); ++i) {
    if (!used_[i] && args_[i] == option) used_[i] = found = true;
  }
  return found;
}

std::string Options::Str(std::string_view name, std::string fallback) {
  const std::string option = "--" + std::string(name);
  for (size_t i = 0; i < args_.size(); ++i) {
    if (used_[i] || args_[i] != option) continue;
    if (i + 1 >= args_.size()) Usage("missing value after " + option);
    used_[i] = used_[i + 1] = true;
    return args_[i + 1];
  }
  return fallback;
}

std::string Options::Required(std::string_view name) {
  const std::string value = Str(name, "");
  if (value.empty()) Usage("--" + std::string(name) + " is required");
  return value;
}

uint64_t Options::Uint(std::string_view name, uint64_t fallback) {
  const std::string text = Str(name, "");
  if (text.empty()) return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0' || text[0] == '-') Usage("--" + std::string(name) + ": not a count: " + text);
  return value;
}

double Options::Double(std::string_view name, double fallback) {
  const std::string text = Str(name, "");
  if (text.empty()) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (*end != '\0') Usage("--" + std::string(name) + ": not a number: " + text);
  return value;
}

std::vector<uint64_t> Options::UintList(std::string_view name, std::vector<uint64_t> fallback) {
  const std::string text = Str(name, "");
  if (text.empty()) return fallback;
  std::vector<uint64_t> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0') Usage("--" + std::string(name) + ": bad list " + text);
    out.push_back(value);
  }
  return out;
}

void Options::Finish() {
  for (size_t i = 0; i < args_.size(); ++i) {
    if (!used_[i]) Usage("unknown argument " + args_[i]);
  }
}

// ---- Processes and files --------------------------------------------------------

uint64_t ProcStatusKb(const char* field) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = std::string(field) + ":";
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, prefix.size(), prefix) == 0) {
      return std::strtoull(line.c_str() + prefix.size(), nullptr, 10);
    }
  }
  return 0;
}

void AddMemory(Json* json) {
  json->Number("peak_rss_mb", static_cast<double>(ProcStatusKb("VmHWM")) / 1024.0)
      .Number("rss_mb", static_cast<double>(ProcStatusKb("VmRSS")) / 1024.0)
      .Number("rss_anon_mb", static_cast<double>(ProcStatusKb("RssAnon")) / 1024.0)
      .Number("rss_file_mb", static_cast<double>(ProcStatusKb("RssFile")) / 1024.0);
}

MemorySampler::MemorySampler(std::chrono::milliseconds period) : period_(period) {
  Sample();
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      Sample();
      std::this_thread::sleep_for(period_);
    }
  });
}

MemorySampler::~MemorySampler() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void MemorySampler::Sample() {
  // Pages of files on a tmpfs count as RssShmem, not RssFile.
  const uint64_t anon = ProcStatusKb("RssAnon");
  const uint64_t file = ProcStatusKb("RssFile") + ProcStatusKb("RssShmem");
  if (anon > peak_anon_kb_.load()) peak_anon_kb_.store(anon);
  if (file > peak_file_kb_.load()) peak_file_kb_.store(file);
}

void MemorySampler::Report(Json* json) {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  Sample();
  json->Number("peak_rss_anon_mb", static_cast<double>(peak_anon_kb_.load()) / 1024.0)
      .Number("peak_rss_file_mb", static_cast<double>(peak_file_kb_.load()) / 1024.0);
}

uint64_t EvictFromPageCache(const std::string& path) {
  uint64_t files = 0;
  ForEachFile(path, [&](const std::string& file) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) Die("open " + file + ": " + std::strerror(errno));
    const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (rc != 0) Die("posix_fadvise " + file + ": " + std::strerror(rc));
    ++files;
  });
  return files;
}

uint64_t WarmPageCache(const std::string& path) {
  uint64_t bytes = 0;
  std::vector<char> buf(size_t{1} << 20);
  ForEachFile(path, [&](const std::string& file) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) Die("open " + file + ": " + std::strerror(errno));
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0) Die("read " + file + ": " + std::strerror(errno));
      if (n == 0) break;
      bytes += static_cast<uint64_t>(n);
    }
    ::close(fd);
  });
  return bytes;
}

std::vector<std::string> ListFiles(const std::string& dir, std::string_view prefix,
                                   std::string_view suffix) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) Die("opendir " + dir + ": " + std::strerror(errno));
  while (const dirent* entry = ::readdir(d)) {
    const std::string_view name = entry->d_name;
    if (name.size() >= prefix.size() + suffix.size() && name.substr(0, prefix.size()) == prefix &&
        name.substr(name.size() - suffix.size()) == suffix) {
      names.emplace_back(name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> ByChunkNumber(std::vector<std::string> names) {
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return ChunkNumberOf(a) < ChunkNumberOf(b);
  });
  return names;
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) Die("stat " + path + ": " + std::strerror(errno));
  return static_cast<uint64_t>(st.st_size);
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteWholeFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) Die("cannot write " + path);
}

std::string ScratchDir(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gulpdb_" + name + "." +
         std::to_string(::getpid());
}

void RemoveTree(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    Die("stat " + path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    for (const std::string& child : ChildPaths(path)) RemoveTree(child);
    if (::rmdir(path.c_str()) != 0) Die("rmdir " + path + ": " + std::strerror(errno));
  } else if (::unlink(path.c_str()) != 0) {
    Die("unlink " + path + ": " + std::strerror(errno));
  }
}

// ---- Synthetic datasets -----------------------------------------------------------

std::string VideoId(uint64_t index) { return std::to_string(100000 + index); }

double MeanBytes(const std::vector<std::string>& frames) {
  if (frames.empty()) return 0;
  double total = 0;
  for (const std::string& f : frames) total += static_cast<double>(f.size());
  return total / static_cast<double>(frames.size());
}

uint64_t Mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// 40 hex digits of two splitmix64 rounds of `n`.
std::string HashedVideoId(uint64_t n) {
  char text[48];
  const uint64_t a = Mix64(n), b = Mix64(a ^ n);
  std::snprintf(text, sizeof text, "%016llx%016llx%08llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b),
                static_cast<unsigned long long>(Mix64(b) & 0xffffffffULL));
  return text;
}

std::string TinyFrame() {
  return std::string("\xff\xd8", 2) + std::string(28, 'x') + std::string("\xff\xd9", 2);
}

std::string GulpioMeta(std::mt19937_64& rng, std::string_view id) {
  static const char* const kVerbs[] = {"Pushing", "Pulling", "Moving", "Dropping", "Holding",
                                       "Turning", "Putting", "Taking", "Lifting",  "Tearing"};
  static const char* const kObjects[] = {"a cup",   "a pen",    "a box", "paper",  "a bottle",
                                         "a phone", "a remote", "keys",  "a book", "a spoon"};
  static const char* const kWhere[] = {
      "from left to right", "from right to left", "onto a table",    "into a drawer",
      "behind a chair",     "upside down",        "next to a glass", "without letting it drop"};
  const char* verb = kVerbs[rng() % std::size(kVerbs)];
  const char* object = kObjects[rng() % std::size(kObjects)];
  const char* where = kWhere[rng() % std::size(kWhere)];
  return "{\"id\": \"" + std::string(id) + "\", \"label\": \"" + verb + " " + object + " " + where +
         "\", \"template\": \"" + verb + " [something] " + where + "\", \"placeholders\": [\"" +
         object + "\"], \"idx\": " + std::to_string(rng() % 174) +
         ", \"fps\": 12, \"width\": 427, \"height\": 240}";
}

std::string LabelledDuration(uint64_t i) {
  const uint64_t v = Mix64(i ^ 0x5eed) % 1000000;
  char text[32];
  std::snprintf(text, sizeof text, "%llu.%04llu", static_cast<unsigned long long>(v / 10000),
                static_cast<unsigned long long>(v % 10000));
  return text;
}

std::string LabelledMeta(uint64_t i, uint64_t label, bool with_idx) {
  std::string meta = "{\"label\": \"class" + std::to_string(label) + "\", ";
  if (with_idx) meta += "\"idx\": " + std::to_string(label) + ", ";
  return meta + "\"duration\": " + LabelledDuration(i) + "}";
}

double BuildLabelledDataset(const std::string& dir, uint64_t videos, bool checksums,
                            bool with_idx) {
  const auto start = Clock::now();
  CreateOptions create;
  create.checksums = checksums;
  auto ds = Dataset::Create(dir, create);
  const std::string frame = TinyFrame();
  const std::vector<std::string_view> frames(kLabelledFrames, frame);
  auto writer = ds->NewWriter();
  for (uint64_t i = 0; i < videos; ++i) {
    writer->Append(HashedVideoId(i), frames, LabelledMeta(i, i % kLabelClasses, with_idx));
    if ((i + 1) % 50000 == 0) writer->Commit();
  }
  writer->Commit();
  return SecondsSince(start);
}

void BuildRelabelDataset(const std::string& dir, uint64_t videos) {
  BuildLabelledDataset(dir, videos, /*checksums=*/false, /*with_idx=*/true);
  OpenOptions rw;
  rw.read_only = false;
  auto ds = Dataset::Open(dir, rw);
  ds->CreateMetaIndex("label");
  ds->CreateMetaIndex("duration");
  std::string json = "{";
  for (uint64_t k = 0; k < kLabelClasses; ++k) {
    json += (k == 0 ? "\"class" : ", \"class") + std::to_string(k) + "\": " + std::to_string(k);
  }
  WriteWholeFile(dir + "/label2idx.json", json + "}");
}

bool RelabelPicked(uint64_t i, int round) {
  return Mix64(i * 131 + static_cast<uint64_t>(round) * 7919 + 17) % 100 == 0;
}

uint16_t RelabelNext(uint16_t current, int round) {
  return static_cast<uint16_t>((current + 1u + static_cast<uint64_t>(round)) % kLabelClasses);
}

void WriteRelabelList(const std::string& path, const std::vector<std::string>& ids,
                      const std::vector<uint16_t>& labels) {
  std::string text;
  for (size_t k = 0; k < ids.size(); ++k) {
    text += ids[k] + ";class" + std::to_string(labels[k]) + "\n";
  }
  WriteWholeFile(path, text);
}

double BuildIndexDataset(const std::string& dir, const IndexSpec& spec) {
  CreateOptions create;
  create.videos_per_chunk = spec.videos_per_chunk;
  create.checksums = spec.checksums;
  const auto start = Clock::now();
  std::unique_ptr<Dataset> ds = Dataset::Create(dir, create);
  const std::string frame = TinyFrame();
  const std::vector<std::string_view> frames(spec.max_frames, frame);
  std::mt19937_64 rng(spec.seed);
  std::unique_ptr<Writer> writer = ds->NewWriter();
  const std::string empty_meta = "{}";
  for (uint64_t i = 0; i < spec.videos; ++i) {
    const std::string id = VideoId(i);
    const uint32_t span = spec.max_frames - spec.min_frames + 1;
    const uint32_t n = spec.min_frames + static_cast<uint32_t>(rng() % span);
    const std::vector<std::string_view> video(frames.begin(), frames.begin() + n);
    writer->Append(id, video, spec.gulpio_meta ? GulpioMeta(rng, id) : empty_meta);
    if ((i + 1) % spec.videos_per_commit == 0) writer->Commit();
  }
  writer->Commit();
  return SecondsSince(start);
}

std::vector<std::string> LoadJpegs(const std::string& dir) {
  std::vector<std::string> jpegs;
  for (const std::string& name : ListFiles(dir, "", ".jpg")) {
    jpegs.push_back(ReadWholeFile(dir + "/" + name));
  }
  if (jpegs.empty()) Die("no .jpg files in " + dir);
  return jpegs;
}

std::vector<Clip> ReadClips(const std::string& path) {
  std::ifstream in(path);
  if (!in) Die("cannot read clips file " + path);
  std::vector<Clip> clips;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    Clip clip;
    if (!(std::getline(fields, clip.id, '\t') >> clip.start >> clip.count) || clip.count == 0) {
      Die("bad line in " + path + ": " + line);
    }
    clips.push_back(std::move(clip));
  }
  if (clips.empty()) Die("no clips in " + path);
  return clips;
}

std::vector<ClipExtent> ResolveClips(const Dataset& dataset, const std::vector<Clip>& clips) {
  std::map<uint32_t, std::string> chunk_paths;
  for (const ChunkInfo& c : dataset.Chunks())
    chunk_paths[c.number] = dataset.dir() + "/" + c.file_name;
  std::vector<ClipExtent> out;
  out.reserve(clips.size());
  for (const Clip& clip : clips) {
    const VideoInfo video = dataset.Get(clip.id);
    if (clip.start + clip.count > video.frames.size()) {
      Die("clip " + clip.id + " " + std::to_string(clip.start) + "+" + std::to_string(clip.count) +
          " is past the video's " + std::to_string(video.frames.size()) + " frames");
    }
    ClipExtent e;
    e.chunk = video.chunk;
    e.chunk_path = chunk_paths.at(video.chunk);
    e.frames.assign(video.frames.begin() + clip.start,
                    video.frames.begin() + clip.start + clip.count);
    e.offset = e.frames.front().offset;
    for (const FrameInfo& f : e.frames) {
      if (f.offset != e.offset + e.size) Die("clip of " + clip.id + " is not contiguous on disk");
      e.size += f.length;
      e.jpeg_bytes += f.jpeg_size();
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace gulpdb::bench
