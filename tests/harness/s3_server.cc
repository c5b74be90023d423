#include "tests/harness/s3_server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#ifndef GULPDB_S3RVER
#error "GULPDB_S3RVER (the s3rver program) must be defined by the build"
#endif
#ifndef GULPDB_S3_PROXY
#error "GULPDB_S3_PROXY (tests/harness/s3_proxy.py) must be defined by the build"
#endif
#ifndef GULPDB_PYTHON
#define GULPDB_PYTHON "/usr/bin/python3"
#endif
#ifndef GULPDB_S3RVER_NODE_OPTIONS
#define GULPDB_S3RVER_NODE_OPTIONS ""
#endif

extern char** environ;

namespace gulpdb::test {
namespace {

constexpr int kStartTimeoutMs = 20000;

std::string MakeTempDir(const char* tag) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gulpdb-" + tag + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
  }
  return pattern;
}

void RemoveTree(const std::string& path) {
  if (path.empty()) return;
  ::nftw(
      path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); },
      16, FTW_DEPTH | FTW_PHYS);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// tests/harness/tls, next to s3_proxy.py.
std::string TlsDir() {
  const std::string proxy = GULPDB_S3_PROXY;
  return proxy.substr(0, proxy.rfind('/')) + "/tls";
}

size_t AppendToString(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

ChildProcess::~ChildProcess() { Stop(); }

void ChildProcess::Start(const std::vector<std::string>& argv, const std::string& log_path,
                         const std::vector<std::string>& extra_env) {
  if (pid_ > 0) throw std::runtime_error("ChildProcess::Start: already running");
  log_path_ = log_path;
  // Everything the child needs is prepared before fork: between fork and exec
  // only async-signal-safe calls are allowed.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const std::string& x : extra_env) {
      replaced |= entry.substr(0, entry.find('=') + 1) == x.substr(0, x.find('=') + 1);
    }
    if (!replaced) env.push_back(*e);
  }
  for (const std::string& x : extra_env) env.push_back(const_cast<char*>(x.c_str()));
  env.push_back(nullptr);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("open " + log_path + ": " + std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execve(args[0], args.data(), env.data());
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  pid_ = pid;
}

