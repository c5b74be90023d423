// Must NOT compile: an include arrow from the partition room up into the
// remote datasets room, which uses it (engine/remote/manifest.h exists, but
// not in the room's tree).
#include "engine/remote/manifest.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
