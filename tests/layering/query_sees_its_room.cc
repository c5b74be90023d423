// Must compile: the query room sees its own folder, the JSON room, the index,
// util/ and the public API.
#include "engine/json/json_text.h"
#include "engine/query/query_txn.h"
#include "gulpdb/query.h"
#include "index/lmdb_env.h"
#include "util/utf8.h"

int gulpdb_layering_probe_ok() { return 0; }
