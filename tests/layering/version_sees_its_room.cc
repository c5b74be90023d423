// Must compile: the version room sees its own folder, the storage core's
// interface, the partition room, the query and JSON rooms, the index,
// and util/ (its SHA-256 too).
#include "engine/core/dataset_view.h"
#include "engine/json/json_text.h"
#include "engine/partition/partitions.h"
#include "engine/version/version_store.h"
#include "index/partition_root.h"
#include "util/file_io.h"
#include "util/sha256.h"

int gulpdb_layering_probe_ok() { return 0; }
