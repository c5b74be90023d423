// Generates the datasets the benchmarks measure. Deterministic: the same
// arguments give the same bytes. bench/run.py calls it and caches the results.
//
//   bench_data frames    --out DIR --count N [--width W] [--height H] [--quality Q] [--video PATH]
//       N real frames: the video (default: imageio's cockatoo.mp4) decoded by
//       ffmpeg, cropped to 4:3, scaled to W×H (default 320×240) and encoded
//       with gulpdb's JpegEncoder (quality 90, 4:4:4). Without ffmpeg or the
//       video, gradient-and-noise frames, and "source" says so.
//   bench_data realistic --frames DIR --dir D --jboj J --manifest M --videos N
//                        [--min-frames 30] [--max-frames 60] [--videos-per-chunk 100]
//       A gulpdb dataset of N videos of 30-60 consecutive frames of the pool
//       in DIR (GulpIO2-style meta, checksums on), the same frames as a folder
//       of JPEG files per video (J/<id>/<frame:05d>.jpg, the layout GulpIO
//       compared itself with), and a manifest "id<TAB>frames" per line.
//   bench_data index     --dir D --videos N [--min-frames 16] [--max-frames 16]
//                        [--checksums] [--minimal-meta] [--videos-per-chunk 1000] [--export]
//       An index-only dataset (tiny frames); --export also writes its .gmeta
//       files into D with gulpdb::ExportGmeta.
//   bench_data gulpio    --dir D --gmeta-mb M [--videos-per-chunk 100]
//       A GulpIO directory whose .gmeta files (Python json.dump format) hold at
//       least M MB: 30-60 frames per video of 2-20 KB each, GulpIO2-style meta.
//       The data files are sparse (ftruncate'd to the size the frames need),
//       so their frames are not JPEGs; importing does not look at them.
//   bench_data hashed    --dir D --videos N [--first K] [--labels L] [--frames F]
//                        [--pool DIR]
//       Videos K..K+N-1 with hashed ids (40 hex digits, so that appends land
//       all over the key space, as YouTube ids or content hashes do) of F tiny
//       frames (default 16), meta {"label": "class<k>"} with L values (default
//       100) and a meta index on "label", default chunk sizes. Creates D when
//       it holds no dataset, else appends to it (the 1% append of the
//       partitioned-snapshot benchmark, bench/partition_bench.py). With
//       --pool, the frames are real JPEGs from DIR (bench_data frames):
//       frame k of video i is the pool's (i * F + k) mod size (the viewer's
//       benchmark, bench/view_bench.py, decodes them).
//   bench_data relabel   --dir D --videos N [--list FILE]
//       relabel_bench's dataset (BuildRelabelDataset: hashed ids, 16 tiny
//       frames, meta {"label", "idx", "duration"}, meta indexes on label and
//       duration, label2idx.json); --list also writes the `id;label` CSV of
//       relabel_bench's first round (the 1% a hash picks, each to another
//       class) for `gulpdb relabel --labels` (bench/relabel_push_bench.py).
//   bench_data stats     --dir D
//       Dataset::Stats(), the size of the .gmeta files in D, and where the
//       index's bytes go (record payloads by field; read with the index's
//       internal API).
//
// Prints one JSON object describing what it made.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "engine/core/dataset_impl.h"
#include "gulpdb/dataset.h"
#include "gulpdb/interop.h"
#include "gulpdb/jpeg.h"
#include "index/records.h"

namespace gulpdb::bench {
namespace {

constexpr const char* kDefaultVideo =
    "/usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4";

void MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    Die("mkdir " + path + ": " + std::strerror(errno));
  }
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Frames of `video` as RGB through ffmpeg, encoded to JPEG; fewer on failure.
std::vector<std::string> VideoFrames(const std::string& video, int count, int width, int height,
                                     int quality) {
  std::vector<std::string> jpegs;
  if (::access(video.c_str(), R_OK) != 0) return jpegs;
  const std::string filter =
      "crop=ih*4/3:ih,scale=" + std::to_string(width) + ":" + std::to_string(height);
  const std::string command = "ffmpeg -nostdin -loglevel error -i " + ShellQuote(video) + " -vf " +
                              filter + " -frames:v " + std::to_string(count) +
                              " -f rawvideo -pix_fmt rgb24 - 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return jpegs;
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  EncodeOptions options;
  options.quality = quality;
  while (static_cast<int>(jpegs.size()) < count &&
         std::fread(rgb.data(), 1, rgb.size(), pipe) == rgb.size()) {
    jpegs.push_back(ThreadLocalEncoder().Encode(rgb.data(), width, height, 3, options));
  }
  ::pclose(pipe);
  return jpegs;
}

// A moving gradient with noise: compresses about like a camera frame.
std::vector<std::string> SyntheticFrames(int count, int width, int height, int quality) {
  std::vector<std::string> jpegs;
  std::mt19937 rng(12345);
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  EncodeOptions options;
  options.quality = quality;
  for (int f = 0; f < count; ++f) {
    size_t k = 0;
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        for (int c = 0; c < 3; ++c) {
          const int base = (x * 255 / width + y * 255 / height + 40 * c + 7 * f) / 2;
          const int noise = static_cast<int>(rng() % 33) - 16;
          rgb[k++] = static_cast<uint8_t>(std::clamp(base + noise, 0, 255));
        }
      }
    }
    jpegs.push_back(ThreadLocalEncoder().Encode(rgb.data(), width, height, 3, options));
  }
  return jpegs;
}

