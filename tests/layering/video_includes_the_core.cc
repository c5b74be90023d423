// Must NOT compile: an include arrow from the video room up into the storage
// core (engine/core/dataset_impl.h exists, but not in the video room's tree).
#include "engine/core/dataset_impl.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
