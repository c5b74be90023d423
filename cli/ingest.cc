#include "cli/ingest.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cli/progress.h"
#include "engine/file_util.h"
#include "engine/json_text.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"

extern char** environ;

namespace gulpdb::cli {
namespace {

using engine::UniqueFd;

// ---- small file helpers ---------------------------------------------------------

std::string ReadFileBytes(const std::string& path) {
  UniqueFd fd = engine::OpenFile(path, O_RDONLY);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) ThrowErrno("stat", path, errno);
  if (!S_ISREG(st.st_mode)) throw InvalidArgumentError("read " + path + ": not a regular file");
  std::string data(static_cast<size_t>(st.st_size), '\0');
  data.resize(engine::PreadFull(fd.get(), data.data(), data.size(), 0, path));
  return data;
}

void WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp" + std::to_string(::getpid());
  {
    UniqueFd fd = engine::OpenFile(temp, O_WRONLY | O_CREAT | O_TRUNC);
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) ThrowErrno("write", temp, errno);
      done += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0) ThrowErrno("fsync", temp, errno);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) ThrowErrno("rename", temp, errno);
  const size_t slash = path.rfind('/');
  engine::SyncDirectory(slash == std::string::npos ? "." : path.substr(0, slash + 1));
}

struct DirEntry {
  std::string name;
  bool is_dir = false;
};

// Sub-directories and regular files of `dir` (symbolic links followed),
// sorted by name; hidden entries (".name") are left out.
std::vector<DirEntry> ListEntries(const std::string& dir) {
  std::vector<DirEntry> entries;
  for (std::string& name : engine::ListDirectory(dir)) {
    if (name.empty() || name[0] == '.') continue;
    struct stat st;
    if (::stat((dir + "/" + name).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      entries.push_back({std::move(name), true});
    } else if (S_ISREG(st.st_mode)) {
      entries.push_back({std::move(name), false});
    }
  }
  return entries;
}

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty() || (!name.empty() && name[0] == '/')) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

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

bool IsJpegName(const std::string& name) {
  const std::string ext = LowerExtension(name);
  return ext == "jpg" || ext == "jpeg";
}

// Images that ffmpeg decodes for us (one frame each).
bool IsImageName(const std::string& name) {
  static const std::set<std::string> kOthers = {"png",  "bmp", "webp", "tif",
                                                "tiff", "gif", "ppm",  "pgm"};
  return IsJpegName(name) || kOthers.count(LowerExtension(name)) != 0;
}

// ---- label lists ------------------------------------------------------------------

// One entry of a label list: an id (its text is the dataset key) and an
// optional label.
struct Listed {
  std::string id;
  std::string id_json;  // how the id is written in meta: a string, or a number as listed
  std::optional<std::string> label;
};

size_t SkipSpace(std::string_view text, size_t pos) {
  while (pos < text.size() &&
         (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) {
    ++pos;
  }
  return pos;
}

[[noreturn]] void ThrowListError(const std::string& path, size_t pos, const std::string& what) {
  throw InvalidArgumentError("read " + path + ": byte " + std::to_string(pos) + ": " + what);
}

// Walks a JSON value already validated by ScanJsonValue; returns the end of
// the member value starting at `pos`.
size_t ValueEnd(std::string_view text, size_t pos) {
  return engine::ScanJsonValue(text, pos, /*input_complete=*/true).pos;
}

// Calls fn(key, value_text) for each member of the JSON object at text[pos]
// (validated beforehand); returns the position after its closing brace.
template <typename Fn>
size_t ForEachMember(std::string_view text, size_t pos, const Fn& fn) {
  pos = SkipSpace(text, pos + 1);  // past '{'
  while (text[pos] != '}') {
    std::string key;
    pos = engine::ScanJsonString(text, pos, &key).pos;
    pos = SkipSpace(text, SkipSpace(text, pos) + 1);  // past ':'
    const size_t end = ValueEnd(text, pos);
    fn(key, text.substr(pos, end - pos), pos);
    pos = SkipSpace(text, end);
    if (text[pos] == ',') pos = SkipSpace(text, pos + 1);
  }
  return pos + 1;
}

// A JSON string token as UTF-8 (a lone surrogate escape has no UTF-8 form).
std::string DecodeString(const std::string& path, std::string_view token, size_t at) {
  try {
    return engine::DecodeJsonString(token);
  } catch (const InvalidArgumentError& e) {
    ThrowListError(path, at, e.what());
  }
}

bool IsJsonNumber(std::string_view v) {
  return !v.empty() && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'));
}

// A 20BN-style JSON list: [{"id": "123" or 123, "<label_name>": "...", ...}, ...].
std::vector<Listed> ParseJsonList(const std::string& path, std::string_view text,
                                  const std::string& label_name) {
  size_t pos = SkipSpace(text, 0);
  const engine::JsonScanResult all = engine::ScanJsonValue(text, pos, true);
  if (all.status != engine::JsonScanStatus::kOk) {
    ThrowListError(
        path, all.pos,
        all.status == engine::JsonScanStatus::kTruncated ? "the JSON text ends early" : all.error);
  }
  if (SkipSpace(text, all.pos) != text.size()) ThrowListError(path, all.pos, "text after the list");
  if (text[pos] != '[') ThrowListError(path, pos, "expected a JSON list of objects");
  std::vector<Listed> listed;
  pos = SkipSpace(text, pos + 1);
  while (text[pos] != ']') {
    if (text[pos] != '{') ThrowListError(path, pos, "expected an object with an \"id\"");
    const size_t start = pos;
    Listed entry;
    bool has_id = false;
    pos = ForEachMember(text, pos, [&](const std::string& key, std::string_view value, size_t at) {
      if (key == "id") {
        if (value[0] == '"') {
          entry.id = DecodeString(path, value, at);
          entry.id_json = engine::PythonJsonString(entry.id);
        } else if (IsJsonNumber(value)) {
          entry.id = std::string(value);
          entry.id_json = entry.id;
        } else {
          ThrowListError(path, at, "\"id\" must be a string or a number");
        }
        has_id = true;
      } else if (key == label_name) {
        if (value[0] == '"') {
          entry.label = DecodeString(path, value, at);
        } else if (value == "null") {
          entry.label.reset();
        } else {
          ThrowListError(path, at, "\"" + label_name + "\" must be a string");
        }
      }
    });
    if (!has_id) ThrowListError(path, start, "an entry has no \"id\"");
    listed.push_back(std::move(entry));
    pos = SkipSpace(text, pos);
    if (text[pos] == ',') pos = SkipSpace(text, pos + 1);
  }
  return listed;
}

// A 20BN-style CSV: `id;label` per line (or just `id`); empty lines ignored.
std::vector<Listed> ParseCsvList(const std::string& path, std::string_view text) {
  std::vector<Listed> listed;
  size_t line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t sep = line.find(';');
    Listed entry;
    entry.id = std::string(line.substr(0, sep));
    if (entry.id.empty()) {
      throw InvalidArgumentError("read " + path + ": line " + std::to_string(line_number) +
                                 " has an empty id");
    }
    try {
      entry.id_json = engine::PythonJsonString(entry.id);
      if (sep != std::string_view::npos) {
        entry.label = std::string(line.substr(sep + 1));
        engine::PythonJsonString(*entry.label);  // UTF-8 check
      }
    } catch (const InvalidArgumentError&) {
      throw InvalidArgumentError("read " + path + ": line " + std::to_string(line_number) +
                                 " is not valid UTF-8");
    }
    listed.push_back(std::move(entry));
  }
  return listed;
}

