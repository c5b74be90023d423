// Ingest: builds or extends a dataset from one of four kinds of source, or
// from an explicit list of sources.
//
//   videos       videos_dir DIR [labels LIST]: each video is DIR/<id>.<ext>
//                or the single file in DIR/<id>/, decoded by ffmpeg at
//                `frame_rate` frames per second (a video shorter than one
//                frame period at that rate yields its first frame: a video
//                always yields at least one). LIST is a 20BN-style JSON list
//                ([{"id": ..., "<label_name>": ...}, ...], ids strings or
//                numbers) or an `id;label` CSV, told apart by content (JSON
//                when its first character that is not blank, after an
//                optional byte order mark, is '[' or '{'; else CSV); without
//                it every video in DIR.
//   frame folders frames_dir DIR [labels LIST]: each video is the folder
//                DIR/<id> of .jpg/.jpeg frames, in file-name order.
//   image folder images_dir DIR: one sub-folder per class; every image
//                below it is a one-frame video, id = path relative to DIR,
//                label = the class folder.
//   image list   image_list FILE [images_dir ROOT]: one image path per
//                line, optionally followed by `;label`; relative paths are
//                taken from ROOT, or else from FILE's folder.
//   explicit     `sources`: SourceSpecs made by the caller, typically one
//                partition of what ListSources returned on another machine.
//
// Frames are stored as JPEG: video frames (and non-JPEG images, which ffmpeg
// decodes too) are encoded with gulpdb's JpegEncoder at `quality`, 4:4:4, as
// GulpIO2 does. JPEG sources are decoded and re-encoded the same way, unless
// `keep_jpeg` asks to store their bytes untouched (then only their headers are
// decoded, to catch non-JPEG files; `gulpdb check --deep` decodes every
// frame). `frame_size` resizes every frame so that its short edge has that
// many pixels (GulpIO's rule: the long edge becomes trunc(size * long / short)).
//
// With `codec` kH264 (a new dataset is created with that codec; an existing
// one must already have it, else InvalidArgumentError before anything is
// written), each video's frames — exactly those the JPEG path would store:
// same count, same frame times, same `frame_rate`/`frame_size` — are encoded
// by a second ffmpeg child with libx264 (`gop` frames per group of pictures,
// a keyframe every `gop` frames and at no other frame, no B-frames, constant
// quality `crf`, 4:2:0; 4:4:4 for a frame size with an odd width or height,
// which 4:2:0 cannot hold) and appended with Writer::AppendH264
// (docs/h264.md). Videos only: frame folders and images (with the kH264
// codec) are refused as invalid options.
//
// Meta of each video is GulpIO's {"id": <id as listed>, "label": <label>,
// "idx": <label index>} (just {"id": ...} for unlabeled sources), and
// <dir>/label2idx.json maps sorted labels to indices; labels already in an
// existing label2idx.json keep their index and new ones are numbered after
// them (ComputeLabelMap). A distributed ingest computes that map once, up
// front, and gives it to every shard's ingest as `label_map`.
//
// Pipeline: `num_workers` threads read, decode and encode sources (one ffmpeg
// child per worker busy with a video); the calling thread owns the Writer and
// appends the videos in list order (after shuffling, when asked), committing
// every `batch` appended videos. Workers run at most a window of
// max(4, 2 × workers) sources ahead of the writer, so memory holds at most
// that many encoded videos (plus one decoded frame per worker) however long
// the list is. Appending in list order rather than in completion order costs
// little (a slow video holds back at most a window of finished ones) and
// makes the dataset's layout the same on every run of a given list and seed.
//
// Failure modes:
//   - A bad source (missing, unreadable or undecodable video, corrupt JPEG,
//     no frames, an id the index refuses, a symbolic link that is dangling,
//     in a loop or leads to a device or FIFO: see ingest/sources.h) is
//     reported through `on_problem`
//     (by default on stderr, by id and path) and skipped; with `strict`, the
//     videos before it are committed and Ingest throws the source's error
//     (its type kept, the id added to its message); nothing is ever written
//     as an empty video.
//   - Bad options, a malformed or empty label list, a JSON list none of whose
//     entries has the `label_name` key (while they have other keys besides
//     "id"), or a label missing from a given `label_map` throw
//     InvalidArgumentError before the dataset is touched; entries of a list
//     that lack the label when others have it are ingested unlabeled, with
//     one warning (`on_warning`) giving their count and a few ids. A
//     missing ffmpeg, a Writer failure (I/O, disk full) or another writer
//     holding the lock throws; committed batches stay, in a dataset this
//     call created too (Ingest never removes a dataset; `gulpdb ingest`
//     removes a new one only when nothing was committed into it).
//   - A dataset whose codec is h264 takes videos only: frame folders and
//     images into it throw InvalidArgumentError before anything is written.
//   - SIGINT or SIGTERM stops the workers (and kills their ffmpeg children),
//     commits the videos already appended and returns with `interrupted_by`
//     set; a second signal kills the process at once. A crash or SIGKILL at
//     any point loses nothing committed. Ids already in the dataset are
//     skipped (OnDuplicate::kSkip), so re-running the same command resumes.
//   - An id listed twice: kError throws before the dataset is touched, kSkip
//     ingests its first entry, kReplace its last.
//
// Thread safety: with `catch_signals` (the default) Ingest may be called
// from one thread at a time per process (it installs SIGINT/SIGTERM handlers
// for its duration); without it, calls on different datasets may run
// concurrently. The callbacks run on the calling thread; an exception thrown
// by one stops the run (workers and their ffmpeg children stopped, the open
// batch rolled back) and propagates.
#ifndef GULPDB_INGEST_H_
#define GULPDB_INGEST_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/export.h"