int RunFrames(Options& opt) {
  const std::string out = opt.Required("out");
  const int count = static_cast<int>(opt.Uint("count", 280));
  const int width = static_cast<int>(opt.Uint("width", 320));
  const int height = static_cast<int>(opt.Uint("height", 240));
  const int quality = static_cast<int>(opt.Uint("quality", 90));
  const std::string video = opt.Str("video", kDefaultVideo);
  opt.Finish();
  std::vector<std::string> jpegs = VideoFrames(video, count, width, height, quality);
  std::string source = video;
  if (static_cast<int>(jpegs.size()) < count) {
    Log("could not read %d frames of %s with ffmpeg; using synthetic frames", count, video.c_str());
    jpegs = SyntheticFrames(count, width, height, quality);
    source = "synthetic gradient+noise";
  }
  MakeDir(out);
  uint64_t bytes = 0;
  for (size_t i = 0; i < jpegs.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "/frame_%05zu.jpg", i);
    WriteWholeFile(out + name, jpegs[i]);
    bytes += jpegs[i].size();
  }
  Json json;
  json.String("source", source)
      .Integer("frames", static_cast<int64_t>(jpegs.size()))
      .Integer("width", width)
      .Integer("height", height)
      .Integer("quality", quality)
      .Number("mean_jpeg_bytes", static_cast<double>(bytes) / static_cast<double>(jpegs.size()));
  json.Print();
  return 0;
}

int RunRealistic(Options& opt) {
  const std::string frames_dir = opt.Required("frames");
  const std::string dir = opt.Required("dir");
  const std::string jboj = opt.Required("jboj");
  const std::string manifest_path = opt.Required("manifest");
  const uint64_t videos = opt.Uint("videos", 200);
  const auto min_frames = static_cast<uint32_t>(opt.Uint("min-frames", 30));
  const auto max_frames = static_cast<uint32_t>(opt.Uint("max-frames", 60));
  const auto per_chunk = static_cast<uint32_t>(opt.Uint("videos-per-chunk", 100));
  const uint64_t seed = opt.Uint("seed", 7);
  opt.Finish();
  const std::vector<std::string> pool = LoadJpegs(frames_dir);
  if (min_frames < 1 || max_frames < min_frames || pool.size() < max_frames) {
    Die("need 1 <= min-frames <= max-frames <= " + std::to_string(pool.size()));
  }
  const auto start = Clock::now();
  CreateOptions create;
  create.videos_per_chunk = per_chunk;
  std::unique_ptr<Dataset> ds = Dataset::Create(dir, create);
  std::unique_ptr<Writer> writer = ds->NewWriter();
  MakeDir(jboj);
  std::ofstream manifest(manifest_path, std::ios::trunc);
  std::mt19937_64 rng(seed);
  uint64_t frames = 0, bytes = 0;
  for (uint64_t i = 0; i < videos; ++i) {
    const std::string id = VideoId(i);
    const uint32_t n = min_frames + static_cast<uint32_t>(rng() % (max_frames - min_frames + 1));
    const size_t first = rng() % (pool.size() - n + 1);
    std::vector<std::string_view> video;
    const std::string folder = jboj + "/" + id;
    MakeDir(folder);
    for (uint32_t f = 0; f < n; ++f) {
      const std::string& jpeg = pool[first + f];
      video.emplace_back(jpeg);
      char name[32];
      std::snprintf(name, sizeof(name), "/%05u.jpg", f);
      WriteWholeFile(folder + name, jpeg);
      bytes += jpeg.size();
    }
    writer->Append(id, video, GulpioMeta(rng, id));
    manifest << id << '\t' << n << '\n';
    frames += n;
    if ((i + 1) % per_chunk == 0) writer->Commit();
  }
  writer->Commit();
  writer.reset();
  manifest.close();
  if (!manifest) Die("cannot write " + manifest_path);
  ::sync();  // the benchmarks drop clean pages; start them from a settled disk
  Json json;
  json.Integer("videos", static_cast<int64_t>(videos))
      .Integer("frames", static_cast<int64_t>(frames))
      .Integer("jpeg_bytes", static_cast<int64_t>(bytes))
      .Integer("chunks", static_cast<int64_t>(ds->Stats().chunks))
      .Number("seconds", SecondsSince(start));
  json.Print();
  return 0;
}

