#include "cli/frame_names.h"

#include <cstdio>

#include "util/hex.h"

namespace gulpdb::cli {
namespace {

constexpr size_t kMaxStemBytes = 200;  // + "-<hash>_<frame>.jpg" stays under NAME_MAX (255)

bool IsSafeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

// True when `name` ends like a hashed stem: '-' and 8 lowercase hex digits.
bool LooksHashed(std::string_view name) {
  return name.size() >= 9 && name[name.size() - 9] == '-' &&
         util::IsLowerHex(name.substr(name.size() - 8), 8);
}

}  // namespace

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string FrameFileStem(std::string_view id) {
  bool keep = !id.empty() && id[0] != '.' && id.size() <= kMaxStemBytes && !LooksHashed(id);
  for (char c : id) keep = keep && IsSafeChar(c);
  if (keep) return std::string(id);
  std::string safe;
  for (size_t i = 0; i < id.size() && safe.size() < kMaxStemBytes; ++i) {
    const char c = id[i];
    if ((static_cast<uint8_t>(c) & 0xC0) == 0x80) continue;  // rest of a UTF-8 character
    safe += IsSafeChar(c) && !(safe.empty() && c == '.') ? c : '_';
  }
  char hash[24];
  std::snprintf(hash, sizeof(hash), "-%016llx", static_cast<unsigned long long>(Fnv1a64(id)));
  return safe + std::string(hash, 9);  // '-' and the first 8 hex digits
}

std::string FrameFileName(const std::string& stem, uint32_t frame) {
  char index[16];
  std::snprintf(index, sizeof(index), "%05u", frame);
  return stem + "_" + index + ".jpg";
}

}  // namespace gulpdb::cli
