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

int main() {
  return gulpdb::engine::SnapshotOf(*static_cast<const gulpdb::Dataset*>(nullptr)) ? 1 : 0;
}
