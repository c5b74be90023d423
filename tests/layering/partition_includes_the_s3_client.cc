// Must NOT compile: the partition room including the S3 client (s3/),
// which it neither needs nor links; its hashes are util/sha256.h's.
#include "s3/s3_client.h"

int gulpdb_layering_probe_back_arrow() { return 0; }
