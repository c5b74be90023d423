// Must compile: the storage core sees its own folder, the query, codec and
// JSON rooms, the index, util/ and the public API.
#include "engine/codec/frame_geometry.h"
#include "engine/core/dataset_impl.h"
#include "engine/json/json_text.h"
#include "engine/query/query_txn.h"
#include "index/records.h"
#include "util/file_io.h"

int gulpdb_layering_probe_ok() { return 0; }
