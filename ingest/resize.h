// Resizing for ingest, as GulpIO does it: the short edge becomes the asked
// size and the long one trunc(size * long / short) (resize_by_short_edge).
// The filter is the engine's bilinear one (engine/codec/resample.h), whose pixel
// centres are aligned as OpenCV's INTER_LINEAR (the default of the cv2.resize
// GulpIO calls). Used for JPEG sources; ffmpeg applies the same rule to videos
// itself. Pure functions, thread-safe.
#ifndef GULPDB_INGEST_RESIZE_H_
#define GULPDB_INGEST_RESIZE_H_

#include <utility>

namespace gulpdb::ingest {

// (width, height) of a `width` x `height` image whose short edge becomes `size`.
std::pair<int, int> ShortEdgeSize(int width, int height, int size);

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_RESIZE_H_
