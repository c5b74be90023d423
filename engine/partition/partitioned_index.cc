// Opening a partitioned index snapshot (partitions.h, PartitionedIndex, an
// IndexSource): the root and its pages walked, partitions and root pages
// fetched on first use, verified and kept open under a bound. Also where
// partitions come from (DirectoryFetch) and a root's paged groups listed
// (ExpandPartitionRoot). The lookups and scans over what this opens are
// partitioned_lookup.cc; the builder is partition_builder.cc; the file
// format both read, partition_file.h.
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

PartitionedIndex::PartitionedIndex(index::PartitionRoot root, PartitionFetch fetch,
                                   std::string name, PageFetch pages)
    : root_(std::move(root)),
      fetch_(std::move(fetch)),
      name_(std::move(name)),
      pages_(std::move(pages)) {
  index::ValidatePartitionRoot(root_, name_);
  info_ = index::DecodeDatasetInfo(root_.dataset_info, "partition root " + name_);
  // The groups of each kind, newest delta generation first and the base
  // last; each group's slots in key order (validated). A group the root
  // lists is one slot, loaded; a paged group is one slot per page, loaded
  // on first use, unless the root lists its partitions too.
  std::map<uint64_t, Group, std::greater<>> by_generation[index::kPartitionKinds];
  std::map<uint64_t, std::vector<PartitionEntry>> listed[index::kPartitionKinds];
  for (const PartitionEntry& p : root_.partitions) {
    listed[static_cast<int>(p.kind)][p.generation].push_back(p);
  }
  for (const index::RootPage& page : root_.pages) {
    if (listed[static_cast<int>(page.kind)].count(page.generation) != 0) continue;
    Slot slot;
    slot.page = &page;
    slot.first_key = page.first_key;
    slot.last_key = page.last_key;
    slot.first_position = page.first_position;
    by_generation[static_cast<int>(page.kind)][page.generation].push_back(std::move(slot));
  }
  if (!root_.pages.empty() && !pages_) {
    for (int k = 0; k < index::kPartitionKinds; ++k) {
      if (!by_generation[k].empty()) {
        throw InvalidArgumentError("open partitioned index " + name_ +
                                   ": its root lists pages, and there is nothing to read them");
      }
    }
  }
  for (int k = 0; k < index::kPartitionKinds; ++k) {
    for (auto& [generation, parts] : listed[k]) {
      Slot slot;
      slot.first_key = parts.front().first_key;
      slot.last_key = parts.back().last_key;
      slot.first_position = parts.front().first_position;
      slot.parts = std::make_shared<const std::vector<PartitionEntry>>(std::move(parts));
      by_generation[k][generation].push_back(std::move(slot));
    }
  }
  order_count_ = root_.Count(PartitionKind::kOrder);
  for (int k = 0; k < index::kPartitionKinds; ++k) {
    for (auto& [generation, group] : by_generation[k]) levels_[k].push_back(std::move(group));
  }
}

const PartitionedIndex::Group& PartitionedIndex::order() const {
  static const Group kNone;
  const std::vector<Group>& groups = levels_[static_cast<int>(PartitionKind::kOrder)];
  return groups.empty() ? kNone : groups.front();
}

PartitionedIndex::~PartitionedIndex() = default;

uint64_t PartitionedIndex::fetches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fetches_;
}

uint64_t PartitionedIndex::fetched_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fetched_bytes_;
}

size_t PartitionedIndex::open_partitions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_.size();
}

uint64_t PartitionedIndex::page_fetches() const {
  std::lock_guard<std::mutex> lock(page_mutex_);
  return page_fetches_;
}

