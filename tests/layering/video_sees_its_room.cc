// Must compile: the video room sees its own folder, the codec room, util/
// and the public API.
#include "engine/codec/resample.h"
#include "engine/video/gop_decoder.h"
#include "gulpdb/error.h"
#include "util/utf8.h"

int gulpdb_layering_probe_ok() { return 0; }