std::vector<Listed> ReadLabelList(const std::string& path, const std::string& label_name) {
  const std::string text = ReadFileBytes(path);
  const size_t first = SkipSpace(text, 0);
  if (first < text.size() && text[first] == '[') return ParseJsonList(path, text, label_name);
  return ParseCsvList(path, text);
}

// ---- sources ---------------------------------------------------------------------

enum class SourceKind { kVideo, kFrameFolder, kImage };

struct Source {
  SourceKind kind = SourceKind::kVideo;
  std::string id;
  std::string id_json;
  std::optional<std::string> label;
  std::string path;  // frame folder or image file; for videos, found by VideoLocator
};

// Finds the file of a video id: DIR/<id>.<ext>, or the single file in DIR/<id>/.
// Thread-safe after construction (const).
class VideoLocator {
 public:
  explicit VideoLocator(std::string dir) : dir_(std::move(dir)) {
    for (DirEntry& e : ListEntries(dir_)) {
      if (e.is_dir) {
        dirs_.insert(e.name);
      } else if (IsVideoName(e.name)) {
        files_by_stem_[Stem(e.name)].push_back(e.name);
      }
    }
  }

  // Throws NotFoundError when nothing matches, InvalidArgumentError when
  // several files could be the video.
  std::string Resolve(const std::string& id) const {
    std::vector<std::string> candidates;
    bool is_dir = false;
    const size_t slash = id.rfind('/');
    if (slash == std::string::npos) {
      auto it = files_by_stem_.find(id);
      if (it != files_by_stem_.end()) candidates = it->second;
      is_dir = dirs_.count(id) != 0;
    } else {  // an id with folders in it: look there (rare, not cached)
      const std::string parent = Join(dir_, id.substr(0, slash));
      const std::string stem = id.substr(slash + 1);
      if (engine::IsDirectory(parent)) {
        for (const DirEntry& e : ListEntries(parent)) {
          if (!e.is_dir && IsVideoName(e.name) && Stem(e.name) == stem)
            candidates.push_back(id.substr(0, slash + 1) + e.name);
          if (e.is_dir && e.name == stem) is_dir = true;
        }
      }
    }
    if (candidates.size() > 1) {
      throw InvalidArgumentError("find video " + id + " in " + dir_ + ": " +
                                 std::to_string(candidates.size()) + " files are named " + id +
                                 ".*");
    }
    if (candidates.size() == 1) return Join(dir_, candidates[0]);
    if (!is_dir) {
      throw NotFoundError("find video " + id + " in " + dir_ + ": no file " + id +
                          ".<ext> and no folder " + id + "/");
    }
    const std::string folder = Join(dir_, id);
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

  // Ids of every video in the folder, for an ingest without a list.
  std::vector<std::string> Ids() const {
    std::set<std::string> ids(dirs_.begin(), dirs_.end());
    for (const auto& [stem, names] : files_by_stem_) ids.insert(stem);
    return std::vector<std::string>(ids.begin(), ids.end());
  }

 private:
  static std::string Stem(const std::string& name) {
    const size_t dot = name.rfind('.');
    return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
  }

  std::string dir_;
  std::unordered_map<std::string, std::vector<std::string>> files_by_stem_;
  std::unordered_set<std::string> dirs_;
};

Source FromListed(SourceKind kind, Listed&& l, std::string path) {
  Source s;
  s.kind = kind;
  s.id = std::move(l.id);
  s.id_json = std::move(l.id_json);
  s.label = std::move(l.label);
  s.path = std::move(path);
  return s;
}

Source Unlabeled(SourceKind kind, const std::string& id, std::string path) {
  Listed l;
  l.id = id;
  l.id_json = engine::PythonJsonString(id);
  return FromListed(kind, std::move(l), std::move(path));
}

void ListImageTree(const std::string& root, const std::string& relative, const std::string& label,
                   std::vector<Source>* out) {
  for (const DirEntry& e : ListEntries(Join(root, relative))) {
    const std::string rel = relative.empty() ? e.name : relative + "/" + e.name;
    if (e.is_dir) {
      ListImageTree(root, rel, label, out);
    } else if (IsImageName(e.name)) {
      Source s = Unlabeled(SourceKind::kImage, rel, Join(root, rel));
      s.label = label;
      out->push_back(std::move(s));
    }
  }
}

std::vector<Source> ListSources(const IngestOptions& o, std::optional<VideoLocator>* locator) {
  std::vector<Source> sources;
  if (!o.videos_dir.empty()) {
    locator->emplace(o.videos_dir);
    if (o.labels.empty()) {
      for (const std::string& id : (*locator)->Ids()) {
        sources.push_back(Unlabeled(SourceKind::kVideo, id, ""));
      }
    } else {
      for (Listed& l : ReadLabelList(o.labels, o.label_name)) {
        sources.push_back(FromListed(SourceKind::kVideo, std::move(l), ""));
      }
    }
  } else if (!o.frames_dir.empty()) {
    if (o.labels.empty()) {
      for (const DirEntry& e : ListEntries(o.frames_dir)) {
        if (e.is_dir) {
          sources.push_back(
              Unlabeled(SourceKind::kFrameFolder, e.name, Join(o.frames_dir, e.name)));
        }
      }
    } else {
      for (Listed& l : ReadLabelList(o.labels, o.label_name)) {
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
    for (Listed& l : ParseCsvList(o.image_list, ReadFileBytes(o.image_list))) {
      std::string file = Join(root, l.id);
      sources.push_back(FromListed(SourceKind::kImage, std::move(l), std::move(file)));
    }
  } else {
    for (const DirEntry& e : ListEntries(o.images_dir)) {
      if (e.is_dir) ListImageTree(o.images_dir, e.name, e.name, &sources);
    }
  }
  return sources;
}

// ---- child processes ---------------------------------------------------------------

// A failure that ends the whole ingest, not just one source (ffmpeg cannot be
// started at all). Carries the gulpdb::Error to rethrow.
struct FatalError {
  std::exception_ptr error;
};

// The live children of an ingest, so that an interrupt can stop them all.
// Thread-safe.
class ChildSet {
 public:
  // Returns false when the set is closed: the caller must stop `pid` itself.
  bool Add(pid_t pid) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    pids_.insert(pid);
    return true;
  }
  // Called before the child is reaped, so a pid is never signalled after it
  // could have been reused.
  void Remove(pid_t pid) {
    std::lock_guard<std::mutex> lock(mu_);
    pids_.erase(pid);
  }
  void CloseAndKillAll() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
  }

 private:
  std::mutex mu_;
  std::set<pid_t> pids_;
  bool closed_ = false;
};

// A child process with stdin on /dev/null and stdout and stderr piped back.
// Started without a shell (argv is passed as is), in its own process group
// (a Ctrl-C on the terminal reaches gulpdb, which stops its children itself),
// with default signal dispositions. The destructor kills (SIGKILL) and reaps
// a child that was not waited for. Not thread-safe; move-only by design of
// its owners (not copyable).
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, ChildSet* set) : set_(set) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) ThrowErrno("create a pipe for", argv[0], errno);
    UniqueFd out_write(out[1]);
    out_ = UniqueFd(out[0]);
    if (::pipe2(err, O_CLOEXEC) != 0) ThrowErrno("create a pipe for", argv[0], errno);
    UniqueFd err_write(err[1]);
    err_ = UniqueFd(err[0]);
    // Let a decoder run up to a frame ahead of the encoder (best effort).
    ::fcntl(out_.get(), F_SETPIPE_SZ, 1 << 20);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : {SIGINT, SIGTERM, SIGQUIT, SIGPIPE, SIGHUP}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(
        &attr,
        static_cast<short>(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = ::posix_spawnp(&pid_, argv[0].c_str(), &actions, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      pid_ = -1;
      const std::string message = "run " + argv[0] + ": " + std::strerror(rc) +
                                  (rc == ENOENT ? " (is it installed and on PATH?)" : "");
      throw FatalError{rc == ENOENT ? std::make_exception_ptr(NotFoundError(message))
                                    : std::make_exception_ptr(IoError(message))};
    }
    if (!set_->Add(pid_)) ::kill(pid_, SIGKILL);
  }

  ~ChildProcess() {
    if (pid_ <= 0) return;
    set_->Remove(pid_);
    ::kill(pid_, SIGKILL);
    Reap();
  }

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  int out() const { return out_.get(); }
  int err() const { return err_.get(); }
  void CloseOut() { out_ = UniqueFd(); }
  void CloseErr() { err_ = UniqueFd(); }

  // Closes the pipes and waits for the child to exit; returns its wait status.
  int Wait() {
    CloseOut();
    CloseErr();
    set_->Remove(pid_);
    const int status = Reap();
    pid_ = -1;
    return status;
  }

 private:
  int Reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  }

  pid_t pid_ = -1;
  ChildSet* set_;
  UniqueFd out_, err_;
};

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended with wait status " + std::to_string(status);
}

