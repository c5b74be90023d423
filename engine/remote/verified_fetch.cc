#include "engine/remote/verified_fetch.h"

#include <fcntl.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "gulpdb/error.h"
#include "s3/errors.h"
#include "util/sha256.h"
#include "util/url_text.h"

namespace gulpdb::engine {
namespace {

// At most this many objects are remembered; a reader meeting more damaged
// objects than this downloads the oldest ones again.
constexpr size_t kMaxRemembered = 4096;

class BadObjects {
 public:
  std::string Find(const std::string& id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = messages_.find(id);
    return it == messages_.end() ? std::string() : it->second;
  }
  void Remember(const std::string& id, const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!messages_.emplace(id, message).second) return;
    order_.push_back(id);
    while (order_.size() > kMaxRemembered) {
      messages_.erase(order_.front());
      order_.pop_front();
    }
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    messages_.clear();
    order_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string> messages_;
  std::deque<std::string> order_;  // oldest first
};

BadObjects& Memory() {
  static BadObjects* memory = new BadObjects();  // never destroyed: used until exit
  return *memory;
}

std::string MemoryKey(const BadObjectScope& scope, const NamedObject& object) {
  return scope.store + '\n' + std::to_string(scope.generation) + '\n' + object.key + '\n' +
         object.sha256 + '\n' + std::to_string(object.size);
}

std::string Bytes(uint64_t size, const std::string& sha256) {
  return std::to_string(size) + " bytes with SHA-256 " + sha256;
}

}  // namespace

NamedObject NameObject(const ObjectStore& store, std::string key, uint64_t size, std::string sha256,
                       std::string subject, std::string named_by) {
  NamedObject object;
  object.key = std::move(key);
  object.size = size;
  object.sha256 = std::move(sha256);
  object.subject = std::move(subject);
  object.named_by = std::move(named_by);
  object.in_bucket = util::IsS3Url(store.url());
  return object;
}

BadObjectScope ScopeOf(const ObjectStore& store, uint64_t generation) {
  return BadObjectScope{store.Identity(), generation};
}

void ThrowIfKnownBad(const BadObjectScope* remember, const NamedObject& object) {
  if (remember == nullptr) return;
  const std::string known = Memory().Find(MemoryKey(*remember, object));
  if (known.empty()) return;
  throw CorruptionError(known +
                        " [found damaged earlier by this process: not fetched again until the "
                        "dataset is opened on a newer manifest]");
}

void ForgetBadObjects() { Memory().Clear(); }

void FetchVerified(const NamedObject& object, const std::function<Arrival()>& download,
                   const std::function<void()>& check, const BadObjectScope* remember) {
  ThrowIfKnownBad(remember, object);
  const std::string place = object.in_bucket ? "bucket" : "store";
  // The object in the store is not the one named: remembered, and thrown.
  const auto damaged = [&](const std::string& message) {
    if (remember != nullptr) Memory().Remember(MemoryKey(*remember, object), message);
    throw CorruptionError(message);
  };
  std::vector<Arrival> seen;  // the other bytes each download brought
  for (int attempt = 1;; ++attempt) {
    Arrival got;
    try {
      got = download();
    } catch (const NotFoundError& e) {
      throw CorruptionError(object.subject +
                            " is missing: it was deleted behind the manifest's back (" + e.what() +
                            ")");
    } catch (const remote::ObjectTooLargeError& e) {
      damaged(object.subject + " is damaged in the " + place + ": it is larger than the " +
              std::to_string(object.size) + " bytes " + object.named_by +
              " says, so it is another object (replaced, or written wrong); the download "
              "stopped there (" +
              e.what() + ")");
    }
    if (got.size == object.size && got.sha256 == object.sha256) break;
    const bool again = std::any_of(seen.begin(), seen.end(), [&](const Arrival& a) {
      return a.size == got.size && a.sha256 == got.sha256;
    });
    if (again) {
      damaged(object.subject + " is damaged in the " + place + ": it is " +
              Bytes(got.size, got.sha256) + ", " + object.named_by + " names " +
              Bytes(object.size, object.sha256) + " (the same bytes in " + std::to_string(attempt) +
              " downloads, so not damage on the way)");
    }
    seen.push_back(got);
    if (attempt == kFetchAttempts) {
      std::string brought;
      for (const Arrival& a : seen) {
        brought += (brought.empty() ? "" : "; ") + Bytes(a.size, a.sha256);
      }
      throw IoError(object.subject + ": " + std::to_string(kFetchAttempts) +
                    " downloads each brought other bytes than " + object.named_by + " names (" +
                    Bytes(object.size, object.sha256) + "): " + brought +
                    ": damaged on the way (a network or proxy fault), not in the " + place);
    }
  }
  if (!check) return;
  try {
    check();
  } catch (const CorruptionError& e) {
    damaged(object.subject + " is damaged in the " + place + ": its bytes are the ones " +
            object.named_by + " names, and not sound: " + e.what());
  }
}

Arrival DownloadToFile(ObjectStore& store, const NamedObject& object, const std::string& path,
                       util::UniqueFd* fd) {
  store.GetToFile(object.key, path, object.size);
  *fd = util::OpenFile(path, O_RDONLY);
  const uint64_t size = util::FileSize(fd->get(), path);
  return Arrival{size, util::Sha256HexOfFile(fd->get(), path, 0, size)};
}

namespace {
constexpr std::string_view kDownloadPrefix = ".download.";
constexpr std::string_view kDamagedPrefix = ".damaged.";
}  // namespace

std::string NewDownloadName(const std::string& dir) {
  return dir + "/" + std::string(kDownloadPrefix) + util::UniqueFileSuffix();
}

std::string NewDamagedName(const std::string& dir) {
  return dir + "/" + std::string(kDamagedPrefix) + util::UniqueFileSuffix();
}

bool IsDownloadName(std::string_view name) {
  return name.substr(0, kDownloadPrefix.size()) == kDownloadPrefix;
}

bool IsDamagedName(std::string_view name) {
  return name.substr(0, kDamagedPrefix.size()) == kDamagedPrefix;
}

void FetchVerifiedToNewName(const NamedObject& object, const std::string& dir, std::string* tmp,
                            const std::function<void(const std::string& tmp)>& discard,
                            const std::function<Arrival(const std::string& tmp)>& download,
                            const std::function<void()>& check, const BadObjectScope* remember) {
  FetchVerified(
      object,
      [&] {
        if (!tmp->empty()) discard(*tmp);
        *tmp = NewDownloadName(dir);
        return download(*tmp);
      },
      check, remember);
}

std::string GetVerified(ObjectStore& store, const NamedObject& object,
                        const BadObjectScope* remember,
                        const std::function<void(std::string_view bytes)>& check) {
  std::string bytes;
  FetchVerified(
      object,
      [&] {
        bytes = store.Get(object.key, object.size);
        return Arrival{bytes.size(), util::Sha256Hex(bytes)};
      },
      check ? std::function<void()>([&] { check(bytes); }) : std::function<void()>(), remember);
  return bytes;
}

}  // namespace gulpdb::engine
