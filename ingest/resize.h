// Resizing for ingest, as GulpIO does it: the short edge becomes the asked
// size and the long one trunc(size * long / short) (resize_by_short_edge),
// with a bilinear filter whose pixel centres are aligned as OpenCV's
// INTER_LINEAR (the default of the cv2.resize GulpIO calls). Used for JPEG
// sources; ffmpeg applies the same rule to videos itself. Pure functions,
// thread-safe.
#ifndef GULPDB_INGEST_RESIZE_H_
#define GULPDB_INGEST_RESIZE_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace gulpdb::ingest {

// (width, height) of a `width` x `height` image whose short edge becomes `size`.
std::pair<int, int> ShortEdgeSize(int width, int height, int size);

// Resizes the `sw` x `sh` image of `channels` interleaved 8-bit channels at
// `src` to `dw` x `dh`.
std::vector<uint8_t> ResizeBilinear(const uint8_t* src, int sw, int sh, int channels, int dw,
                                    int dh);

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_RESIZE_H_
