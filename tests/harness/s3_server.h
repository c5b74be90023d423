// Test servers for the remote client: s3rver (an S3 server on Node.js,
// installed by scripts/setup.sh) and the fault-injecting, signature-checking
// proxy tests/harness/s3_proxy.py in front of it, each a child process on
// 127.0.0.1 on a free port.
//
// Start and stop are bounded: a server that does not listen within the
// timeout, or exits first, fails the test with its log; Stop sends SIGTERM,
// then SIGKILL after a grace period. Children get PR_SET_PDEATHSIG(SIGKILL),
// so they die with the test process even when it crashes (the signal follows
// the thread that started them: start them from the main thread). A missing
// s3rver is an error telling to run scripts/setup.sh, never a skip.
//
// Thread safety: one thread drives an instance; the control calls of
// S3ProxyServer may be made while other threads use the proxy.
#ifndef GULPDB_TESTING_S3_SERVER_H_
#define GULPDB_TESTING_S3_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gulpdb::test {

// A child process with its output in a log file.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts argv (argv[0] a path) with this process's environment plus
  // `extra_env` ("NAME=value", replacing a variable of the same name);
  // stdout and stderr go to `log_path`.
  void Start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::vector<std::string>& extra_env = {});
  // SIGTERM, then SIGKILL if still alive after `grace_ms`; reaps it.
  void Stop(int grace_ms = 3000);
  // True if started and not exited (reaps it if it has exited).
  bool Running();
  pid_t pid() const { return pid_; }
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

// The s3rver program (CMake cache variable GULPDB_S3RVER).
std::string S3rverProgram();
// The certificate a TLS proxy serves (self-signed, for 127.0.0.1): the CA
// bundle a client must trust to reach it.
std::string TlsCaFile();
// A TCP port on 127.0.0.1 free at the time of the call.
uint16_t FreePort();
// Waits until something accepts connections on 127.0.0.1:port; throws
// std::runtime_error (naming `what` and quoting its log) if `child` exits
// first or `timeout_ms` passes.
void WaitForPort(uint16_t port, ChildProcess& child, const std::string& what, int timeout_ms);

// s3rver serving one bucket from a fresh temporary directory. It runs with
// gulpdb's patches (scripts/setup.sh): atomic PUTs, and conditional requests
// as S3 answers them (If-None-Match / If-Match on writes, If-Match on GET and
// HEAD); an s3rver without them fails the constructor, naming setup.sh.
class S3rverServer {
 public:
  static constexpr const char* kAccessKey = "S3RVER";  // the only key s3rver knows
  static constexpr const char* kSecretKey = "S3RVER";

  // kIgnoredOnWrites: the server ignores the conditions of writes, as a
  // store without conditional writes does (S3RVER_IGNORE_CONDITIONAL_WRITES).
  enum class Conditions { kHonoured, kIgnoredOnWrites };

  explicit S3rverServer(std::string bucket = "gulpdb-test",
                        Conditions conditions = Conditions::kHonoured);
  ~S3rverServer();
  S3rverServer(const S3rverServer&) = delete;
  S3rverServer& operator=(const S3rverServer&) = delete;

  // Stops it (connections are refused afterwards) / starts it again on the
  // same port and directory: the objects are still there.
  void Stop();
  void Start();

  uint16_t port() const { return port_; }
  std::string endpoint() const;  // "http://127.0.0.1:<port>"
  const std::string& bucket() const { return bucket_; }
  pid_t pid() const { return process_.pid(); }
  const std::string& directory() const { return dir_; }

 private:
  std::string bucket_;
  Conditions conditions_;
  std::string dir_;
  uint16_t port_ = 0;
  ChildProcess process_;
};

// What the proxy has counted (its GET /stats).
struct ProxyStats {
  uint64_t connections = 0;
  uint64_t requests = 0;
  uint64_t forwarded = 0;
  uint64_t signature_failures = 0;
  uint64_t faults_injected = 0;
};

// tests/harness/s3_proxy.py in front of an S3 server on 127.0.0.1.
class S3ProxyServer {
 public:
  static constexpr const char* kAccessKey = "GULPTEST";
  static constexpr const char* kSecretKey = "gulptest-secret";

  // Knows the credentials kAccessKey/kSecretKey and `extra` (key -> secret).
  // With `tls`, serves HTTPS with tests/harness/tls/cert.pem (TlsCaFile()).
  explicit S3ProxyServer(uint16_t upstream_port,
                         std::map<std::string, std::string> extra_credentials = {},
                         bool tls = false);
  ~S3ProxyServer();
  S3ProxyServer(const S3ProxyServer&) = delete;
  S3ProxyServer& operator=(const S3ProxyServer&) = delete;

  // Stops it (its connections are reset) / starts it again on the same ports.
  void Stop();
  void Start();

  uint16_t port() const { return port_; }
  std::string endpoint() const;
  pid_t pid() const { return process_.pid(); }
  const std::string& directory() const { return dir_; }  // its log and ready file

  // Adds a fault rule (s3_proxy.py's POST /faults), e.g.
  // R"({"kind": "slowdown", "count": 2})". Throws if the proxy refuses it.
  void AddFault(const std::string& json);
  void ClearFaults();
  // Clears the rules, the counters and the log.
  void Reset();
  ProxyStats Stats();
  // The request log (JSON text of GET /log).
  std::string Log();

 private:
  std::string Control(const std::string& method, const std::string& path, const std::string& body);

  uint16_t upstream_port_;
  std::map<std::string, std::string> credentials_;
  bool tls_;
  std::string dir_;
  uint16_t port_ = 0;
  uint16_t control_port_ = 0;
  ChildProcess process_;
};

}  // namespace gulpdb::test

#endif  // GULPDB_TESTING_S3_SERVER_H_