namespace gulpdb::ingest {

enum class SourceKind {
  kVideo,        // a video file, decoded by ffmpeg
  kFrameFolder,  // a folder of JPEG frames (or an explicit list of frame files)
  kImage,        // one image file: a one-frame video
};

// One video to ingest.
struct SourceSpec {
  SourceKind kind = SourceKind::kVideo;
  std::string id;  // the dataset key (valid UTF-8)
  // How the id is written into meta ("id": ...): a JSON string, or a number as
  // a label list gave it. Empty: the id as a JSON string.
  std::string id_json;
  std::optional<std::string> label;  // as listed; none for unlabeled sources
  // The video file, frame folder or image file. A video that ListSources could
  // not find has an empty path, and Ingest reports it as a bad source.
  std::string path;
  // Why ListSources could not find the video (`path` is then empty): the
  // message and code of the error Ingest reports for it ("find video v in
  // DIR/v: 2 files, expected one video"), wherever it runs. Empty: found, or
  // not looked up.
  std::string lookup_error;
  ErrorCode lookup_error_code = ErrorCode::kNotFound;
  // For kFrameFolder: the frame files in order. Empty: the .jpg/.jpeg files of
  // `path` in file-name order, listed when the source is read.
  std::vector<std::string> frame_paths;
};

// label -> index, as label2idx.json holds it.
using LabelMap = std::map<std::string, int64_t>;

// Progress of Ingest: videos handled (appended, or skipped as bad) out of
// the videos to handle (listed, minus ids already present or listed twice).
struct IngestProgress {
  size_t done = 0;
  size_t total = 0;
};

// A source that was skipped, or that was ingested with a warning from ffmpeg.
struct SourceProblem {
  std::string id;
  std::string path;     // the file or folder read, when known
  std::string message;  // what went wrong, naming the file
  bool skipped = true;  // false: a warning only, the video was ingested
};

// The CreateOptions it derives from are the settings of a new dataset (an
// existing one keeps its own); index_dir says where the index lives either
// way (empty: <dir>/gulpdb.index), and codec how frames are stored.
struct IngestOptions : CreateOptions {
  std::string dir;  // the dataset, created when it does not exist

  // The source: exactly one of videos_dir, frames_dir, image_list, images_dir
  // alone (with image_list, images_dir is the root of its paths), or `sources`.
  std::string videos_dir;
  std::string frames_dir;
  std::string images_dir;
  std::string image_list;
  std::string labels;                // JSON list or id;label CSV, for videos and frame folders
  std::string label_name = "label";  // key of the label in a JSON list
  std::vector<SourceSpec> sources;   // non-empty: ingest these, list no directory

