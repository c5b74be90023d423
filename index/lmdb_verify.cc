#include "index/lmdb_verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "gulpdb/error.h"
#include "util/sys_error.h"

namespace gulpdb::index {
namespace {

// LMDB 0.9's on-disk layout (little-endian, 64-bit build).
constexpr uint32_t kMagic = 0xBEEFC0DE;
constexpr uint32_t kDataVersion = 1;
constexpr size_t kPageHeader = 16;  // pgno u64, pad u16, flags u16, lower u16, upper u16
constexpr size_t kNodeHeader = 8;   // lo u16, hi u16, flags u16, ksize u16
constexpr uint16_t kBranch = 0x01, kLeaf = 0x02, kOverflow = 0x04, kMeta = 0x08, kLeaf2 = 0x20,
                   kSubPage = 0x40;
constexpr uint16_t kTypeBits = kBranch | kLeaf | kOverflow | kMeta | kLeaf2 | kSubPage;
constexpr uint16_t kIntegerKey = 0x08;  // database flag
constexpr uint16_t kBigData = 0x01, kSubData = 0x02, kDupData = 0x04;
constexpr uint64_t kInvalidPage = ~uint64_t{0};
constexpr size_t kDbRecordSize = 48;
constexpr int kMaxDepth = 32;  // far above anything a 2^64-page file can need
// Offsets inside a meta page, after the page header.
constexpr size_t kMetaMagic = kPageHeader + 0, kMetaVersion = kPageHeader + 4,
                 kMetaFreeDb = kPageHeader + 24, kMetaMainDb = kPageHeader + 72,
                 kMetaLastPage = kPageHeader + 120, kMetaTxnid = kPageHeader + 128;

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct DbRecord {
  uint16_t flags = 0;
  uint16_t depth = 0;
  uint64_t branch_pages = 0, leaf_pages = 0, overflow_pages = 0, entries = 0, root = 0;
};

DbRecord ParseDb(const uint8_t* p) {
  DbRecord db;
  db.flags = Load<uint16_t>(p + 4);
  db.depth = Load<uint16_t>(p + 6);
  db.branch_pages = Load<uint64_t>(p + 8);
  db.leaf_pages = Load<uint64_t>(p + 16);
  db.overflow_pages = Load<uint64_t>(p + 24);
  db.entries = Load<uint64_t>(p + 32);
  db.root = Load<uint64_t>(p + 40);
  return db;
}

struct Meta {
  uint32_t page_size = 0;
  DbRecord free_db, main_db;
  uint64_t last_page = 0;
  uint64_t txnid = 0;
};

class File {
 public:
  explicit File(const std::string& path) : path_(path) {
    do {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) util::ThrowErrno("open", path, errno);
    Refresh();
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  uint64_t size() const { return size_; }
  // Measures the size again. The writer of an LMDB file only ever grows it,
  // and writes a transaction's pages before the meta page naming them.
  uint64_t Refresh() {
    struct stat st;
    if (::fstat(fd_, &st) != 0) util::ThrowErrno("stat", path_, errno);
    size_ = static_cast<uint64_t>(st.st_size);
    return size_;
  }
  // Reads exactly `n` bytes at `offset`; false if the file is shorter.
  bool Read(uint64_t offset, uint8_t* out, size_t n) const {
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0) {
        if (errno == EINTR) continue;
        util::ThrowErrno("read", path_ + " at offset " + std::to_string(offset + done), errno);
      }
      if (got == 0) return false;
      done += static_cast<size_t>(got);
    }
    return true;
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Parses a meta page; an error message if it is not one.
std::optional<std::string> ParseMeta(const uint8_t* page, uint64_t pgno, Meta* meta) {
  if (Load<uint32_t>(page + kMetaMagic) != kMagic)
    return "meta page " + std::to_string(pgno) + ": not an LMDB file (bad magic)";
  if (Load<uint32_t>(page + kMetaVersion) != kDataVersion) {
    return "meta page " + std::to_string(pgno) + ": unsupported LMDB format version " +
           std::to_string(Load<uint32_t>(page + kMetaVersion));
  }
  if ((Load<uint16_t>(page + 10) & kTypeBits) != kMeta || Load<uint64_t>(page) != pgno) {
    return "meta page " + std::to_string(pgno) + ": bad page header";
  }
  meta->page_size = Load<uint32_t>(page + kMetaFreeDb);  // LMDB keeps the page size in md_pad
  meta->free_db = ParseDb(page + kMetaFreeDb);
  meta->main_db = ParseDb(page + kMetaMainDb);
  meta->last_page = Load<uint64_t>(page + kMetaLastPage);
  meta->txnid = Load<uint64_t>(page + kMetaTxnid);
  if (meta->page_size < 512 || meta->page_size > 65536 ||
      (meta->page_size & (meta->page_size - 1)) != 0) {
    return "meta page " + std::to_string(pgno) + ": implausible page size " +
           std::to_string(meta->page_size);
  }
  return std::nullopt;
}

std::atomic<void (*)()> g_before_meta_read{nullptr};

// Reads both meta pages; picks the one for `txnid` (0: the newer).
//
// The size check must measure the file after reading the meta pages: a
// writer committing between a size measured first and the meta read would
// make a healthy, growing index look truncated (the meta names pages the
// stale size does not cover). Measured afterwards, the size covers every
// page any meta we read names, since LMDB writes (and syncs) a
// transaction's pages before its meta page.
Meta ReadMeta(File& file, const std::string& path, uint64_t txnid) {
  if (auto hook = g_before_meta_read.load(std::memory_order_relaxed)) hook();
  // Meta page 0 sits at offset 0; its page size says where page 1 is.
  std::vector<uint8_t> first(kPageHeader + 136);
  if (!file.Read(0, first.data(), first.size())) {
    throw CorruptionError("verify index " + path + ": the file is too short for an LMDB header (" +
                          std::to_string(file.size()) + " bytes)");
  }
  Meta metas[2];
  if (auto error = ParseMeta(first.data(), 0, &metas[0]))
    throw CorruptionError("verify index " + path + ": " + *error);
  std::vector<uint8_t> second(first.size());
  if (!file.Read(metas[0].page_size, second.data(), second.size())) {
    throw CorruptionError("verify index " + path + ": the file ends inside meta page 1");
  }
  if (auto error = ParseMeta(second.data(), 1, &metas[1]))
    throw CorruptionError("verify index " + path + ": " + *error);
  if (metas[0].page_size != metas[1].page_size) {
    throw CorruptionError("verify index " + path + ": the meta pages disagree on the page size");
  }
  const Meta* pick = &metas[metas[0].txnid < metas[1].txnid ? 1 : 0];
  if (txnid != 0) {
    pick = metas[0].txnid == txnid ? &metas[0] : metas[1].txnid == txnid ? &metas[1] : nullptr;
    if (pick == nullptr) {
      throw BusyError("verify index " + path + ": transaction " + std::to_string(txnid) +
                      " is no longer the file's current or previous one");
    }
  }
  const uint64_t need = (pick->last_page + 1) * pick->page_size;
  if (pick->last_page < 1 || pick->last_page > (uint64_t{1} << 40) || file.Refresh() < need) {
    throw CorruptionError("verify index " + path + ": transaction " + std::to_string(pick->txnid) +
                          " uses " + std::to_string(pick->last_page + 1) + " pages (" +
                          std::to_string(need) + " bytes) but the file has " +
                          std::to_string(file.size()) + " bytes (truncated?)");
  }
  return *pick;
}

int KeyCompare(std::string_view a, std::string_view b) {
  const int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
  if (c != 0) return c;
  return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

class Walker {
 public:
  Walker(const File& file, const std::string& path, const Meta& meta, size_t max_problems,
         IndexFileReport* report)
      : file_(file),
        path_(path),
        meta_(meta),
        max_problems_(max_problems),
        report_(report),
        page_(meta.page_size),
        used_(meta.last_page + 1, false) {
    used_[0] = used_[1] = true;  // the meta pages
  }

  // Walks one database; `name` for messages. `is_main` marks the database
  // whose leaves hold the records of the named databases.
  void WalkDb(const DbRecord& db, const std::string& name, bool is_main, bool is_free) {
    if (db.root == kInvalidPage) {
      if (db.entries != 0 || db.depth != 0)
        Problem(name + ": empty tree with " + std::to_string(db.entries) + " entries");
      return;
    }
    // gulpdb's databases use LMDB's default byte order; only the free list
    // has integer keys (MDB_INTEGERKEY). No duplicate or reverse-key trees.
    if (db.flags != (is_free ? kIntegerKey : 0)) {
      Problem(name + ": unexpected database flags " + std::to_string(db.flags));
      return;
    }
    if (db.depth < 1 || db.depth > kMaxDepth) {
      Problem(name + ": implausible depth " + std::to_string(db.depth));
      return;
    }
    Counts counts;
    Walk(db.root, db, name, 1, std::nullopt, std::nullopt, is_main, is_free, &counts);
    if (report_->problems.size() >= max_problems_) return;
    if (counts.entries != db.entries || counts.branch != db.branch_pages ||
        counts.leaf != db.leaf_pages || counts.overflow != db.overflow_pages) {
      Problem(name + ": counts disagree with its record (entries " +
              std::to_string(counts.entries) + " vs " + std::to_string(db.entries) + ", pages " +
              std::to_string(counts.branch) + "/" + std::to_string(counts.leaf) + "/" +
              std::to_string(counts.overflow) + " vs " + std::to_string(db.branch_pages) + "/" +
              std::to_string(db.leaf_pages) + "/" + std::to_string(db.overflow_pages) + ")");
    }
    if (!is_free) report_->entries += counts.entries;
    report_->branch_pages += counts.branch;
    report_->leaf_pages += counts.leaf;
    report_->overflow_pages += counts.overflow;
  }

  void MarkFreePages() {
    for (uint64_t pgno : free_list_) {
      if (pgno < 2 || pgno > meta_.last_page) {
        Problem("free list: page " + std::to_string(pgno) + " is outside the file");
      } else if (used_[pgno]) {
        Problem("free list: page " + std::to_string(pgno) + " is both free and in use");
      } else {
        used_[pgno] = true;
        ++report_->free_pages;
      }
    }
  }

 private:
  struct Counts {
    uint64_t entries = 0, branch = 0, leaf = 0, overflow = 0;
  };

  bool Problem(const std::string& what) {
    if (report_->problems.size() < max_problems_) report_->problems.push_back(path_ + ": " + what);
    return false;
  }

  // Claims pages [first, first + count) for one use.
  bool Claim(uint64_t first, uint64_t count, const std::string& where) {
    if (first < 2 || first > meta_.last_page || count > meta_.last_page + 1 - first) {
      return Problem(where + ": page " + std::to_string(first) + " (+" + std::to_string(count) +
                     ") is outside the " + std::to_string(meta_.last_page + 1) + " pages in use");
    }
    for (uint64_t p = first; p < first + count; ++p) {
      if (used_[p]) return Problem(where + ": page " + std::to_string(p) + " is reachable twice");
      used_[p] = true;
    }
    return true;
  }

  bool ReadPage(uint64_t pgno, std::vector<uint8_t>* out) {
    out->resize(meta_.page_size);
    if (!file_.Read(pgno * meta_.page_size, out->data(), out->size())) {
      return Problem("page " + std::to_string(pgno) + ": past the end of the file");
    }
    return true;
  }

  void Walk(uint64_t pgno, const DbRecord& db, const std::string& name, int depth,
            std::optional<std::string> low, std::optional<std::string> high, bool is_main,
            bool is_free, Counts* counts) {
    if (report_->problems.size() >= max_problems_) return;
    const std::string where = name + " page " + std::to_string(pgno);
    if (depth > db.depth) {
      Problem(where + ": deeper than the tree's depth " + std::to_string(db.depth));
      return;
    }
    if (!Claim(pgno, 1, where)) return;
    std::vector<uint8_t> page;
    if (!ReadPage(pgno, &page)) return;
    const uint8_t* p = page.data();
    const uint16_t flags = Load<uint16_t>(p + 10) & kTypeBits;
    const uint16_t lower = Load<uint16_t>(p + 12);
    const uint16_t upper = Load<uint16_t>(p + 14);
    const size_t size = meta_.page_size;
    if (Load<uint64_t>(p) != pgno) {
      Problem(where + ": its header says page " + std::to_string(Load<uint64_t>(p)));
      return;
    }
    const bool leaf = depth == db.depth;
    if (flags != (leaf ? kLeaf : kBranch)) {
      Problem(where + ": type " + std::to_string(flags) + " where a " + (leaf ? "leaf" : "branch") +
              " page belongs");
      return;
    }
    if (lower < kPageHeader || upper > size || lower > upper || (lower - kPageHeader) % 2 != 0) {
      Problem(where + ": bad free-space bounds " + std::to_string(lower) + ".." +
              std::to_string(upper));
      return;
    }
    const size_t n = (lower - kPageHeader) / 2;
    if (n == 0) {
      Problem(where + ": " + std::to_string(n) + " nodes");
      return;
    }
    if (leaf) {
      ++counts->leaf;
    } else {
      ++counts->branch;
    }
    std::optional<std::string> previous;
    for (size_t i = 0; i < n; ++i) {
      const std::string node_where = where + " node " + std::to_string(i);
      const uint16_t at = Load<uint16_t>(p + kPageHeader + 2 * i);
      if (at < upper || at + kNodeHeader > size) {
        Problem(node_where + ": offset " + std::to_string(at) + " outside the node area");
        return;
      }
      const uint8_t* node = p + at;
      const uint16_t lo = Load<uint16_t>(node), hi = Load<uint16_t>(node + 2);
      const uint16_t node_flags = Load<uint16_t>(node + 4), ksize = Load<uint16_t>(node + 6);
      if (at + kNodeHeader + ksize > size) {
        Problem(node_where + ": key of " + std::to_string(ksize) + " bytes runs past the page");
        return;
      }
      const std::string key(reinterpret_cast<const char*>(node + kNodeHeader), ksize);
      // Branch node 0 has no key: it covers everything below node 1's key.
      const bool has_key = leaf || i > 0;
      if (has_key) {
        if (ksize == 0 || ksize > 511 || (is_free && ksize != 8)) {
          Problem(node_where + ": key size " + std::to_string(ksize));
          return;
        }
        const auto less = [&](const std::string& a, const std::string& b) {
          return is_free ? Load<uint64_t>(reinterpret_cast<const uint8_t*>(a.data())) <
                               Load<uint64_t>(reinterpret_cast<const uint8_t*>(b.data()))
                         : KeyCompare(a, b) < 0;
        };
        if ((previous && !less(*previous, key)) || (low && less(key, *low)) ||
            (high && !less(key, *high))) {
          Problem(node_where + ": key out of order");
          return;
        }
        previous = key;
      }
      if (!leaf) {
        const uint64_t child = uint64_t{lo} | (uint64_t{hi} << 16) | (uint64_t{node_flags} << 32);
        std::optional<std::string> child_low = has_key ? std::optional<std::string>(key) : low;
        std::optional<std::string> child_high = high;
        if (i + 1 < n) {
          const uint16_t next_at = Load<uint16_t>(p + kPageHeader + 2 * (i + 1));
          if (next_at < upper || next_at + kNodeHeader > size ||
              next_at + kNodeHeader + Load<uint16_t>(p + next_at + 6) > size) {
            Problem(where + " node " + std::to_string(i + 1) + ": bad node offset or key size");
            return;
          }
          child_high = std::string(reinterpret_cast<const char*>(p + next_at + kNodeHeader),
                                   Load<uint16_t>(p + next_at + 6));
        }
        Walk(child, db, name, depth + 1, child_low, child_high, is_main, is_free, counts);
        if (report_->problems.size() >= max_problems_) return;
        continue;
      }
      ++counts->entries;
      if ((node_flags & kDupData) != 0 || (node_flags & ~uint16_t{kBigData | kSubData}) != 0) {
        Problem(node_where + ": unexpected node flags " + std::to_string(node_flags));
        return;
      }
      const uint64_t dsize = uint64_t{lo} | (uint64_t{hi} << 16);
      std::vector<uint8_t> data;
      if ((node_flags & kBigData) != 0) {
        if (at + kNodeHeader + ksize + 8 > size) {
          Problem(node_where + ": overflow page number runs past the page");
          return;
        }
        const uint64_t first = Load<uint64_t>(node + kNodeHeader + ksize);
        if (!Overflow(first, dsize, node_where, (is_main || is_free) ? &data : nullptr, counts))
          return;
      } else {
        if (at + kNodeHeader + ksize + dsize > size) {
          Problem(node_where + ": value of " + std::to_string(dsize) + " bytes runs past the page");
          return;
        }
        if (is_main || is_free)
          data.assign(node + kNodeHeader + ksize, node + kNodeHeader + ksize + dsize);
      }
      if (is_main) {
        if ((node_flags & kSubData) == 0 || data.size() != kDbRecordSize) {
          Problem(node_where + ": main database entry '" + key + "' is not a database record");
          return;
        }
        sub_dbs_.emplace_back(key, ParseDb(data.data()));
      } else if ((node_flags & kSubData) != 0) {
        Problem(node_where + ": unexpected sub-database");
        return;
      }
      if (is_free) {
        // An ID list: a count, then that many page numbers.
        if (data.size() < 8 || data.size() % 8 != 0 ||
            Load<uint64_t>(data.data()) != data.size() / 8 - 1) {
          Problem(node_where + ": malformed free-page list");
          return;
        }
        for (size_t k = 8; k < data.size(); k += 8)
          free_list_.push_back(Load<uint64_t>(data.data() + k));
      }
    }
  }

  bool Overflow(uint64_t first, uint64_t dsize, const std::string& where,
                std::vector<uint8_t>* data, Counts* counts) {
    std::vector<uint8_t> head;
    if (first < 2 || first > meta_.last_page) {
      return Problem(where + ": overflow page " + std::to_string(first) + " is outside the file");
    }
    if (!ReadPage(first, &head)) return false;
    const uint32_t pages = Load<uint32_t>(head.data() + 12);
    if ((Load<uint16_t>(head.data() + 10) & kTypeBits) != kOverflow ||
        Load<uint64_t>(head.data()) != first || pages == 0 ||
        dsize > uint64_t{pages} * meta_.page_size - kPageHeader ||
        dsize + kPageHeader <= uint64_t{pages - 1} * meta_.page_size) {
      return Problem(where + ": overflow page " + std::to_string(first) + " does not hold " +
                     std::to_string(dsize) + " bytes");
    }
    if (!Claim(first, pages, where + " overflow")) return false;
    counts->overflow += pages;
    if (data != nullptr) {
      data->resize(dsize);
      if (!file_.Read(first * meta_.page_size + kPageHeader, data->data(), dsize)) {
        return Problem(where + ": overflow value past the end of the file");
      }
    }
    return true;
  }

 public:
  std::vector<std::pair<std::string, DbRecord>> sub_dbs_;
  std::vector<uint64_t> free_list_;

 private:
  const File& file_;
  const std::string& path_;
  const Meta& meta_;
  size_t max_problems_;
  IndexFileReport* report_;
  std::vector<uint8_t> page_;
  std::vector<bool> used_;
};

}  // namespace

void SetBeforeMetaReadHookForTesting(void (*hook)()) { g_before_meta_read.store(hook); }

void CheckIndexFileHeader(const std::string& data_path) {
  File file(data_path);
  if (file.size() == 0) return;  // LMDB initialises an empty file as a new environment
  ReadMeta(file, data_path, 0);
}

IndexFileReport VerifyIndexFile(const std::string& data_path, uint64_t txnid, size_t max_problems) {
  File file(data_path);
  IndexFileReport report;
  Meta meta;
  try {
    meta = ReadMeta(file, data_path, txnid);
  } catch (const CorruptionError& e) {
    report.problems.push_back(e.what());
    return report;
  }
  report.txnid = meta.txnid;
  report.page_size = meta.page_size;
  report.pages = meta.last_page + 1;
  Walker walker(file, data_path, meta, max_problems, &report);
  walker.WalkDb(meta.free_db, "free list", false, true);
  walker.WalkDb(meta.main_db, "main database", true, false);
  // Each named database, found in the main database's leaves.
  for (size_t i = 0; i < walker.sub_dbs_.size() && report.problems.size() < max_problems; ++i) {
    const auto [name, db] = walker.sub_dbs_[i];
    walker.WalkDb(db, "database '" + name + "'", false, false);
  }
  walker.MarkFreePages();
  return report;
}

}  // namespace gulpdb::index
