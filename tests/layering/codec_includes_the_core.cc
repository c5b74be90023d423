// Must NOT compile: an include arrow from the codec room back up into the
// storage core (engine/core/dataset_impl.h exists, but not in the codec's tree).
#include "engine/core/dataset_impl.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