  // Label indices: unset, computed as ComputeLabelMap does and merged into
  // label2idx.json. Set, used as given: every label of the sources must be in
  // it (else InvalidArgumentError before anything is written), and labels
  // already in label2idx.json must keep their index.
  std::optional<LabelMap> label_map;
  bool write_label_map = true;  // false: leave <dir>/label2idx.json alone

  double frame_rate = 8;          // frames per second taken from videos; 0: every frame
  int frame_size = 0;             // short edge after resizing; 0: keep the size
  int quality = 90;               // JPEG quality of encoded frames
  bool keep_jpeg = false;         // store JPEG sources byte for byte (not with frame_size)
  std::string ffmpeg = "ffmpeg";  // the program, looked up on PATH

  // With codec kH264 (see above): `gop` frames per group of pictures
  // (1-1000), libx264 constant-quality factor `crf` (0-51, lower is better;
  // the default gives >= 35 dB PSNR against the JPEG path's frames on
  // ffmpeg's testsrc2 and on cockatoo.mp4, docs/h264.md).
  int gop = 8;
  int crf = 20;

  size_t num_workers = 0;  // 0: one per core
  bool shuffle = false;
  std::optional<uint64_t> seed;  // shuffle seed; unset: a random one, reported

  size_t batch = 100;  // appended videos per committed transaction
  OnDuplicate on_duplicate = OnDuplicate::kSkip;
  bool strict = false;
  bool quiet = false;  // the default on_note prints nothing
  // How long to wait for another writer of `dir` (another process, or a
  // duplicate of this ingest) to finish; zero: BusyError at once.
  std::chrono::milliseconds lock_timeout{0};
  // Catch SIGINT and SIGTERM for the run (see "Failure modes"). False for a
  // host process that owns its signals (a Dask worker, a server); such a host
  // stops an ingest by throwing from `on_progress` instead: the open batch is
  // rolled back, committed batches stay.
  bool catch_signals = true;

