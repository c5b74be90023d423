#include "s3/s3_config.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "gulpdb/error.h"
#include "util/env.h"
#include "util/sys_error.h"
#include "util/url_text.h"

namespace gulpdb::remote {
namespace {

constexpr uint64_t kMinPartSize = uint64_t{5} << 20;  // S3's minimum for all parts but the last
constexpr uint64_t kMaxPartSize = uint64_t{5} << 30;  // and its maximum

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// The variable's value, or null when unset or empty (an empty AWS_REGION is
// as good as none, as for the AWS CLI).
const char* Get(const S3Config::EnvLookup& env, const char* name) {
  const char* v = env(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

uint64_t ParseWhole(const char* name, const char* text, uint64_t min, uint64_t max) {
  return util::ParseEnvCount(name, text, min, max);
}

uint32_t ParseWhole32(const char* name, const char* text, uint32_t min, uint32_t max) {
  return static_cast<uint32_t>(ParseWhole(name, text, min, max));
}

bool ReadFileIfExists(const std::string& path, std::string* text) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    util::ThrowErrno("open credentials file", path, errno);
  }
  text->clear();
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      util::ThrowErrno("read credentials file", path, err);
    }
    if (n == 0) break;
    text->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

void LoadCredentials(const S3Config::EnvLookup& env, Credentials* out) {
  const char* key_id = Get(env, "AWS_ACCESS_KEY_ID");
  const char* secret = Get(env, "AWS_SECRET_ACCESS_KEY");
  if (key_id != nullptr || secret != nullptr) {
    if (key_id == nullptr || secret == nullptr) {
      throw InvalidArgumentError(
          std::string("credentials from the environment: ") +
          (key_id == nullptr ? "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"
                             : "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"));
    }
    out->access_key_id = key_id;
    out->secret_access_key = secret;
    const char* token = Get(env, "AWS_SESSION_TOKEN");
    out->session_token = token != nullptr ? token : "";
    out->source = "environment";
    return;
  }

  const char* profile_var = Get(env, "AWS_PROFILE");
  const char* profile_var_name = "AWS_PROFILE";
  if (profile_var == nullptr) {
    profile_var = Get(env, "AWS_DEFAULT_PROFILE");
    profile_var_name = "AWS_DEFAULT_PROFILE";
  }
  const bool profile_named = profile_var != nullptr;
  const std::string profile = profile_named ? profile_var : "default";

  std::string path;
  if (const char* file = Get(env, "AWS_SHARED_CREDENTIALS_FILE")) {
    path = file;
  } else if (const char* home = Get(env, "HOME")) {
    path = std::string(home) + "/.aws/credentials";
  }
  std::string text;
  if (path.empty() || !ReadFileIfExists(path, &text)) {
    if (profile_named) {
      throw InvalidArgumentError(std::string(profile_var_name) + "='" + profile +
                                 "': no credentials file " +
                                 (path.empty() ? std::string("(HOME is not set)") : path));
    }
    return;  // anonymous
  }
  const CredentialsProfiles profiles = ParseCredentialsFile(text, path);
  const auto it = profiles.find(profile);
  if (it == profiles.end()) {
    if (profile_named) {
      throw InvalidArgumentError(std::string(profile_var_name) + "='" + profile +
                                 "': no such profile in " + path);
    }
    return;  // a file without a [default] profile: anonymous, as the AWS CLI
  }
  const auto& values = it->second;
  const auto find = [&](const char* k) -> std::string {
    const auto v = values.find(k);
    return v == values.end() ? std::string() : v->second;
  };
  out->access_key_id = find("aws_access_key_id");
  out->secret_access_key = find("aws_secret_access_key");
  out->session_token = find("aws_session_token");
  if (out->access_key_id.empty() || out->secret_access_key.empty()) {
    throw InvalidArgumentError(
        "profile '" + profile + "' in " + path + ": " +
        (out->access_key_id.empty() ? "no aws_access_key_id" : "no aws_secret_access_key"));
  }
  out->source = "profile '" + profile + "' in " + path;
}

}  // namespace

CredentialsProfiles ParseCredentialsFile(std::string_view text, const std::string& path) {
  CredentialsProfiles profiles;
  std::map<std::string, std::string>* section = nullptr;
  bool in_value = false;  // the previous line was "key = value" (continuations may follow)
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string line = Trim(raw);
    const auto fail = [&](const std::string& why) {
      throw InvalidArgumentError("credentials file " + path + ":" + std::to_string(line_no) + ": " +
                                 why);
    };
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (raw[0] == ' ' || raw[0] == '\t') {
      // A continuation line: part of a nested setting ("s3 =\n  key = v").
      if (!in_value) fail("indented line outside a setting");
      continue;
    }
    if (line[0] == '[') {
      if (line.back() != ']') fail("section header without ']'");
      const std::string name = Trim(std::string_view(line).substr(1, line.size() - 2));
      if (name.empty()) fail("empty section name");
      section = &profiles[name];
      in_value = false;
      continue;
    }
    const size_t eq = line.find_first_of("=:");
    if (eq == std::string::npos) fail("expected '[profile]', 'key = value' or a comment");
    if (section == nullptr) fail("setting before the first [profile] header");
    const std::string key = Lower(Trim(std::string_view(line).substr(0, eq)));
    if (key.empty()) fail("empty key");
    (*section)[key] = Trim(std::string_view(line).substr(eq + 1));
    in_value = true;
  }
  return profiles;
}

