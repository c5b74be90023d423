// Must NOT compile: an include arrow from the version room up into the
// remote datasets room (engine/remote/manifest.h exists, but not in the
// room's tree): a version is read through the core's index source, never
// through a published manifest.
#include "engine/remote/manifest.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