// Reads the frames ffmpeg writes to its stdout as a stream of binary PPM
// images ("P6\n<w> <h>\n255\n" + w*h*3 bytes of RGB each), while collecting
// its stderr, so that neither pipe can fill up and block the child.
//
// Why PPM rather than raw RGB or MJPEG: each frame carries its own size, so
// there is no ffprobe round-trip and no guessing what size ffmpeg settled on
// (rotation metadata, odd sizes, size changes mid-stream); unlike an MJPEG
// pipe, the pixels come once and are encoded once, by gulpdb's encoder, at the
// quality and subsampling GulpIO2 uses. The header costs ~15 bytes a frame.
class PpmStream {
 public:
  PpmStream(ChildProcess* child, std::string what) : child_(child), what_(std::move(what)) {}

  // Reads the next frame into `*pixels` (resized to w*h*3); false at the end
  // of the stream. Throws CorruptionError for output that is not a PPM stream.
  bool Next(std::vector<uint8_t>* pixels, int* width, int* height) {
    size_t header_end = 0;
    while (!ParseHeader(&header_end, width, height)) {
      if (header_.size() > 64) Corrupt("bad frame header");
      char chunk[4096];
      const size_t n = Read(chunk, sizeof(chunk));
      if (n == 0) {
        if (header_.empty()) return false;
        Corrupt("the output ends inside a frame header");
      }
      header_.append(chunk, n);
    }
    const size_t need = static_cast<size_t>(*width) * static_cast<size_t>(*height) * size_t{3};
    pixels->resize(need);
    size_t have = std::min(need, header_.size() - header_end);
    std::memcpy(pixels->data(), header_.data() + header_end, have);
    header_.erase(0, header_end + have);
    while (have < need) {
      const size_t n = Read(pixels->data() + have, need - have);
      if (n == 0) Corrupt("the output ends inside a frame");
      have += n;
    }
    return true;
  }

