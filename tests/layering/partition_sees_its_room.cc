// Must compile: the partition room sees its own folder, the storage core's
// interface, the query room, the index and util/ (with its SHA-256).
#include "engine/core/dataset_view.h"
#include "engine/partition/partitions.h"
#include "engine/query/meta_value.h"
#include "index/partition_root.h"
#include "util/file_io.h"
#include "util/sha256.h"

int gulpdb_layering_probe_ok() { return 0; }
