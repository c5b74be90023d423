#include "support/push_world.h"

#include <boost/test/unit_test.hpp>
#include <filesystem>

#include "gulpdb/remote.h"
#include "support/remote_fixture.h"

namespace gulpdb::test {

S3rverServer& SharedS3rver() {
  static std::unique_ptr<S3rverServer> server = std::make_unique<S3rverServer>();
  return *server;
}

PushWorld::PushWorld(const std::string& endpoint, const std::string& key, const std::string& secret)
    : prefix(UniquePrefix("ds")) {
  url = "s3://" + SharedS3rver().bucket() + "/" + prefix.substr(0, prefix.size() - 1);
  UseEndpoint(endpoint, key, secret);
  env.Set("GULPDB_CACHE", tmp / "cache");
  // These suites are about reads from the store (one GET per run, faults on
  // the wire, objects replaced behind a manifest): every read goes there.
  // The node's frame cache in front of it is frame_cache_test's and
  // tests/python/test_frame_cache.py's.
  env.Set("GULPDB_FRAME_CACHE_BYTES", "0");
  env.Unset("GULPDB_CACHE_DIR");
  env.Set("GULPDB_S3_CONNECT_TIMEOUT_MS", "2000");
  env.Set("GULPDB_S3_STALL_TIMEOUT_MS", "5000");
  env.Set("GULPDB_S3_REQUEST_TIMEOUT_MS", "20000");
  env.Set("GULPDB_S3_MAX_ATTEMPTS", "4");
  env.Set("GULPDB_S3_BACKOFF_BASE_MS", "5");
  env.Set("GULPDB_S3_BACKOFF_MAX_MS", "40");
  env.Set("AWS_REGION", "us-east-1");
  env.Unset("AWS_SESSION_TOKEN");
  env.Unset("AWS_PROFILE");
  env.Unset("GULPDB_PUSH_GRACE");
  env.Unset("GULPDB_TEST_FS_TYPE");
  env.Unset("GULPDB_ALLOW_NETWORK_INDEX");
}

void PushWorld::UseEndpoint(const std::string& endpoint, const std::string& key,
                            const std::string& secret) {
  env.Set("AWS_ENDPOINT_URL", endpoint);
  env.Set("AWS_ACCESS_KEY_ID", key);
  env.Set("AWS_SECRET_ACCESS_KEY", secret);
}

std::unique_ptr<remote::S3Client> PushWorld::Client() const {
  return std::make_unique<remote::S3Client>(
      TestConfig(SharedS3rver().endpoint(), S3rverServer::kAccessKey, S3rverServer::kSecretKey),
      SharedS3rver().bucket());
}

Jpegs AllJpegs(const Dataset& ds) {
  Jpegs out;
  for (const std::string& id : ds.Ids()) {
    const StoredFrames jpegs = ds.ReadJpegs(id);
    for (size_t i = 0; i < jpegs.size(); ++i) out[id].emplace_back(jpegs[i]);
  }
  return out;
}

void ExpectSameJpegs(const Dataset& ds, const Jpegs& want) {
  for (const auto& [id, frames] : want) {
    const StoredFrames got = ds.ReadJpegs(id);
    BOOST_REQUIRE_EQUAL(got.size(), frames.size());
    for (size_t i = 0; i < got.size(); ++i) {
      BOOST_REQUIRE_MESSAGE(got[i] == frames[i], "id " << id << " frame " << i);
    }
  }
}

void AppendTagged(const std::string& dir, const std::string& tag, int first, int last, int shift,
                  bool checksums) {
  std::unique_ptr<Dataset> ds;
  if (Dataset::Exists(dir)) {
    OpenOptions rw;
    rw.read_only = false;
    ds = Dataset::Open(dir, rw);
  } else {
    CreateOptions c;
    c.videos_per_chunk = 4;
    c.checksums = checksums;
    ds = Dataset::Create(dir, c);
  }
  auto writer = ds->NewWriter();
  for (int i = first; i < last; ++i) {
    const std::vector<std::string> frames = FixtureFrames(std::to_string((i + shift) % 22));
    writer->Append(tag + std::to_string(i), Views(frames), "{\"n\": " + std::to_string(i) + "}");
  }
  writer->Commit();
}

void CopyDataset(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
}

engine::Manifest PublishedManifest(const PushWorld& w, remote::S3Client& client) {
  return engine::ParseManifest(client.Get(w.Key(engine::kManifestKey)), "test");
}

void ExpectPublishedIntact(PushWorld& w, const Jpegs& want, const std::string& cache) {
  auto client = w.Client();
  engine::Manifest m = PublishedManifest(w, *client);
  for (const engine::ManifestChunkPage& p : m.chunk_pages) {
    const std::vector<engine::ManifestChunk> chunks =
        engine::ParseChunkPage(client->Get(w.Key(p.key)), p, p.key);
    m.chunks.insert(m.chunks.end(), chunks.begin(), chunks.end());
  }
  for (const engine::ManifestChunk& c : m.chunks) {
    const remote::ObjectInfo head = client->Head(w.Key(c.key));
    BOOST_TEST(head.size == c.committed_length, c.key);
    BOOST_TEST(head.etag == c.etag, c.key);
    BOOST_TEST(client->HeadIfExists(w.Key(c.gmeta_key)).has_value(), c.gmeta_key);
  }
  w.FreshCache(cache);
  auto ds = Dataset::Open(w.url);
  BOOST_TEST(ds->Count() == want.size());
  ExpectSameJpegs(*ds, want);
}

AtPushPoint::AtPushPoint(engine::fault::Point point, std::function<void()> fn)
    : point_(point), fn_(std::move(fn)) {
  engine::fault::SetPointHook(&AtPushPoint::Call, this);
}

AtPushPoint::~AtPushPoint() { engine::fault::SetPointHook(nullptr, nullptr); }

void AtPushPoint::Call(engine::fault::Point point, void* self) {
  auto* hook = static_cast<AtPushPoint*>(self);
  if (point != hook->point_ || hook->fired_) return;
  hook->fired_ = true;
  hook->fn_();
}

PushPoints::PushPoints(std::function<void(engine::fault::Point)> fn) : fn_(std::move(fn)) {
  engine::fault::SetPointHook(&PushPoints::Call, this);
}

PushPoints::~PushPoints() { engine::fault::SetPointHook(nullptr, nullptr); }

void PushPoints::Call(engine::fault::Point point, void* self) {
  static_cast<PushPoints*>(self)->fn_(point);
}

}  // namespace gulpdb::test
