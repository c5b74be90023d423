// Decoded reads (Dataset::ReadBatch and ReadFrames; export's transcoding
// reads, which verify every frame): the frames' stored bytes through the
// chunk reader (chunk_reader.h), then TurboJPEG into one buffer per request,
// frames decoded in parallel on the dataset's decode pool; an H.264
// dataset's frames through h264_read.h, laid out the same way
// (decoded_read.cc). Internal to engine/core.
// Thread safety: as Dataset's reads: any number of threads at once.
// Failure modes: as Dataset::ReadBatch (gulpdb/dataset.h); a codec error
// keeps its type and names the id, frame and dataset.
#ifndef GULPDB_ENGINE_CORE_DECODED_READ_H_
#define GULPDB_ENGINE_CORE_DECODED_READ_H_

#include <vector>

#include "engine/core/chunk_reader.h"
#include "engine/core/dataset_impl.h"
#include "gulpdb/dataset.h"

namespace gulpdb::engine {

// A class only so that DecodedFrames may let it fill its buffers.
class DecodedRead {
 public:
  // The frames of every request of `ds`, decoded with `options`; `verify`
  // says which frames' CRC-32C are checked (chunk_reader.h).
  static std::vector<DecodedFrames> Run(const DatasetImpl& ds,
                                        const std::vector<FrameRequest>& requests,
                                        const DecodeOptions& options, Verify verify);
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_DECODED_READ_H_
