// Must NOT compile: the rooms above the storage core never see Dataset::Impl
// (engine/core/dataset_impl.h exists, but is not in the core's interface
// that their trees link; they use engine/core/dataset_view.h).
#include "engine/core/dataset_impl.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
