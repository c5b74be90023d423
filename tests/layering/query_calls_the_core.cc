// Must NOT link: a call from the query room up into the storage core. The
// include probes cannot see it (the function is declared here, not included),
// so this is what the link-level probe is for: linked with the query room's
// libraries and only those, the call is an undefined reference.
#include <memory>

namespace gulpdb {
class Dataset;
namespace engine {
class IndexSource;
// Defined by the storage core (engine/core/dataset_view.h).
std::shared_ptr<const IndexSource> SnapshotOf(const Dataset& dataset);
}  // namespace engine
}  // namespace gulpdb

int main(int argc, char** argv) {
  // Called through a volatile pointer on an object the compiler cannot see:
  // no optimizer (the sanitizer builds are -O1) may drop the reference, which
  // a call on a null object, undefined behaviour, let it do.
  using Fn = std::shared_ptr<const gulpdb::engine::IndexSource> (*)(const gulpdb::Dataset&);
  Fn volatile snapshot_of = &gulpdb::engine::SnapshotOf;
  const auto* dataset = reinterpret_cast<const gulpdb::Dataset*>(argv[argc - 1]);
  return snapshot_of(*dataset) ? 1 : 0;
}
