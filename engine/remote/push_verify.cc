#include "engine/remote/push_verify.h"

#include <fcntl.h>

#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "s3/etag.h"
#include "util/file_io.h"
#include "util/sha256.h"

namespace gulpdb::engine {

VerifiedEtags::VerifiedEtags(const std::string& store_identity)
    : path_(CacheDirectory() + "/pushed/" + util::Sha256Hex(store_identity).substr(0, 32)) {
  std::string text;
  try {
    text = util::ReadFile(path_);
  } catch (const Error&) {
    return;  // none yet (or unreadable: only a cache)
  }
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // a cut last line is dropped
    const std::string_view line(text.data() + at, end - at);
    const size_t tab = line.find('\t');
    if (tab != std::string_view::npos && tab > 0 && tab + 1 < line.size()) {
      etags_[std::string(line.substr(tab + 1))] = std::string(line.substr(0, tab));
    }
    at = end + 1;
  }
}

bool VerifiedEtags::Holds(const std::string& key, const std::string& etag) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = etags_.find(key);
  return !etag.empty() && it != etags_.end() && it->second == etag;
}

void VerifiedEtags::Add(const std::string& key, const std::string& etag) {
  if (etag.empty() || key.find_first_of("\t\n") != std::string::npos ||
      etag.find_first_of("\t\n") != std::string::npos) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  etags_[key] = etag;
}

void VerifiedEtags::Save(const std::set<std::string>& named) const noexcept {
  try {
    std::string text;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [key, etag] : etags_) {
        if (named.count(key) != 0) text += etag + "\t" + key + "\n";
      }
    }
    util::MakeDirectories(CacheDirectory() + "/pushed");
    util::WriteFileAtomically(path_, text);
  } catch (...) {
    // Only a cache: the next push checks again.
  }
}

LocalCopy LocalCopy::File(std::string path, uint64_t length, std::string sha256_to_check) {
  LocalCopy c;
  c.path_ = std::move(path);
  c.length_ = length;
  c.sha256_ = std::move(sha256_to_check);
  return c;
}

LocalCopy LocalCopy::Bytes(std::string_view bytes) {
  LocalCopy c;
  c.bytes_ = bytes;
  c.length_ = bytes.size();
  return c;
}

const std::optional<std::string>& LocalCopy::Md5() const {
  if (hashed_) return md5_;
  hashed_ = true;
  try {
    util::PayloadDigests d;
    if (is_file()) {
      const util::UniqueFd fd = util::OpenFile(path_, O_RDONLY);
      if (util::FileSize(fd.get(), path_) < length_) return md5_;
      d = util::DigestsOfFile(fd.get(), path_, 0, length_);
    } else {
      d = util::DigestsOf(bytes_);
    }
    if (sha256_.empty() || d.sha256_hex == sha256_) md5_ = d.md5_hex;
  } catch (const Error&) {
    // Not a copy to rely on.
  }
  return md5_;
}

NamedObjectState CheckNamedObject(const std::string& key, const StoreObject* listed, uint64_t size,
                                  const LocalCopy* copy, VerifiedEtags& verified) {
  if (listed == nullptr) return NamedObjectState::kMissing;
  if (listed->size != size) return NamedObjectState::kOtherSize;
  if (verified.Holds(key, listed->etag)) return NamedObjectState::kGood;
  if (copy == nullptr || !remote::IsMd5Etag(listed->etag) || !copy->Md5()) {
    return NamedObjectState::kUnverified;
  }
  if (listed->etag != "\"" + *copy->Md5() + "\"") return NamedObjectState::kOtherBytes;
  verified.Add(key, listed->etag);
  return NamedObjectState::kGood;
}

}  // namespace gulpdb::engine
