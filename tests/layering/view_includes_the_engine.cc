// Must NOT compile: the viewer reads datasets through the public API only
// (engine/core/dataset_view.h exists, but not in the viewer's tree).
#include "engine/core/dataset_view.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
