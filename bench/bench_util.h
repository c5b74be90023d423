// Shared pieces of the benchmark programs: timing and summaries, a small JSON
// object writer, command-line options, process memory, page-cache eviction,
// and the synthetic datasets the benchmarks measure.
//
// Every benchmark program prints exactly one JSON object on stdout (what
// bench/run.py aggregates) and human-readable progress on stderr. Timings are
// reported, never asserted.
//
// Thread safety: the free functions are safe from any thread; Json and Options
// are plain values used by one thread.
#ifndef GULPDB_BENCH_BENCH_UTIL_H_
#define GULPDB_BENCH_BENCH_UTIL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "gulpdb/dataset.h"

namespace gulpdb::bench {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start);
// CPU time (user + system) this process has used, all threads, in seconds.
// Other load on the machine disturbs it much less than wall time.
double ProcessCpuSeconds();

// Prints "<program>: <message>" to stderr and exits with status 1.
[[noreturn]] void Die(const std::string& message);
// Names the program in Die() messages; call first thing in main().
void SetProgramName(const char* name);
// Progress for humans, on stderr.
void Log(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Summary of repeated measurements of one quantity.
struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  size_t count = 0;
};
Summary Summarize(std::vector<double> values);
// The p-th percentile (0 <= p <= 100, nearest rank) of `values`, which it sorts.
double Percentile(std::vector<double>* values, double p);

// One JSON object, built field by field in insertion order. Non-finite
// numbers are written as null.
class Json {
 public:
  Json& Number(std::string_view key, double value);
  Json& Integer(std::string_view key, int64_t value);
  Json& String(std::string_view key, std::string_view value);
  Json& Boolean(std::string_view key, bool value);
  Json& Object(std::string_view key, const Json& value);
  Json& Objects(std::string_view key, const std::vector<Json>& values);
  Json& Numbers(std::string_view key, const std::vector<double>& values);
  // {"median", "min", "max", "mean", "count"} and, when `values` is given, the values.
  Json& Stats(std::string_view key, const std::vector<double>& values, bool with_values = true);

  std::string str() const;
  // Prints str() and a newline on stdout and flushes it.
  void Print() const;

 private:
  void Key(std::string_view key);
  std::string body_;
};

// `text` (UTF-8) as a quoted JSON string, as Python writes it
// (engine::PythonJsonString).
std::string JsonQuote(std::string_view text);

// "--name value" and "--name" options, in any order. Each accessor consumes
// what it reads; Finish() rejects anything left over with a usage error.
class Options {
 public:
  Options(int argc, char** argv, int first, std::string usage);
  bool Flag(std::string_view name);
  std::string Str(std::string_view name, std::string fallback);
  std::string Required(std::string_view name);
  uint64_t Uint(std::string_view name, uint64_t fallback);
  double Double(std::string_view name, double fallback);
  // A comma-separated list of unsigned integers.
  std::vector<uint64_t> UintList(std::string_view name, std::vector<uint64_t> fallback);
  void Finish();
  [[noreturn]] void Usage(const std::string& problem) const;

 private:
  std::vector<std::string> args_;
  std::vector<bool> used_;
  std::string usage_;
};

// A field of /proc/self/status in kB ("VmHWM", "VmRSS", "RssAnon", ...), or 0.
uint64_t ProcStatusKb(const char* field);
// Peak and current resident memory of this process as JSON fields (MB).
void AddMemory(Json* json);

// Samples this process's private (RssAnon) and file-backed (RssFile plus
// RssShmem, for files on a tmpfs) resident memory on a background thread, to
// split VmHWM into memory the process allocated and pages of mapped files
// (such as the LMDB map) that the page cache could reclaim. Peaks are as of
// the last sample.
class MemorySampler {
 public:
  explicit MemorySampler(std::chrono::milliseconds period = std::chrono::milliseconds(10));
  ~MemorySampler();
  MemorySampler(const MemorySampler&) = delete;
  MemorySampler& operator=(const MemorySampler&) = delete;
  // Stops sampling (idempotent) and adds peak_rss_anon_mb and peak_rss_file_mb to `json`.
  void Report(Json* json);

 private:
  void Sample();
  std::chrono::milliseconds period_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> peak_anon_kb_{0}, peak_file_kb_{0};
  std::thread thread_;
};

// posix_fadvise(POSIX_FADV_DONTNEED) on `path`, or on every regular file
// below it when it is a directory. Returns the number of files. Only clean
// pages are dropped: sync files written recently first (fdatasync on each
// file here would cost a disk cache flush per file, even for clean files).
uint64_t EvictFromPageCache(const std::string& path);
// Reads every regular file below `path` once (into a small buffer), so that
// later reads come from the page cache. Returns the bytes read.
uint64_t WarmPageCache(const std::string& path);

// Regular files directly in `dir` whose names start with `prefix` and end with
// `suffix`, sorted by name.
std::vector<std::string> ListFiles(const std::string& dir, std::string_view prefix,
                                   std::string_view suffix);
