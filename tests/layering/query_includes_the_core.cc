// Must NOT compile: an include arrow from the query room back up into the
// storage core (engine/core/dataset_impl.h exists, but not in the query's tree;
// the query room sees a dataset only through engine/query/index_handles.h).
#include "engine/core/dataset_impl.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