int RunHashed(Options& opt) {
  const std::string dir = opt.Required("dir");
  const uint64_t videos = opt.Uint("videos", 1000);
  const uint64_t first = opt.Uint("first", 0);
  const uint64_t labels = opt.Uint("labels", 100);
  const auto frame_count = static_cast<size_t>(opt.Uint("frames", 16));
  const std::string pool_dir = opt.Str("pool", "");
  opt.Finish();
  if (labels == 0 || frame_count == 0) Die("--labels and --frames must be positive");
  std::vector<std::string> pool;
  if (!pool_dir.empty()) {
    for (const std::string& name : ListFiles(pool_dir, "frame_", ".jpg")) {
      pool.push_back(ReadWholeFile(pool_dir + "/" + name));
    }
    if (pool.empty()) Die("--pool " + pool_dir + ": no frame_*.jpg (bench_data frames --out)");
  }
  const auto start = Clock::now();
  std::unique_ptr<Dataset> ds;
  if (Dataset::Exists(dir)) {
    OpenOptions options;
    options.read_only = false;
    ds = Dataset::Open(dir, options);
  } else {
    ds = Dataset::Create(dir);
    ds->CreateMetaIndex("label");
  }
  const std::string frame = TinyFrame();
  std::vector<std::string_view> frames(frame_count, frame);
  std::unique_ptr<Writer> writer = ds->NewWriter();
  for (uint64_t i = first; i < first + videos; ++i) {
    for (size_t k = 0; k < frame_count && !pool.empty(); ++k) {
      frames[k] = pool[(i * frame_count + k) % pool.size()];
    }
    writer->Append(HashedVideoId(i), frames,
                   "{\"label\": \"class" + std::to_string(i % labels) + "\"}");
    if ((i + 1 - first) % 50000 == 0) writer->Commit();
  }
  writer->Commit();
  writer.reset();
  const DatasetStats stats = ds->Stats();
  Json json;
  json.Integer("videos", static_cast<int64_t>(stats.videos))
      .Integer("chunks", static_cast<int64_t>(stats.chunks))
      .Integer("index_bytes", static_cast<int64_t>(stats.index_bytes))
      .Number("seconds", SecondsSince(start));
  json.Print();
  return 0;
}

uint64_t GmetaBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const std::string& name : ListFiles(dir, "meta", ".gmeta"))
    total += FileSize(dir + "/" + name);
  return total;
}

int RunIndex(Options& opt) {
  const std::string dir = opt.Required("dir");
  IndexSpec spec;
  spec.videos = opt.Uint("videos", 1000);
  spec.min_frames = static_cast<uint32_t>(opt.Uint("min-frames", 16));
  spec.max_frames = static_cast<uint32_t>(opt.Uint("max-frames", spec.min_frames));
  spec.checksums = opt.Flag("checksums");
  spec.gulpio_meta = !opt.Flag("minimal-meta");
  spec.videos_per_chunk = static_cast<uint32_t>(opt.Uint("videos-per-chunk", 1000));
  const bool do_export = opt.Flag("export");
  opt.Finish();
  if (spec.min_frames < 1 || spec.max_frames < spec.min_frames) Die("bad frame range");
  const double build_seconds = BuildIndexDataset(dir, spec);
  Json json;
  json.Integer("videos", static_cast<int64_t>(spec.videos)).Number("build_seconds", build_seconds);
  if (do_export) {
    const auto start = Clock::now();
    std::unique_ptr<Dataset> ds = Dataset::Open(dir);
    const ExportReport report = ExportGmeta(*ds);
    json.Number("export_seconds", SecondsSince(start))
        .Integer("gmeta_bytes", static_cast<int64_t>(report.bytes_written))
        .Integer("gmeta_files", static_cast<int64_t>(report.chunks));
  }
  json.Print();
  return 0;
}

