// Must NOT compile: an include arrow from the GulpIO room up into the remote
// datasets (engine/remote/remote_dataset.h exists, but not in its tree).
#include "engine/remote/remote_dataset.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
