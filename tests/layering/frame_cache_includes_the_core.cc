// Must not compile: the frame cache knows objects only as keys, identities
// and committed lengths; the storage core (and the remote datasets room that
// plugs the cache into it) stand above it.
#include "engine/core/chunk_source.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
