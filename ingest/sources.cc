#include "ingest/sources.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "ingest/label_list.h"
#include "util/file_io.h"
#include "util/utf8.h"

namespace gulpdb::ingest {
namespace {

std::string LowerExtension(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0 || name.find('/', dot) != std::string::npos) return "";
  std::string ext = name.substr(dot + 1);
  for (char& c : ext) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return ext;
}

// Files a video folder may hold when no list names the videos.
bool IsVideoName(const std::string& name) {
  static const std::set<std::string> kVideos = {
      "3gp",  "asf", "avi", "dv",  "flv", "gif", "m2ts", "m2v", "m4v",  "mkv", "mov", "mp4",
      "mpeg", "mpg", "mts", "mxf", "ogg", "ogv", "ts",   "vob", "webm", "wmv", "y4m"};
  return kVideos.count(LowerExtension(name)) != 0;
}

// Images that ffmpeg decodes for us (one frame each).
bool IsImageName(const std::string& name) {
  static const std::set<std::string> kOthers = {"png",  "bmp", "webp", "tif",
                                                "tiff", "gif", "ppm",  "pgm"};
  return IsJpegName(name) || kOthers.count(LowerExtension(name)) != 0;
}

std::string Stem(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

SourceSpec FromListed(SourceKind kind, Listed&& l, std::string path) {
  SourceSpec s;
  s.kind = kind;
  s.id = std::move(l.id);
  s.id_json = std::move(l.id_json);
  s.label = std::move(l.label);
  s.path = std::move(path);
  return s;
}

SourceSpec Unlabeled(SourceKind kind, const std::string& id, std::string path) {
  Listed l;
  l.id = id;
  // A file name that is not UTF-8 makes no id; Ingest reports the source as bad.
  if (util::FindInvalidUtf8(id) == std::string_view::npos) l.id_json = engine::PythonJsonString(id);
  return FromListed(kind, std::move(l), std::move(path));
}

// The folders open on the way down an image tree, by (device, inode): a
// folder reached again through a symbolic link (`up -> ..`) is a cycle.
using Ancestors = std::vector<std::pair<dev_t, ino_t>>;

// Pushes the folder at `path` onto `*ancestors`; false (nothing pushed) when
// it is one of them already, or cannot be examined (listing it says why).
bool EnterFolder(const std::string& path, Ancestors* ancestors) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return true;
  const std::pair<dev_t, ino_t> key(st.st_dev, st.st_ino);
  if (std::find(ancestors->begin(), ancestors->end(), key) != ancestors->end()) return false;
  ancestors->push_back(key);
  return true;
}

void ListImageTree(const std::string& root, const std::string& relative, const std::string& label,
                   Ancestors* ancestors, const ListWarning& warn, std::vector<SourceSpec>* out) {
  const std::string folder = Join(root, relative);
  if (!EnterFolder(folder, ancestors)) {
    // Followed, it would list the same images again under longer ids, until
    // the kernel's limit on links in a path (40 times over).
    warn("images folder " + folder + " leads back to a folder above it (a symbolic link " +
         "cycle): not followed");
    return;
  }
  for (const DirEntry& e : ListEntries(folder)) {
    const std::string rel = relative.empty() ? e.name : relative + "/" + e.name;
    if (e.is_dir) {
      ListImageTree(root, rel, label, ancestors, warn, out);
    } else if (IsImageName(e.name) || !e.unusable.empty()) {  // (reading it says why)
      SourceSpec s = Unlabeled(SourceKind::kImage, rel, Join(root, rel));
      s.label = label;
      out->push_back(std::move(s));
    }
  }
  ancestors->pop_back();
}

}  // namespace

std::vector<DirEntry> ListEntries(const std::string& dir) {
  std::vector<DirEntry> entries;
  for (std::string& name : util::ListDirectory(dir)) {
    if (name.empty() || name[0] == '.') continue;
    const std::string path = Join(dir, name);
    std::string unusable = util::DescribeUnusableEntry(path);
    struct stat st;
    if (!unusable.empty()) {
      entries.push_back({std::move(name), false, std::move(unusable)});
    } else if (::stat(path.c_str(), &st) != 0) {
      continue;  // vanished meanwhile, or not ours to see
    } else if (S_ISDIR(st.st_mode)) {
      entries.push_back({std::move(name), true, ""});
    } else if (S_ISREG(st.st_mode)) {
      entries.push_back({std::move(name), false, ""});
    }
  }
  return entries;
}

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty() || (!name.empty() && name[0] == '/')) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

bool IsJpegName(const std::string& name) {
  const std::string ext = LowerExtension(name);
  return ext == "jpg" || ext == "jpeg";
}

std::vector<std::string> ListFrameFiles(const std::string& folder) {
  util::RequireUsableEntry(folder, "read");
  std::vector<std::string> files;
  for (const DirEntry& entry : ListEntries(folder)) {
    if (!entry.is_dir && IsJpegName(entry.name)) files.push_back(Join(folder, entry.name));
  }
  return files;
}

