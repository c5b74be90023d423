// Must compile: the rooms above the storage core see its interface: a
// dataset's index by typed records (dataset_view.h), chunk bytes and chunk
// sources.
#include "engine/core/chunk_bytes.h"
#include "engine/core/chunk_source.h"
#include "engine/core/dataset_view.h"

int gulpdb_layering_probe_ok() { return 0; }