  // Reads what is left of stderr (after stdout ended) and returns it.
  const std::string& DrainErrors() {
    while (child_->err() >= 0) ReadErrors();
    return errors_;
  }

 private:
  [[noreturn]] void Corrupt(const std::string& detail) {
    throw CorruptionError("decode " + what_ + ": ffmpeg output: " + detail);
  }

  // Parses "P6 <w> <h> 255" + one whitespace byte at the start of header_.
  bool ParseHeader(size_t* end, int* width, int* height) {
    size_t pos = 0;
    uint64_t values[3] = {0, 0, 0};
    auto space = [&](size_t p) {
      return p < header_.size() &&
             (header_[p] == ' ' || header_[p] == '\n' || header_[p] == '\r' || header_[p] == '\t');
    };
    if (header_.size() < 2) return false;
    if (header_[0] != 'P' || header_[1] != '6') Corrupt("not a PPM frame");
    pos = 2;
    for (uint64_t& v : values) {
      if (pos >= header_.size()) return false;
      if (!space(pos)) Corrupt("bad frame header");
      while (space(pos)) ++pos;
      const size_t digits = pos;
      while (pos < header_.size() && header_[pos] >= '0' && header_[pos] <= '9' && v < 1000000) {
        v = v * 10 + static_cast<uint64_t>(header_[pos] - '0');
        ++pos;
      }
      if (pos >= header_.size()) return false;
      if (pos == digits || !space(pos)) Corrupt("bad frame header");
    }
    if (values[2] != 255) Corrupt("not 8-bit RGB");
    if (values[0] < 1 || values[0] > 65500 || values[1] < 1 || values[1] > 65500) {
      Corrupt("frame size out of range");
    }
    *width = static_cast<int>(values[0]);
    *height = static_cast<int>(values[1]);
    *end = pos + 1;
    return true;
  }

  void ReadErrors() {
    char chunk[4096];
    const ssize_t n = ::read(child_->err(), chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
      child_->CloseErr();
      return;
    }
    if (errors_.size() < 8192) errors_.append(chunk, static_cast<size_t>(n));
  }

  // Reads up to `max` bytes of stdout; 0 at its end.
  size_t Read(void* dst, size_t max) {
    for (;;) {
      pollfd fds[2] = {{child_->out(), POLLIN, 0}, {child_->err(), POLLIN, 0}};
      const nfds_t count = child_->err() >= 0 ? 2 : 1;
      if (::poll(fds, count, -1) < 0) {
        if (errno == EINTR) continue;
        ThrowErrno("poll ffmpeg output of", what_, errno);
      }
      if (count == 2 && fds[1].revents != 0) ReadErrors();
      if (fds[0].revents != 0) {
        const ssize_t n = ::read(child_->out(), dst, max);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) ThrowErrno("read ffmpeg output of", what_, errno);
        return static_cast<size_t>(n);
      }
    }
  }

  ChildProcess* child_;
  std::string what_;
  std::string header_;  // bytes read but not consumed (a header, maybe some pixels)
  std::string errors_;
};

