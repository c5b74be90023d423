// The ingest pipeline (gulpdb/ingest.h): wires the parts together and does
// nothing else. It lists the sources (sources.h) or takes the caller's,
// shuffles them, drops ids listed twice or already present, settles the label
// map (label_map.h), then runs workers (work_queue.h) that read frame files
// (jpeg_files.h) or decode with ffmpeg (ffmpeg.h) while the calling thread
// appends their results in list order and commits every `batch` videos,
// until the list ends or a signal (signals.h) stops it.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "ingest/child_process.h"
#include "ingest/command_options.h"
#include "ingest/ffmpeg.h"
#include "ingest/frame_settings.h"
#include "ingest/jpeg_files.h"
#include "ingest/label_map.h"
#include "ingest/signals.h"
#include "ingest/sources.h"
#include "ingest/work_queue.h"
#include "util/utf8.h"

namespace gulpdb::ingest {
namespace {

// What a worker made of one source.
struct Encoded {
  std::vector<std::string> frames;
  std::string h264;            // with FrameSettings::h264: the video's stream
  size_t h264_frames = 0;      // and its frame count
  std::string path;            // the file or folder read
  std::string problem;         // non-empty: a bad source
  std::exception_ptr error;    // the gulpdb::Error behind `problem`
  std::string problem_prefix;  // what `problem` adds before the error's message
  std::string warning;
  std::exception_ptr fatal;
};

Encoded Produce(const SourceSpec& source, const FrameSettings& settings,
                const std::optional<VideoLocator>& locator, ChildSet* children) {
  Encoded e;
  e.path = source.path;
  try {
    switch (source.kind) {
      case SourceKind::kVideo:
        if (e.path.empty()) {
          if (!source.lookup_error.empty()) {
            ThrowError(source.lookup_error_code, source.lookup_error);
          }
          if (!locator) throw NotFoundError("find video " + source.id + ": no file was given");
          e.path = locator->Resolve(source.id);
        }
        if (settings.h264) {
          e.h264 = EncodeH264WithFfmpeg(e.path, settings, children, &e.h264_frames, &e.warning);
        } else {
          e.frames = DecodeWithFfmpeg(e.path, /*image=*/false, settings, children, &e.warning);
        }
        break;
      case SourceKind::kFrameFolder: {
        std::vector<std::string> files =
            source.frame_paths.empty() ? ListFrameFiles(source.path) : source.frame_paths;
        if (files.empty()) throw NotFoundError("read " + source.path + ": no JPEG frames");
        e.frames = LoadJpegFiles(files, settings);
        break;
      }
      case SourceKind::kImage:
        if (IsJpegName(source.path)) {
          e.frames = LoadJpegFiles({source.path}, settings);
        } else {
          e.frames = DecodeWithFfmpeg(source.path, /*image=*/true, settings, children, &e.warning);
        }
        break;
    }
  } catch (const FatalError& f) {
    e.fatal = f.error;
  } catch (const Error& error) {
    e.frames.clear();
    e.h264.clear();
    e.problem = error.what();
    e.error = std::current_exception();
  } catch (...) {
    e.fatal = std::current_exception();
  }
  return e;
}

// Rethrows the gulpdb::Error in `error`, of its own type, with `prefix`
// before its message.
[[noreturn]] void ThrowWithContext(const std::exception_ptr& error, const std::string& prefix) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    e.ThrowWithContext(prefix);
  }
}

// Uniform integer in [0, n) from `rng`, the same on every platform (unlike
// std::uniform_int_distribution), so a seed always gives the same order.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t v;
  do {
    v = rng();
  } while (v >= limit);
  return v % n;
}

void PrintLine(const std::string& line) {
  // On a terminal, clear the progress bar's line first.
  std::fprintf(stderr, "%s%s\n", ::isatty(STDERR_FILENO) == 1 ? "\r\033[K" : "", line.c_str());
}

void ReportProblem(const IngestOptions& o, const SourceProblem& p) {
  if (o.on_problem) {
    o.on_problem(p);
  } else if (p.skipped) {
    PrintLine("gulpdb ingest: skipping '" + p.id + "': " + p.message);
  } else {
    PrintLine("gulpdb ingest: warning: '" + p.id + "': " + p.message);
  }
}

void Note(const IngestOptions& o, const std::string& note) {
  if (o.on_note) {
    o.on_note(note);
  } else if (!o.quiet) {
    PrintLine("gulpdb ingest: " + note);
  }
}

