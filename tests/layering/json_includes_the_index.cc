// Must NOT compile: the JSON room is below the index and every other room
// (index/lmdb_env.h exists, but not in the JSON room's tree).
#include "index/lmdb_env.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
