// Bilinear resampling of 8-bit interleaved images, with pixel centres aligned as
// OpenCV's INTER_LINEAR (the filter of the cv2.resize GulpIO calls): output
// column x of a `sw` -> `dw` resize samples source column
// (x + 0.5) * sw / dw - 0.5, clamped to the image, from its two neighbours.
// Used by ingest (resize by the short edge, as GulpIO) and by decoding to a
// fixed output size (jpeg.h "Fixed-size output"), which asks for a window of
// the resized image only, so that pixels cropped away are never computed.
//
// Why this filter and not libswscale (FFmpeg 5.1, Debian 12). Measured by
// bench/resize_bench.cc on real frames (realshort.mp4 at 320x240 and
// cockatoo.mp4 at 1280x720, 20 frames each), CPU time per frame (best of 9; a
// 2-vCPU VM, g++ 12 -O2), quality against an exact area average of the full
// decode in double precision (mean and max absolute error, 0-255):
//
//   filter alone, from the full decode        us/frame   mean err  max err
//   320x240 -> 112x112   this bilinear            51       1.67       79
//                        swscale SWS_AREA (*)    115       0.01        1
//                        swscale SWS_BILINEAR(*) 152       0.88       30
//   1280x720 -> 224x224  this bilinear           322       0.67       84
//                        swscale SWS_AREA (*)    975       0.02        1
//                        swscale SWS_BILINEAR(*)1286       0.34       27
//
//   what decoding does: DCT-scaled decode to the largest 1/d that still
//   covers the scaled frame, then short edge + centre crop
//   320x240 -> 112x112 (1/2)   this bilinear      62       1.46       50
//                              SWS_AREA (*)       70       1.46       51
//   1280x720 -> 224x224 (1/2)  this bilinear     242       0.44       21
//                              SWS_AREA (*)      719       0.42       15
//   1280x720 -> 112x112 (1/4)  this bilinear      60       0.52       25
//                              SWS_AREA (*)      177       0.54       20
//   (*) with SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP | SWS_ACCURATE_RND,
//   which made swscale both faster and more accurate than its defaults.
//
// Alone on a full-size frame, swscale's area filter is the better low-pass
// filter; but decoding first shrinks the frame with libjpeg's DCT scaling, so
// the last step shrinks by less than 2x, where bilinear loses nothing
// measurable (same error as SWS_AREA against the reference) and is 1.1-3x
// faster: it computes only the window that is kept, while swscale scales the
// whole frame, and a crop of it is then copied out. (Decoding the 1280x720
// frame at 1/2 costs about 1050 us, so swscale would add a third to the whole
// read.) It also handles any size down to 1x1 and writes straight into the
// caller's buffer.
//
// Pure functions, thread-safe.
#ifndef GULPDB_ENGINE_RESAMPLE_H_
#define GULPDB_ENGINE_RESAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gulpdb::engine {

// Resizes the `src_width` x `src_height` image of `channels` interleaved
// channels at `src` (rows tightly packed) to `scaled_width` x `scaled_height`
// and writes the `out_width` x `out_height` window of that result whose
// top-left corner is (`window_x`, `window_y`) to `out`, whose rows are
// `out_stride` bytes apart. The window must lie inside the scaled image and
// every size must be >= 1; the caller guarantees both (nothing is checked).
void ResizeBilinearWindow(const uint8_t* src, int src_width, int src_height, int channels,
                          int scaled_width, int scaled_height, int window_x, int window_y,
                          int out_width, int out_height, uint8_t* out, size_t out_stride);

// The whole `dst_width` x `dst_height` resize, in a new tightly packed buffer.
std::vector<uint8_t> ResizeBilinear(const uint8_t* src, int src_width, int src_height, int channels,
                                    int dst_width, int dst_height);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_RESAMPLE_H_
