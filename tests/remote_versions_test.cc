// Tags in a bucket (docs/versions.md, "Tags in a bucket"), against s3rver: a
// push publishes the local tags, OpenOptions::version on the URL reads each
// as the local tag does, Versions() lists them, an unknown name is a
// NameNotFoundError listing the tags; the tag object's format refuses a
// root named outside the prefix or not by its SHA-256, and another version.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <string>
#include <vector>

#include "engine/remote/manifest.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/maintenance.h"
#include "gulpdb/remote.h"
#include "support/remote_fixture.h"
#include "support/test_util.h"
#include "tests/harness/s3_server.h"
#include "util/sha256.h"

namespace gulpdb {
namespace {

using test::S3rverServer;
using test::ScopedEnv;
using test::TempDir;

S3rverServer& Server() {
  static std::unique_ptr<S3rverServer> server = std::make_unique<S3rverServer>();
  return *server;
}

struct World {
  TempDir tmp;
  ScopedEnv env;
  std::string url;

  World() {
    const std::string prefix = test::UniquePrefix("tags");
    url = "s3://" + Server().bucket() + "/" + prefix.substr(0, prefix.size() - 1);
    env.Set("AWS_ENDPOINT_URL", Server().endpoint());
    env.Set("AWS_ACCESS_KEY_ID", S3rverServer::kAccessKey);
    env.Set("AWS_SECRET_ACCESS_KEY", S3rverServer::kSecretKey);
    env.Set("AWS_REGION", "us-east-1");
    env.Set("GULPDB_CACHE", tmp / "cache");
    for (const char* name : {"GULPDB_CACHE_DIR", "GULPDB_CACHE_BYTES", "AWS_SESSION_TOKEN",
                             "AWS_PROFILE", "GULPDB_PUSH_GRACE"}) {
      env.Unset(name);
    }
  }
};

void Append(Dataset& ds, int from, int to) {
  static const std::string frame = test::FakeJpeg(64, 3);
  const std::vector<std::string_view> frames(2, frame);
  auto w = ds.NewWriter();
  for (int n = from; n < to; ++n) {
    w->Append("v" + std::to_string(n), frames, "{\"n\": " + std::to_string(n) + "}");
  }
  w->Commit();
}

std::unique_ptr<Dataset> OpenVersion(const std::string& where, const std::string& name) {
  OpenOptions o;
  o.version = name;
  return Dataset::Open(where, o);
}

// What a reader sees of a dataset: each id with its meta, in order.
std::vector<std::string> Seen(const Dataset& ds) {
  std::vector<std::string> out;
  for (const std::string& id : ds.Ids()) {
    out.push_back(id + " " + ds.Get(id).meta_data);
    (void)ds.ReadJpegs(id);  // every frame's CRC-32C checked
  }
  return out;
}

BOOST_AUTO_TEST_SUITE(remote_versions_test)

BOOST_AUTO_TEST_CASE(a_pushed_tag_opens_by_url_as_the_local_tag_reads) {
  World w;
  const std::string dir = w.tmp / "ds";
  CreateOptions create;
  create.videos_per_chunk = 2;
  {
    std::unique_ptr<Dataset> ds = Dataset::Create(dir, create);
    Append(*ds, 0, 5);
    ds->Tag("first", "five videos");
    {
      auto writer = ds->NewWriter();
      writer->UpdateMeta("v1", "{\"n\": 100}");
      writer->Remove("v0");
      writer->Commit();
    }
    Append(*ds, 5, 7);
    Compact(*ds);
    ds->Tag("second");
  }
  Push(dir, w.url, PushOptions());
  for (const std::string name : {"first", "second"}) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST(Seen(*OpenVersion(w.url, name)) == Seen(*OpenVersion(dir, name)));
    }
  }
  BOOST_TEST(OpenVersion(w.url, "first")->Ids().size() == 5u);
  const std::vector<VersionInfo> published = Dataset::Open(w.url)->Versions();
  const std::vector<VersionInfo> local = Dataset::Open(dir)->Versions();
  BOOST_REQUIRE(published.size() == 2u);
  for (size_t i = 0; i < 2; ++i) {
    BOOST_TEST(published[i].name == local[i].name);
    BOOST_TEST(published[i].root == local[i].root);
    BOOST_TEST(published[i].videos == local[i].videos);
    BOOST_TEST(published[i].message == local[i].message);
  }
  try {
    OpenVersion(w.url, "third");
    BOOST_FAIL("an unknown tag opened");
  } catch (const NameNotFoundError& e) {
    BOOST_TEST(test::Contains(e.what(), "first, second"));
  }
  BOOST_CHECK_THROW(OpenVersion(w.url, "../first"), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(a_tag_object_names_its_root_inside_the_prefix_by_its_sha256) {
  engine::TagObject t;
  t.name = "run17";
  t.created_ms = 1765100000000;
  t.videos = 3;
  t.frames = 6;
  t.message = "m\xc3\xa9";
  t.root_sha256 = util::Sha256Hex("root");
  t.root_key = engine::RootKey(t.root_sha256);
  t.root_size = 100;
  const std::string text = engine::SerializeTagObject(t);
  const engine::TagObject back = engine::ParseTagObject(text, "here");
  BOOST_TEST(back.name == t.name);
  BOOST_TEST(back.message == t.message);
  BOOST_TEST(back.root_key == t.root_key);
  BOOST_TEST(engine::SerializeTagObject(back) == text);
  const auto refused = [&](const std::string& from, const std::string& to) {
    std::string bad = text;
    const size_t at = bad.find(from);
    BOOST_REQUIRE(at != std::string::npos);
    bad.replace(at, from.size(), to);
    BOOST_CHECK_THROW(engine::ParseTagObject(bad, "here"), CorruptionError);
  };
  refused(t.root_key, "../" + t.root_key);
  refused(t.root_key, "gulpdb.roots/" + util::Sha256Hex("other") + ".root");
  refused("\"sha256\": \"" + t.root_sha256, "\"sha256\": \"zz");
  refused("\"version\": 1", "\"version\": 2");
  refused("\"format\": \"gulpdb-tag\"", "\"format\": \"gulpdb-manifest\"");
  BOOST_CHECK_THROW(engine::ParseTagObject(text.substr(0, text.size() / 2), "here"),
                    CorruptionError);
}

// The same tag is the same bytes at every push and in every gulpdb that
// writes tag object version 1 (docs/format/remote_format.md "Tags"): its
// object's name is its SHA-256, so other bytes would send every published
// tag again. The manifest's entry repeats the summary, in the same order.
BOOST_AUTO_TEST_CASE(a_tag_object_and_its_manifest_entry_keep_their_bytes) {
  engine::TagObject t;
  t.name = "run17";
  t.created_ms = 1765100000000;
  t.videos = 3;
  t.frames = 6;
  t.message = "m\xc3\xa9 \"q\"";
  t.root_sha256 = util::Sha256Hex("root");
  t.root_key = engine::RootKey(t.root_sha256);
  t.root_size = 100;
  const std::string text = engine::SerializeTagObject(t);
  const std::string root = "4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2";
  BOOST_TEST(text ==
             "{\"format\": \"gulpdb-tag\", \"version\": 1,\n"
             " \"name\": \"run17\", \"created_ms\": 1765100000000, \"videos\": 3, \"frames\": 6, "
             "\"message\": \"m\\u00e9 \\\"q\\\"\",\n"
             " \"root\": {\"key\": \"gulpdb.roots/" +
                 root + ".root\", \"size\": 100, \"sha256\": \"" + root +
                 "\"},\n"
                 " \"chunk_count\": 0,\n"
                 " \"chunk_pages\": []}\n");
  engine::Manifest m;
  m.generation = 1;
  m.version = engine::kManifestVersionChunkPages;
  m.root_key = t.root_key;
  m.root_size = t.root_size;
  m.root_sha256 = t.root_sha256;
  engine::ManifestTag entry(t.summary());
  entry.sha256 = util::Sha256Hex(text);
  entry.key = engine::TagObjectKey(entry.sha256);
  entry.size = text.size();
  m.tags.push_back(entry);
  const std::string manifest = engine::SerializeManifest(m);
  const size_t at = manifest.find("\"tags\"");
  const size_t end = manifest.find("\"obsolete\"");
  BOOST_REQUIRE(at != std::string::npos);
  BOOST_REQUIRE(end != std::string::npos);
  const std::string object = "db5cd3c588de55cbf99cac4a47f7bbc1f7e107ce42293f6d90b07be6186524cb";
  BOOST_TEST(manifest.substr(at, end - at) ==
             "\"tags\": [\n"
             "  {\"name\": \"run17\", \"created_ms\": 1765100000000, \"videos\": 3, \"frames\": 6, "
             "\"message\": \"m\\u00e9 \\\"q\\\"\", \"root\": \"" +
                 root + "\", \"key\": \"gulpdb.tags/" + object +
                 ".json\", \"size\": 374, \"sha256\": \"" + object + "\"}],\n ");
  const engine::Manifest back = engine::ParseManifest(manifest, "here");
  BOOST_REQUIRE(back.tags.size() == 1);
  BOOST_TEST((back.tags[0] == entry));
  BOOST_TEST((engine::ParseTagObject(text, "here").summary() == t.summary()));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