// The sources of `o`: its own list, or the listing of its directories.
std::vector<SourceSpec> Sources(const IngestOptions& o, std::optional<VideoLocator>* locator) {
  if (o.sources.empty()) return ListDirectorySources(o, locator);
  std::vector<SourceSpec> sources = o.sources;
  for (SourceSpec& s : sources) {
    if (s.id_json.empty() && util::FindInvalidUtf8(s.id) == std::string_view::npos) {
      s.id_json = engine::PythonJsonString(s.id);
    }
  }
  return sources;
}

// What of `o`'s sources an H.264 dataset cannot take: "frame folders"
// (--frames-dir), "images" (--images-dir, --image-list), "source '<id>', a
// frame folder" (an explicit list); empty when they are all videos.
std::string NotVideos(const IngestOptions& o) {
  if (!o.frames_dir.empty()) return "frame folders (--frames-dir)";
  if (!o.images_dir.empty() || !o.image_list.empty()) return "images";
  for (const SourceSpec& s : o.sources) {
    if (s.kind != SourceKind::kVideo) {
      return "source '" + s.id +
             (s.kind == SourceKind::kImage ? "', an image" : "', a frame folder");
    }
  }
  return "";
}

}  // namespace

std::optional<SourceProblem> UnstorableSource(const SourceSpec& s) {
  const std::string where = s.path.empty() ? "" : " (" + engine::PrintableBytes(s.path, 200) + ")";
  std::string message;
  if (util::FindInvalidUtf8(s.id) != std::string_view::npos) {
    message = "the id" + where + " is not valid UTF-8, and ids are UTF-8 text: rename it";
  } else if (s.label && util::FindInvalidUtf8(*s.label) != std::string_view::npos) {
    message = "the label" + where + " is not valid UTF-8, and labels are UTF-8 text: rename it";
  } else {
    return std::nullopt;
  }
  return SourceProblem{engine::PrintableBytes(s.id), s.path, std::move(message), /*skipped=*/true};
}

std::string ValidateIngestOptions(const IngestOptions& o) {
  const int kinds = int{!o.videos_dir.empty()} + int{!o.frames_dir.empty()} +
                    int{!o.image_list.empty()} +
                    int{!o.images_dir.empty() && o.image_list.empty()} + int{!o.sources.empty()};
  if (kinds == 0) return "no source: give --videos-dir, --frames-dir, --images-dir or --image-list";
  if (kinds > 1) {
    return !o.sources.empty()
               ? "give either a list of sources or directories to list, not both"
               : "give one source: --videos-dir, --frames-dir, --images-dir or --image-list "
                 "(--images-dir with --image-list is the root of its paths)";
  }
  if (!o.labels.empty() && o.videos_dir.empty() && o.frames_dir.empty()) {
    return o.sources.empty()
               ? "--labels goes with --videos-dir or --frames-dir (an image list carries its "
                 "labels)"
               : "a list of sources carries its labels: --labels goes with directories";
  }
  if (o.dir.empty()) return "the dataset directory is empty";
  // Each value in its option's range, by the rules of the command line.
  if (const std::string problem = CheckOptionValues(o); !problem.empty()) return problem;
  if (o.codec == Codec::kH264) {
    if (o.keep_jpeg) return "--keep-jpeg stores JPEG bytes: it does not go with --codec h264";
    if (const std::string what = NotVideos(o); !what.empty()) {
      return "--codec h264 stores videos, not " + what +
             " (frame folders and images are stored as JPEG: give --videos-dir, or leave out "
             "--codec)";
    }
  }
  if (o.keep_jpeg && o.frame_size > 0) {
    return "--keep-jpeg stores the source bytes, so it cannot resize (--frame-size)";
  }
  for (const SourceSpec& s : o.sources) {
    if (s.id.empty()) return "a source has an empty id";
    if (s.kind != SourceKind::kVideo && s.path.empty() && s.frame_paths.empty()) {
      return "source '" + s.id + "' has no path";
    }
  }
  return "";
}

