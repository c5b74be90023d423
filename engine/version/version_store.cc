#include "engine/version/version_store.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string_view>

#include "engine/core/dataset_view.h"
#include "engine/json/json_text.h"
#include "engine/partition/partition_file.h"
#include "engine/partition/partitions.h"
#include "gulpdb/error.h"
#include "util/file_io.h"
#include "util/hex.h"
#include "util/sha256.h"
#include "util/test_bug.h"

namespace gulpdb::engine {

namespace {

constexpr const char* kTagSuffix = ".tag";
// A tag file is small: a root's name, a few numbers and the message.
constexpr size_t kMaxMessageBytes = 64 << 10;
constexpr size_t kMaxTagFileBytes = kMaxMessageBytes * 7 + 4096;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string TagsDir(const std::string& dir) { return VersionsDir(dir) + "/tags"; }
std::string DeletedDir(const std::string& dir) { return VersionsDir(dir) + "/deleted"; }

// A tag's file: named by the SHA-256 of the tag's name, so that a name of
// up to 255 bytes makes a file name (and its temporary one) of a fixed size.
std::string TagFile(const std::string& dir, const std::string& name) {
  return TagsDir(dir) + "/" + util::Sha256Hex(name) + kTagSuffix;
}

std::vector<std::string> ListIfDirectory(const std::string& dir) {
  return util::IsDirectory(dir) ? util::ListDirectory(dir) : std::vector<std::string>();
}

// Whole decimal number, no sign, no leading junk.
std::optional<uint64_t> ParseCount(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

std::string TagJson(const VersionInfo& info, int64_t created_ms) {
  return "{\"format\": " + std::to_string(kTagFormat) +
         ", \"name\": " + PythonJsonString(info.name) + ", \"root\": \"" + info.root +
         "\", \"created_ms\": " + std::to_string(created_ms) +
         ", \"videos\": " + std::to_string(info.videos) +
         ", \"frames\": " + std::to_string(info.frames) +
         ", \"message\": " + PythonJsonString(info.message) + "}\n";
}

// The tag file at `path`; `expected_name` empty: any name (a deleted tag).
VersionInfo ParseTagFile(const std::string& path, const std::string& expected_name) {
  const std::string text = util::ReadFile(path);
  const auto bad = [&](const std::string& what) {
    return CorruptionError("read tag " + path + ": " + what);
  };
  if (text.size() > kMaxTagFileBytes) throw bad("too large for a tag file");
  const JsonScanResult scan = ScanJsonValue(text, 0, true);
  if (scan.status != JsonScanStatus::kOk || text.empty() || text[0] != '{') {
    throw bad("not a JSON object");
  }
  VersionInfo info;
  std::optional<uint64_t> format, created, videos, frames;
  bool has_name = false, has_root = false;
  for (const JsonMember& m : JsonObjectMembers(text, 0)) {
    const std::string_view value(text.data() + m.value_pos, m.value_end - m.value_pos);
    const auto string_value = [&]() -> std::string {
      if (value.empty() || value[0] != '"') throw bad("\"" + m.key + "\" is not a string");
      return DecodeJsonString(value);
    };
    const auto count_value = [&]() -> uint64_t {
      const std::optional<uint64_t> n = ParseCount(value);
      if (!n) throw bad("\"" + m.key + "\" is not a whole number");
      return *n;
    };
    if (m.key == "format") {
      format = count_value();
    } else if (m.key == "name") {
      info.name = string_value();
      has_name = true;
    } else if (m.key == "root") {
      info.root = string_value();
      has_root = true;
    } else if (m.key == "created_ms") {
      created = count_value();
    } else if (m.key == "videos") {
      videos = count_value();
    } else if (m.key == "frames") {
      frames = count_value();
    } else if (m.key == "message") {
      info.message = string_value();
    }
  }
  if (!format || *format != kTagFormat) {
    throw bad("format " + (format ? std::to_string(*format) : std::string("missing")) +
              ", this build reads format " + std::to_string(kTagFormat));
  }
  if (!has_name || !has_root || !created || !videos || !frames) {
    throw bad("a member (name, root, created_ms, videos, frames) is missing");
  }
  if (!util::IsSha256Hex(info.root))
    throw bad("its root '" + PrintableBytes(info.root) + "' is not a SHA-256 name");
  if (!expected_name.empty() && info.name != expected_name) {
    throw bad("it names the tag '" + PrintableBytes(info.name) + "'");
  }
  info.created = static_cast<double>(*created) / 1000.0;
  info.videos = *videos;
  info.frames = *frames;
  return info;
}

uint64_t SizeOf(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return static_cast<uint64_t>(st.st_size);
}

// Regular files under `dir`, as names relative to it.
void WalkFiles(const std::string& dir, const std::string& prefix, std::vector<std::string>* out) {
  for (const std::string& name : ListIfDirectory(dir)) {
    const std::string path = dir + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      WalkFiles(path, prefix + name + "/", out);
    } else if (S_ISREG(st.st_mode)) {
      out->push_back(prefix + name);
    }
  }
}

// The root files (tags and deleted tags in their grace period) of `dir`.
std::vector<VersionInfo> AllRoots(const std::string& dir) {
  std::vector<VersionInfo> roots = ListTags(dir);
  for (const std::string& name : ListIfDirectory(DeletedDir(dir))) {
    if (!EndsWith(name, kTagSuffix)) continue;
    roots.push_back(ParseTagFile(DeletedDir(dir) + "/" + name, ""));
  }
  return roots;
}

}  // namespace

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void CheckTagName(const std::string& name, const std::string& operation) {
  const auto bad = [&](const std::string& what) {
    return InvalidArgumentError(operation + ": the tag name '" + PrintableBytes(name) + "' " +
                                what);
  };
  if (name.empty()) throw InvalidArgumentError(operation + ": a tag name is empty");
  if (name.size() > 255) throw bad("has " + std::to_string(name.size()) + " bytes (at most 255)");
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) throw bad("has a byte other than A-Z a-z 0-9 . _ -");
  }
  if (name == "." || name == "..") throw bad("is not a name");
  if (name == kHeadVersion) throw bad("is reserved: HEAD names the live dataset");
}

