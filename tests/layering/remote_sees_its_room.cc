// Must compile: the remote room sees its own folder, the GulpIO room, the
// version room (a push publishes tags), the storage core, the index, s3/
// and util/.
#include "engine/core/dataset_view.h"
#include "engine/gulpio/gmeta.h"
#include "engine/remote/remote_dataset.h"
#include "engine/version/version_store.h"
#include "s3/s3_url.h"

int gulpdb_layering_probe_ok() { return 0; }