// Appends one .gmeta entry to `out` exactly as Python's json.dump writes it.
void AppendGmetaEntry(const std::string& id, const std::vector<FrameInfo>& frames,
                      const std::string& meta_object, bool first, std::string* out) {
  if (!first) *out += ", ";
  *out += "\"" + id + "\": {\"frame_info\": [";
  for (size_t i = 0; i < frames.size(); ++i) {
    if (i != 0) *out += ", ";
    *out += "[" + std::to_string(frames[i].offset) + ", " + std::to_string(frames[i].pad) + ", " +
            std::to_string(frames[i].length) + "]";
  }
  *out += "], \"meta_data\": [" + meta_object + "]}";
}

int RunGulpio(Options& opt) {
  const std::string dir = opt.Required("dir");
  const uint64_t target = static_cast<uint64_t>(opt.Double("gmeta-mb", 64) * 1e6);
  const uint64_t per_chunk = opt.Uint("videos-per-chunk", 100);
  const uint64_t seed = opt.Uint("seed", 11);
  opt.Finish();
  const auto start = Clock::now();
  MakeDir(dir);
  std::mt19937_64 rng(seed);
  uint64_t gmeta_bytes = 0, data_bytes = 0, videos = 0, frames_total = 0, chunks = 0;
  std::string text;
  std::vector<FrameInfo> frames;
  while (gmeta_bytes < target) {
    const uint64_t chunk = chunks++;
    text = "{";
    uint64_t offset = 0;
    for (uint64_t v = 0; v < per_chunk; ++v) {
      const std::string id = VideoId(videos++);
      const uint32_t n = 30 + static_cast<uint32_t>(rng() % 31);
      frames.clear();
      for (uint32_t f = 0; f < n; ++f) {
        const auto jpeg = static_cast<uint32_t>(2000 + rng() % 18001);
        const uint32_t pad = PadFor(jpeg);
        frames.push_back(FrameInfo{offset, pad, jpeg + pad});
        offset += jpeg + pad;
      }
      frames_total += n;
      AppendGmetaEntry(id, frames, GulpioMeta(rng, id), v == 0, &text);
    }
    text += "}";
    const std::string suffix = std::to_string(chunk);
    WriteWholeFile(dir + "/meta_" + suffix + ".gmeta", text);
    const std::string data = dir + "/data_" + suffix + ".gulp";
    const int fd = ::open(data.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(offset)) != 0) {
      Die("create sparse " + data + ": " + std::strerror(errno));
    }
    ::close(fd);
    gmeta_bytes += text.size();
    data_bytes += offset;
  }
  Json json;
  json.Integer("chunks", static_cast<int64_t>(chunks))
      .Integer("videos", static_cast<int64_t>(videos))
      .Integer("frames", static_cast<int64_t>(frames_total))
      .Integer("gmeta_bytes", static_cast<int64_t>(gmeta_bytes))
      .Integer("sparse_data_bytes", static_cast<int64_t>(data_bytes))
      .Number("seconds", SecondsSince(start));
  json.Print();
  return 0;
}