// The files of `dir` ordered by their chunk number (the first run of digits in
// the name, as GulpIO numbers them).
std::vector<std::string> ByChunkNumber(std::vector<std::string> names);
uint64_t FileSize(const std::string& path);
std::string ReadWholeFile(const std::string& path);
void WriteWholeFile(const std::string& path, std::string_view bytes);
// A path for a benchmark's scratch files: $TMPDIR (or /tmp)/gulpdb_<name>.<pid>,
// so that concurrent runs (two build trees testing at once) do not collide.
std::string ScratchDir(const std::string& name);
// rm -rf without a shell.
void RemoveTree(const std::string& path);

// ---- Synthetic datasets --------------------------------------------------------

// Video ids as 20BN-style GulpIO datasets have them: decimal numbers.
std::string VideoId(uint64_t index);
// Hashed video ids (40 hex digits, uniformly spread over the key space, as
// YouTube ids or content hashes are), the same for the same index.
std::string HashedVideoId(uint64_t index);
// A 64-bit hash of `n` (splitmix64's finaliser): deterministic spread values.
uint64_t Mix64(uint64_t n);

// The mean size in bytes of `frames` (0 for none): the frame pools' figure.
double MeanBytes(const std::vector<std::string>& frames);

// The smallest byte string a Writer accepts as a JPEG frame (SOI ... EOI),
// for datasets that only exercise the index.
std::string TinyFrame();

// meta for Writer::Append: "{}" or a GulpIO2-style object (id, label,
// template, placeholders, idx and a few numbers, about 200 bytes).
std::string GulpioMeta(std::mt19937_64& rng, std::string_view id);

struct IndexSpec {
  uint64_t videos = 1000;
  uint32_t min_frames = 16;  // frames per video, uniform in [min_frames, max_frames]
  uint32_t max_frames = 16;
  bool checksums = false;
  bool gulpio_meta = true;  // else "{}"
  uint32_t videos_per_chunk = 1000;
  uint64_t videos_per_commit = 50000;
  uint64_t seed = 42;
};

// Creates an index-only dataset in `dir` (which must not hold one): videos of
// TinyFrame()s, deterministic for a given spec. Returns the build time in seconds.
double BuildIndexDataset(const std::string& dir, const IndexSpec& spec);

// The labelled datasets of the query and meta-edit benchmarks
// (query_lang_bench, relabel_bench, version_bench): video i has the id
// HashedVideoId(i), kLabelledFrames TinyFrame()s and meta with a label of
// kLabelClasses classes and a duration.
inline constexpr int kLabelledFrames = 16;
inline constexpr uint64_t kLabelClasses = 100;
// Video i's duration as JSON number text: 0.0000 to 99.9999, uniform.
std::string LabelledDuration(uint64_t i);
// {"label": "class<label>", ("idx": <label>, )"duration": LabelledDuration(i)}.
std::string LabelledMeta(uint64_t i, uint64_t label, bool with_idx);
// Creates the dataset `dir` of `videos` such videos, label i % kLabelClasses,
// committed every 50,000. Returns the seconds it took.
double BuildLabelledDataset(const std::string& dir, uint64_t videos, bool checksums, bool with_idx);
// The relabel benchmarks' dataset (relabel_bench, `bench_data relabel`,
// relabel_push_bench.py): BuildLabelledDataset without checksums, with
// "idx", meta indexes on label and duration and a label2idx.json of the
// kLabelClasses classes.
void BuildRelabelDataset(const std::string& dir, uint64_t videos);
// Whether relabel round `round` picks video i (1% of the videos, by hash).
bool RelabelPicked(uint64_t i, int round);
// The label round `round` gives a picked video whose label is `current`.
uint16_t RelabelNext(uint16_t current, int round);
// Writes the `id;label` CSV list (`gulpdb relabel --labels`) of `ids` and
// their `labels` (class numbers) to `path`.
void WriteRelabelList(const std::string& path, const std::vector<std::string>& ids,
                      const std::vector<uint16_t>& labels);

// JPEG files (sorted by name) in `dir`, read into memory.
std::vector<std::string> LoadJpegs(const std::string& dir);

// One clip of a clips file: `count` frames of video `id` from frame `start`.
struct Clip {
  std::string id;
  uint32_t start = 0;
  uint32_t count = 0;
};
// Reads a clips file: one "id<TAB>start<TAB>count" line per clip.
std::vector<Clip> ReadClips(const std::string& path);

// A clip's bytes on disk, resolved through the index before timing starts:
// what a bare reader with precomputed offsets needs.
struct ClipExtent {
  std::string chunk_path;
  uint64_t offset = 0;
  uint64_t size = 0;              // bytes of the frames, padding included
  uint64_t jpeg_bytes = 0;        // padding excluded
  std::vector<FrameInfo> frames;  // the clip's frames
  uint32_t chunk = 0;
};
// Resolves every clip (Find + the chunk's file name). A clip whose frames are
// not back to back on disk is an error: the bare reader does one pread per clip.
std::vector<ClipExtent> ResolveClips(const Dataset& dataset, const std::vector<Clip>& clips);

}  // namespace gulpdb::bench

#endif  // GULPDB_BENCH_BENCH_UTIL_H_
