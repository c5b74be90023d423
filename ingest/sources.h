// Sources: turns the directory options of an ingest (a videos folder, frame
// folders, an image tree or an image list, with or without a label list)
// into the list of SourceSpecs to ingest, and finds the file of a video id
// (DIR/<id>.<ext>, or the single file in DIR/<id>/). Directory entries are
// read sorted by name, hidden entries left out, symbolic links followed, so
// a given tree always lists the same way. An entry that is neither a file
// nor a folder once links are followed (a dangling link, a link loop, a
// link to /dev/zero or another device, a FIFO) is listed where a source
// could be, never dropped without a word: reading it fails with the reason
// (util::RequireUsableEntry), so it is a bad source, reported and skipped
// (or stops a --strict run), and a frame folder holding one as a frame is a
// bad source too. A folder of an image tree reached again below itself (a
// link `up -> ..`) is not followed, with a warning: it would list its images
// again under longer ids. Failures throw a gulpdb::Error naming the folder or
// file.
#ifndef GULPDB_INGEST_SOURCES_H_
#define GULPDB_INGEST_SOURCES_H_

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gulpdb/ingest.h"

namespace gulpdb::ingest {

struct DirEntry {
  std::string name;
  bool is_dir = false;
  // Neither a regular file nor a directory (see the file comment): why.
  // Then is_dir is false.
  std::string unusable;
};

// Sub-directories, regular files and unusable entries of `dir` (symbolic
// links followed), sorted by name; hidden entries (".name") are left out.
std::vector<DirEntry> ListEntries(const std::string& dir);

// `name` inside `dir` (`name` itself when it is absolute or `dir` is empty).
std::string Join(const std::string& dir, const std::string& name);

bool IsJpegName(const std::string& name);

// The .jpg/.jpeg files of a frame folder, in file-name order (unusable ones
// included: reading them fails). Throws when `folder` is unusable.
std::vector<std::string> ListFrameFiles(const std::string& folder);

// Finds the file of a video id: DIR/<id>.<ext>, or the single file in DIR/<id>/.
// Thread-safe after construction (const).
class VideoLocator {
 public:
  explicit VideoLocator(std::string dir);

  // Throws NotFoundError when nothing matches, InvalidArgumentError when
  // several files could be the video.
  std::string Resolve(const std::string& id) const;

  // Ids of every video in the folder, for an ingest without a list.
  std::vector<std::string> Ids() const;

 private:
  std::string dir_;
  std::unordered_map<std::string, std::vector<std::string>> files_by_stem_;
  std::unordered_set<std::string> dirs_;
  // Unusable entries without a video extension (they could have been
  // folders), by name.
  std::unordered_set<std::string> unusable_;
};

// The sources of the directory options of `o`, in list order. Videos keep an
// empty path: they are found through `*locator` (set here for videos_dir)
// when a worker reads them, so that a missing one is a bad source, not a
// failed listing. Warnings about a label or image list go to o.on_warning
// (unset: a line on stderr).
std::vector<SourceSpec> ListDirectorySources(const IngestOptions& o,
                                             std::optional<VideoLocator>* locator);

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_SOURCES_H_
