#include "view/listing.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "view/filter.h"

namespace gulpdb::view {
namespace {

// What a list of ids costs in memory, near enough for a bound.
size_t BytesOf(const std::vector<std::string>& ids) {
  size_t bytes = sizeof(std::vector<std::string>) + ids.capacity() * sizeof(std::string);
  for (const std::string& id : ids) {
    if (id.size() >= sizeof(std::string)) bytes += id.capacity() + 1;  // not stored inline
  }
  return bytes;
}

}  // namespace

Listing::Listing(std::shared_ptr<const Dataset> dataset, size_t max_entries,
                 size_t max_cached_bytes)
    : dataset_(std::move(dataset)),
      max_entries_(max_entries),
      max_cached_bytes_(max_cached_bytes) {}

Listing::Page Listing::Get(std::string_view filter, std::string_view split, uint64_t start,
                           uint64_t count) {
  Page page;
  page.start = start;
  if (filter.empty() && split.empty()) {
    page.total = dataset_->Count();
    if (start < page.total) page.ids = dataset_->IdsAt(start, count);
    return page;
  }
  const Ids ids = Selected(filter, split);
  page.total = ids->size();
  if (start < ids->size()) {
    const auto first = ids->begin() + static_cast<std::ptrdiff_t>(start);
    const auto end =
        ids->begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(ids->size(), start + count));
    page.ids.assign(first, end);
  }
  return page;
}

uint64_t Listing::computed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return computed_;
}

Listing::Ids Listing::Selected(std::string_view filter, std::string_view split) {
  // The snapshot first: a list computed after it is at least as new.
  const uint64_t snapshot = dataset_->SnapshotId();
  std::string key = std::to_string(snapshot);
  key += '\0';
  key.append(filter);
  key += '\0';
  key.append(split);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->key != key) continue;
      cache_.splice(cache_.begin(), cache_, it);
      return it->ids;
    }
  }
  std::vector<std::string> ids;
  if (split.empty()) {
    ids = FilterIds(*dataset_, filter);
  } else {
    ids = dataset_->Split(split);
    if (!filter.empty()) {
      std::vector<std::string> matching = FilterIds(*dataset_, filter);
      const std::unordered_set<std::string> keep(std::make_move_iterator(matching.begin()),
                                                 std::make_move_iterator(matching.end()));
      ids.erase(std::remove_if(ids.begin(), ids.end(),
                               [&](const std::string& id) { return keep.count(id) == 0; }),
                ids.end());
    }
  }
  ids.shrink_to_fit();
  Entry entry{std::move(key), nullptr, BytesOf(ids)};
  entry.ids = std::make_shared<const std::vector<std::string>>(std::move(ids));
  Ids result = entry.ids;
  std::lock_guard<std::mutex> lock(mutex_);
  ++computed_;
  if (entry.bytes > max_cached_bytes_) return result;
  // Lists of older snapshots are never asked for again.
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (it->key.compare(0, it->key.find('\0') + 1, entry.key, 0, entry.key.find('\0') + 1) != 0 ||
        it->key == entry.key) {
      cached_bytes_ -= it->bytes;
      it = cache_.erase(it);
    } else {
      ++it;
    }
  }
  while (!cache_.empty() &&
         (cache_.size() >= max_entries_ || cached_bytes_ + entry.bytes > max_cached_bytes_)) {
    cached_bytes_ -= cache_.back().bytes;
    cache_.pop_back();
  }
  cached_bytes_ += entry.bytes;
  cache_.push_front(std::move(entry));
  return result;
}

}  // namespace gulpdb::view
