// Must compile: the JSON room sees its own folder, util/ and the public API.
#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "util/utf8.h"

int gulpdb_layering_probe_ok() { return 0; }
