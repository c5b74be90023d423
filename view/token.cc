#include "view/token.h"

#include <cstdint>

#include "util/file_io.h"
#include "view/text.h"

namespace gulpdb::view {

std::string NewToken() {
  unsigned char bytes[32];
  util::RandomBytes(bytes, sizeof bytes);
  return Base64Url(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

bool TokenMatches(std::string_view given, std::string_view token) {
  if (given.size() != token.size() || token.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < token.size(); ++i) {
    diff = static_cast<unsigned char>(
        diff | (static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(token[i])));
  }
  return diff == 0;
}

std::string CookieName(int port) { return "gulpdb_view_" + std::to_string(port); }

std::string SetCookieValue(int port, std::string_view token) {
  return CookieName(port) + "=" + std::string(token) + "; Path=/; HttpOnly; SameSite=Strict";
}

std::string CookieValue(std::string_view header, std::string_view name) {
  size_t at = 0;
  while (at < header.size()) {
    size_t end = header.find(';', at);
    if (end == std::string_view::npos) end = header.size();
    std::string_view pair = header.substr(at, end - at);
    while (!pair.empty() && (pair.front() == ' ' || pair.front() == '\t')) pair.remove_prefix(1);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
      return std::string(pair.substr(eq + 1));
    }
    at = end + 1;
  }
  return "";
}

}  // namespace gulpdb::view
