#include "engine/gulpio_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <set>

#include "engine/file_util.h"
#include "gulpdb/error.h"
#include "index/sys_error.h"

namespace gulpdb::engine {
namespace {

bool StartsEnds(const std::string& s, const char* prefix, const char* suffix) {
  const std::string p(prefix), x(suffix);
  return s.size() >= p.size() + x.size() && s.compare(0, p.size(), p) == 0 &&
         s.compare(s.size() - x.size(), x.size(), x) == 0;
}

std::string Describe(const index::FileStamp& was, const index::FileStamp& now) {
  if (was.size != now.size) {
    return "its size changed from " + std::to_string(was.size) + " to " + std::to_string(now.size) +
           " bytes";
  }
  return "it was modified (same size, modification time " + std::to_string(now.mtime_ns) +
         " ns, recorded " + std::to_string(was.mtime_ns) + ")";
}

}  // namespace

std::optional<uint32_t> GulpioChunkNumber(const std::string& name) {
  const auto first = std::find_if(
      name.begin(), name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (first == name.end()) return std::nullopt;
  uint64_t n = 0;
  for (auto it = first; it != name.end() && std::isdigit(static_cast<unsigned char>(*it)); ++it) {
    n = n * 10 + static_cast<uint64_t>(*it - '0');
    if (n > UINT32_MAX) return std::nullopt;
  }
  return static_cast<uint32_t>(n);
}

bool IsGulpioDataName(const std::string& name) { return StartsEnds(name, "data", ".gulp"); }
bool IsGulpioMetaName(const std::string& name) { return StartsEnds(name, "meta", ".gmeta"); }

std::map<uint32_t, GulpioChunkFiles> FindGulpioFiles(const std::string& dir,
                                                     const std::string& operation) {
  std::map<uint32_t, GulpioChunkFiles> chunks;
  for (const std::string& name : ListDirectory(dir)) {
    const bool is_data = IsGulpioDataName(name);
    if (!is_data && !IsGulpioMetaName(name)) continue;
    const std::optional<uint32_t> n = GulpioChunkNumber(name);
    if (!n) {
      throw InvalidArgumentError(operation + " " + dir + ": no chunk number in file name " + name);
    }
    GulpioChunkFiles& c = chunks[*n];
    c.number = *n;
    std::string& slot = is_data ? c.data : c.meta;
    if (!slot.empty()) {
      throw InvalidArgumentError(operation + " " + dir + ": " + slot + " and " + name +
                                 " both claim chunk " + std::to_string(*n));
    }
    slot = name;
  }
  return chunks;
}

std::optional<GulpioChunkFiles> FirstGulpioPair(const std::string& dir) {
  std::map<uint32_t, GulpioChunkFiles> chunks;
  for (const std::string& name : ListDirectory(dir)) {
    const bool is_data = IsGulpioDataName(name);
    if (!is_data && !IsGulpioMetaName(name)) continue;
    const std::optional<uint32_t> n = GulpioChunkNumber(name);
    if (!n) continue;
    GulpioChunkFiles& c = chunks[*n];
    c.number = *n;
    (is_data ? c.data : c.meta) = name;
  }
  for (const auto& [n, c] : chunks) {
    if (!c.data.empty() && !c.meta.empty()) return c;
  }
  return std::nullopt;
}

std::optional<index::FileStamp> StampOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    ThrowErrno("stat", path, errno);
  }
  index::FileStamp stamp;
  stamp.size = static_cast<uint64_t>(st.st_size);
  stamp.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return stamp;
}

std::vector<SourceChange> FindSourceChanges(const DatasetImpl& ds, index::Txn& txn) {
  std::vector<SourceChange> changes;
  const index::DatasetInfo info = ds.GetInfo(txn);
  if (!info.source_stamps) return changes;
  // Every file name the index knows, so that a new pair can be told apart
  // from gulpdb's own chunks (and the .gmeta an export wrote for them).
  std::set<std::string> known(info.obsolete_files.begin(), info.obsolete_files.end());
  const auto compare = [&](const std::string& name, const index::FileStamp& was) {
    const std::optional<index::FileStamp> now = StampOf(ds.ChunkPath(name));
    if (!now) {
      changes.push_back({name, "it was removed"});
    } else if (*now != was) {
      changes.push_back({name, Describe(was, *now)});
    }
  };
  index::Cursor cursor(txn, ds.chunks);
  for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
    const index::ChunkRecord c = ds.DecodeChunkAt(cursor.key(), cursor.value());
    known.insert(c.file_name);
    if (!c.meta_file.empty()) known.insert(c.meta_file);
    if (c.data_stamp) compare(c.file_name, *c.data_stamp);
    if (c.meta_stamp) compare(c.meta_file, *c.meta_stamp);
  }
  std::map<uint32_t, std::vector<std::string>> metas;  // number -> meta*.gmeta names
  std::vector<std::pair<uint32_t, std::string>> unknown_data;
  for (const std::string& name : ListDirectory(ds.dir)) {
    const bool is_data = IsGulpioDataName(name);
    if (!is_data && !IsGulpioMetaName(name)) continue;
    const std::optional<uint32_t> n = GulpioChunkNumber(name);
    if (!n) continue;
    if (!is_data) {
      metas[*n].push_back(name);
    } else if (known.count(name) == 0) {
      unknown_data.emplace_back(*n, name);
    }
  }
  for (const auto& [n, name] : unknown_data) {
    auto it = metas.find(n);
    if (it == metas.end()) continue;  // a data file alone is not a GulpIO chunk
    changes.push_back(
        {name, "a new chunk (with " + it->second.front() + ") that the index does not know"});
  }
  return changes;
}

std::string ReindexCommand(const DatasetImpl& ds) {
  const bool elsewhere = ds.index_dir != ds.dir + "/" + kIndexDirName;
  return "gulpdb import " + ds.dir + " --reindex" +
         (elsewhere ? " --index-dir " + ds.index_dir : std::string());
}

std::string SourceChangesMessage(const DatasetImpl& ds, const std::vector<SourceChange>& changes) {
  constexpr size_t kListed = 5;
  std::string list;
  for (size_t i = 0; i < changes.size() && i < kListed; ++i) {
    list += (i == 0 ? "" : "; ") + changes[i].file + ": " + changes[i].what;
  }
  if (changes.size() > kListed) {
    list += "; and " + std::to_string(changes.size() - kListed) + " more";
  }
  return "open dataset " + ds.dir + ": its GulpIO files changed since it was indexed (" + list +
         "); the index no longer describes them. Run `" + ReindexCommand(ds) +
         "` to index the directory again";
}

}  // namespace gulpdb::engine