std::string VersionsDir(const std::string& dir) { return dir + "/" + kVersionsDirName; }
std::string ObjectsDir(const std::string& dir) { return VersionsDir(dir) + "/objects"; }
std::string KeptChunksDir(const std::string& dir) { return VersionsDir(dir) + "/chunks"; }

std::vector<VersionInfo> ListTags(const std::string& dir) {
  std::vector<VersionInfo> tags;
  for (const std::string& file : ListIfDirectory(TagsDir(dir))) {
    if (!EndsWith(file, kTagSuffix)) continue;  // a temporary file of WriteTag
    const std::string path = TagsDir(dir) + "/" + file;
    VersionInfo tag = ParseTagFile(path, "");
    try {
      CheckTagName(tag.name, "read tags of " + dir);
    } catch (const InvalidArgumentError& e) {
      throw CorruptionError(std::string(e.what()) + " (" + path + ")");
    }
    if (TagFile(dir, tag.name) != path) {
      throw CorruptionError("read tag " + path + ": it names the tag '" + tag.name +
                            "', whose file has another name");
    }
    tags.push_back(std::move(tag));
  }
  std::sort(tags.begin(), tags.end(), [](const VersionInfo& a, const VersionInfo& b) {
    return a.created != b.created ? a.created < b.created : a.name < b.name;
  });
  return tags;
}

VersionInfo ReadTag(const std::string& dir, const std::string& name, const std::string& operation) {
  CheckTagName(name, operation);
  const std::string path = TagFile(dir, name);
  if (!util::PathExists(path)) {
    std::string known;
    for (const VersionInfo& t : ListTags(dir)) known += (known.empty() ? "" : ", ") + t.name;
    throw NameNotFoundError(operation + ": no tag '" + name + "' in " + dir +
                            (known.empty() ? " (it has no tags)" : " (tags: " + known + ")"));
  }
  return ParseTagFile(path, name);
}

index::PartitionRoot ReadRoot(const std::string& dir, const std::string& sha256, bool expand) {
  if (!util::IsSha256Hex(sha256)) {
    throw CorruptionError("read version root '" + PrintableBytes(sha256) + "' of " + dir +
                          ": not a SHA-256 name");
  }
  const std::string path = ObjectsDir(dir) + "/" + sha256;
  std::string bytes;
  try {
    bytes = util::ReadFile(path);
  } catch (const NotFoundError&) {
    throw CorruptionError("read version root " + path + ": the file is missing");
  }
  if (util::Sha256Hex(bytes) != sha256) {
    throw CorruptionError("read version root " + path +
                          ": its bytes are not the ones its name (SHA-256) says");
  }
  index::PartitionRoot root = index::DecodePartitionRoot(bytes, path);
  if (expand)
    root = ExpandPartitionRoot(std::move(root), DirectoryPageFetch(ObjectsDir(dir)), path);
  return root;
}

void WriteTag(const std::string& dir, const VersionInfo& info) {
  if (info.message.size() > kMaxMessageBytes) {
    throw InvalidArgumentError("tag " + info.name + ": the message has " +
                               std::to_string(info.message.size()) + " bytes (at most " +
                               std::to_string(kMaxMessageBytes) + ")");
  }
  util::MakeDirectories(TagsDir(dir));
  const std::string path = TagFile(dir, info.name);
  if (util::PathExists(path)) {
    throw InvalidArgumentError("tag " + info.name + " in " + dir + ": the name '" + info.name +
                               "' is in use (gulpdb tag DIR " + info.name + " --delete frees it)");
  }
  const std::string text = TagJson(info, static_cast<int64_t>(info.created * 1000.0 + 0.5));
  if (util::TestBugEnabled("tag-file-unsynced")) {
    const std::string temp = path + ".tmp";
    {
      util::UniqueFd fd = util::OpenFile(temp, O_WRONLY | O_CREAT | O_TRUNC);
      util::WriteFull(fd.get(), text, temp);
    }
    util::Rename(temp, path);
    util::SyncDirectory(TagsDir(dir));
    return;
  }
  util::WriteFileAtomically(path, text);
}

