// Must NOT compile: an include arrow from the remote room up into the
// engine's front door (engine/open.h exists, but not in the room's tree).
#include "engine/open.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
