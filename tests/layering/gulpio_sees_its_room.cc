// Must compile: the GulpIO room sees its own folder, the storage core, the
// query and JSON rooms, the index and util/ (with its SHA-256).
#include "engine/core/dataset_view.h"
#include "engine/gulpio/gmeta.h"
#include "engine/gulpio/gulpio_files.h"
#include "engine/query/splits_file.h"
#include "util/sha256.h"

int gulpdb_layering_probe_ok() { return 0; }
