// The reads of a published dataset's chunk objects (docs/format/
// remote_format.md, "Readers"): each ranged GET carries If-Match with the
// ETag its object is accepted under (manifest_chunks.h). On 412, the
// object's new ETag is accepted only when a newer published manifest of the
// same dataset names it for at least the same committed length, or when its
// metadata says the push that wrote it checked its prefix against such a
// promise (a push in flight); the read is then tried again. Any other
// replacement, a missing object or one shorter than its committed length is
// a CorruptionError that says what probably happened. The normal case costs
// no request more.
//
// Thread safety: any number of threads may read at once; revalidations run
// one at a time, and a thread finding another's already accepted goes on.
#ifndef GULPDB_ENGINE_REMOTE_CONDITIONAL_READS_H_
#define GULPDB_ENGINE_REMOTE_CONDITIONAL_READS_H_

#include <mutex>
#include <string>
#include <vector>

#include "engine/remote/manifest.h"
#include "engine/remote/object_store.h"

namespace gulpdb::engine {

class ManifestChunks;

class ConditionalReads {
 public:
  // The reads of `manifest`'s chunk objects in `store`, under the ETags
  // `chunks` accepts. All three must outlive this.
  ConditionalReads(ObjectStore& store, const Manifest& manifest, const ManifestChunks& chunks)
      : store_(store), manifest_(manifest), chunks_(chunks) {}

  // As RemoteSource::Read of StoreRanges (remote_dataset.h).
  void Read(const std::vector<StoreRange>& ranges, const std::string& what) const;
  // As RemoteSource::ThrowMissing.
  [[noreturn]] void ThrowMissing(const std::string& what, const std::string& cause) const;

 private:
  // After a read of `key` with ETag `asked` failed its condition: accepts
  // the object's current ETag if a newer published manifest (or the
  // metadata of a push of this dataset) vouches for the bytes this
  // generation promised, else throws CorruptionError.
  void Revalidate(const std::string& key, const std::string& asked, const std::string& what) const;

  ObjectStore& store_;
  const Manifest& manifest_;
  const ManifestChunks& chunks_;
  mutable std::mutex revalidate_mutex_;  // one revalidation at a time
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_CONDITIONAL_READS_H_
