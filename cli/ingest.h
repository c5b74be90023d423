// `gulpdb ingest`: builds or extends a dataset from one of four kinds of source.
//
//   videos       --videos-dir DIR [--labels LIST]: each video is DIR/<id>.<ext>
//                or the single file in DIR/<id>/, decoded by ffmpeg at
//                --frame-rate frames per second. LIST is a 20BN-style JSON list
//                ([{"id": ..., "<label-name>": ...}, ...], ids strings or
//                numbers) or an `id;label` CSV; without it every video in DIR.
//   frame folders --frames-dir DIR [--labels LIST]: each video is the folder
//                DIR/<id> of .jpg/.jpeg frames, in file-name order.
//   image folder --images-dir DIR: one sub-folder per class; every image
//                below it is a one-frame video, id = path relative to DIR,
//                label = the class folder.
//   image list   --image-list FILE [--images-dir ROOT]: one image path per
//                line, optionally followed by `;label`; relative paths are
//                taken from ROOT, or else from FILE's folder.
//
// Frames are stored as JPEG: video frames (and non-JPEG images, which ffmpeg
// decodes too) are encoded with gulpdb's JpegEncoder at `quality`, 4:4:4, as
// GulpIO2 does. JPEG sources are decoded and re-encoded the same way, unless
// `keep_jpeg` asks to store their bytes untouched (then only their headers are
// decoded, to catch non-JPEG files; `gulpdb check --deep` decodes every
// frame). `frame_size` resizes every
// frame so that its short edge has that many pixels (GulpIO's rule: the long
// edge becomes trunc(size * long / short)).
//
// Meta of each video is GulpIO's {"id": <id as listed>, "label": <label>,
// "idx": <label index>} (just {"id": ...} for unlabeled sources), and
// <dir>/label2idx.json maps sorted labels to indices; labels already in an
// existing label2idx.json keep their index and new ones are numbered after
// them.
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
//     no frames, an id the index refuses) is reported on stderr by id and path
//     and skipped; with `strict`, the videos before it are committed and
//     Ingest throws (nothing is ever written as an empty video).
//   - Bad options or a malformed label list throw InvalidArgumentError before
//     the dataset is touched. A missing ffmpeg, a Writer failure (I/O, disk
//     full) or another writer holding the lock throws; committed batches stay.
//   - SIGINT or SIGTERM stops the workers (and kills their ffmpeg children),
//     commits the videos already appended and returns with `interrupted_by`
//     set; a second signal kills the process at once. A crash or SIGKILL at
//     any point loses nothing committed. Ids already in the dataset are
//     skipped (OnDuplicate::kSkip), so re-running the same command resumes.
//   - An id listed twice: kError throws before the dataset is touched, kSkip
//     ingests its first entry, kReplace its last.
//
// Thread safety: Ingest may be called from one thread at a time per process
// (it installs SIGINT/SIGTERM handlers for its duration).
#ifndef GULPDB_CLI_INGEST_H_
#define GULPDB_CLI_INGEST_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "gulpdb/dataset.h"

namespace gulpdb::cli {

struct IngestOptions {
  std::string dir;  // the dataset, created when it does not exist

  // The source: exactly one of videos_dir, frames_dir, image_list, or
  // images_dir alone (with image_list, images_dir is the root of its paths).
  std::string videos_dir;
  std::string frames_dir;
  std::string images_dir;
  std::string image_list;
  std::string labels;                // JSON list or id;label CSV, for videos and frame folders
  std::string label_name = "label";  // key of the label in a JSON list

  double frame_rate = 8;          // frames per second taken from videos; 0: every frame
  int frame_size = 0;             // short edge after resizing; 0: keep the size
  int quality = 90;               // JPEG quality of encoded frames
  bool keep_jpeg = false;         // store JPEG sources byte for byte (not with frame_size)
  std::string ffmpeg = "ffmpeg";  // the program, looked up on PATH

  size_t num_workers = 0;  // 0: one per core
  bool shuffle = false;
  std::optional<uint64_t> seed;  // shuffle seed; unset: a random one, reported

  uint32_t videos_per_chunk = 100;  // for a new dataset
  size_t batch = 100;               // appended videos per committed transaction
  OnDuplicate on_duplicate = OnDuplicate::kSkip;
  bool strict = false;
  bool quiet = false;  // no progress bar, no shuffle-seed note (problems are still reported)
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

// Returns what is wrong with `options` (one line), or an empty string.
std::string ValidateIngestOptions(const IngestOptions& options);

// Runs the ingest described above and returns what it did. Progress and
// per-source problems go to stderr; the caller prints the summary. Throws a
// gulpdb::Error as listed under "Failure modes" (after committing whatever
// was appended, for a bad source under `strict`).
IngestReport Ingest(const IngestOptions& options);

}  // namespace gulpdb::cli

#endif  // GULPDB_CLI_INGEST_H_
