// S3Config from the environment and the shared credentials file: where each
// setting comes from, in which order, and the errors for bad values.
#include "s3/s3_config.h"

#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <map>
#include <string>

#include "gulpdb/error.h"
#include "s3/s3_client.h"
#include "support/test_util.h"

namespace gulpdb::test {

using remote::S3Config;

namespace {

// An environment made of `vars` only.
struct Env {
  std::map<std::string, std::string> vars;
  S3Config Load() const {
    return S3Config::FromEnvironment([this](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  }
};

template <typename Fn>
std::string ErrorOf(Fn fn) {
  try {
    fn();
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  return "";
}

using test::Contains;

const char* const kCredentialsFile =
    "# credentials for tests\n"
    "[default]\n"
    "aws_access_key_id = DEFAULTKEY\n"
    "aws_secret_access_key=default/secret+with=signs\n"
    "\n"
    "; another comment style\n"
    "[work]\n"
    "  \n"
    "AWS_Access_Key_ID   =   WORKKEY   \n"
    "aws_secret_access_key: worksecret\n"
    "aws_session_token = worktoken\n"
    "s3 =\n"
    "    max_concurrent_requests = 20\n"
    "    addressing_style = path\n"
    "region = eu-west-1\n"
    "\n"
    "[incomplete]\n"
    "aws_access_key_id = ONLYKEY\n";

}  // namespace

BOOST_AUTO_TEST_SUITE(s3_config_test)

BOOST_AUTO_TEST_CASE(defaults_without_any_variable) {
  const S3Config c = Env{}.Load();
  BOOST_TEST(c.endpoint == "");
  BOOST_TEST(c.EffectiveEndpoint() == "https://s3.us-east-1.amazonaws.com");
  BOOST_TEST(c.region == "us-east-1");
  BOOST_TEST(c.credentials.anonymous());
  BOOST_TEST(c.credentials.source == "none");
  BOOST_TEST(c.max_attempts == 5u);
  BOOST_TEST(c.connect_timeout_ms == 5000u);
  BOOST_TEST(c.max_connections == 16u);
}

BOOST_AUTO_TEST_CASE(endpoint_and_region_come_from_the_aws_variables_in_order) {
  Env env;
  env.vars["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9000";
  env.vars["AWS_DEFAULT_REGION"] = "eu-central-1";
  S3Config c = env.Load();
  BOOST_TEST(c.endpoint == "http://127.0.0.1:9000");
  BOOST_TEST(c.region == "eu-central-1");
  env.vars["AWS_ENDPOINT_URL_S3"] = "https://minio.example:9443/";
  env.vars["AWS_REGION"] = "ap-south-1";
  c = env.Load();
  BOOST_TEST(c.endpoint == "https://minio.example:9443/");
  BOOST_TEST(c.region == "ap-south-1");
  BOOST_TEST(c.EffectiveEndpoint() == "https://minio.example:9443/");
  env.vars["AWS_REGION"] = "";  // empty counts as unset
  BOOST_TEST(env.Load().region == "eu-central-1");
}

BOOST_AUTO_TEST_CASE(bad_endpoints_are_refused) {
  for (const char* bad :
       {"127.0.0.1:9000", "ftp://host", "http://", "http://host:0", "http://host:70000",
        "http://host:x", "http://host/path", "http://host?x=1", "http://[::1"}) {
    Env env;
    env.vars["AWS_ENDPOINT_URL"] = bad;
    const std::string m = ErrorOf([&] { env.Load(); });
    BOOST_TEST(Contains(m, std::string("endpoint '") + bad + "'"), bad << " -> " << m);
  }
  // User information is refused, and its secret never shown.
  for (const char* bad : {"http://user@host", "http://AKID:topsecret@host:9000",
                          "https://AKID:topsecret@host/path", "AKID:topsecret@host:9000"}) {
    Env env;
    env.vars["AWS_ENDPOINT_URL"] = bad;
    const std::string m = ErrorOf([&] { env.Load(); });
    BOOST_TEST(Contains(m, "***@host"), bad << " -> " << m);
    BOOST_TEST(!Contains(m, "topsecret"), bad << " -> " << m);
    BOOST_TEST(!Contains(m, "user@"), bad << " -> " << m);
  }
  const remote::Endpoint v6 = remote::ParseEndpoint("http://[::1]:9000");
  BOOST_TEST(v6.host == "[::1]");
  BOOST_TEST(v6.port == 9000);
  BOOST_TEST(remote::ParseEndpoint("https://s3.amazonaws.com").HostPort() == "s3.amazonaws.com");
}

BOOST_AUTO_TEST_CASE(credentials_from_the_environment_win_over_the_file) {
  TempDir dir;
  WriteFile(dir / "credentials", kCredentialsFile);
  Env env;
  env.vars["AWS_SHARED_CREDENTIALS_FILE"] = dir / "credentials";
  env.vars["AWS_PROFILE"] = "work";
  env.vars["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  env.vars["AWS_SECRET_ACCESS_KEY"] = "envsecret";
  env.vars["AWS_SESSION_TOKEN"] = "envtoken";
  const S3Config c = env.Load();
  BOOST_TEST(c.credentials.access_key_id == "ENVKEY");
  BOOST_TEST(c.credentials.secret_access_key == "envsecret");
  BOOST_TEST(c.credentials.session_token == "envtoken");
  BOOST_TEST(c.credentials.source == "environment");
}

BOOST_AUTO_TEST_CASE(half_a_key_pair_in_the_environment_is_an_error) {
  Env env;
  env.vars["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  BOOST_TEST(Contains(ErrorOf([&] { env.Load(); }),
                      "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"));
  env.vars.clear();
  env.vars["AWS_SECRET_ACCESS_KEY"] = "s";
  BOOST_TEST(Contains(ErrorOf([&] { env.Load(); }),
                      "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"));
}

BOOST_AUTO_TEST_CASE(the_credentials_file_gives_the_default_or_the_named_profile) {
  TempDir dir;
  WriteFile(dir / "credentials", kCredentialsFile);
  Env env;
  env.vars["AWS_SHARED_CREDENTIALS_FILE"] = dir / "credentials";
  S3Config c = env.Load();
  BOOST_TEST(c.credentials.access_key_id == "DEFAULTKEY");
  BOOST_TEST(c.credentials.secret_access_key == "default/secret+with=signs");
  BOOST_TEST(c.credentials.session_token == "");
  BOOST_TEST(c.credentials.source == "profile 'default' in " + dir / "credentials");

  env.vars["AWS_PROFILE"] = "work";
  c = env.Load();
  BOOST_TEST(c.credentials.access_key_id == "WORKKEY");  // key names are case-insensitive
  BOOST_TEST(c.credentials.secret_access_key == "worksecret");
  BOOST_TEST(c.credentials.session_token == "worktoken");
  BOOST_TEST(c.region == "us-east-1");  // region comes from the variables only

  env.vars.erase("AWS_PROFILE");
  env.vars["AWS_DEFAULT_PROFILE"] = "work";
  BOOST_TEST(env.Load().credentials.access_key_id == "WORKKEY");
  env.vars["AWS_PROFILE"] = "default";  // AWS_PROFILE first
  BOOST_TEST(env.Load().credentials.access_key_id == "DEFAULTKEY");
}

BOOST_AUTO_TEST_CASE(the_default_file_is_under_home) {
  TempDir home;
  Env env;
  env.vars["HOME"] = home.path();
  BOOST_TEST(env.Load().credentials.anonymous());  // no ~/.aws/credentials: anonymous
  ::mkdir((home / ".aws").c_str(), 0755);
  WriteFile(home / ".aws/credentials", kCredentialsFile);
  BOOST_TEST(env.Load().credentials.access_key_id == "DEFAULTKEY");
  // The variable points elsewhere: the file under HOME is not read.
  env.vars["AWS_SHARED_CREDENTIALS_FILE"] = home / "nonexistent";
  BOOST_TEST(env.Load().credentials.anonymous());
}

BOOST_AUTO_TEST_CASE(a_named_profile_that_is_missing_or_incomplete_is_an_error) {
  TempDir dir;
  WriteFile(dir / "credentials", kCredentialsFile);
  Env env;
  env.vars["AWS_SHARED_CREDENTIALS_FILE"] = dir / "credentials";
  env.vars["AWS_PROFILE"] = "nope";
  std::string m = ErrorOf([&] { env.Load(); });
  BOOST_TEST(Contains(m, "AWS_PROFILE='nope': no such profile in " + dir / "credentials"), m);
  env.vars["AWS_PROFILE"] = "incomplete";
  m = ErrorOf([&] { env.Load(); });
  BOOST_TEST(
      Contains(m, "profile 'incomplete' in " + dir / "credentials" + ": no aws_secret_access_key"),
      m);
  env.vars["AWS_PROFILE"] = "work";
  env.vars["AWS_SHARED_CREDENTIALS_FILE"] = dir / "missing";
  m = ErrorOf([&] { env.Load(); });
  BOOST_TEST(Contains(m, "AWS_PROFILE='work': no credentials file " + dir / "missing"), m);
}

BOOST_AUTO_TEST_CASE(a_malformed_credentials_file_names_file_and_line) {
  TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {"[default]\naws_access_key_id = A\njunk line\n", ":3: expected '[profile]'"},
      {"aws_access_key_id = A\n", ":1: setting before the first [profile]"},
      {"[default\n", ":1: section header without ']'"},
      {"[]\n", ":1: empty section name"},
      {"[default]\n  indented = x\n", ":2: indented line outside a setting"},
      {"[default]\n= value\n", ":2: empty key"},
  };
  for (const auto& [text, why] : cases) {
    WriteFile(dir / "credentials", text);
    Env env;
    env.vars["AWS_SHARED_CREDENTIALS_FILE"] = dir / "credentials";
    const std::string m = ErrorOf([&] { env.Load(); });
    BOOST_TEST(Contains(m, "credentials file " + dir / "credentials" + why), text << " -> " << m);
  }
}

BOOST_AUTO_TEST_CASE(gulpdb_knobs_are_read_and_checked) {
  Env env;
  env.vars = {{"GULPDB_S3_CONNECT_TIMEOUT_MS", "250"},   {"GULPDB_S3_STALL_TIMEOUT_MS", "1500"},
              {"GULPDB_S3_REQUEST_TIMEOUT_MS", "0"},     {"GULPDB_S3_MAX_ATTEMPTS", "9"},
              {"GULPDB_S3_BACKOFF_BASE_MS", "20"},       {"GULPDB_S3_BACKOFF_MAX_MS", "400"},
              {"GULPDB_S3_MAX_CONNECTIONS", "64"},       {"GULPDB_S3_PART_SIZE", "16777216"},
              {"GULPDB_S3_MULTIPART_THRESHOLD", "1000"}, {"GULPDB_S3_ADDRESSING_STYLE", "Virtual"}};
  const S3Config c = env.Load();
  BOOST_TEST(c.connect_timeout_ms == 250u);
  BOOST_TEST(c.stall_timeout_ms == 1500u);
  BOOST_TEST(c.request_timeout_ms == 0u);
  BOOST_TEST(c.max_attempts == 9u);
  BOOST_TEST(c.backoff_base_ms == 20u);
  BOOST_TEST(c.backoff_max_ms == 400u);
  BOOST_TEST(c.max_connections == 64u);
  BOOST_TEST(c.part_size == 16777216u);
  BOOST_TEST(c.multipart_threshold == 1000u);
  BOOST_TEST((c.addressing_style == remote::AddressingStyle::kVirtualHosted));

  const std::pair<const char*, const char*> bad[] = {
      {"GULPDB_S3_MAX_ATTEMPTS", "0"},
      {"GULPDB_S3_MAX_ATTEMPTS", "three"},
      {"GULPDB_S3_MAX_ATTEMPTS", "-1"},
      {"GULPDB_S3_CONNECT_TIMEOUT_MS", "1.5"},
      {"GULPDB_S3_PART_SIZE", "1048576"},
      {"GULPDB_S3_MAX_CONNECTIONS", "99999"},
      {"GULPDB_S3_ADDRESSING_STYLE", "sideways"},
      {"GULPDB_S3_STALL_TIMEOUT_MS", "1e3"},
  };
  for (const auto& [name, value] : bad) {
    Env e;
    e.vars[name] = value;
    const std::string m = ErrorOf([&] { e.Load(); });
    // The one form of util/env.h: NAME 'value': what is wrong.
    BOOST_TEST(Contains(m, std::string(name) + " '" + value + "': "),
               name << "=" << value << " -> " << m);
  }
  Env inverted;
  inverted.vars = {{"GULPDB_S3_BACKOFF_BASE_MS", "500"}, {"GULPDB_S3_BACKOFF_MAX_MS", "100"}};
  BOOST_TEST(
      Contains(ErrorOf([&] { inverted.Load(); }), "backoff_max_ms must be >= backoff_base_ms"));
}

BOOST_AUTO_TEST_CASE(configuration_in_code_is_validated_by_the_client) {
  S3Config c;
  c.max_attempts = 0;
  BOOST_TEST(Contains(ErrorOf([&] { remote::S3Client(c, "bucket"); }), "max_attempts"));
  c = S3Config();
  c.credentials.access_key_id = "KEY";  // no secret
  BOOST_TEST(Contains(ErrorOf([&] { remote::S3Client(c, "bucket"); }), "both an access key id"));
  c = S3Config();
  c.region = "us east";
  BOOST_TEST(Contains(ErrorOf([&] { remote::S3Client(c, "bucket"); }), "region 'us east'"));
}

BOOST_AUTO_TEST_CASE(addressing_is_virtual_hosted_for_aws_and_path_style_elsewhere) {
  S3Config aws;
  aws.region = "eu-west-1";
  BOOST_TEST(remote::S3Client(aws, "my-bucket").ObjectUrl("a b/c") ==
             "https://my-bucket.s3.eu-west-1.amazonaws.com/a%20b/c");
  // Dotted names would not match AWS's wildcard certificate.
  BOOST_TEST(remote::S3Client(aws, "my.bucket").ObjectUrl("k") ==
             "https://s3.eu-west-1.amazonaws.com/my.bucket/k");
  S3Config custom;
  custom.endpoint = "http://127.0.0.1:9000";
  BOOST_TEST(remote::S3Client(custom, "my-bucket").ObjectUrl("k") ==
             "http://127.0.0.1:9000/my-bucket/k");
  custom.addressing_style = remote::AddressingStyle::kVirtualHosted;
  BOOST_TEST(remote::S3Client(custom, "my-bucket").ObjectUrl("k") ==
             "http://my-bucket.127.0.0.1:9000/k");
  aws.addressing_style = remote::AddressingStyle::kPath;
  BOOST_TEST(remote::S3Client(aws, "my-bucket").ObjectUrl("k") ==
             "https://s3.eu-west-1.amazonaws.com/my-bucket/k");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gulpdb::test