void MoveTagToDeleted(const std::string& dir, const std::string& name,
                      std::chrono::milliseconds grace) {
  const std::string from = TagFile(dir, name);
  util::MakeDirectories(DeletedDir(dir));
  unsigned char random[8];
  util::RandomBytes(random, sizeof random);
  char hex[17];
  for (size_t i = 0; i < sizeof random; ++i) std::snprintf(hex + 2 * i, 3, "%02x", random[i]);
  const std::string to =
      DeletedDir(dir) + "/" + std::to_string(NowMs() + grace.count()) + "-" + hex + kTagSuffix;
  util::Rename(from, to);
  if (util::TestBugEnabled("tag-delete-unsynced")) return;
  util::SyncDirectory(DeletedDir(dir));
  util::SyncDirectory(TagsDir(dir));
}

uint64_t Reclaim(const std::string& dir) {
  if (!util::IsDirectory(VersionsDir(dir))) return 0;
  uint64_t freed = 0;
  const int64_t now = NowMs();
  bool removed_any = false;
  for (const std::string& name : ListIfDirectory(DeletedDir(dir))) {
    const size_t dash = name.find('-');
    const std::optional<uint64_t> deadline =
        dash == std::string::npos ? std::nullopt
                                  : ParseCount(std::string_view(name).substr(0, dash));
    if (!EndsWith(name, kTagSuffix) || !deadline) continue;
    if (static_cast<int64_t>(*deadline) > now) continue;
    util::RemoveFile(DeletedDir(dir) + "/" + name);
    removed_any = true;
  }
  if (removed_any && !util::TestBugEnabled("tag-delete-unsynced")) {
    util::SyncDirectory(DeletedDir(dir));
  }

  // What the remaining roots name. Any root that cannot be read stops the
  // reclaim before anything is deleted.
  std::set<std::string> objects, chunk_files;
  const std::vector<std::string> kept = [&] {
    std::vector<std::string> files;
    WalkFiles(KeptChunksDir(dir), "", &files);
    return files;
  }();
  for (const VersionInfo& tag : AllRoots(dir)) {
    index::PartitionRoot root = ReadRoot(dir, tag.root, /*expand=*/true);
    objects.insert(tag.root);
    for (const index::RootPage& page : root.pages) objects.insert(page.sha256);
    for (const index::PartitionEntry& p : root.partitions) objects.insert(p.sha256);
    if (!kept.empty()) {
      PartitionedIndex index(root, DirectoryFetch(ObjectsDir(dir)), dir + " (tag " + tag.name + ")",
                             DirectoryPageFetch(ObjectsDir(dir)));
      index.ScanChunks([&](uint32_t, const index::ChunkRecord& record) {
        chunk_files.insert(record.file_name);
        return true;
      });
    }
  }
  // No tag holds a temporary file or directory a builder left (a crash),
  // nor one of WriteTag: the writer lock the caller holds keeps every writer
  // of them out.
  bool removed_object = false;
  for (const std::string& name : ListIfDirectory(ObjectsDir(dir))) {
    if (objects.count(name) != 0) continue;
    const std::string path = ObjectsDir(dir) + "/" + name;
    freed += SizeOf(path);
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {  // never through a link
      util::RemoveTree(path);
    } else {
      util::RemoveFile(path);
    }
    removed_object = true;
  }
  if (removed_object) util::SyncDirectory(ObjectsDir(dir));
  bool removed_chunk = false;
  for (const std::string& name : kept) {
    if (chunk_files.count(name) != 0) continue;
    freed += SizeOf(KeptChunksDir(dir) + "/" + name);
    util::RemoveFile(KeptChunksDir(dir) + "/" + name);
    removed_chunk = true;
  }
  if (removed_chunk) util::SyncDirectory(KeptChunksDir(dir));
  for (const std::string& name : ListIfDirectory(TagsDir(dir))) {
    if (!EndsWith(name, kTagSuffix)) util::RemoveFile(TagsDir(dir) + "/" + name);
  }
  return freed;
}

uint64_t StoredVersionBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const std::string& sub : {ObjectsDir(dir), KeptChunksDir(dir)}) {
    std::vector<std::string> files;
    WalkFiles(sub, "", &files);
    for (const std::string& name : files) total += SizeOf(sub + "/" + name);
  }
  return total;
}

}  // namespace gulpdb::engine
