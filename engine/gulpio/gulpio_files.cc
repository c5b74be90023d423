#include "engine/gulpio/gulpio_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <set>

#include "engine/gulpio/verified_sources.h"
#include "gulpdb/error.h"
#include "util/crc32c.h"
#include "util/file_io.h"
#include "util/sys_error.h"
#include "util/test_bug.h"

namespace gulpdb::engine {
namespace {

std::string SizeChange(uint64_t was, uint64_t now) {
  return "its size changed from " + std::to_string(was) + " to " + std::to_string(now) + " bytes";
}

}  // namespace

std::optional<index::FileStamp> StampOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    util::ThrowErrno("stat", path, errno);
  }
  index::FileStamp stamp;
  stamp.size = static_cast<uint64_t>(st.st_size);
  stamp.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return stamp;
}

// The content fingerprint is CRC-32C (util/crc32c.h), not a cryptographic
// hash: it guards against other tools changing a file by accident (an edit
// that keeps the size and the CRC-32C is a 1 in 2^32 coincidence), and who
// can write the directory can edit the index as well, so a forged collision
// gains nothing. What decides is speed, since the first open of a copy reads
// every .gmeta (about 1 GB at 10^6 videos). Measured on the 2-core test VM
// under load from other builds (release build, one thread, 1 GiB):
//
//   CRC-32C, SSE4.2, in memory             2.5-5.4 GB/s
//   pread(2) from the page cache, 1 MiB    3.8 GB/s
//   both (HashFile), page cache            1.5-1.9 GB/s  (0.5-0.7 s per GB)
//   both, cold disk                        0.16 GB/s     (the disk)
//   SHA-256 (OpenSSL 3, SHA extensions)    1.4 GB/s in memory (openssl speed),
//                                          and much slower on CPUs without them
//
// and CRC-32C is computed in the import's parsing pass at no extra read.
SourceReport CheckSources(const Dataset& ds) {
  SourceReport report;
  // A dataset opened from a published manifest reads the objects the
  // manifest names, not files beside the index.
  if (ChunkSourceOf(ds) != nullptr) return report;
  // What the index recorded, from one snapshot; no transaction stays open
  // while files are stat'ed and read.
  struct Stamped {
    uint32_t number = 0;
    index::ChunkRecord record;
  };
  std::vector<Stamped> stamped;
  // Every file name the index knows, so that a new pair can be told apart
  // from gulpdb's own chunks (and the .gmeta an export wrote for them).
  std::set<std::string> known;
  {
    const IndexTxn txn(ds);
    const index::DatasetInfo info = txn.Info();
    if (!info.source_stamps) return report;
    known.insert(info.obsolete_files.begin(), info.obsolete_files.end());
    for (IndexTxn::ChunkCursor chunk = txn.Chunks(); chunk.Valid(); chunk.Next()) {
      Stamped s{chunk.number(), chunk.record()};
      known.insert(s.record.file_name);
      if (!s.record.meta_file.empty()) known.insert(s.record.meta_file);
      if (s.record.data_stamp || s.record.meta_stamp || s.record.meta_content) {
        stamped.push_back(std::move(s));
      }
    }
  }
  const VerifiedSources verified = LoadVerifiedSources(ds);
  VerifiedSources still_verified;  // the side record after this check
  bool record_changed = false;
  for (const Stamped& s : stamped) {
    const index::ChunkRecord& c = s.record;
    if (c.data_stamp) {
      // Data files: the size. Their bytes are covered by the per-frame
      // CRC-32C that `check --deep` and verify-on-read compare.
      const std::optional<util::FileIdentity> now = util::IdentityOf(ChunkPathOf(ds, c.file_name));
      if (!now) {
        report.changes.push_back({c.file_name, "it was removed"});
      } else if (now->size != c.data_stamp->size) {
        report.changes.push_back({c.file_name, SizeChange(c.data_stamp->size, now->size)});
      }
    }
    if (c.meta_file.empty() || (!c.meta_stamp && !c.meta_content)) continue;
    const std::string path = ChunkPathOf(ds, c.meta_file);
    const std::optional<util::FileIdentity> now = util::IdentityOf(path);
    if (!now) {
      report.missing_meta.push_back(c.meta_file);  // the index still describes the chunk
      continue;
    }
    // (GULPDB_TEST_BUG=copy-mtime: the stamp alone, as before fingerprints.)
    if (!c.meta_content || (c.meta_stamp && util::TestBugEnabled("copy-mtime"))) {
      // Indexed before content fingerprints: only the stamp can tell.
      if (now->size != c.meta_stamp->size) {
        report.changes.push_back({c.meta_file, SizeChange(c.meta_stamp->size, now->size)});
      } else if (now->mtime_ns != c.meta_stamp->mtime_ns) {
        report.changes.push_back(
            {c.meta_file, "it was modified (same size, modification time " +
                              std::to_string(now->mtime_ns) + " ns, recorded " +
                              std::to_string(c.meta_stamp->mtime_ns) +
                              "; this index predates content fingerprints, which re-indexing "
                              "records)"});
      }
      continue;
    }
    const index::ContentStamp& want = *c.meta_content;
    if (now->size != want.size) {
      report.changes.push_back({c.meta_file, SizeChange(want.size, now->size)});
      continue;
    }
    auto it = verified.find(s.number);
    if (it != verified.end() && it->second.content == want && it->second.identity == *now) {
      still_verified.emplace(s.number, it->second);  // the fast path: not read
      continue;
    }
    const std::optional<HashedFile> hashed = HashFile(path);
    if (!hashed) {
      report.missing_meta.push_back(c.meta_file);  // removed meanwhile
      continue;
    }
    report.hashed_bytes += hashed->content.size;
    if (hashed->content != want) {
      report.changes.push_back({c.meta_file, hashed->content.size != want.size
                                                 ? SizeChange(want.size, hashed->content.size)
                                                 : "its content changed (same size, CRC-32C " +
                                                       util::Crc32cHex(hashed->content.crc32c) +
                                                       ", indexed " + util::Crc32cHex(want.crc32c) +
                                                       ")"});
    } else if (hashed->stable) {
      still_verified[s.number] = VerifiedSource{want, hashed->identity};
      record_changed = true;
    }
  }
  if (still_verified.size() != verified.size()) record_changed = true;
  if (record_changed) SaveVerifiedSources(ds, still_verified);

  std::map<uint32_t, std::vector<std::string>> metas;  // number -> meta*.gmeta names
  std::vector<std::pair<uint32_t, std::string>> unknown_data;
  for (const std::string& name : util::ListDirectory(ds.dir())) {
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
    report.changes.push_back(
        {name, "a new chunk (with " + it->second.front() + ") that the index does not know"});
  }
  return report;
}

