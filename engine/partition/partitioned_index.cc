// Opening a partitioned index snapshot (partitions.h, PartitionedIndex, an
// IndexSource): the root validated and its partitions handed to a
// PartitionLevels (partition_levels.h), which fetches and opens them. Also
// where partitions and root pages come from (DirectoryFetch,
// DirectoryPageFetch) and a root's paged groups listed (ExpandPartitionRoot).
// The lookups and scans are partitioned_lookup.cc; the builder is
// partition_builder.cc; the file format both read, partition_file.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <utility>

#include "engine/core/dataset_view.h"
#include "engine/partition/partition_file.h"
#include "engine/partition/partitions.h"
#include "gulpdb/error.h"
#include "util/file_io.h"
#include "util/sha256.h"
namespace gulpdb::engine {

using namespace part;  // NOLINT: the room's partition file helpers

// ---- public functions --------------------------------------------------------

PartitionFetch DirectoryFetch(const std::string& dir) {
  return [dir](const PartitionEntry& entry) -> std::string {
    if (!IsSha256Name(entry.sha256)) {
      throw InvalidArgumentError("fetch partition '" + entry.sha256 + "': not a SHA-256 name");
    }
    const std::string path = dir + "/" + entry.sha256;
    if (!util::PathExists(path)) {
      throw NotFoundError("fetch partition " + entry.sha256 + ": no file " + path);
    }
    return path;
  };
}

void VerifyPageBytes(std::string_view bytes, const index::RootPage& page, const std::string& name) {
  if (bytes.size() != page.size) {
    throw CorruptionError("root page " + name + ": " + std::to_string(bytes.size()) +
                          " bytes, the root says " + std::to_string(page.size));
  }
  const std::string sha = util::Sha256Hex(bytes);
  if (sha != page.sha256) {
    throw CorruptionError("root page " + name + ": its SHA-256 is " + sha + ", the root says " +
                          page.sha256);
  }
}

PageFetch DirectoryPageFetch(const std::string& dir) {
  return [dir](const index::RootPage& page) -> std::string {
    if (!IsSha256Name(page.sha256)) {
      throw InvalidArgumentError("fetch root page '" + page.sha256 + "': not a SHA-256 name");
    }
    const std::string path = dir + "/" + page.sha256;
    if (!util::PathExists(path)) {
      throw NotFoundError("fetch root page " + page.sha256 + ": no file " + path);
    }
    // Never more than the root says: a file of another size is another page.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != page.size) {
      throw CorruptionError("root page " + path + ": " + std::to_string(st.st_size) +
                            " bytes, the root says " + std::to_string(page.size));
    }
    std::string bytes = util::ReadFile(path);
    VerifyPageBytes(bytes, page, path);
    return bytes;
  };
}

index::PartitionRoot ExpandPartitionRoot(index::PartitionRoot root, const PageFetch& fetch,
                                         const std::string& name) {
  if (root.pages.empty() || Expanded(root)) return root;
  std::vector<PartitionEntry> all;
  size_t next = 0;  // the next listed partition
  // Pages and listed partitions are both sorted by (kind, generation); a
  // group is in one or the other.
  const auto before = [](const auto& a, const auto& b) {
    return a.kind < b.kind || (a.kind == b.kind && a.generation < b.generation);
  };
  for (const index::RootPage& page : root.pages) {
    while (next < root.partitions.size() && before(root.partitions[next], page)) {
      all.push_back(std::move(root.partitions[next++]));
    }
    for (PartitionEntry& p : index::DecodeRootPage(fetch(page), page, name + " " + page.sha256)) {
      all.push_back(std::move(p));
    }
  }
  while (next < root.partitions.size()) all.push_back(std::move(root.partitions[next++]));
  root.partitions = std::move(all);
  index::ValidatePartitionRoot(root, name);
  return root;
}

// ---- PartitionedIndex --------------------------------------------------------

namespace {

// The dataset info of `root`, once the root is validated (a CorruptionError
// naming `name` when it is not a valid root).
index::DatasetInfo ValidatedInfo(const index::PartitionRoot& root, const std::string& name) {
  index::ValidatePartitionRoot(root, name);
  return index::DecodeDatasetInfo(root.dataset_info, "partition root " + name);
}

}  // namespace

PartitionedIndex::PartitionedIndex(index::PartitionRoot root, PartitionFetch fetch,
                                   std::string name, PageFetch pages)
    : root_(std::move(root)),
      name_(std::move(name)),
      info_(ValidatedInfo(root_, name_)),
      levels_(root_, std::move(fetch), name_, std::move(pages)),
      order_count_(root_.Count(PartitionKind::kOrder)) {}

PartitionedIndex::~PartitionedIndex() = default;

uint64_t PartitionedIndex::fetches() const { return levels_.fetches(); }
uint64_t PartitionedIndex::fetched_bytes() const { return levels_.fetched_bytes(); }
uint64_t PartitionedIndex::page_fetches() const { return levels_.page_fetches(); }
size_t PartitionedIndex::open_partitions() const { return levels_.open_partitions(); }

}  // namespace gulpdb::engine
