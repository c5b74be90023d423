// Must compile: the partition room sees its own folder, the storage core's
// interface, the query room, the index, remote/ (its SHA-256) and util/.
#include "engine/core/dataset_view.h"
#include "engine/partition/partitions.h"
#include "engine/query/meta_value.h"
#include "index/partition_root.h"
#include "remote/payload_hash.h"
#include "util/file_io.h"

int gulpdb_layering_probe_ok() { return 0; }
