// GulpIO / GulpIO2 interoperability: index an existing GulpIO directory in
// place, export .gmeta files that unmodified GulpIO2 reads, and check a
// dataset's health.
//
// Thread safety: each function takes the dataset's writer lock when it
// writes (import, export of an index being written is still consistent: it
// reads one snapshot). Errors are gulpdb::Error subclasses (error.h).
#ifndef GULPDB_INTEROP_H_
#define GULPDB_INTEROP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/export.h"

namespace gulpdb {

class Dataset;

// The file names of a GulpIO directory, as GulpIO and GulpIO2 write them and
// the importer reads them: a chunk is a data*.gulp file and a meta*.gmeta
// file, numbered by the first run of digits in the name; gulpdb names the
// chunks it writes data_<N>.gulp and the .gmeta files it exports
// meta_<N>.gmeta. Pure string work, safe from any thread.
GULPDB_EXPORT bool IsGulpioDataFileName(const std::string& name);  // data*.gulp
GULPDB_EXPORT bool IsGulpioMetaFileName(const std::string& name);  // meta*.gmeta
GULPDB_EXPORT std::string GulpioDataFileName(uint32_t chunk);      // data_<N>.gulp
GULPDB_EXPORT std::string GulpioMetaFileName(uint32_t chunk);      // meta_<N>.gmeta

struct ImportOptions {
  // An id in two chunks: kError, an error listing the ids; kSkip, the chunk
  // that comes first in numeric order keeps it; kReplace, the last one does.
  OnDuplicate on_duplicate = OnDuplicate::kError;
  // A data_N.gulp without meta_N.gmeta: an error by default; with this set it
  // is skipped and a warning is reported.
  bool skip_missing_meta = false;
  // Store a CRC-32C of every frame, as the writer does, so that `check
  // --deep` and verify-on-read can tell a damaged frame later. Costs one read
  // of every data file; off: only the .gmeta files are read.
  bool checksums = true;
  // Where the index goes; empty: <dir>/gulpdb.index. A read-only GulpIO
  // directory can be indexed into a writable place elsewhere.
  std::string index_dir;
  // Called after each chunk with (chunks done, chunks in total).
  std::function<void(uint64_t, uint64_t)> progress;
  // Index a directory that already has an index again, from its .gmeta files
  // (after GulpIO/GulpIO2 tools changed it: Dataset::Open then refuses the
  // old index). All or nothing: the new index is built beside the old one
  // and replaces it only when complete (atomically where the file system can
  // exchange directories). Holds the dataset's writer lock meanwhile. Refused
  // when videos of the current index would be lost although their chunk file
  // is still there (gulpdb wrote them and no .gmeta describes them: export
  // first), unless `discard_unexported`. A directory without an index is
  // simply imported. The new index keeps the old one's meta indexes, and
  // its named splits (unless a gulpdb_splits.json gives them): a split whose
  // videos are no longer all described is dropped, with a warning. The chunk
  // files gulpdb wrote that the new index does not take (no .gmeta describes
  // them: they held removed or discarded videos only) are deleted once it is
  // in place, as compaction deletes emptied chunks.
  bool reindex = false;
  bool discard_unexported = false;
  // Meta keys to build a meta index of (Dataset::CreateMetaIndex), as part
  // of the import.
  std::vector<std::string> meta_index_keys;
};

struct ImportReport {
  uint64_t chunks = 0;
  uint64_t videos = 0;
  uint64_t frames = 0;
  uint64_t gmeta_bytes = 0;  // JSON read
  std::vector<std::string> warnings;
  uint64_t splits = 0;  // named splits read from gulpdb_splits.json
};

// Indexes the GulpIO directory `dir` in place, in one transaction: no byte of
// any .gulp file is changed. Chunks are the data*.gulp / meta*.gmeta pairs,
// numbered by the first run of digits in the file name. Every frame_info is
// checked against its data file (inside the file, pad 0..4, length >= pad,
// no overlap). label2idx.json stays where it is. The index records each
// imported file's size and the CRC-32C of each .gmeta, so that a later change
// of content by GulpIO tools is detected (a copy of the directory is not a
// change, nor is a missing .gmeta): Dataset::Open refuses the dataset and
// Check reports it, until it is re-indexed (`reindex`). Throws InvalidArgumentError
// if `dir` is already indexed (and `reindex` is not set), CorruptionError
// naming the file, id and byte offset for bad .gmeta content. On any error no
// index is left behind (a re-index leaves the old one as it was).
// Named splits come from gulpdb_splits.json when the directory has one (as
// export writes it): every id must be in the directory, else
// InvalidArgumentError naming the split and the ids, and no index.
GULPDB_EXPORT ImportReport ImportGulpio(const std::string& dir, const ImportOptions& options = {});

struct ExportReport {
  uint64_t chunks = 0;
  uint64_t videos = 0;
  uint64_t bytes_written = 0;
  uint64_t splits = 0;  // named splits written to gulpdb_splits.json
  // ExportGulpioDirectory of an h264 dataset: frames and data_N.gulp bytes
  // written (bytes_written counts the .gmeta files).
  uint64_t frames = 0;
  uint64_t data_bytes = 0;
};

// Writes meta_<N>.gmeta for every chunk of `dataset` into `out_dir` (empty:
// the dataset directory) in Python json.dump format, each atomically
// (temp file, fsync, rename). A chunk imported from a .gmeta keeps that
// file's name. The chunks of shards attached in place by a merge are left
// out of a local dataset's export: their data files are in the shards'
// sub-directories, where GulpIO's readers do not look (a pushed dataset has
// them flat, and its export writes their .gmeta). For an imported dataset
// that has not changed, the files are byte-identical to the originals (a
// missing one is written again). When `out_dir` is the dataset directory,
// the index records the new content of the imported .gmeta files whose bytes
// it changed (one write transaction at the end, none when no byte changed),
// so that they do not count as changed by another program.
// The named splits go to gulpdb_splits.json beside them (GulpIO's readers
// ignore it), with the ids the .gmeta files describe (not those of attached
// shards' chunks left out); with no split, a gulpdb_splits.json left there by
// an earlier export is removed.
//
// Snapshot: all files describe one committed state, even while a writer (in
// this or another process) commits. The index is read in batches of short
// read transactions, each checked to see the same snapshot as the first; when
// a writer commits in between, the export starts again. After 3 restarts it
// finishes in one read transaction, which, while it lasts, delays a writer in
// this process that needs to grow the index map (other processes are not
// affected). Files are replaced one by one: a reader of `out_dir` during the
// export may see some files of the new state beside older ones.
// On an h264 dataset: InvalidArgumentError (ExportGulpioDirectory exports it).
GULPDB_EXPORT ExportReport ExportGmeta(const Dataset& dataset, const std::string& out_dir = "");

struct ExportOptions {
  int quality = 90;  // JPEG quality of an h264 dataset's frames (1-100)
  // Called as (videos done, videos in total) while an h264 dataset's frames
  // are transcoded; unset: nothing.
  std::function<void(uint64_t, uint64_t)> progress;
};

// Makes `out_dir` a GulpIO directory of `dataset` that unmodified GulpIO2
// reads. For a JPEG dataset this is ExportGmeta (its data files already are
// GulpIO's; `options` is unused). For an h264 dataset (whose chunk files are
// not GulpIO's, and for which ExportGmeta is an InvalidArgumentError) it
// writes, into `out_dir` (an existing directory other than the dataset's,
// holding no data*.gulp or meta*.gmeta file), for every chunk N of the
// dataset data_<N>.gulp — each video's frames decoded by ReadFrames and
// encoded with JpegEncoder at options.quality, 4:4:4, each padded to a
// multiple of 4 bytes as GulpIO pads — and meta_<N>.gmeta with their
// frame_info and the videos' meta_data, in the dataset's order (shards
// attached in place by a merge included, flat); plus label2idx.json when the
// dataset has one, and gulpdb_splits.json. Each file is written beside its
// name and renamed into place; on any failure every file written is removed
// (a label2idx.json or gulpdb_splits.json that was in `out_dir` is left
// alone), so `out_dir` is as it was. The dataset is only read. It should not
// be written meanwhile: each video is listed, then read, in separate read
// transactions, so a video removed meanwhile fails the export
// (IdNotFoundError), and one appended may or may not be in it. Throws
// InvalidArgumentError for an `out_dir` as above, NotFoundError when it is
// missing, and what ReadFrames and the file writes throw.
GULPDB_EXPORT ExportReport ExportGulpioDirectory(const Dataset& dataset, const std::string& out_dir,
                                                 const ExportOptions& options = {});

struct CheckOptions {
  bool deep = false;      // also decode every frame and verify stored checksums
  std::string index_dir;  // where the index lives; empty: <dir>/gulpdb.index
  std::function<void(uint64_t, uint64_t)> progress;  // (videos done, total)
};

struct CheckProblem {
  std::string where;  // file, id and frame
  std::string what;
};

struct CheckReport {
  uint64_t chunks = 0;
  uint64_t videos = 0;
  uint64_t frames = 0;
  // Videos stored without a CRC-32C per frame (a dataset created with
  // checksums off, a GulpIO directory imported without them, or chunks of
  // such a dataset merged in place), and the chunks holding them: reads of
  // their frames are unverified, and --deep can only decode them. A note
  // says so too; it does not make the dataset unhealthy.
  uint64_t unverified_videos = 0;
  uint64_t unverified_chunks = 0;
  std::vector<CheckProblem> problems;
  // Observations that do not make the dataset unhealthy, e.g. bytes an
  // interrupted writer left past a chunk's committed length.
  std::vector<std::string> notes;
  bool healthy() const { return problems.empty(); }
};

// Checks a dataset: a strict superset of GulpIO2's sanity check. For an
// imported dataset it also reports each GulpIO file changed since the index
// was built (docs/format/index_format.md, "Source stamps"), which
// Dataset::Open refuses. The index
// file is walked with bounds-checked reads first (OpenOptions::verify_index);
// if it is damaged, that is the report and nothing else is read. Problems are
// reported, not thrown; only a dataset that cannot be opened for another
// reason (missing, unreadable) throws.
GULPDB_EXPORT CheckReport Check(const std::string& dir, const CheckOptions& options = {});

// A problem of one frame of a video (CheckVideo).
struct FrameProblem {
  uint32_t frame = 0;  // the frame's index in the video
  std::string what;
};

struct VideoCheckReport {
  std::string id;
  uint32_t frames = 0;
  // The frames have stored CRC-32Cs, and each frame read was compared with
  // its own.
  bool checksums = false;
  // By frame, ascending; a frame may have several. An H.264 group of
  // pictures that does not decode is reported at its first frame.
  std::vector<FrameProblem> frame_problems;
  // Problems of the video as a whole ("<where>: <what>"): a record that
  // fails verification, a chunk that is missing, cannot be opened or is
  // shorter than the index says.
  std::vector<std::string> problems;
  bool healthy() const { return frame_problems.empty() && problems.empty(); }
};

// Checks the frames of video `id` as Check with `deep` checks every video:
// each frame read from its chunk (file, or object of a published dataset),
// its JPEG markers and pad bytes, its CRC-32C when the index has one, and
// its decode (a JPEG frame alone; an H.264 video by group of pictures).
// Costs one read of the video's frames and their decode. Problems are
// reported, not thrown; throws IdNotFoundError when `dataset` has no video
// `id`, and what reading the index throws otherwise. Only reads.
GULPDB_EXPORT VideoCheckReport CheckVideo(const Dataset& dataset, std::string_view id);

}  // namespace gulpdb

#endif  // GULPDB_INTEROP_H_
