// Must NOT compile: an include arrow from the storage core up into the
// GulpIO room (engine/gulpio/gulpio_files.h exists, but not in the core's
// tree; the core knows GulpIO file names through engine/core/gulpio_names.h).
#include "engine/gulpio/gulpio_files.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
