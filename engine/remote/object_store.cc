#include "engine/remote/object_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "gulpdb/error.h"
#include "s3/errors.h"
#include "s3/s3_url.h"
#include "util/file_io.h"
#include "util/path.h"
#include "util/sys_error.h"

namespace gulpdb::engine {

std::string ObjectStore::Name(std::string_view key) const { return url() + "/" + std::string(key); }

namespace {

// ---- S3 ---------------------------------------------------------------------

class S3Store : public ObjectStore {
 public:
  S3Store(const remote::S3Url& url, remote::S3Config config)
      : url_(url), url_text_(url.ToString()), client_(std::move(config), url.bucket) {}

  const std::string& url() const override { return url_text_; }

  std::string Identity() const override {
    return client_.config().EffectiveEndpoint() + "\n" + url_.bucket + "\n" + url_.prefix;
  }

  std::string Get(const std::string& key, uint64_t max_size, StoreObject* info) override {
    remote::ObjectInfo object;
    std::string data = client_.Get(url_.Key(key), &object, max_size);
    if (info != nullptr) *info = StoreObject{key, data.size(), object.etag};
    return data;
  }

  StoreObject GetToFile(const std::string& key, const std::string& path,
                        uint64_t max_size) override {
    const remote::ObjectInfo object = client_.GetToFile(url_.Key(key), path, max_size);
    return StoreObject{key, object.size, object.etag};
  }

  void GetRanges(const std::vector<StoreRange>& ranges) override {
    std::vector<remote::RangeRead> reads = ranges;
    for (remote::RangeRead& r : reads) r.key = url_.Key(r.key);
    try {
      client_.GetRanges(reads);
    } catch (const remote::PreconditionFailedError& e) {
      throw remote::PreconditionFailedError(e.what(), Relative(e.key()));
    }
  }

  std::optional<StoreObject> Head(const std::string& key) override {
    const std::optional<remote::ObjectInfo> object = client_.HeadIfExists(url_.Key(key));
    if (!object) return std::nullopt;
    return StoreObject{key, object->size, object->etag, object->metadata};
  }

  std::string Put(const std::string& key, std::string_view data,
                  const remote::WriteOptions& write) override {
    try {
      return client_.Put(url_.Key(key), data, write);
    } catch (const remote::PreconditionFailedError& e) {
      throw remote::PreconditionFailedError(e.what(), key);
    }
  }

  std::string PutFile(const std::string& key, const std::string& path, uint64_t length,
                      uint32_t parallel, const remote::WriteOptions& write) override {
    remote::UploadOptions options;
    options.max_parallel = parallel;
    options.write = write;
    try {
      return client_.UploadFile(url_.Key(key), path, 0, length, options);
    } catch (const remote::PreconditionFailedError& e) {
      throw remote::PreconditionFailedError(e.what(), key);
    }
  }

  bool SupportsConditions() const override { return true; }

  void Delete(const std::vector<std::string>& keys) override {
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const std::string& k : keys) full.push_back(url_.Key(k));
    client_.DeleteMany(full);
  }

  std::vector<StoreObject> List() override {
    const std::string prefix = url_.prefix.empty() ? std::string() : url_.prefix + "/";
    std::vector<StoreObject> out;
    for (remote::ListedObject& o : client_.List(prefix).objects) {
      if (o.key.size() <= prefix.size()) continue;
      out.push_back(StoreObject{o.key.substr(prefix.size()), o.info.size, o.info.etag});
    }
    return out;
  }

  remote::ClientStats stats() const override { return client_.stats(); }

 private:
  // A key of the bucket as a key of this store ("" if outside the prefix).
  std::string Relative(const std::string& bucket_key) const {
    const std::string prefix = url_.prefix.empty() ? std::string() : url_.prefix + "/";
    if (bucket_key.compare(0, prefix.size(), prefix) != 0) return "";
    return bucket_key.substr(prefix.size());
  }

  remote::S3Url url_;
  std::string url_text_;
  remote::S3Client client_;
};

// ---- a local directory ----------------------------------------------------------

class LocalStore : public ObjectStore {
 public:
  explicit LocalStore(std::string dir) : dir_(std::move(dir)) {
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  }

  const std::string& url() const override { return dir_; }

  std::string Identity() const override {
    char* real = ::realpath(dir_.c_str(), nullptr);
    std::string out = real != nullptr ? std::string(real) : dir_;
    std::free(real);
    return "file://" + out;
  }

  std::string Get(const std::string& key, uint64_t max_size, StoreObject* info) override {
    const std::string path = PathOf(key);
    CheckSize(path, max_size);
    std::string data = util::ReadFile(path);
    if (data.size() > max_size) TooLarge(path, data.size(), max_size);  // grew meanwhile
    if (info != nullptr) *info = StoreObject{key, data.size(), ""};
    return data;
  }

  StoreObject GetToFile(const std::string& key, const std::string& path,
                        uint64_t max_size) override {
    const std::string from = PathOf(key);
    CheckSize(from, max_size);
    try {
      util::CopyFile(from, path);
    } catch (...) {
      util::RemoveFileQuietly(path);
      throw;
    }
    util::UniqueFd fd = util::OpenFile(path, O_RDONLY);
    const uint64_t size = util::FileSize(fd.get(), path);
    if (size > max_size) {  // grew meanwhile
      util::RemoveFileQuietly(path);
      TooLarge(from, size, max_size);
    }
    return StoreObject{key, size, ""};
  }

