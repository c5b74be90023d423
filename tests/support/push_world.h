// Shared pieces of the suites that push datasets to a real S3 server
// (s3rver, started once per test process) and read them back: a test's
// world (its prefix, cache and S3 environment), datasets whose copies grow
// their chunks with different bytes, a hook that runs code at a push's test
// points (engine/core/fault_injection.h), and the check that what a
// published manifest names is whole and reads back exactly.
//
// Thread safety: PushWorld and the helpers belong to the test's thread;
// PushPoints may be reached from any thread (it says which).
#ifndef GULPDB_TESTS_SUPPORT_PUSH_WORLD_H_
#define GULPDB_TESTS_SUPPORT_PUSH_WORLD_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/fault_injection.h"
#include "engine/remote/manifest.h"
#include "gulpdb/dataset.h"
#include "s3/s3_client.h"
#include "support/test_util.h"
#include "tests/harness/s3_server.h"

namespace gulpdb::test {

// The s3rver of this test process (started on first use).
S3rverServer& SharedS3rver();

// A test's world: the client configured for an endpoint (s3rver directly by
// default), a private cache, short timeouts and fast retries.
struct PushWorld {
  TempDir tmp;
  ScopedEnv env;
  std::string prefix;  // "<unique>/" under the bucket
  std::string url;     // s3://bucket/<unique>

  explicit PushWorld(const std::string& endpoint = SharedS3rver().endpoint(),
                     const std::string& key = S3rverServer::kAccessKey,
                     const std::string& secret = S3rverServer::kSecretKey);

  void UseEndpoint(const std::string& endpoint, const std::string& key, const std::string& secret);
  // A new, empty cache: the next open is a machine's first.
  void FreshCache(const std::string& name) { env.Set("GULPDB_CACHE", tmp / name); }
  // A client of the bucket, for looking behind the dataset's back.
  std::unique_ptr<remote::S3Client> Client() const;
  std::string Key(const std::string& name) const { return prefix + name; }
};

using Jpegs = std::map<std::string, std::vector<std::string>>;

// Every id's JPEG bytes, for comparisons after the local dataset changed.
Jpegs AllJpegs(const Dataset& ds);
// Fails the test unless `ds` reads exactly `want` (every id of it).
void ExpectSameJpegs(const Dataset& ds, const Jpegs& want);

// Appends videos "<tag><n>" for n in [first, last), fixture frames (n +
// shift) % 22, 4 videos per chunk: two copies of a dataset given different
// tags or shifts grow their chunks with different bytes.
void AppendTagged(const std::string& dir, const std::string& tag, int first, int last, int shift,
                  bool checksums = true);
void CopyDataset(const std::string& from, const std::string& to);

engine::Manifest PublishedManifest(const PushWorld& w, remote::S3Client& client);

// Every object the published manifest names is there, whole, with the ETag
// it names, and a reader with the fresh cache `cache` reads every frame of
// `want` exactly.
void ExpectPublishedIntact(PushWorld& w, const Jpegs& want, const std::string& cache);

// Calls `fn` the first time a push reaches `point` (the hook stays installed
// for the object's lifetime; a push `fn` runs does not call it again).
class AtPushPoint {
 public:
  AtPushPoint(engine::fault::Point point, std::function<void()> fn);
  ~AtPushPoint();
  AtPushPoint(const AtPushPoint&) = delete;
  AtPushPoint& operator=(const AtPushPoint&) = delete;
  bool fired() const { return fired_; }

 private:
  static void Call(engine::fault::Point point, void* self);

  engine::fault::Point point_;
  std::function<void()> fn_;
  bool fired_ = false;
};

// Calls `fn` at every point every push of the process reaches, on the
// pushing thread (for races between pushes on several threads: `fn` tells
// them apart by std::this_thread::get_id()).
class PushPoints {
 public:
  explicit PushPoints(std::function<void(engine::fault::Point)> fn);
  ~PushPoints();
  PushPoints(const PushPoints&) = delete;
  PushPoints& operator=(const PushPoints&) = delete;

 private:
  static void Call(engine::fault::Point point, void* self);
  std::function<void(engine::fault::Point)> fn_;
};

}  // namespace gulpdb::test

#endif  // GULPDB_TESTS_SUPPORT_PUSH_WORLD_H_
