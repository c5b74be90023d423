// How to reach an object store: endpoint, region, credentials and the
// client's timeouts, retry and concurrency knobs.
//
// S3Config::FromEnvironment reads what every S3 tool reads:
//   endpoint     AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL; unset means AWS
//                itself (https://s3.<region>.amazonaws.com)
//   region       AWS_REGION, then AWS_DEFAULT_REGION, else "us-east-1"
//   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//                else the profile AWS_PROFILE (or AWS_DEFAULT_PROFILE, else
//                "default") of the shared credentials file
//                AWS_SHARED_CREDENTIALS_FILE (else ~/.aws/credentials);
//                else none (anonymous, unsigned requests)
//   TLS          AWS_CA_BUNDLE: a CA certificate file to trust
// and gulpdb's own knobs (all optional, whole numbers):
//   GULPDB_S3_CONNECT_TIMEOUT_MS   per attempt, default 5000
//   GULPDB_S3_STALL_TIMEOUT_MS     an attempt moving no byte for this long is
//                                  abandoned (1 s granularity), default 30000
//   GULPDB_S3_REQUEST_TIMEOUT_MS   deadline of one request over all its
//                                  attempts and backoff, 0 = none, default 600000
//   GULPDB_S3_MAX_ATTEMPTS         attempts per request, default 5
//   GULPDB_S3_RETRY_BUDGET_MS      a request keeps retrying transient failures
//                                  for at least this long, even past
//                                  max_attempts (rides out a server restart),
//                                  0 = max_attempts alone, default 10000
//   GULPDB_S3_BACKOFF_BASE_MS      first retry waits up to this, default 100
//   GULPDB_S3_BACKOFF_MAX_MS       cap of the exponential backoff, default 5000
//   GULPDB_S3_MAX_CONNECTIONS      concurrent requests of one call, default 16
//   GULPDB_S3_PART_SIZE            multipart part size in bytes, default 8 MiB
//   GULPDB_S3_MULTIPART_THRESHOLD  files larger than this upload in parts,
//                                  default 8 MiB
//   GULPDB_S3_ADDRESSING_STYLE     auto (default), path or virtual
// Addressing: "auto" uses virtual-hosted style (https://bucket.host/key) for
// AWS's own endpoint and path style (https://host/bucket/key) for any other
// endpoint and for bucket names with dots.
//
// Every field can be set in code after FromEnvironment (or on a
// default-constructed S3Config); S3Client validates the result.
//
// Failures: a malformed value, a credentials file that does not parse, a
// profile named by AWS_PROFILE that does not exist, or only one of the two
// key variables set, throw InvalidArgumentError naming the variable or
// file:line. A missing default credentials file is not an error.
//
// Thread safety: plain value types; FromEnvironment only reads.
#ifndef GULPDB_S3_S3_CONFIG_H_
#define GULPDB_S3_S3_CONFIG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace gulpdb::remote {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials
  // Where they came from, for error messages: "environment", "profile 'x' in
  // <file>", "code", or "none".
  std::string source = "none";

  bool anonymous() const { return access_key_id.empty(); }
};

enum class AddressingStyle { kAuto, kPath, kVirtualHosted };

struct S3Config {
  std::string endpoint;  // scheme://host[:port]; empty = AWS's endpoint for `region`
  std::string region = "us-east-1";
  Credentials credentials;
  AddressingStyle addressing_style = AddressingStyle::kAuto;
  std::string ca_bundle;  // CA certificates file; empty = the system's

  uint32_t connect_timeout_ms = 5000;
  uint32_t stall_timeout_ms = 30000;
  uint32_t request_timeout_ms = 600000;  // 0 = no deadline
  uint32_t max_attempts = 5;
  uint32_t retry_budget_ms = 10000;  // retry_policy.h
  uint32_t backoff_base_ms = 100;
  uint32_t backoff_max_ms = 5000;
  uint32_t max_connections = 16;
  uint64_t part_size = uint64_t{8} << 20;
  uint64_t multipart_threshold = uint64_t{8} << 20;

  // Returns the value of an environment variable, or null when unset.
  using EnvLookup = std::function<const char*(const char* name)>;

  // Reads the process environment (getenv) and the credentials file.
  static S3Config FromEnvironment();
  // The same with another source of variables (for tests); HOME, used to find
  // ~/.aws/credentials, is looked up in `env` too.
  static S3Config FromEnvironment(const EnvLookup& env);

  // Throws InvalidArgumentError if a field is out of range (zero attempts,
  // part size under 5 MiB or over 5 GiB, a malformed endpoint, ...).
  void Validate() const;

  // The endpoint requests go to: `endpoint`, or https://s3.<region>.amazonaws.com.
  std::string EffectiveEndpoint() const;
  // True when requests go to AWS's own endpoint (no custom endpoint set).
  bool UsesAwsEndpoint() const { return endpoint.empty(); }
};

// The profiles of a shared credentials file: profile name -> (key -> value).
// INI as botocore reads it: "[name]" sections, "key = value" (or "key: value")
// lines, full-line comments starting with '#' or ';', blank lines, and
// indented continuation lines (nested settings, ignored). Keys are
// case-insensitive (kept lowercase); values are trimmed. Throws
// InvalidArgumentError naming `path`:line for any other line.
using CredentialsProfiles = std::map<std::string, std::map<std::string, std::string>>;
CredentialsProfiles ParseCredentialsFile(std::string_view text, const std::string& path);

// The pieces of an endpoint URL. Throws InvalidArgumentError unless `url` is
// http(s)://host[:port][/] with a host and a port in 1-65535.
struct Endpoint {
  std::string scheme;            // "http" or "https"
  std::string host;              // a name, an IPv4 address or a bracketed IPv6 address
  uint16_t port = 0;             // 0 = the scheme's default
  std::string HostPort() const;  // "host" or "host:port"
};
Endpoint ParseEndpoint(std::string_view url);

}  // namespace gulpdb::remote

#endif  // GULPDB_S3_S3_CONFIG_H_
