#include "engine/remote/manifest_chunks.h"

#include <algorithm>
#include <chrono>
#include <system_error>

#include "engine/remote/partition_cache.h"
#include "engine/remote/verified_fetch.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "util/relative_name.h"

namespace gulpdb::engine {

ManifestChunks::ChunkList::ChunkList(std::vector<ManifestChunk> entries)
    : chunks(std::move(entries)), verified(new std::atomic<bool>[chunks.size()]) {
  for (size_t i = 0; i < chunks.size(); ++i) verified[i] = false;
}

ManifestChunks::ManifestChunks(ObjectStore& store, const Manifest& manifest)
    : store_(store), manifest_(manifest) {
  if (manifest_.paged()) {
    pages_.resize(manifest_.chunk_pages.size());
  } else {
    for (const ManifestChunk& c : manifest_.chunks) {
      if (!c.etag.empty()) etags_[c.key] = c.etag;
    }
    pages_.push_back(std::make_shared<ChunkList>(manifest_.chunks));
  }
}

ManifestChunks::~ManifestChunks() {
  std::lock_guard<std::mutex> lock(prefetch_mutex_);
  for (std::future<void>& f : prefetches_) f.wait();
}

std::shared_ptr<ManifestChunks::ChunkList> ManifestChunks::Page(size_t page) const {
  std::promise<std::shared_ptr<ChunkList>> promise;
  std::shared_future<std::shared_ptr<ChunkList>> loading;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(pages_mutex_);
    if (pages_[page]) return pages_[page];
    auto it = loading_.find(page);
    if (it == loading_.end()) {
      it = loading_.emplace(page, promise.get_future().share()).first;
      mine = true;
    }
    loading = it->second;
  }
  if (mine) {
    // Fetched outside the lock (a GET); other threads wanting it wait.
    try {
      const BadObjectScope remember = ScopeOf(store_, manifest_.generation);
      auto list =
          std::make_shared<ChunkList>(FetchChunkPage(store_, manifest_, manifest_.chunk_pages[page],
                                                     "open dataset " + store_.url(), &remember));
      {
        std::lock_guard<std::mutex> lock(etags_mutex_);
        for (const ManifestChunk& c : list->chunks) {
          if (!c.etag.empty()) etags_.emplace(c.key, c.etag);  // a revalidated ETag stays
        }
      }
      {
        std::lock_guard<std::mutex> lock(pages_mutex_);
        pages_[page] = list;
        loading_.erase(page);
      }
      promise.set_value(std::move(list));
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(pages_mutex_);
        loading_.erase(page);  // a later use tries again
      }
      promise.set_exception(std::current_exception());
    }
  }
  return loading.get();
}

std::optional<size_t> ManifestChunks::PageOf(uint32_t number) const {
  if (!manifest_.paged()) return 0;
  const auto& pages = manifest_.chunk_pages;
  const auto it =
      std::upper_bound(pages.begin(), pages.end(), number,
                       [](uint32_t n, const ManifestChunkPage& p) { return n < p.first; });
  if (it == pages.begin() || (it - 1)->first / kChunksPerPage != number / kChunksPerPage) {
    return std::nullopt;
  }
  return static_cast<size_t>(it - 1 - pages.begin());
}

void ManifestChunks::PrefetchChunk(uint32_t number, std::function<void()> record) const {
  const std::optional<size_t> page = PageOf(number);
  if (!page) return;  // Verified says what is wrong
  bool page_loaded;
  {
    std::lock_guard<std::mutex> lock(pages_mutex_);
    page_loaded = pages_[*page] != nullptr;
  }
  if (page_loaded) {
    const auto [m, verified] = Find(number);
    if (m == nullptr || verified->load(std::memory_order_acquire)) return;
  }
  std::lock_guard<std::mutex> lock(prefetch_mutex_);
  if (!prefetched_.insert(number).second) return;
  // Finished work first out, so that the list stays short.
  prefetches_.erase(std::remove_if(prefetches_.begin(), prefetches_.end(),
                                   [](const std::future<void>& f) {
                                     return f.wait_for(std::chrono::seconds(0)) ==
                                            std::future_status::ready;
                                   }),
                    prefetches_.end());
  const auto quietly = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (...) {
      // Verified meets it again, and reports it.
    }
  };
  try {
    if (!page_loaded) {
      prefetches_.push_back(std::async(std::launch::async,
                                       [this, quietly, p = *page] { quietly([&] { Page(p); }); }));
    }
    prefetches_.push_back(
        std::async(std::launch::async, [quietly, record = std::move(record)] { quietly(record); }));
  } catch (const std::system_error&) {
    // No thread to spare: the read fetches them itself, one after another.
  }
}