std::string ReindexCommand(const Dataset& ds) {
  const std::string& index_dir = IndexDirOf(ds);
  const bool elsewhere = index_dir != IndexDirOf(ds.dir(), "");
  return "gulpdb import " + ds.dir() + " --reindex" +
         (elsewhere ? " --index-dir " + index_dir : std::string());
}

std::string SourceChangesMessage(const Dataset& ds, const std::vector<SourceChange>& changes) {
  constexpr size_t kListed = 5;
  std::string list;
  for (size_t i = 0; i < changes.size() && i < kListed; ++i) {
    list += (i == 0 ? "" : "; ") + changes[i].file + ": " + changes[i].what;
  }
  if (changes.size() > kListed) {
    list += "; and " + std::to_string(changes.size() - kListed) + " more";
  }
  return "open dataset " + ds.dir() + ": its GulpIO files changed since it was indexed (" + list +
         "); the index no longer describes them. Run `" + ReindexCommand(ds) +
         "` to index the directory again";
}

std::unique_ptr<Dataset> OpenLocalChecked(const std::string& dir, const OpenOptions& options,
                                          bool check_sources) {
  index::DatasetInfo info;
  std::unique_ptr<Dataset> dataset = OpenLocalDataset(dir, options, &info);
  if (check_sources && info.source_stamps) {
    const SourceReport sources = CheckSources(*dataset);
    if (!sources.changes.empty()) {
      throw StaleIndexError(SourceChangesMessage(*dataset, sources.changes));
    }
  }
  return dataset;
}

}  // namespace gulpdb::engine