std::string FirstLine(const std::string& text) {
  const size_t nl = text.find('\n');
  return nl == std::string::npos ? text : text.substr(0, nl);
}

// ---- frames -------------------------------------------------------------------------

struct FrameSettings {
  double frame_rate = 8;
  int frame_size = 0;
  bool keep_jpeg = false;
  EncodeOptions encode;
  std::string ffmpeg;
};

// GulpIO's resize_by_short_edge: the short edge becomes `size`, the long one
// trunc(size * long / short).
std::pair<int, int> ShortEdgeSize(int width, int height, int size) {
  auto scaled = [size](int a, int b) {
    return static_cast<int>(std::max<int64_t>(1, int64_t{size} * a / b));
  };
  if (height < width) return {scaled(width, height), size};
  return {size, scaled(height, width)};
}

// Bilinear resize with pixel centres aligned (OpenCV's INTER_LINEAR, the
// default of the cv2.resize GulpIO calls).
std::vector<uint8_t> ResizeBilinear(const uint8_t* src, int sw, int sh, int channels, int dw,
                                    int dh) {
  struct Tap {
    size_t a, b;
    float w;
  };
  auto taps = [](int from, int to) {
    std::vector<Tap> t(static_cast<size_t>(to));
    const float ratio = static_cast<float>(from) / static_cast<float>(to);
    for (int i = 0; i < to; ++i) {
      float s = (static_cast<float>(i) + 0.5f) * ratio - 0.5f;
      if (s < 0) s = 0;
      int a = static_cast<int>(s);
      float w = s - static_cast<float>(a);
      if (a >= from - 1) {
        a = from - 1;
        w = 0;
      }
      t[static_cast<size_t>(i)] = {static_cast<size_t>(a),
                                   static_cast<size_t>(std::min(a + 1, from - 1)), w};
    }
    return t;
  };
  const std::vector<Tap> xs = taps(sw, dw), ys = taps(sh, dh);
  const size_t c = static_cast<size_t>(channels);
  const size_t src_row = static_cast<size_t>(sw) * c;
  std::vector<uint8_t> out(static_cast<size_t>(dw) * static_cast<size_t>(dh) * c);
  uint8_t* o = out.data();
  for (const Tap& y : ys) {
    const uint8_t* r0 = src + y.a * src_row;
    const uint8_t* r1 = src + y.b * src_row;
    for (const Tap& x : xs) {
      for (size_t k = 0; k < c; ++k) {
        const float top = static_cast<float>(r0[x.a * c + k]) * (1 - x.w) +
                          static_cast<float>(r0[x.b * c + k]) * x.w;
        const float bottom = static_cast<float>(r1[x.a * c + k]) * (1 - x.w) +
                             static_cast<float>(r1[x.b * c + k]) * x.w;
        *o++ = static_cast<uint8_t>(top * (1 - y.w) + bottom * y.w + 0.5f);
      }
    }
  }
  return out;
}

std::string FormatRate(double rate) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", rate);
  return text;
}

// Decodes `path` with ffmpeg and encodes its frames (all of a video at
// settings.frame_rate, or the first frame of an image). Throws CorruptionError
// for a file ffmpeg cannot decode or that has no frames, FatalError when
// ffmpeg cannot be started. Sets `*warning` to what ffmpeg reported on a
// successful run.
std::vector<std::string> DecodeWithFfmpeg(const std::string& path, bool image,
                                          const FrameSettings& settings, ChildSet* children,
                                          std::string* warning) {
  std::vector<std::string> argv = {settings.ffmpeg, "-nostdin", "-hide_banner", "-loglevel",
                                   "error",         "-i",       "file:" + path, "-map",
                                   "0:v:0",         "-an",      "-sn",          "-dn"};
  std::string filters;
  if (!image && settings.frame_rate > 0) filters = "fps=" + FormatRate(settings.frame_rate);
  if (settings.frame_size > 0) {
    // GulpIO's short-edge rule, evaluated by ffmpeg on the decoded size (which
    // already accounts for rotation metadata). Quotes protect the commas.
    const std::string s = std::to_string(settings.frame_size);
    if (!filters.empty()) filters += ",";
    filters += "scale=w='if(lt(ih,iw),max(1,trunc(" + s + "*iw/ih))," + s + ")'" +
               ":h='if(lt(ih,iw)," + s + ",max(1,trunc(" + s + "*ih/iw)))':flags=bilinear";
  }
  if (!filters.empty()) {
    argv.push_back("-vf");
    argv.push_back(filters);
  }
  if (image) {
    argv.push_back("-frames:v");
    argv.push_back("1");
  }
  for (const char* a : {"-f", "image2pipe", "-c:v", "ppm", "-pix_fmt", "rgb24", "-"}) {
    argv.push_back(a);
  }

  ChildProcess child(argv, children);
  PpmStream stream(&child, path);
  JpegEncoder& encoder = ThreadLocalEncoder();
  std::vector<std::string> frames;
  std::vector<uint8_t> pixels;
  int width = 0, height = 0;
  while (stream.Next(&pixels, &width, &height)) {
    frames.push_back(encoder.Encode(pixels.data(), width, height, 3, settings.encode));
  }
  const std::string errors = stream.DrainErrors();
  const int status = child.Wait();
  const std::string detail = errors.empty() ? "" : ": " + FirstLine(errors);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw CorruptionError("decode " + path + ": ffmpeg " + DescribeStatus(status) + detail);
  }
  if (frames.empty()) throw CorruptionError("decode " + path + ": no frames" + detail);
  if (!errors.empty()) *warning = "decode " + path + ": ffmpeg: " + FirstLine(errors);
  return frames;
}

