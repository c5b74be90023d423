// JPEG files as frames: a frame folder's files or a JPEG image, either stored
// byte for byte (keep_jpeg: only the header is decoded, to refuse files that
// are not JPEG) or decoded, resized by the short edge when asked, and encoded
// again with the ingest's encoder settings. Uses the calling thread's codec
// instances, so workers run it in parallel.
#ifndef GULPDB_INGEST_JPEG_FILES_H_
#define GULPDB_INGEST_JPEG_FILES_H_

#include <string>
#include <vector>

#include "ingest/frame_settings.h"

namespace gulpdb::ingest {

// The frames of `paths`, in order. Throws the codec's error (its type kept)
// naming the file that cannot be decoded, or the file layer's error for one
// that cannot be read.
std::vector<std::string> LoadJpegFiles(const std::vector<std::string>& paths,
                                       const FrameSettings& settings);

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_JPEG_FILES_H_