VideoLocator::VideoLocator(std::string dir) : dir_(std::move(dir)) {
  for (DirEntry& e : ListEntries(dir_)) {
    if (e.is_dir) {
      dirs_.insert(e.name);
    } else if (IsVideoName(e.name)) {
      files_by_stem_[Stem(e.name)].push_back(e.name);  // (unusable: reading it says why)
    } else if (!e.unusable.empty()) {
      unusable_.insert(e.name);
    }
  }
}

std::string VideoLocator::Resolve(const std::string& id) const {
  std::vector<std::string> candidates;
  bool is_dir = false;
  const size_t slash = id.rfind('/');
  if (slash == std::string::npos) {
    auto it = files_by_stem_.find(id);
    if (it != files_by_stem_.end()) candidates = it->second;
    is_dir = dirs_.count(id) != 0 || unusable_.count(id) != 0;
  } else {  // an id with folders in it: look there (rare, not cached)
    const std::string parent = Join(dir_, id.substr(0, slash));
    const std::string stem = id.substr(slash + 1);
    if (util::IsDirectory(parent)) {
      for (const DirEntry& e : ListEntries(parent)) {
        if (!e.is_dir && IsVideoName(e.name) && Stem(e.name) == stem)
          candidates.push_back(id.substr(0, slash + 1) + e.name);
        if ((e.is_dir || !e.unusable.empty()) && e.name == stem) is_dir = true;
      }
    }
  }
  if (candidates.size() > 1) {
    throw InvalidArgumentError("find video " + id + " in " + dir_ + ": " +
                               std::to_string(candidates.size()) + " files are named " + id + ".*");
  }
  if (candidates.size() == 1) return Join(dir_, candidates[0]);
  if (!is_dir) {
    throw NotFoundError("find video " + id + " in " + dir_ + ": no file " + id +
                        ".<ext> and no folder " + id + "/");
  }
  const std::string folder = Join(dir_, id);
  util::RequireUsableEntry(folder, "find video " + id + " in");
  std::vector<std::string> files;
  for (const DirEntry& e : ListEntries(folder)) {
    if (!e.is_dir) files.push_back(e.name);
  }
  if (files.size() != 1) {
    throw InvalidArgumentError("find video " + id + " in " + folder + ": " +
                               std::to_string(files.size()) + " files, expected one video");
  }
  return Join(folder, files[0]);
}

std::vector<std::string> VideoLocator::Ids() const {
  std::set<std::string> ids(dirs_.begin(), dirs_.end());
  ids.insert(unusable_.begin(), unusable_.end());
  for (const auto& [stem, names] : files_by_stem_) ids.insert(stem);
  return std::vector<std::string>(ids.begin(), ids.end());
}

std::vector<SourceSpec> ListDirectorySources(const IngestOptions& o,
                                             std::optional<VideoLocator>* locator) {
  const ListWarning warn = [&o](const std::string& warning) {
    if (o.on_warning) {
      o.on_warning(warning);
    } else {
      std::fprintf(stderr, "gulpdb ingest: warning: %s\n", warning.c_str());
    }
  };
  std::vector<SourceSpec> sources;
  if (!o.videos_dir.empty()) {
    locator->emplace(o.videos_dir);
    if (o.labels.empty()) {
      for (const std::string& id : (*locator)->Ids()) {
        sources.push_back(Unlabeled(SourceKind::kVideo, id, ""));
      }
    } else {
      for (Listed& l : ReadLabelList(o.labels, o.label_name, warn)) {
        sources.push_back(FromListed(SourceKind::kVideo, std::move(l), ""));
      }
    }
  } else if (!o.frames_dir.empty()) {
    if (o.labels.empty()) {
      for (const DirEntry& e : ListEntries(o.frames_dir)) {
        if (e.is_dir || !e.unusable.empty()) {  // (unusable: reading it says why)
          sources.push_back(
              Unlabeled(SourceKind::kFrameFolder, e.name, Join(o.frames_dir, e.name)));
        }
      }
    } else {
      for (Listed& l : ReadLabelList(o.labels, o.label_name, warn)) {
        std::string folder = Join(o.frames_dir, l.id);
        sources.push_back(FromListed(SourceKind::kFrameFolder, std::move(l), std::move(folder)));
      }
    }
  } else if (!o.image_list.empty()) {
    std::string root = o.images_dir;
    if (root.empty()) {
      const size_t slash = o.image_list.rfind('/');
      root = slash == std::string::npos ? "" : o.image_list.substr(0, slash);
    }
    for (Listed& l : ParseCsvList(o.image_list, util::ReadFile(o.image_list), "images", warn)) {
      std::string file = Join(root, l.id);
      sources.push_back(FromListed(SourceKind::kImage, std::move(l), std::move(file)));
    }
  } else {
    Ancestors ancestors;
    EnterFolder(o.images_dir, &ancestors);
    for (const DirEntry& e : ListEntries(o.images_dir)) {
      if (e.is_dir) {
        ListImageTree(o.images_dir, e.name, e.name, &ancestors, warn, &sources);
      } else if (!e.unusable.empty()) {  // a class folder, maybe: reading it says why
        sources.push_back(Unlabeled(SourceKind::kImage, e.name, Join(o.images_dir, e.name)));
      }
    }
  }
  return sources;
}

}  // namespace gulpdb::ingest