  // Called after each handled video, on the calling thread. Unset: nothing.
  std::function<void(const IngestProgress&)> on_progress;
  // Called for each bad source and each warning. Unset: a line on stderr,
  // "gulpdb ingest: skipping '<id>': <message>" (or "warning: '<id>': ...").
  std::function<void(const SourceProblem&)> on_problem;
  // Called with notes such as the random shuffle seed. Unset: a line on
  // stderr unless `quiet`.
  std::function<void(const std::string&)> on_note;
  // Called with warnings about the whole list, such as label list entries
  // without a label. Unset: "gulpdb ingest: warning: ..." on stderr, even
  // when `quiet`.
  std::function<void(const std::string&)> on_warning;
};

struct IngestReport {
  size_t listed = 0;       // sources in the list
  size_t added = 0;        // videos appended and committed
  uint64_t frames = 0;     // frames of the added videos
  size_t present = 0;      // skipped: the id was already in the dataset
  size_t duplicates = 0;   // left out: the id was listed more than once
  size_t bad = 0;          // bad sources reported and skipped
  uint64_t seed = 0;       // the shuffle seed used, when shuffled
  int interrupted_by = 0;  // the signal that stopped the run, or 0
};

// The settings a dataset that `options` creates takes from them: their
// CreateOptions (an existing dataset keeps its own). What Ingest creates
// with, and `gulpdb create`.
GULPDB_EXPORT CreateOptions NewDatasetOptions(const IngestOptions& options);

// Returns what is wrong with `options` (one line), or an empty string.
GULPDB_EXPORT std::string ValidateIngestOptions(const IngestOptions& options);

// The sources the directory options of `options` describe, in list order
// (before shuffling), with video files looked up in videos_dir. Reads the
// label list and the directories, touches no dataset. Throws
// InvalidArgumentError for invalid options (as ValidateIngestOptions, or
// `sources` already given) or a malformed list, NotFoundError or IoError when
// a directory or list cannot be read.
GULPDB_EXPORT std::vector<SourceSpec> ListSources(const IngestOptions& options);

// The label map an ingest of `sources` into `dir` would use: the indices of
// <dir>/label2idx.json (when it exists) kept, the labels it lacks sorted and
// numbered after its largest index. Throws CorruptionError for an unreadable
// label2idx.json.
GULPDB_EXPORT LabelMap ComputeLabelMap(const std::string& dir,
                                       const std::vector<SourceSpec>& sources);

// The order in which Ingest appends `n` listed sources under `shuffle` with
// `seed`: the i-th appended is listed source order[i]. The same on every
// platform, so that a list computed elsewhere (a distributed ingest's plan)
// is ordered exactly as Ingest would order it.
GULPDB_EXPORT std::vector<size_t> ShuffledOrder(size_t n, uint64_t seed);

// Makes <dir>/label2idx.json hold `map`, as Ingest does before appending:
// entries already there keep their place (their index must agree with `map`,
// else InvalidArgumentError before anything is written), the others follow in
// index order; the file is replaced atomically, and only when it changes.
// `dir` must exist.
GULPDB_EXPORT void UpdateLabelMapFile(const std::string& dir, const LabelMap& map);

// Runs the ingest described above and returns what it did. Throws a
// gulpdb::Error as listed under "Failure modes" (after committing whatever
// was appended, for a bad source under `strict`).
GULPDB_EXPORT IngestReport Ingest(const IngestOptions& options);

// The problem Ingest reports when it skips `source` before reading it
// because no dataset can hold it — an id or a label that is not valid UTF-8
// (typically a file or folder name in another encoding): `id` printable
// (other bytes as \xNN), `path` as listed, `message` naming the file
// (escaped). nullopt when the source can be stored. A distributed ingest's
// plan skips such sources the same way (or stops under `strict`).
GULPDB_EXPORT std::optional<SourceProblem> UnstorableSource(const SourceSpec& source);

// Which of `ids` (the listed sources, in the order Ingest appends them: after
// any shuffle) an ingest into `dir` keeps, decided as Ingest decides before
// it writes anything, so that a distributed ingest's plan decides the same,
// down to the messages. First the ids listed twice: with
// OnDuplicate::kError an InvalidArgumentError ("ingest <dir>: id '<id>' is
// listed twice (see --on-duplicate)"), else all but the first (kSkip) or the
// last (kReplace) listing dropped. Then the kept sources no dataset can hold
// (`problems[i]`, UnstorableSource's answer for source i): with `strict` an
// InvalidArgumentError ("ingest '<id>': <message>"), else dropped and listed
// in `bad`. `problems` is empty or as long as `ids`.
struct SourcePlan {
  std::vector<bool> keep;   // one per listed source
  uint64_t duplicates = 0;  // listings dropped as ids listed twice
  std::vector<size_t> bad;  // the sources dropped as unstorable, in list order
};
GULPDB_EXPORT SourcePlan PlanSources(const std::string& dir, OnDuplicate on_duplicate, bool strict,
                                     const std::vector<std::string_view>& ids,
                                     const std::vector<std::optional<SourceProblem>>& problems);

// Of the sources `*keep` still keeps, those whose id `dataset` holds: with
// OnDuplicate::kError an InvalidArgumentError ("ingest <dir>: id '<id>' is
// already in the dataset (see --on-duplicate)"), with kSkip dropped (a
// re-run resumes without decoding anything twice); kReplace keeps them.
// Returns how many were dropped.
GULPDB_EXPORT uint64_t DropIdsPresent(const Dataset& dataset, const std::string& dir,
                                      OnDuplicate on_duplicate,
                                      const std::vector<std::string_view>& ids,
                                      std::vector<bool>* keep);

// ---- Relabel: new labels for videos already in a dataset ----------------------
//
// Reads a label list as Ingest reads --labels (a 20BN JSON list, its label
// under `label_name`, or an `id;label` CSV) and gives each listed video that
// label: its meta's "label" becomes the label and its "idx" the label's index
// in <dir>/label2idx.json, in one writer batch (Writer::UpdateMeta; frames
// never move, the meta indexes follow). label2idx.json keeps every entry and
// index it has; labels it lacks are sorted and numbered after its largest
// index (a dataset without the file starts from the labels and indices its
// videos have). The file is written before the batch commits, so the map the
// committed meta uses is always there (a failed commit leaves the new labels
// in it, unused). Unlisted videos keep their meta.
struct RelabelOptions {
  std::string dir;
  std::string index_dir;  // empty: <dir>/gulpdb.index
  std::string labels;
  std::string label_name = "label";
  std::chrono::milliseconds lock_timeout{0};
  // Warnings about the list (one line each). Unset: a line on stderr.
  std::function<void(const std::string&)> on_warning;
};

struct RelabelReport {
  size_t listed = 0;      // ids in the list
  size_t changed = 0;     // videos whose meta changed
  size_t new_labels = 0;  // labels added to label2idx.json
};

// Throws, changing nothing: InvalidArgumentError for a malformed list, an
// entry without a label, or an id listed twice with two labels; NotFoundError
// for a missing dataset or list; IdNotFoundError listing the ids the dataset
// lacks (up to 20, and how many); BusyError when another writer holds it.
GULPDB_EXPORT RelabelReport Relabel(const RelabelOptions& options);

// ---- The ingest command line ---------------------------------------------------
//
// One table of the options of an ingest, read by `gulpdb ingest` (and
// `gulpdb create` for the settings of a new dataset), by `python3 -m
// gulpdb.distributed ingest` and by gulpdb.distributed.ingest(), whose
// keyword arguments are the names with '_' for '-'. It says each option's
// kind, default (IngestOptions' own, as text) and help; SetIngestOption reads
// a value as a command line gives it, with the same rules everywhere, and
// IgnoredIngestOptions says which given options an ingest would not use.
// Thread safety: the table is built once and then only read.

enum class OptionKind {
  kPath,         // a file or directory; not empty
  kText,         // any text; not empty
  kWholeNumber,  // decimal digits only, in a range
  kNumber,       // a plain decimal (1.5, 1e-3), finite, in a range
  kSwitch,       // given or not ("true" / "false")
  kChoice,       // one of a few words (--on-duplicate)
};

struct IngestOptionInfo {
  std::string name;     // the long option without "--", e.g. "frame-rate"
  char short_name = 0;  // 'j' for -j, or 0
  OptionKind kind = OptionKind::kText;
  std::string value_name;    // "D", "N", ... for --help; empty for a switch
  std::string default_text;  // IngestOptions' default as text; empty: none (and for switches)
  std::string help;
  bool distributed = true;  // also an option of distributed ingest
};

// Every option, in the order --help lists them.
GULPDB_EXPORT const std::vector<IngestOptionInfo>& IngestCommandOptions();

// Sets option `name` ("frame-rate" or "frame_rate") of `options` from `text`
// as a command line gives it; a switch takes "true" or "false" ("1", "0").
// Throws InvalidArgumentError naming the option and the value for an unknown
// option, an empty path or text ("--labels is an empty string"), or a value
// the option does not take ("--quality must be a whole number from 1 to
// 100, not '0'"); `options` is then unchanged.
GULPDB_EXPORT void SetIngestOption(IngestOptions* options, std::string_view name,
                                   const std::string& text);

// The value of option `name` in `options` as text (as SetIngestOption takes
// it; a switch "true" or "false"), or nullopt when it has none (an empty
// path, no seed). Throws InvalidArgumentError for an unknown option.
GULPDB_EXPORT std::optional<std::string> IngestOptionText(const IngestOptions& options,
                                                          std::string_view name);

// Warnings (one line each, e.g. "--seed is ignored without --shuffle") for
// the options in `given` (names as above) that the ingest `options` would
// not use: --seed without --shuffle, --label-name without --labels,
// --frame-rate without --videos-dir, --quality with --keep-jpeg of frame
// folders, and --videos-per-chunk, --bytes-per-chunk, --no-checksums when
// `options.dir` is an existing dataset whose own setting differs (its
// settings are read from a read-only open; the errors of opening it are
// thrown).
GULPDB_EXPORT std::vector<std::string> IgnoredIngestOptions(const IngestOptions& options,
                                                            const std::vector<std::string>& given);

// The number rules of every gulpdb command-line option (gulpdb ingest's and
// every other command's): `text` is decimal digits
// only, in [min, max] (ParseWholeNumber), or a plain finite decimal such as
// 0.5 or 1e-3 in [min, max] (ParseNumber) — no sign, hex, "inf", "nan" or
// blanks. Otherwise InvalidArgumentError "--<name> must be a whole number
// from <min> to <max>, not '<text>'" (or "... a number from ...").
GULPDB_EXPORT uint64_t ParseWholeNumber(const std::string& name, const std::string& text,
                                        uint64_t min, uint64_t max);
GULPDB_EXPORT double ParseNumber(const std::string& name, const std::string& text, double min,
                                 double max);

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_H_