std::string Endpoint::HostPort() const {
  return port == 0 ? host : host + ":" + std::to_string(port);
}

Endpoint ParseEndpoint(std::string_view url) {
  const auto fail = [&](const std::string& why) {
    // Never the user information ("user:secret@"), with or without a scheme.
    std::string shown = util::RedactUrls(url);
    if (const size_t at = shown.rfind('@');
        at != std::string::npos && shown.find("***@") != at - 3) {
      shown = "***" + shown.substr(at);
    }
    throw InvalidArgumentError("endpoint '" + shown + "': " + why);
  };
  Endpoint ep;
  std::string_view rest;
  if (url.substr(0, 7) == "http://") {
    ep.scheme = "http";
    rest = url.substr(7);
  } else if (url.substr(0, 8) == "https://") {
    ep.scheme = "https";
    rest = url.substr(8);
  } else {
    fail("expected http://host[:port] or https://host[:port]");
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('@') != std::string_view::npos) {
    fail(
        "user information (user:password@) is not supported: credentials come from "
        "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or a credentials file");
  }
  if (rest.find_first_of("/?# ") != std::string_view::npos) {
    fail("only scheme, host and port are supported (no path, query or spaces)");
  }
  std::string_view host = rest;
  std::string_view port;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) fail("unterminated IPv6 address");
    host = rest.substr(0, close + 1);
    const std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') fail("unexpected text after the IPv6 address");
      port = after.substr(1);
      if (port.empty()) fail("empty port");
    }
  } else if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (port.empty()) fail("empty port");
  }
  if (host.empty() || host == "[]") fail("no host");
  ep.host = std::string(host);
  if (!port.empty()) {
    if (port.find_first_not_of("0123456789") != std::string_view::npos || port.size() > 5) {
      fail("port must be a number in 1-65535");
    }
    const unsigned long p = std::stoul(std::string(port));
    if (p == 0 || p > 65535) fail("port must be a number in 1-65535");
    ep.port = static_cast<uint16_t>(p);
  }
  return ep;
}

S3Config S3Config::FromEnvironment() {
  return FromEnvironment([](const char* name) { return std::getenv(name); });
}