// Reads JPEG files as frames: their bytes (keep_jpeg, after checking that the
// header decodes), or decoded, resized if asked, and encoded again.
std::vector<std::string> LoadJpegFiles(const std::vector<std::string>& paths,
                                       const FrameSettings& settings) {
  std::vector<std::string> frames;
  frames.reserve(paths.size());
  JpegDecoder& decoder = ThreadLocalDecoder();
  DecodeOptions decode;
  decode.dct = DctMethod::kAccurate;
  for (const std::string& path : paths) {
    std::string bytes = ReadFileBytes(path);
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    try {
      if (settings.keep_jpeg) {
        decoder.OutputShape(data, bytes.size(), decode);
        frames.push_back(std::move(bytes));
        continue;
      }
      ImageShape shape;
      std::vector<uint8_t> pixels = decoder.Decode(data, bytes.size(), decode, &shape);
      if (settings.frame_size > 0) {
        const auto [w, h] = ShortEdgeSize(shape.width, shape.height, settings.frame_size);
        pixels = ResizeBilinear(pixels.data(), shape.width, shape.height, shape.channels, w, h);
        shape.width = w;
        shape.height = h;
      }
      frames.push_back(ThreadLocalEncoder().Encode(pixels.data(), shape.width, shape.height,
                                                   shape.channels, settings.encode));
    } catch (const Error& e) {
      std::string_view detail = e.what();
      for (std::string_view prefix : {"decode jpeg: ", "encode jpeg: "}) {
        if (detail.substr(0, prefix.size()) == prefix) detail.remove_prefix(prefix.size());
      }
      ThrowError(e.code(), "decode " + path + ": " + std::string(detail));
    }
  }
  return frames;
}

// ---- the pipeline -----------------------------------------------------------------

// What a worker made of one source.
struct Encoded {
  std::vector<std::string> frames;
  std::string path;     // the file or folder read
  std::string problem;  // non-empty: a bad source
  ErrorCode code = ErrorCode::kCorruption;
  std::string warning;
  std::exception_ptr fatal;
};

// Hands source indices to workers in order, never more than `window` ahead of
// the consumer, and gives their results back to the consumer in index order.
// Thread-safe.
class OrderedQueue {
 public:
  OrderedQueue(size_t total, size_t window) : total_(total), slots_(window) {}

  // Worker side: the next index to produce, or nullopt when there is none
  // left or the queue is stopped. Blocks while the window is full.
  std::optional<size_t> Claim() {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock,
                [&] { return stopped_ || next_ >= total_ || next_ < taken_ + slots_.size(); });
    if (stopped_ || next_ >= total_) return std::nullopt;
    return next_++;
  }

  void Put(size_t index, Encoded result) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      Slot& slot = slots_[index % slots_.size()];
      slot.result = std::move(result);
      slot.ready = true;
    }
    ready_.notify_all();
  }

  // Consumer side: waits up to `timeout` for the result of `index` (which
  // must be the next one in order); false on timeout.
  bool Take(size_t index, std::chrono::milliseconds timeout, Encoded* out) {
    std::unique_lock<std::mutex> lock(mu_);
    Slot& slot = slots_[index % slots_.size()];
    if (!ready_.wait_for(lock, timeout, [&] { return slot.ready; })) return false;
    *out = std::move(slot.result);
    slot = Slot();
    taken_ = index + 1;
    lock.unlock();
    space_.notify_all();
    return true;
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    space_.notify_all();
  }

 private:
  struct Slot {
    bool ready = false;
    Encoded result;
  };
  std::mutex mu_;
  std::condition_variable space_, ready_;
  const size_t total_;
  std::vector<Slot> slots_;
  size_t next_ = 0;   // next index to hand out
  size_t taken_ = 0;  // indices below this were consumed
  bool stopped_ = false;
};

// Worker threads over an OrderedQueue. The destructor stops the queue, kills
// the children of the workers and joins them, on every path out of Ingest.
class Workers {
 public:
  Workers(size_t count, OrderedQueue* queue, ChildSet* children,
          std::function<Encoded(size_t)> produce)
      : queue_(queue), children_(children), produce_(std::move(produce)) {
    try {
      for (size_t i = 0; i < count; ++i) threads_.emplace_back([this] { Run(); });
    } catch (...) {
      Stop();
      throw;
    }
  }
  ~Workers() { Stop(); }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