std::pair<const ManifestChunk*, std::atomic<bool>*> ManifestChunks::Find(uint32_t number) const {
  const std::optional<size_t> page = PageOf(number);
  if (!page) return {nullptr, nullptr};
  const std::shared_ptr<ChunkList> list = Page(*page);
  const auto it = std::lower_bound(list->chunks.begin(), list->chunks.end(), number,
                                   [](const ManifestChunk& c, uint32_t n) { return c.number < n; });
  if (it == list->chunks.end() || it->number != number) return {nullptr, nullptr};
  // Lists are never dropped once loaded: the pointers stay valid.
  const size_t i = static_cast<size_t>(it - list->chunks.begin());
  return {&*it, &list->verified[i]};
}

const ManifestChunk* ManifestChunks::LoadedChunkOfKey(const std::string& key) const {
  std::lock_guard<std::mutex> lock(pages_mutex_);
  for (const std::shared_ptr<ChunkList>& list : pages_) {
    if (!list) continue;
    for (const ManifestChunk& c : list->chunks) {
      if (c.key == key) return &c;
    }
  }
  return nullptr;
}

std::vector<ManifestChunk> ManifestChunks::AllChunks() const {
  std::vector<ManifestChunk> out;
  for (size_t i = 0; i < pages_.size(); ++i) {
    const std::shared_ptr<ChunkList> list = Page(i);
    out.insert(out.end(), list->chunks.begin(), list->chunks.end());
  }
  return out;
}

std::string ManifestChunks::AcceptedEtag(const std::string& key) const {
  std::lock_guard<std::mutex> lock(etags_mutex_);
  const auto it = etags_.find(key);
  return it == etags_.end() ? std::string() : it->second;
}

void ManifestChunks::Accept(const std::string& key, const std::string& etag) const {
  std::lock_guard<std::mutex> lock(etags_mutex_);
  etags_[key] = etag;
}

const ManifestChunk* ManifestChunks::Chunk(uint32_t number) const { return Find(number).first; }

const ManifestChunk& ManifestChunks::Verified(
    uint32_t number, std::string_view id, const std::string& dir,
    const std::function<index::ChunkRecord()>& record) const {
  const auto [m, flag] = Find(number);
  const auto what = [&] { return "read id '" + std::string(id) + "' in " + dir; };
  if (m == nullptr) {
    throw CorruptionError(what() + ": chunk " + std::to_string(number) +
                          " of its index snapshot is not in the manifest (generation " +
                          std::to_string(manifest_.generation) +
                          "): the manifest does not describe its snapshot");
  }
  std::atomic<bool>& verified = *flag;
  if (verified.load(std::memory_order_acquire)) return *m;
  const std::string problem = ChunkDisagreement(*m, number, record());
  if (!problem.empty()) {
    throw CorruptionError(what() + ": the manifest (generation " +
                          std::to_string(manifest_.generation) + ") " + problem +
                          ": the manifest does not describe its snapshot");
  }
  verified.store(true, std::memory_order_release);
  return *m;
}

std::string ChunkDisagreement(const ManifestChunk& m, uint32_t number,
                              const index::ChunkRecord& record) {
  const std::string chunk = "chunk " + std::to_string(number);
  // A push never publishes a chunk whose file name leaves the dataset.
  if (const std::string problem = util::RelativeNameProblem(record.file_name); !problem.empty()) {
    return "is for " + chunk + ", whose file name '" + util::EscapeBytes(record.file_name) +
           "' in the index snapshot is not a safe relative name (" + problem + ")";
  }
  const bool key_ok =
      m.key == record.file_name ||
      (record.file_name.find('/') != std::string::npos && m.key == GulpioDataFileName(number));
  if (!key_ok) {
    return "names the object '" + m.key + "' for " + chunk + ", whose file is '" +
           record.file_name + "'";
  }
  if (m.committed_length != record.committed_length) {
    return "gives " + chunk + " ('" + m.key + "') a committed length of " +
           std::to_string(m.committed_length) + " bytes, its index snapshot " +
           std::to_string(record.committed_length);
  }
  return "";
}

}  // namespace gulpdb::engine