S3Config S3Config::FromEnvironment(const EnvLookup& env) {
  S3Config c;
  if (const char* e = Get(env, "AWS_ENDPOINT_URL_S3")) {
    c.endpoint = e;
  } else if (const char* e2 = Get(env, "AWS_ENDPOINT_URL")) {
    c.endpoint = e2;
  }
  if (!c.endpoint.empty()) ParseEndpoint(c.endpoint);  // fail early, naming the variable's value
  if (const char* r = Get(env, "AWS_REGION")) {
    c.region = r;
  } else if (const char* r2 = Get(env, "AWS_DEFAULT_REGION")) {
    c.region = r2;
  }
  if (const char* ca = Get(env, "AWS_CA_BUNDLE")) c.ca_bundle = ca;
  LoadCredentials(env, &c.credentials);

  constexpr uint32_t kHour = 3600 * 1000;
  if (const char* v = Get(env, "GULPDB_S3_CONNECT_TIMEOUT_MS")) {
    c.connect_timeout_ms = ParseWhole32("GULPDB_S3_CONNECT_TIMEOUT_MS", v, 1, kHour);
  }
  if (const char* v = Get(env, "GULPDB_S3_STALL_TIMEOUT_MS")) {
    c.stall_timeout_ms = ParseWhole32("GULPDB_S3_STALL_TIMEOUT_MS", v, 1, kHour);
  }
  if (const char* v = Get(env, "GULPDB_S3_REQUEST_TIMEOUT_MS")) {
    c.request_timeout_ms = ParseWhole32("GULPDB_S3_REQUEST_TIMEOUT_MS", v, 0, 24 * kHour);
  }
  if (const char* v = Get(env, "GULPDB_S3_MAX_ATTEMPTS")) {
    c.max_attempts = ParseWhole32("GULPDB_S3_MAX_ATTEMPTS", v, 1, 100);
  }
  if (const char* v = Get(env, "GULPDB_S3_RETRY_BUDGET_MS")) {
    c.retry_budget_ms = ParseWhole32("GULPDB_S3_RETRY_BUDGET_MS", v, 0, kHour);
  }
  if (const char* v = Get(env, "GULPDB_S3_BACKOFF_BASE_MS")) {
    c.backoff_base_ms = ParseWhole32("GULPDB_S3_BACKOFF_BASE_MS", v, 0, kHour);
  }
  if (const char* v = Get(env, "GULPDB_S3_BACKOFF_MAX_MS")) {
    c.backoff_max_ms = ParseWhole32("GULPDB_S3_BACKOFF_MAX_MS", v, 0, kHour);
  }
  if (const char* v = Get(env, "GULPDB_S3_MAX_CONNECTIONS")) {
    c.max_connections = ParseWhole32("GULPDB_S3_MAX_CONNECTIONS", v, 1, 1024);
  }
  if (const char* v = Get(env, "GULPDB_S3_PART_SIZE")) {
    c.part_size = ParseWhole("GULPDB_S3_PART_SIZE", v, kMinPartSize, kMaxPartSize);
  }
  if (const char* v = Get(env, "GULPDB_S3_MULTIPART_THRESHOLD")) {
    c.multipart_threshold =
        ParseWhole("GULPDB_S3_MULTIPART_THRESHOLD", v, 0, std::numeric_limits<int64_t>::max());
  }
  if (const char* v = Get(env, "GULPDB_S3_ADDRESSING_STYLE")) {
    const std::string s = Lower(Trim(v));
    if (s == "auto") {
      c.addressing_style = AddressingStyle::kAuto;
    } else if (s == "path") {
      c.addressing_style = AddressingStyle::kPath;
    } else if (s == "virtual") {
      c.addressing_style = AddressingStyle::kVirtualHosted;
    } else {
      throw InvalidArgumentError(std::string("GULPDB_S3_ADDRESSING_STYLE '") + v +
                                 "': expected auto, path or virtual");
    }
  }
  c.Validate();
  return c;
}

void S3Config::Validate() const {
  const auto fail = [](const std::string& why) {
    throw InvalidArgumentError("S3 configuration: " + why);
  };
  if (!endpoint.empty()) ParseEndpoint(endpoint);
  if (region.empty()) fail("empty region");
  for (char c : region) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) fail("region '" + region + "': only letters, digits, '-' and '_' are allowed");
  }
  if (credentials.access_key_id.empty() != credentials.secret_access_key.empty()) {
    fail("credentials need both an access key id and a secret access key");
  }
  for (const std::string* s :
       {&credentials.access_key_id, &credentials.secret_access_key, &credentials.session_token}) {
    if (s->find_first_of("\r\n") != std::string::npos) fail("credentials contain a line break");
  }
  if (connect_timeout_ms == 0) fail("connect_timeout_ms must be > 0");
  if (stall_timeout_ms == 0) fail("stall_timeout_ms must be > 0");
  if (max_attempts == 0) fail("max_attempts must be >= 1");
  if (backoff_max_ms < backoff_base_ms) fail("backoff_max_ms must be >= backoff_base_ms");
  if (max_connections == 0) fail("max_connections must be >= 1");
  if (part_size < kMinPartSize || part_size > kMaxPartSize) {
    fail("part_size " + std::to_string(part_size) + " outside S3's 5 MiB - 5 GiB");
  }
}

std::string S3Config::EffectiveEndpoint() const {
  if (!endpoint.empty()) return endpoint;
  return "https://s3." + region + ".amazonaws.com";
}

}  // namespace gulpdb::remote
