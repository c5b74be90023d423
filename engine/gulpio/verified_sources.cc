// The side record of verified .gmeta files (verified_sources.h).
//
// Text, one line per chunk, so that a person can read it:
//
//   gulpdb verified sources 1
//   <chunk> <content size> <content crc32c> <size> <device> <inode> <mtime ns> <ctime ns>
//   ...
//   crc32c <CRC-32C of every byte before this line>
//
// all numbers decimal. Anything else (a torn or damaged file, another
// version's record) parses as nothing.
#include "engine/gulpio/verified_sources.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <vector>

#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "util/crc32c.h"
#include "util/file_io.h"
#include "util/sha256.h"
#include "util/sys_error.h"

namespace gulpdb::engine {
namespace {

constexpr std::string_view kHeader = "gulpdb verified sources 1\n";
constexpr std::string_view kTrailer = "crc32c ";
constexpr size_t kMaxRecordBytes = size_t{64} << 20;  // ~700,000 chunks
constexpr size_t kHashBlock = size_t{1} << 20;

// The next space- or newline-terminated decimal number of `*text`.
template <typename T>
bool Take(std::string_view* text, char end, T* value) {
  const char* first = text->data();
  const char* last = first + text->size();
  const auto [ptr, ec] = std::from_chars(first, last, *value);
  if (ec != std::errc() || ptr == first || ptr == last || *ptr != end) return false;
  text->remove_prefix(static_cast<size_t>(ptr + 1 - first));
  return true;
}

std::string CachePathFor(const Dataset& ds) {
  char* real = ::realpath(IndexDirOf(ds).c_str(), nullptr);
  if (real == nullptr) util::ThrowErrno("resolve", IndexDirOf(ds), errno);
  const std::string key(real);
  std::free(real);
  return CacheDirectory() + "/verified/" + util::Sha256Hex(key).substr(0, 32);
}

bool IndexDirWritable(const Dataset& ds) {
  return ::access(IndexDirOf(ds).c_str(), W_OK | X_OK) == 0;
}

}  // namespace

std::optional<HashedFile> HashFile(const std::string& path) {
  util::UniqueFd fd;
  try {
    fd = util::OpenFile(path, O_RDONLY);
  } catch (const NotFoundError&) {
    return std::nullopt;
  }
  struct stat before, after;
  if (::fstat(fd.get(), &before) != 0) util::ThrowErrno("stat", path, errno);
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);  // advice only
  std::vector<char> block(kHashBlock);
  HashedFile out;
  for (;;) {
    const size_t n = util::PreadFull(fd.get(), block.data(), block.size(), out.content.size, path);
    out.content.crc32c = util::Crc32c(block.data(), n, out.content.crc32c);
    out.content.size += n;
    if (n < block.size()) break;
  }
  if (::fstat(fd.get(), &after) != 0) util::ThrowErrno("stat", path, errno);
  out.identity = util::IdentityOfStat(after);
  out.stable =
      util::IdentityOfStat(before) == out.identity && out.identity.size == out.content.size;
  return out;
}

std::string EncodeVerifiedSources(const VerifiedSources& sources) {
  std::string text(kHeader);
  for (const auto& [chunk, s] : sources) {
    text += std::to_string(chunk) + ' ' + std::to_string(s.content.size) + ' ' +
            std::to_string(s.content.crc32c) + ' ' + std::to_string(s.identity.size) + ' ' +
            std::to_string(s.identity.device) + ' ' + std::to_string(s.identity.inode) + ' ' +
            std::to_string(s.identity.mtime_ns) + ' ' + std::to_string(s.identity.ctime_ns) + '\n';
  }
  text += std::string(kTrailer) + std::to_string(util::Crc32c(text.data(), text.size())) + '\n';
  return text;
}

std::optional<VerifiedSources> DecodeVerifiedSources(std::string_view text) {
  if (text.substr(0, kHeader.size()) != kHeader) return std::nullopt;
  const size_t trailer = text.rfind(kTrailer);
  if (trailer == std::string_view::npos || trailer < kHeader.size() || text[trailer - 1] != '\n') {
    return std::nullopt;
  }
  std::string_view tail = text.substr(trailer + kTrailer.size());
  uint32_t crc = 0;
  if (!Take(&tail, '\n', &crc) || !tail.empty()) return std::nullopt;
  if (util::Crc32c(text.data(), trailer) != crc) return std::nullopt;
  VerifiedSources out;
  std::string_view lines = text.substr(kHeader.size(), trailer - kHeader.size());
  while (!lines.empty()) {
    uint32_t chunk = 0;
    VerifiedSource s;
    if (!Take(&lines, ' ', &chunk) || !Take(&lines, ' ', &s.content.size) ||
        !Take(&lines, ' ', &s.content.crc32c) || !Take(&lines, ' ', &s.identity.size) ||
        !Take(&lines, ' ', &s.identity.device) || !Take(&lines, ' ', &s.identity.inode) ||
        !Take(&lines, ' ', &s.identity.mtime_ns) || !Take(&lines, '\n', &s.identity.ctime_ns)) {
      return std::nullopt;
    }
    if (!out.emplace(chunk, s).second) return std::nullopt;
  }
  return out;
}

std::string VerifiedSourcesPath(const Dataset& ds) {
  if (IndexDirWritable(ds)) return IndexDirOf(ds) + "/" + kVerifiedSourcesName;
  return CachePathFor(ds);
}

VerifiedSources LoadVerifiedSources(const Dataset& ds) {
  try {
    const std::string path = VerifiedSourcesPath(ds);
    util::UniqueFd fd = util::OpenFile(path, O_RDONLY);
    const uint64_t size = util::FileSize(fd.get(), path);
    if (size > kMaxRecordBytes) return {};
    std::string text(static_cast<size_t>(size), '\0');
    if (util::PreadFull(fd.get(), text.data(), text.size(), 0, path) != text.size()) return {};
    if (std::optional<VerifiedSources> sources = DecodeVerifiedSources(text)) return *sources;
  } catch (const Error&) {
    // No record (or none readable): the files are hashed.
  }
  return {};
}

bool SaveVerifiedSources(const Dataset& ds, const VerifiedSources& sources) {
  try {
    if (!IndexDirWritable(ds)) util::MakeDirectories(CacheDirectory() + "/verified");
    util::WriteFileAtomically(VerifiedSourcesPath(ds), EncodeVerifiedSources(sources));
    return true;
  } catch (const Error&) {
    return false;  // the next open hashes again
  }
}

}  // namespace gulpdb::engine
