// Where a partitioned index finds its partitions (partition_levels.h): the
// root's groups by kind and level, root pages read and partitions fetched
// and opened on first use, and the bound on those kept open.
#include "engine/partition/partition_levels.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "engine/partition/partition_file.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {

using index::PartitionEntry;
using index::PartitionKind;

PartitionLevels::PartitionLevels(const index::PartitionRoot& root, PartitionFetch fetch,
                                 std::string name, PageFetch pages)
    : fetch_(std::move(fetch)), name_(std::move(name)), pages_(std::move(pages)) {
  // The groups of each kind, newest delta generation first and the base
  // last; each group's slots in key order (validated). A group the root
  // lists is one slot, loaded; a paged group is one slot per page, loaded
  // on first use, unless the root lists its partitions too.
  std::map<uint64_t, Group, std::greater<>> by_generation[index::kPartitionKinds];
  std::map<uint64_t, std::vector<PartitionEntry>> listed[index::kPartitionKinds];
  for (const PartitionEntry& p : root.partitions) {
    listed[static_cast<int>(p.kind)][p.generation].push_back(p);
  }
  for (const index::RootPage& page : root.pages) {
    if (listed[static_cast<int>(page.kind)].count(page.generation) != 0) continue;
    Slot slot;
    slot.page = &page;
    slot.first_key = page.first_key;
    slot.last_key = page.last_key;
    slot.first_position = page.first_position;
    by_generation[static_cast<int>(page.kind)][page.generation].push_back(std::move(slot));
  }
  if (!root.pages.empty() && !pages_) {
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
  for (int k = 0; k < index::kPartitionKinds; ++k) {
    for (auto& [generation, group] : by_generation[k]) levels_[k].push_back(std::move(group));
  }
}

const std::vector<PartitionLevels::Group>& PartitionLevels::of(PartitionKind kind) const {
  return levels_[static_cast<int>(kind)];
}

const PartitionLevels::Group& PartitionLevels::order() const {
  static const Group kNone;
  const std::vector<Group>& groups = levels_[static_cast<int>(PartitionKind::kOrder)];
  return groups.empty() ? kNone : groups.front();
}

PartitionLevels::~PartitionLevels() = default;

uint64_t PartitionLevels::fetches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fetches_;
}

uint64_t PartitionLevels::fetched_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fetched_bytes_;
}

size_t PartitionLevels::open_partitions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_.size();
}

uint64_t PartitionLevels::page_fetches() const {
  std::lock_guard<std::mutex> lock(page_mutex_);
  return page_fetches_;
}

const std::vector<PartitionEntry>& PartitionLevels::Load(const Slot& slot) const {
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

const PartitionEntry* PartitionLevels::Holding(const Group& group, std::string_view key) const {
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

std::vector<const PartitionEntry*> PartitionLevels::Overlapping(const Group& group,
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

std::shared_ptr<PartitionLevels::Open> PartitionLevels::OpenPartition(
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
      open->file = part::OpenPartitionFile(path, entry);
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

void PartitionLevels::CloseIdle() const {
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
