#include "util/relative_name.h"

#include <cstdint>
#include <cstdio>

#include "gulpdb/error.h"

namespace gulpdb::util {

std::string RelativeNameProblem(std::string_view name) {
  if (name.empty()) return "empty";
  if (name.size() > kMaxRelativeNameBytes) {
    return "longer than " + std::to_string(kMaxRelativeNameBytes) + " bytes";
  }
  if (name.front() == '/') return "an absolute path";
  for (size_t i = 0; i < name.size(); ++i) {
    const auto b = static_cast<uint8_t>(name[i]);
    if (b == 0) return "a NUL byte at byte " + std::to_string(i);
    if (b == '\\') return "a backslash at byte " + std::to_string(i);
    if (b < 0x20 || b == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", b);
      return std::string("a control character (") + hex + ") at byte " + std::to_string(i);
    }
  }
  size_t start = 0;
  for (;;) {
    const size_t slash = name.find('/', start);
    const std::string_view segment = name.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (segment.empty()) return "an empty segment (a trailing or doubled '/')";
    if (segment == ".") return "a '.' segment";
    if (segment == "..") return "a '..' segment";
    if (segment.size() > kMaxSegmentBytes) {
      return "a segment longer than " + std::to_string(kMaxSegmentBytes) + " bytes";
    }
    if (slash == std::string_view::npos) return "";
    start = slash + 1;
  }
}

void CheckRelativeName(std::string_view name, const std::string& operation,
                       const std::string& whose) {
  const std::string problem = RelativeNameProblem(name);
  if (problem.empty()) return;
  throw CorruptionError(operation + ": " + whose + " '" + EscapeBytes(name.substr(0, 300)) +
                        (name.size() > 300 ? "...'" : "'") +
                        " is not a safe relative name: " + problem);
}

std::string JoinRelative(std::string_view dir, std::string_view name, const std::string& operation,
                         const std::string& whose) {
  CheckRelativeName(name, operation, whose);
  std::string path(dir);
  if (path.empty() || path.back() != '/') path.push_back('/');
  path.append(name);
  return path;
}

std::string EscapeBytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (b >= 0x20 && b < 0x7F) {
      out.push_back(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", b);
      out += hex;
    }
  }
  return out;
}

}  // namespace gulpdb::util
