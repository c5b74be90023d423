// Bilinear resampling of 8-bit interleaved images, with pixel centres aligned as
// OpenCV's INTER_LINEAR (the filter of the cv2.resize GulpIO calls): output
// column x of a `sw` -> `dw` resize samples source column
// (x + 0.5) * sw / dw - 0.5, clamped to the image, from its two neighbours,
// with 11-bit fixed-point weights as OpenCV's 8-bit path (results within one
// level of the exact interpolation, rounded to nearest). Separable: each
// source row is interpolated across once and the two rows an output row needs
// are blended. Used by ingest (resize by the short edge, as GulpIO) and by
// decoding to a fixed output size (jpeg.h "Fixed-size output"), which asks for
// a window of the resized image only, so that pixels cropped away are never
// computed.
//
// Why this filter and not libswscale (FFmpeg 5.1, Debian 12). Measured by
// bench/resize_bench.cc on real frames (20 of realshort.mp4 at 320x240 and of
// cockatoo.mp4 at 1280x720, JPEG quality 90, 4:2:0), CPU time per frame on
// one thread (best of 9; g++ 12 -O3 for x86-64 (SSE2), a 2-vCPU VM shared
// with other builds), quality against an exact area average of the full-size
// decode (double precision): mean and max absolute error over every channel,
// 0-255.
//
//   the filter alone, whole full-size decode -> output   us/frame  mean err  max
//   320x240 -> 112x112    this bilinear                      44      1.75     97
//                         swscale SWS_AREA (*)              133      0.01      1
//                         swscale SWS_BILINEAR (*)          162      0.90     32
//   1280x720 -> 224x224   this bilinear                     386      0.77     85
//                         swscale SWS_AREA (*)              980      0.01      1
//                         swscale SWS_BILINEAR (*)         1297      0.39     30
//
//   what fixed-size decoding does: DCT-scaled decode (jpeg.h's rule), then
//   short edge + centre crop           resample  decode+resample  mean err  max
//   320x240 -> 112x112, 1/2   this bilinear   28        178           1.51     57
//                             SWS_AREA (*)    68        231           1.52     57
//   1280x720 -> 224x224, 1/2  this bilinear  180       1115           0.54     25
//                             SWS_AREA (*)   743       1688           0.52     16
//   1280x720 -> 112x112, 1/4  this bilinear   37        876           0.98     25
//                             SWS_AREA (*)   186       1020           1.00     20
//   (*) with SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP | SWS_ACCURATE_RND,
//   which made swscale both faster and more accurate than its defaults.
//
// Alone on a full-size frame, swscale's area filter is the better low-pass
// filter. But decoding first shrinks the frame with libjpeg's DCT scaling, so
// the last step shrinks by less than 2x, where bilinear loses nothing that
// matters (the same mean error as SWS_AREA against the reference; the max
// differs on a few edge pixels) and costs 2.4-5x less: it computes only the
// window that is kept, while swscale scales the whole frame and the window is
// then copied out. With swscale the whole 1280x720 -> 224x224 read would take
// half as long again. This filter also handles any size down to 1x1, has no
// SIMD over-reads to pad for, and writes straight into the caller's buffer.
// (The same filter in floating point, as ingest had it, took 52, 259 and 54
// us for the three decode-path rows.)
//
// Pure functions, thread-safe.
#ifndef GULPDB_ENGINE_CODEC_RESAMPLE_H_
#define GULPDB_ENGINE_CODEC_RESAMPLE_H_

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

#endif  // GULPDB_ENGINE_CODEC_RESAMPLE_H_