const std::vector<PartitionEntry>& PartitionedIndex::Load(const Slot& slot) const {
  using Parts = std::shared_ptr<const std::vector<PartitionEntry>>;
  std::promise<Parts> promise;
  std::shared_future<Parts> loading;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(page_mutex_);
    if (slot.parts) return *slot.parts;
    if (!slot.loading.valid()) {
      slot.loading = promise.get_future().share();
      ++page_fetches_;
      mine = true;
    }
    loading = slot.loading;
  }
  if (mine) {
    try {
      const std::string what = name_ + " root page " + slot.page->sha256;
      auto parts = std::make_shared<const std::vector<PartitionEntry>>(
          index::DecodeRootPage(pages_(*slot.page), *slot.page, what));
      {
        std::lock_guard<std::mutex> lock(page_mutex_);
        slot.parts = parts;
      }
      promise.set_value(std::move(parts));
    } catch (...) {
      {
        // A later use tries again.
        std::lock_guard<std::mutex> lock(page_mutex_);
        slot.loading = {};
      }
      promise.set_exception(std::current_exception());
    }
  }
  return *loading.get();
}

const PartitionEntry* PartitionedIndex::Holding(const Group& group, std::string_view key) const {
  auto slot = std::upper_bound(group.begin(), group.end(), key,
                               [](std::string_view k, const Slot& s) { return k < s.first_key; });
  if (slot == group.begin() || key > (slot - 1)->last_key) return nullptr;
  const std::vector<PartitionEntry>& parts = Load(*(slot - 1));
  auto it =
      std::upper_bound(parts.begin(), parts.end(), key,
                       [](std::string_view k, const PartitionEntry& p) { return k < p.first_key; });
  if (it == parts.begin()) return nullptr;
  const PartitionEntry* p = &*(it - 1);
  return key <= p->last_key ? p : nullptr;
}

std::vector<const PartitionEntry*> PartitionedIndex::Overlapping(const Group& group,
                                                                 std::string_view from,
                                                                 std::string_view to) const {
  std::vector<const PartitionEntry*> out;
  for (const Slot& slot : group) {
    if (slot.last_key < from || (!to.empty() && slot.first_key >= to)) continue;
    for (const PartitionEntry& p : Load(slot)) {
      if (p.last_key < from || (!to.empty() && p.first_key >= to)) continue;
      out.push_back(&p);
    }
  }
  return out;
}

std::shared_ptr<PartitionedIndex::Open> PartitionedIndex::OpenPartition(
    const index::PartitionEntry& entry) const {
  std::promise<std::shared_ptr<Open>> promise;
  std::shared_future<std::shared_ptr<Open>> opened;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = open_.find(entry.sha256);
    if (it != open_.end()) {
      opened = it->second.open;
      it->second.used = ++clock_;
    } else {
      CloseIdle();
      opened = promise.get_future().share();
      open_.emplace(entry.sha256, Opened{opened, ++clock_});
      ++fetches_;
      fetched_bytes_ += entry.size;
      mine = true;
    }
  }
  if (mine) {
    try {
      const std::string path = fetch_(entry);
      auto open = std::make_shared<Open>();
      open->file = OpenPartitionFile(path, entry);
      promise.set_value(std::move(open));
    } catch (...) {
      {
        // A later use tries again.
        std::lock_guard<std::mutex> lock(mutex_);
        open_.erase(entry.sha256);
      }
      promise.set_exception(std::current_exception());
    }
  }
  return opened.get();
}

void PartitionedIndex::CloseIdle() const {
  if (open_.size() < kMaxOpenPartitions) return;
  // The idle ones (opened, and held by nothing but this map), oldest first.
  std::vector<std::pair<uint64_t, std::string>> idle;
  for (const auto& [sha, o] : open_) {
    if (o.open.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    try {
      if (o.open.get().use_count() == 1) idle.emplace_back(o.used, sha);
    } catch (...) {
      // A failed open is removed by the thread that tried it.
    }
  }
  std::sort(idle.begin(), idle.end());
  for (size_t i = 0; i < idle.size() && open_.size() >= kMaxOpenPartitions; ++i) {
    open_.erase(idle[i].second);
  }
}

}  // namespace gulpdb::engine
