// Must compile: the viewer's room sees its own folder, util/ and the public API.
#include "gulpdb/dataset.h"
#include "util/file_io.h"
#include "view/api.h"
#include "view/view.h"

int gulpdb_layering_probe_ok() { return 0; }