std::vector<SourceSpec> ListSources(const IngestOptions& o) {
  if (!o.sources.empty()) {
    throw InvalidArgumentError("list sources for " + o.dir + ": the sources are already given");
  }
  IngestOptions checked = o;
  if (checked.dir.empty()) checked.dir = ".";  // listing needs no dataset
  if (const std::string problem = ValidateIngestOptions(checked); !problem.empty()) {
    throw InvalidArgumentError("list sources: " + problem);
  }
  std::optional<VideoLocator> locator;
  std::vector<SourceSpec> sources = ListDirectorySources(o, &locator);
  if (locator) {
    for (SourceSpec& s : sources) {
      try {
        s.path = locator->Resolve(s.id);
      } catch (const Error& e) {
        // Left empty: Ingest reports the source as bad, as it would have,
        // with this error, also where no locator can look again.
        s.lookup_error = e.what();
        s.lookup_error_code = e.code();
      }
    }
  }
  return sources;
}

std::vector<size_t> ShuffledOrder(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[UniformBelow(rng, i)]);
  return order;
}

void UpdateLabelMapFile(const std::string& dir, const LabelMap& map) { UpdateLabel2Idx(dir, map); }

CreateOptions NewDatasetOptions(const IngestOptions& options) { return options; }

IngestReport Ingest(const IngestOptions& o) {
  if (const std::string problem = ValidateIngestOptions(o); !problem.empty()) {
    throw InvalidArgumentError("ingest " + o.dir + ": " + problem);
  }
  IngestReport report;

  // List every source first: a bad list changes nothing.
  std::optional<VideoLocator> locator;
  std::vector<SourceSpec> listed = Sources(o, &locator);
  report.listed = listed.size();
  if (o.shuffle) {
    report.seed = o.seed ? *o.seed : std::random_device()();
    std::vector<SourceSpec> shuffled;
    shuffled.reserve(listed.size());
    for (size_t i : ShuffledOrder(listed.size(), report.seed)) {
      shuffled.push_back(std::move(listed[i]));
    }
    listed = std::move(shuffled);
    if (!o.seed) Note(o, "shuffled with --seed " + std::to_string(report.seed));
  }

  // Ids listed twice and sources no dataset can hold (PlanSources), checked
  // before the dataset is touched.
  std::vector<std::string_view> ids;
  ids.reserve(listed.size());
  for (const SourceSpec& s : listed) ids.push_back(s.id);
  std::vector<std::optional<SourceProblem>> problems(listed.size());
  for (size_t i = 0; i < listed.size(); ++i) {
    problems[i] = UnstorableSource(listed[i]);
    if (problems[i] && listed[i].path.empty() &&
        locator) {  // name the video file, as ListSources does
      SourceSpec named = listed[i];
      try {
        named.path = locator->Resolve(named.id);
        problems[i] = UnstorableSource(named);
      } catch (const Error&) {
      }
    }
  }
  SourcePlan plan = PlanSources(o.dir, o.on_duplicate, o.strict, ids, problems);
  std::vector<bool>& keep = plan.keep;
  report.duplicates = plan.duplicates;
  for (const size_t i : plan.bad) {
    ReportProblem(o, *problems[i]);
    listed[i].label.reset();  // not one of the dataset's labels
    ++report.bad;
  }
  // A given label map must name every label, before anything is written.
  if (o.label_map) CheckLabelsMapped(o.dir, *o.label_map, listed);

  std::unique_ptr<Dataset> ds;
  if (Dataset::Exists(o.dir, o.index_dir)) {
    OpenOptions open;
    open.read_only = false;
    open.index_dir = o.index_dir;
    ds = Dataset::Open(o.dir, open);
  } else {
    try {
      ds = Dataset::Create(o.dir, NewDatasetOptions(o));
    } catch (const InvalidArgumentError&) {
      // Another process created it meanwhile (Create is all or nothing):
      // extend that one, as if it had been there from the start.
      if (!Dataset::Exists(o.dir, o.index_dir)) throw;
      OpenOptions open;
      open.read_only = false;
      open.index_dir = o.index_dir;
      ds = Dataset::Open(o.dir, open);
    }
  }
  if (ds->codec() == Codec::kH264 && o.codec == Codec::kJpeg) {
    if (const std::string what = NotVideos(o); !what.empty()) {
      // (--codec h264 would not help: it stores videos only.)
      throw InvalidArgumentError("ingest " + o.dir +
                                 ": the dataset stores its frames as h264, which holds videos "
                                 "only, not " +
                                 what + "; ingest those into a JPEG dataset (a new DIR)");
    }
  }
  if (ds->codec() != o.codec) {
    throw InvalidArgumentError("ingest " + o.dir + ": the dataset stores its frames as " +
                               CodecName(ds->codec()) + ", not " + CodecName(o.codec) +
                               " (give --codec " + CodecName(ds->codec()) +
                               ", or ingest into a new dataset)");
  }
  WriterOptions wo;
  wo.on_duplicate = o.on_duplicate;
  wo.lock_timeout = o.lock_timeout;
  std::unique_ptr<Writer> writer = ds->NewWriter(wo);  // the lock: nobody else writes from here on

  // Ids already present: an error, or under kSkip left out here, so that a
  // re-run resumes without decoding anything twice.
  report.present = DropIdsPresent(*ds, o.dir, o.on_duplicate, ids, &keep);
  const LabelMap label2idx = o.label_map ? *o.label_map : ComputeLabelMap(o.dir, listed);
  if (o.write_label_map) UpdateLabel2Idx(o.dir, label2idx);
  std::vector<SourceSpec> todo;
  for (size_t i = 0; i < listed.size(); ++i) {
    if (keep[i]) todo.push_back(std::move(listed[i]));
  }
  listed.clear();

  FrameSettings settings;
  settings.frame_rate = o.frame_rate;
  settings.frame_size = o.frame_size;
  settings.keep_jpeg = o.keep_jpeg;
  settings.encode.quality = o.quality;
  settings.encode.subsampling = Subsampling::k444;
  settings.ffmpeg = o.ffmpeg;
  settings.h264 = o.codec == Codec::kH264;
  settings.gop = o.gop;
  settings.crf = o.crf;

  size_t workers = o.num_workers != 0 ? o.num_workers : std::thread::hardware_concurrency();
  workers = std::max<size_t>(1, std::min(workers, std::max<size_t>(1, todo.size())));
  std::optional<StopSignals> signals;
  if (o.catch_signals) signals.emplace();
  const auto stop_signal = [&] { return signals ? StopSignals::Received() : 0; };
  ChildSet children;
  OrderedQueue<Encoded> queue(todo.size(), std::max<size_t>(4, 2 * workers));
  IngestProgress progress;
  progress.total = todo.size();
  Workers<Encoded> pool(workers, &queue, &children,
                        [&](size_t i) { return Produce(todo[i], settings, locator, &children); });

  if (o.on_progress) o.on_progress(progress);

  size_t appended_frames = 0, appended = 0;  // of the open batch
  auto commit = [&] {
    writer->Commit();
    report.added += appended;
    report.frames += appended_frames;
    appended = appended_frames = 0;
  };
  for (size_t i = 0; i < todo.size(); ++i) {
    Encoded e;
    while (stop_signal() == 0 && !queue.Take(i, std::chrono::milliseconds(100), &e)) {
    }
    if (stop_signal() != 0) {
      report.interrupted_by = stop_signal();
      break;
    }
    if (e.fatal) std::rethrow_exception(e.fatal);
    const SourceSpec& s = todo[i];
    if (e.problem.empty()) {
      std::string meta = "{\"id\": " + s.id_json;
      if (s.label) {
        meta += ", \"label\": " + engine::PythonJsonString(*s.label) +
                ", \"idx\": " + std::to_string(label2idx.at(*s.label));
      }
      meta += "}";
      try {
        std::vector<std::string_view> views(e.frames.begin(), e.frames.end());
        const bool added = settings.h264 ? writer->AppendH264(s.id, e.h264, meta)
                                         : writer->Append(s.id, views, meta);
        if (added) {
          ++appended;
          appended_frames += settings.h264 ? e.h264_frames : e.frames.size();
        } else {
          ++report.present;
        }
      } catch (const InvalidArgumentError& error) {  // the writer refused the id or a frame
        e.problem_prefix = "(" + e.path + ") ";
        e.problem = e.problem_prefix + error.what();
        e.error = std::current_exception();
      }
    }
    if (!e.problem.empty()) {
      if (o.strict) {
        commit();
        ThrowWithContext(e.error, "ingest '" + s.id + "': " + e.problem_prefix);
      }
      ReportProblem(o, SourceProblem{s.id, e.path, e.problem, /*skipped=*/true});
      ++report.bad;
    } else if (!e.warning.empty()) {
      ReportProblem(o, SourceProblem{s.id, e.path, e.warning, /*skipped=*/false});
    }
    ++progress.done;
    if (o.on_progress) o.on_progress(progress);
    if (writer->pending_videos() >= o.batch) commit();
  }
  commit();
  return report;
}

}  // namespace gulpdb::ingest