  void GetRanges(const std::vector<StoreRange>& ranges) override {
    for (const StoreRange& r : ranges) {
      if (r.length == 0) continue;
      const std::string path = PathOf(r.key);
      util::UniqueFd fd = util::OpenFile(path, O_RDONLY);
      const size_t got = util::PreadFull(fd.get(), r.out, r.length, r.offset, path);
      if (got != r.length) {
        throw remote::RangeNotSatisfiableError(
            "read " + path + ": " + std::to_string(r.length) + " bytes at offset " +
            std::to_string(r.offset) + " but the file is " +
            std::to_string(util::FileSize(fd.get(), path)) + " bytes");
      }
    }
  }

  std::optional<StoreObject> Head(const std::string& key) override {
    struct stat st;
    const std::string path = PathOf(key);
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
      util::ThrowErrno("stat", path, errno);
    }
    return StoreObject{key, static_cast<uint64_t>(st.st_size), ""};
  }

  std::string Put(const std::string& key, std::string_view data,
                  const remote::WriteOptions& write) override {
    const std::string path = PathOf(key);
    RefuseConditions(path, write);
    util::MakeDirectories(util::ParentOf(path));
    util::WriteFileAtomically(path, data);
    return "";
  }

  std::string PutFile(const std::string& key, const std::string& from, uint64_t length, uint32_t,
                      const remote::WriteOptions& write) override {
    const std::string path = PathOf(key);
    RefuseConditions(path, write);
    util::MakeDirectories(util::ParentOf(path));
    util::UniqueFd in = util::OpenFile(from, O_RDONLY);
    util::AtomicFile out(path);
    std::string block(static_cast<size_t>(std::min<uint64_t>(length, uint64_t{1} << 20)), '\0');
    for (uint64_t done = 0; done < length;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(block.size(), length - done));
      const size_t got = util::PreadFull(in.get(), block.data(), want, done, from);
      if (got != want) {
        throw IoError("copy " + from + ": the file ends at " + std::to_string(done + got) +
                      ", before the " + std::to_string(length) + " bytes to copy");
      }
      out.Append(std::string_view(block.data(), got));
      done += got;
    }
    out.Commit();
    return "";
  }

  void Delete(const std::vector<std::string>& keys) override {
    for (const std::string& key : keys) {
      const std::string path = PathOf(key);
      util::RemoveFile(path);
    }
  }

  std::vector<StoreObject> List() override {
    std::vector<StoreObject> out;
    if (util::IsDirectory(dir_)) Walk("", &out);
    std::sort(out.begin(), out.end(),
              [](const StoreObject& a, const StoreObject& b) { return a.key < b.key; });
    return out;
  }

  remote::ClientStats stats() const override { return {}; }

  bool SupportsConditions() const override { return false; }

 private:
  [[noreturn]] static void TooLarge(const std::string& path, uint64_t size, uint64_t max_size) {
    throw remote::ObjectTooLargeError("read " + path + ": " + std::to_string(size) +
                                      " bytes, more than the " + std::to_string(max_size) +
                                      " allowed");
  }

  // Refuses a file larger than `max_size` before reading any of it.
  static void CheckSize(const std::string& path, uint64_t max_size) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      util::ThrowErrno("read", path, errno == ENOTDIR ? ENOENT : errno);
    if (static_cast<uint64_t>(st.st_size) > max_size) {
      TooLarge(path, static_cast<uint64_t>(st.st_size), max_size);
    }
  }

  static void RefuseConditions(const std::string& path, const remote::WriteOptions& write) {
    if (write.if_absent || !write.if_match.empty() || !write.metadata.empty()) {
      throw InvalidArgumentError("write " + path +
                                 ": a local directory store takes no write conditions or metadata");
    }
  }

  std::string PathOf(const std::string& key) const {
    return dir_ + "/" + remote::JoinKey("", key);  // refuses "..", absolute and empty segments
  }

  void Walk(const std::string& relative, std::vector<StoreObject>* out) const {
    const std::string path = relative.empty() ? dir_ : dir_ + "/" + relative;
    for (const std::string& name : util::ListDirectory(path)) {
      // AtomicFile's temporary files ("<name>.tmp.<pid>.<n>") are not objects.
      if (name.find(".tmp.") != std::string::npos) continue;
      const std::string key = relative.empty() ? name : relative + "/" + name;
      struct stat st;
      const std::string child = dir_ + "/" + key;
      if (::lstat(child.c_str(), &st) != 0) continue;  // removed meanwhile
      if (S_ISDIR(st.st_mode)) {
        Walk(key, out);
      } else if (S_ISREG(st.st_mode)) {
        out->push_back(StoreObject{key, static_cast<uint64_t>(st.st_size), ""});
      }
    }
  }

  std::string dir_;
};

}  // namespace

std::unique_ptr<ObjectStore> OpenS3Store(const std::string& url, remote::S3Config config) {
  return std::make_unique<S3Store>(remote::S3Url::Parse(url), std::move(config));
}

std::unique_ptr<ObjectStore> OpenLocalStore(const std::string& dir) {
  return std::make_unique<LocalStore>(dir);
}

}  // namespace gulpdb::engine
