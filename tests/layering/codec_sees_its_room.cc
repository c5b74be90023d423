// Must compile: the codec room sees its own folder, util/ and the public API.
#include "engine/codec/resample.h"
#include "gulpdb/jpeg.h"
#include "util/utf8.h"

int gulpdb_layering_probe_ok() { return 0; }
