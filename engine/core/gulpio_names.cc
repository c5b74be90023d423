#include "engine/core/gulpio_names.h"

#include <algorithm>
#include <cctype>

#include "gulpdb/error.h"
#include "util/file_io.h"

namespace gulpdb::engine {
namespace {

bool StartsEnds(const std::string& s, const char* prefix, const char* suffix) {
  const std::string p(prefix), x(suffix);
  return s.size() >= p.size() + x.size() && s.compare(0, p.size(), p) == 0 &&
         s.compare(s.size() - x.size(), x.size(), x) == 0;
}

}  // namespace

std::optional<uint32_t> GulpioChunkNumber(const std::string& name) {
  const auto first = std::find_if(
      name.begin(), name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (first == name.end()) return std::nullopt;
  uint64_t n = 0;
  for (auto it = first; it != name.end() && std::isdigit(static_cast<unsigned char>(*it)); ++it) {
    n = n * 10 + static_cast<uint64_t>(*it - '0');
    if (n > UINT32_MAX) return std::nullopt;
  }
  return static_cast<uint32_t>(n);
}

bool IsGulpioDataName(const std::string& name) { return StartsEnds(name, "data", ".gulp"); }
bool IsGulpioMetaName(const std::string& name) { return StartsEnds(name, "meta", ".gmeta"); }

std::map<uint32_t, GulpioChunkFiles> FindGulpioFiles(const std::string& dir,
                                                     const std::string& operation) {
  std::map<uint32_t, GulpioChunkFiles> chunks;
  for (const std::string& name : util::ListDirectory(dir)) {
    const bool is_data = IsGulpioDataName(name);
    if (!is_data && !IsGulpioMetaName(name)) continue;
    const std::optional<uint32_t> n = GulpioChunkNumber(name);
    if (!n) {
      throw InvalidArgumentError(operation + " " + dir + ": no chunk number in file name " + name);
    }
    GulpioChunkFiles& c = chunks[*n];
    c.number = *n;
    std::string& slot = is_data ? c.data : c.meta;
    if (!slot.empty()) {
      throw InvalidArgumentError(operation + " " + dir + ": " + slot + " and " + name +
                                 " both claim chunk " + std::to_string(*n));
    }
    slot = name;
  }
  return chunks;
}

std::optional<GulpioChunkFiles> FirstGulpioPair(const std::string& dir) {
  std::map<uint32_t, GulpioChunkFiles> chunks;
  for (const std::string& name : util::ListDirectory(dir)) {
    const bool is_data = IsGulpioDataName(name);
    if (!is_data && !IsGulpioMetaName(name)) continue;
    const std::optional<uint32_t> n = GulpioChunkNumber(name);
    if (!n) continue;
    GulpioChunkFiles& c = chunks[*n];
    c.number = *n;
    (is_data ? c.data : c.meta) = name;
  }
  for (const auto& [n, c] : chunks) {
    if (!c.data.empty() && !c.meta.empty()) return c;
  }
  return std::nullopt;
}

}  // namespace gulpdb::engine