// Where the bytes of the index go: the payload of every record of the videos
// and order databases (LMDB's own page and node overhead comes on top).
Json RecordBreakdown(const Dataset& ds) {
  const engine::DatasetImpl& impl = engine::DatasetAccess::Of(ds);
  index::Txn txn = impl.env->BeginRead();
  uint64_t videos = 0, key_bytes = 0, value_bytes = 0, frames = 0, crcs = 0, meta = 0, runs = 0;
  uint64_t size_bytes = 0;  // the per-frame JPEG sizes: 2 bytes each when all fit, else 4
  {
    index::Cursor cursor(txn, impl.videos);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
      const index::VideoRecord r = index::DecodeVideoRecord(
          impl.Unseal(cursor.key(), cursor.value(), index::RecordKind::kVideo), cursor.key());
      ++videos;
      key_bytes += cursor.key().size();
      value_bytes += cursor.value().size();
      frames += r.frames.size();
      crcs += r.crc32c.size();
      meta += r.meta_data.size();
      uint32_t largest = 0;
      for (const FrameInfo& f : r.frames) largest = std::max(largest, f.jpeg_size());
      size_bytes += (largest < 65536 ? 2 : 4) * r.frames.size();
      for (size_t i = 0; i < r.frames.size(); ++i) {
        if (i == 0 || r.frames[i].offset != r.frames[i - 1].offset + r.frames[i - 1].length) ++runs;
      }
    }
  }
  uint64_t order_entries = 0, order_bytes = 0;
  {
    index::Cursor cursor(txn, impl.order);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
      ++order_entries;
      order_bytes += cursor.key().size() + cursor.value().size();
    }
  }
  const auto per_frame = [&](uint64_t bytes) {
    return frames == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(frames);
  };
  // What a record holds besides the per-frame sizes, checksums and meta text:
  // FlatBuffers tables, vtables, vector lengths, run offsets, alignment.
  const uint64_t fixed = size_bytes + 4 * crcs + meta;
  const uint64_t other = value_bytes > fixed ? value_bytes - fixed : 0;
  Json json;
  json.Integer("videos", static_cast<int64_t>(videos))
      .Integer("runs", static_cast<int64_t>(runs))
      .Number("key_bytes_per_frame", per_frame(key_bytes))
      .Number("record_bytes_per_frame", per_frame(value_bytes))
      .Number("jpeg_size_bytes_per_frame", per_frame(size_bytes))
      .Number("checksum_bytes_per_frame", per_frame(4 * crcs))
      .Number("meta_bytes_per_frame", per_frame(meta))
      .Number("other_record_bytes_per_frame", per_frame(other))
      .Number("other_record_bytes_per_video",
              videos == 0 ? 0.0 : static_cast<double>(other) / static_cast<double>(videos))
      .Number("order_bytes_per_frame", per_frame(order_bytes))
      .Integer("order_entries", static_cast<int64_t>(order_entries));
  return json;
}

int RunStats(Options& opt) {
  const std::string dir = opt.Required("dir");
  opt.Finish();
  std::unique_ptr<Dataset> ds = Dataset::Open(dir);
  const DatasetStats s = ds->Stats();
  Json json;
  json.Integer("videos", static_cast<int64_t>(s.videos))
      .Integer("frames", static_cast<int64_t>(s.frames))
      .Integer("chunks", static_cast<int64_t>(s.chunks))
      .Integer("index_bytes", static_cast<int64_t>(s.index_bytes))
      .Integer("gmeta_bytes", static_cast<int64_t>(GmetaBytes(dir)))
      .Boolean("checksums", s.checksums)
      .Object("records", RecordBreakdown(*ds));
  json.Print();
  return 0;
}

int RunRelabel(Options& opt) {
  const std::string dir = opt.Required("dir");
  const uint64_t videos = opt.Uint("videos", 1000);
  const std::string list = opt.Str("list", "");
  opt.Finish();
  if (videos == 0) Die("--videos must be positive");
  const auto start = Clock::now();
  BuildRelabelDataset(dir, videos);
  const double seconds = SecondsSince(start);
  std::vector<std::string> ids;
  std::vector<uint16_t> labels;
  if (!list.empty()) {
    for (uint64_t i = 0; i < videos; ++i) {
      if (!RelabelPicked(i, 0)) continue;
      ids.push_back(HashedVideoId(i));
      labels.push_back(RelabelNext(static_cast<uint16_t>(i % kLabelClasses), 0));
    }
    WriteRelabelList(list, ids, labels);
  }
  const DatasetStats stats = Dataset::Open(dir)->Stats();
  Json json;
  json.Integer("videos", static_cast<int64_t>(stats.videos))
      .Integer("chunks", static_cast<int64_t>(stats.chunks))
      .Integer("index_bytes", static_cast<int64_t>(stats.index_bytes))
      .Integer("listed", static_cast<int64_t>(ids.size()))
      .Number("seconds", seconds);
  json.Print();
  return 0;
}

int Main(int argc, char** argv) {
  const std::string usage =
      "bench_data frames|realistic|index|gulpio|hashed|relabel|stats [options] (see the top of "
      "bench_data.cc)";
  if (argc < 2) Options(argc, argv, 1, usage).Usage("missing command");
  const std::string command = argv[1];
  Options opt(argc, argv, 2, usage);
  if (command == "frames") return RunFrames(opt);
  if (command == "realistic") return RunRealistic(opt);
  if (command == "index") return RunIndex(opt);
  if (command == "gulpio") return RunGulpio(opt);
  if (command == "hashed") return RunHashed(opt);
  if (command == "relabel") return RunRelabel(opt);
  if (command == "stats") return RunStats(opt);
  opt.Usage("unknown command " + command);
}

}  // namespace
}  // namespace gulpdb::bench

int main(int argc, char** argv) {
  gulpdb::bench::SetProgramName("bench_data");
  try {
    return gulpdb::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    gulpdb::bench::Die(e.what());
  }
}