bool ChildProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void ChildProcess::Stop(int grace_ms) {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string ChildProcess::Log() const { return ReadAll(log_path_); }

std::string S3rverProgram() { return GULPDB_S3RVER; }

std::string TlsCaFile() { return TlsDir() + "/cert.pem"; }

uint16_t FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(std::string("bind 127.0.0.1:0: ") + std::strerror(err));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

void WaitForPort(uint16_t port, ChildProcess& child, const std::string& what, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (!child.Running()) {
      throw std::runtime_error(what + " exited before listening on port " + std::to_string(port) +
                               "; its output:\n" + child.Log());
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (up) return;
    if (std::chrono::steady_clock::now() > deadline) {
      child.Stop();
      throw std::runtime_error(what + " did not listen on port " + std::to_string(port) +
                               " within " + std::to_string(timeout_ms) + " ms; its output:\n" +
                               child.Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

S3rverServer::S3rverServer(std::string bucket, Conditions conditions)
    : bucket_(std::move(bucket)), conditions_(conditions) {
  const std::string program = S3rverProgram();
  if (::access(program.c_str(), X_OK) != 0) {
    throw std::runtime_error("s3rver is not installed (" + program +
                             " is missing): run scripts/setup.sh");
  }
  // <tools>/node_modules/.bin/s3rver -> <tools>/node_modules/s3rver/lib/...
  const std::string modules = program.substr(0, program.rfind("/.bin/"));
  const std::string objects = modules + "/s3rver/lib/controllers/object.js";
  if (ReadAll(objects).find("gulpdb's test setup: conditional") == std::string::npos) {
    throw std::runtime_error("s3rver at " + program +
                             " lacks gulpdb's conditional-requests patch "
                             "(tests/harness/s3rver-conditional-requests.patch): run "
                             "scripts/setup.sh");
  }
  dir_ = MakeTempDir("s3rver");
  port_ = FreePort();
  try {
    Start();
  } catch (...) {
    RemoveTree(dir_);
    throw;
  }
}

S3rverServer::~S3rverServer() {
  process_.Stop();
  RemoveTree(dir_);
}

void S3rverServer::Start() {
  std::vector<std::string> env;
  // s3rver's ListObjectsV2 continuation tokens need DES (see remote_tests.cmake).
  if (*GULPDB_S3RVER_NODE_OPTIONS != '\0') {
    env.push_back(std::string("NODE_OPTIONS=") + GULPDB_S3RVER_NODE_OPTIONS);
  }
  env.push_back(std::string("S3RVER_IGNORE_CONDITIONAL_WRITES=") +
                (conditions_ == Conditions::kIgnoredOnWrites ? "1" : "0"));
  process_.Start({S3rverProgram(), "-d", dir_ + "/data", "-a", "127.0.0.1", "-p",
                  std::to_string(port_), "--configure-bucket", bucket_, "--silent"},
                 dir_ + "/s3rver.log", env);
  WaitForPort(port_, process_, "s3rver", kStartTimeoutMs);
}

void S3rverServer::Stop() { process_.Stop(); }

std::string S3rverServer::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

S3ProxyServer::S3ProxyServer(uint16_t upstream_port,
                             std::map<std::string, std::string> extra_credentials, bool tls)
    : upstream_port_(upstream_port), credentials_(std::move(extra_credentials)), tls_(tls) {
  credentials_[kAccessKey] = kSecretKey;
  dir_ = MakeTempDir("s3proxy");
  try {
    Start();
  } catch (...) {
    RemoveTree(dir_);
    throw;
  }
}

S3ProxyServer::~S3ProxyServer() {
  process_.Stop();
  RemoveTree(dir_);
}

void S3ProxyServer::Start() {
  const std::string ready = dir_ + "/ready.json";
  ::unlink(ready.c_str());
  std::vector<std::string> argv = {GULPDB_PYTHON,
                                   GULPDB_S3_PROXY,
                                   "--upstream",
                                   "127.0.0.1:" + std::to_string(upstream_port_),
                                   "--port",
                                   std::to_string(port_),
                                   "--control-port",
                                   std::to_string(control_port_),
                                   "--ready-file",
                                   ready,
                                   "--exit-with-parent"};
  for (const auto& [key, secret] : credentials_) {
    argv.push_back("--credentials");
    argv.push_back(key + ":" + secret);
  }
  if (tls_) {
    argv.insert(argv.end(), {"--tls-cert", TlsCaFile(), "--tls-key", TlsDir() + "/key.pem"});
  }
  process_.Start(argv, dir_ + "/proxy.log");
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kStartTimeoutMs);
  std::string text;
  while (true) {
    if (::access(ready.c_str(), R_OK) == 0) {
      text = ReadAll(ready);
      break;
    }
    if (!process_.Running()) {
      throw std::runtime_error("the S3 proxy exited before it was ready; its output:\n" +
                               process_.Log());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      process_.Stop();
      throw std::runtime_error("the S3 proxy was not ready within " +
                               std::to_string(kStartTimeoutMs) + " ms; its output:\n" +
                               process_.Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"re("port": (\d+), "control_port": (\d+))re"))) {
    throw std::runtime_error("the S3 proxy's ready file says '" + text + "'");
  }
  port_ = static_cast<uint16_t>(std::stoi(m[1]));
  control_port_ = static_cast<uint16_t>(std::stoi(m[2]));
}

void S3ProxyServer::Stop() { process_.Stop(); }

std::string S3ProxyServer::endpoint() const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

std::string S3ProxyServer::Control(const std::string& method, const std::string& path,
                                   const std::string& body) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) throw std::runtime_error("curl_easy_init failed");
  const std::string url = "http://127.0.0.1:" + std::to_string(control_port_) + path;
  std::string response;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &AppendToString);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK || status != 200) {
    throw std::runtime_error(
        "S3 proxy control " + method + " " + path + ": " +
        (rc != CURLE_OK ? curl_easy_strerror(rc) : "HTTP " + std::to_string(status)) + " " +
        response);
  }
  return response;
}

void S3ProxyServer::AddFault(const std::string& json) { Control("POST", "/faults", json); }
void S3ProxyServer::ClearFaults() { Control("DELETE", "/faults", ""); }
void S3ProxyServer::Reset() { Control("POST", "/reset", "{}"); }
std::string S3ProxyServer::Log() { return Control("GET", "/log", ""); }

ProxyStats S3ProxyServer::Stats() {
  const std::string text = Control("GET", "/stats", "");
  const auto field = [&](const char* name) -> uint64_t {
    std::smatch m;
    if (!std::regex_search(text, m, std::regex(std::string("\"") + name + R"(": (\d+))"))) {
      throw std::runtime_error(std::string("S3 proxy stats without ") + name + ": " + text);
    }
    return std::stoull(m[1]);
  };
  ProxyStats s;
  s.connections = field("connections");
  s.requests = field("requests");
  s.forwarded = field("forwarded");
  s.signature_failures = field("signature_failures");
  s.faults_injected = field("faults_injected");
  return s;
}

}  // namespace gulpdb::test
