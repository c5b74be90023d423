// How an ingest turns source pixels into stored frames: the rate frames are
// taken from videos at, the short-edge size, whether JPEG sources keep their
// bytes, the encoder settings (JPEG, or H.264 through a second ffmpeg) and
// the ffmpeg program. A plain value, shared
// read-only by the workers.
#ifndef GULPDB_INGEST_FRAME_SETTINGS_H_
#define GULPDB_INGEST_FRAME_SETTINGS_H_

#include <string>

#include "gulpdb/jpeg.h"

namespace gulpdb::ingest {

struct FrameSettings {
  double frame_rate = 8;
  int frame_size = 0;
  bool keep_jpeg = false;
  EncodeOptions encode;
  // Videos as H.264 (ffmpeg's libx264): `gop` frames per group of pictures,
  // constant quality `crf`.
  bool h264 = false;
  int gop = 8;
  int crf = 20;
  std::string ffmpeg;
};

}  // namespace gulpdb::ingest

#endif  // GULPDB_INGEST_FRAME_SETTINGS_H_
