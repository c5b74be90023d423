// Fetching an object whose size and SHA-256 are known before it is read: a
// whole index snapshot (the manifest names it), a root (the manifest), a
// chunk page (the manifest), a root page (the root), a partition (the root
// or a root page). One download can come out four ways, and they are told
// apart:
//
//   - the bytes named: done;
//   - other bytes than the last download brought: damaged on the way (a
//     network, a proxy); fetched again, kFetchAttempts downloads in all,
//     then an IoError (nothing is known about the object: a later read
//     tries again);
//   - the same other bytes twice, an object larger than named, or the
//     named bytes failing the caller's deeper check (not a sound partition,
//     not a root): the object in the store is not the one named. A
//     CorruptionError "<subject> is damaged in the bucket: ..." naming it;
//   - missing: a CorruptionError "<subject> is missing: it was deleted
//     behind the manifest's back".
//
// A reader remembers the objects it found damaged (BadObjectScope): for the
// rest of the process, every read that needs one fails at once with the
// same CorruptionError instead of downloading it again, until the dataset
// is opened on a newer manifest generation (then it is tried again). A
// publisher passes no scope and checks afresh every time. The memory is
// bounded (the oldest entries are forgotten first).
//
// Thread safety: every function may be called from any number of threads.
#ifndef GULPDB_ENGINE_REMOTE_VERIFIED_FETCH_H_
#define GULPDB_ENGINE_REMOTE_VERIFIED_FETCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "engine/remote/object_store.h"
#include "util/file_io.h"

namespace gulpdb::engine {

// Downloads of one object before other bytes each time are called damage on
// the way.
inline constexpr int kFetchAttempts = 3;

// An object as something else names it.
struct NamedObject {
  std::string key;  // in the store
  uint64_t size = 0;
  std::string sha256;
  // For messages: "<what>: the root s3://b/p/gulpdb.roots/x.root that the
  // manifest (generation 3) names", and who gave the size and hash ("the
  // manifest", "the root").
  std::string subject;
  std::string named_by;
  bool in_bucket = true;  // an S3 object ("bucket"), or a file of a local store
};

// `key` of `store` as `named_by` names it (in_bucket from the store's URL).
NamedObject NameObject(const ObjectStore& store, std::string key, uint64_t size, std::string sha256,
                       std::string subject, std::string named_by);

// The objects a reader found damaged are remembered under its store and
// the generation of the manifest it opened.
struct BadObjectScope {
  std::string store;  // ObjectStore::Identity()
  uint64_t generation = 0;
};
BadObjectScope ScopeOf(const ObjectStore& store, uint64_t generation);

// What one download brought.
struct Arrival {
  uint64_t size = 0;
  std::string sha256;
};

// One download for FetchVerified: `object` into the new file `path`
// (ObjectStore::GetToFile, at most its size), `*fd` then open on it. Returns
// what came.
Arrival DownloadToFile(ObjectStore& store, const NamedObject& object, const std::string& path,
                       util::UniqueFd* fd);

// Runs `download` (each call fetches the object anew and says what came;
// the store's NotFoundError and remote::ObjectTooLargeError pass through it)
// until it brings `object`'s bytes, as above, then `check` (may be null),
// whose CorruptionError means the named bytes are not sound. With a
// `remember` scope, an object found damaged there before throws its
// CorruptionError at once (no download), and one found damaged now is
// remembered. Throws the store's other errors as they are.
void FetchVerified(const NamedObject& object, const std::function<Arrival()>& download,
                   const std::function<void()>& check, const BadObjectScope* remember);

// The transient entries of a cache folder `dir`: a download in progress
// and a damaged copy set aside, each named by util::UniqueFileSuffix (the
// process id first, so that a sweep can tell a live process's from a dead
// one's): "<dir>/.download.<suffix>", "<dir>/.damaged.<suffix>".
std::string NewDownloadName(const std::string& dir);
std::string NewDamagedName(const std::string& dir);
bool IsDownloadName(std::string_view name);  // a name in the folder, not a path
bool IsDamagedName(std::string_view name);

// FetchVerified of `object` into a NewDownloadName in `dir`, a new one for
// each download: `discard(*tmp)` first removes the previous download's
// (when there was one), then `download(*tmp)` brings the bytes there (a
// file, or a folder it creates). On return *tmp names the verified bytes;
// when it throws, *tmp names what is left, if anything ("" if nothing), for
// the caller to remove.
void FetchVerifiedToNewName(const NamedObject& object, const std::string& dir, std::string* tmp,
                            const std::function<void(const std::string& tmp)>& discard,
                            const std::function<Arrival(const std::string& tmp)>& download,
                            const std::function<void()>& check, const BadObjectScope* remember);

// FetchVerified of the object's bytes (one GET of at most its size each).
// `check`, when not null, is given them.
std::string GetVerified(ObjectStore& store, const NamedObject& object,
                        const BadObjectScope* remember,
                        const std::function<void(std::string_view bytes)>& check = nullptr);

// Throws the CorruptionError a reader in `remember` (null: none) met when
// it found `object` damaged, if it did.
void ThrowIfKnownBad(const BadObjectScope* remember, const NamedObject& object);

// Forgets every object found damaged: the state a new process starts in
// (tests of several nodes in one process).
void ForgetBadObjects();

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_VERIFIED_FETCH_H_