 private:
  void Stop() {
    queue_->Stop();
    children_->CloseAndKillAll();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  void Run() {
    while (std::optional<size_t> index = queue_->Claim()) {
      queue_->Put(*index, produce_(*index));
    }
  }

  OrderedQueue* queue_;
  ChildSet* children_;
  std::function<Encoded(size_t)> produce_;
  std::vector<std::thread> threads_;
};

Encoded Produce(const Source& source, const FrameSettings& settings,
                const std::optional<VideoLocator>& locator, ChildSet* children) {
  Encoded e;
  e.path = source.path;
  try {
    switch (source.kind) {
      case SourceKind::kVideo:
        e.path = locator->Resolve(source.id);
        e.frames = DecodeWithFfmpeg(e.path, /*image=*/false, settings, children, &e.warning);
        break;
      case SourceKind::kFrameFolder: {
        std::vector<std::string> files;
        for (const DirEntry& entry : ListEntries(source.path)) {
          if (!entry.is_dir && IsJpegName(entry.name))
            files.push_back(Join(source.path, entry.name));
        }
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
    e.problem = error.what();
    e.code = error.code();
  } catch (...) {
    e.fatal = std::current_exception();
  }
  return e;
}

// ---- signals -------------------------------------------------------------------

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void OnStopSignal(int sig) { g_signal.store(sig); }

// Catches SIGINT and SIGTERM while it lives (once: SA_RESETHAND makes a second
// signal act as usual) and restores the previous handlers.
class StopSignals {
 public:
  StopSignals() {
    g_signal.store(0);
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnStopSignal;
    sa.sa_flags = static_cast<int>(SA_RESETHAND | SA_RESTART);
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  static int Received() { return g_signal.load(); }

 private:
  struct sigaction old_int_, old_term_;
};

// ---- labels --------------------------------------------------------------------

using LabelIndex = std::vector<std::pair<std::string, int64_t>>;  // file order

LabelIndex ReadLabel2Idx(const std::string& path) {
  LabelIndex entries;
  if (!engine::PathExists(path)) return entries;
  const std::string text = ReadFileBytes(path);
  size_t pos = SkipSpace(text, 0);
  const engine::JsonScanResult r = engine::ScanJsonValue(text, pos, true);
  if (r.status != engine::JsonScanStatus::kOk || pos >= text.size() || text[pos] != '{') {
    throw CorruptionError("read " + path + ": not a JSON object of label indices");
  }
  ForEachMember(text, pos, [&](const std::string& key, std::string_view value, size_t at) {
    int64_t idx = 0;
    bool ok = !value.empty() && value.size() < 10;
    for (char c : value) {
      ok = ok && c >= '0' && c <= '9';
      if (ok) idx = idx * 10 + (c - '0');
    }
    if (!ok) ThrowListError(path, at, "the index of \"" + key + "\" is not a small integer");
    entries.emplace_back(key, idx);
  });
  return entries;
}

// Merges the labels of `sources` into the dataset's label2idx.json (existing
// labels keep their index; new ones, sorted, follow) and rewrites the file
// when it changed. Returns label -> index.
std::map<std::string, int64_t> UpdateLabel2Idx(const std::string& dir,
                                               const std::vector<Source>& sources) {
  const std::string path = Join(dir, "label2idx.json");
  LabelIndex entries = ReadLabel2Idx(path);
  std::map<std::string, int64_t> index(entries.begin(), entries.end());
  int64_t next = 0;
  for (const auto& [label, idx] : entries) next = std::max(next, idx + 1);
  std::set<std::string> fresh;
  for (const Source& s : sources) {
    if (s.label && index.count(*s.label) == 0) fresh.insert(*s.label);
  }
  if (fresh.empty()) return index;
  for (const std::string& label : fresh) {
    entries.emplace_back(label, next);
    index.emplace(label, next++);
  }
  std::string json = "{";
  for (const auto& [label, idx] : entries) {
    if (json.size() > 1) json += ", ";
    json += engine::PythonJsonString(label) + ": " + std::to_string(idx);
  }
  json += "}";
  WriteFileAtomically(path, json);
  return index;
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

}  // namespace

std::string ValidateIngestOptions(const IngestOptions& o) {
  const int kinds = int{!o.videos_dir.empty()} + int{!o.frames_dir.empty()} +
                    int{!o.image_list.empty()} + int{!o.images_dir.empty() && o.image_list.empty()};
  if (kinds == 0) return "no source: give --videos-dir, --frames-dir, --images-dir or --image-list";
  if (kinds > 1) {
    return "give one source: --videos-dir, --frames-dir, --images-dir or --image-list "
           "(--images-dir with --image-list is the root of its paths)";
  }
  if (!o.labels.empty() && o.videos_dir.empty() && o.frames_dir.empty()) {
    return "--labels goes with --videos-dir or --frames-dir (an image list carries its labels)";
  }
  if (o.dir.empty()) return "the dataset directory is empty";
  if (o.quality < 1 || o.quality > 100) return "--quality must be 1..100";
  if (o.frame_size < 0 || o.frame_size > 65500) return "--frame-size must be 0..65500";
  if (!(o.frame_rate >= 0) || o.frame_rate > 1000) return "--frame-rate must be 0..1000";
  if (o.keep_jpeg && o.frame_size > 0) {
    return "--keep-jpeg stores the source bytes, so it cannot resize (--frame-size)";
  }
  if (o.batch == 0) return "--batch must be positive";
  if (o.videos_per_chunk == 0) return "--videos-per-chunk must be positive";
  if (o.label_name.empty()) return "--label-name is empty";
  return "";
}

IngestReport Ingest(const IngestOptions& o) {
  if (const std::string problem = ValidateIngestOptions(o); !problem.empty()) {
    throw InvalidArgumentError("ingest " + o.dir + ": " + problem);
  }
  IngestReport report;

  // List every source first: a bad list changes nothing.
  std::optional<VideoLocator> locator;
  std::vector<Source> listed = ListSources(o, &locator);
  report.listed = listed.size();
  if (o.shuffle) {
    report.seed = o.seed ? *o.seed : std::random_device()();
    std::mt19937_64 rng(report.seed);
    for (size_t i = listed.size(); i > 1; --i) {
      std::swap(listed[i - 1], listed[UniformBelow(rng, i)]);
    }
    if (!o.seed && !o.quiet)
      PrintLine("gulpdb ingest: shuffled with --seed " + std::to_string(report.seed));
  }

  // Ids listed twice: an error; kSkip keeps the first, kReplace the last.
  // Checked before the dataset is touched.
  std::vector<bool> keep(listed.size(), true);
  {
    std::unordered_set<std::string> seen;
    const bool last_wins = o.on_duplicate == OnDuplicate::kReplace;
    for (size_t n = 0; n < listed.size(); ++n) {
      const size_t i = last_wins ? listed.size() - 1 - n : n;
      if (seen.insert(listed[i].id).second) continue;
      if (o.on_duplicate == OnDuplicate::kError) {
        throw InvalidArgumentError("ingest " + o.dir + ": id '" + listed[i].id +
                                   "' is listed twice (see --on-duplicate)");
      }
      keep[i] = false;
      ++report.duplicates;
    }
  }

  std::unique_ptr<Dataset> ds;
  if (Dataset::Exists(o.dir)) {
    OpenOptions open;
    open.read_only = false;
    ds = Dataset::Open(o.dir, open);
  } else {
    CreateOptions create;
    create.videos_per_chunk = o.videos_per_chunk;
    ds = Dataset::Create(o.dir, create);
  }
  WriterOptions wo;
  wo.on_duplicate = o.on_duplicate;
  std::unique_ptr<Writer> writer = ds->NewWriter(wo);  // the lock: nobody else writes from here on

  // Ids already present: an error, or under kSkip left out here, so that a
  // re-run resumes without decoding anything twice.
  if (o.on_duplicate != OnDuplicate::kReplace) {
    for (size_t i = 0; i < listed.size(); ++i) {
      if (!keep[i] || !ds->Contains(listed[i].id)) continue;
      if (o.on_duplicate == OnDuplicate::kError) {
        throw InvalidArgumentError("ingest " + o.dir + ": id '" + listed[i].id +
                                   "' is already in the dataset (see --on-duplicate)");
      }
      keep[i] = false;
      ++report.present;
    }
  }
  const std::map<std::string, int64_t> label2idx = UpdateLabel2Idx(o.dir, listed);
  std::vector<Source> todo;
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

  size_t workers = o.num_workers != 0 ? o.num_workers : std::thread::hardware_concurrency();
  workers = std::max<size_t>(1, std::min(workers, std::max<size_t>(1, todo.size())));
  StopSignals signals;
  ChildSet children;
  OrderedQueue queue(todo.size(), std::max<size_t>(4, 2 * workers));
  Progress progress("ingest", todo.size(), o.quiet);
  Workers pool(workers, &queue, &children,
               [&](size_t i) { return Produce(todo[i], settings, locator, &children); });

  size_t appended_frames = 0, appended = 0;  // of the open batch
  auto commit = [&] {
    writer->Commit();
    report.added += appended;
    report.frames += appended_frames;
    appended = appended_frames = 0;
  };
  for (size_t i = 0; i < todo.size(); ++i) {
    Encoded e;
    while (StopSignals::Received() == 0 && !queue.Take(i, std::chrono::milliseconds(100), &e)) {
    }
    if (StopSignals::Received() != 0) {
      report.interrupted_by = StopSignals::Received();
      break;
    }
    if (e.fatal) std::rethrow_exception(e.fatal);
    const Source& s = todo[i];
    if (e.problem.empty()) {
      std::string meta = "{\"id\": " + s.id_json;
      if (s.label) {
        meta += ", \"label\": " + engine::PythonJsonString(*s.label) +
                ", \"idx\": " + std::to_string(label2idx.at(*s.label));
      }
      meta += "}";
      try {
        std::vector<std::string_view> views(e.frames.begin(), e.frames.end());
        if (writer->Append(s.id, views, meta)) {
          ++appended;
          appended_frames += e.frames.size();
        } else {
          ++report.present;
        }
      } catch (const InvalidArgumentError& error) {  // the writer refused the id or a frame
        e.problem = "(" + e.path + ") " + error.what();
        e.code = error.code();
      }
    }
    if (!e.problem.empty()) {
      const std::string where = "'" + s.id + "'";
      if (o.strict) {
        commit();
        ThrowError(e.code, "ingest " + where + ": " + e.problem);
      }
      PrintLine("gulpdb ingest: skipping " + where + ": " + e.problem);
      ++report.bad;
    } else if (!e.warning.empty()) {
      PrintLine("gulpdb ingest: warning: '" + s.id + "': " + e.warning);
    }
    progress.Advance();
    if (writer->pending_videos() >= o.batch) commit();
  }
  commit();
  progress.Finish();
  return report;
}

}  // namespace gulpdb::cli
