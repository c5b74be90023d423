// The read path of JPEG bytes, shared by every read of a Dataset (ReadJpegs,
// ReadJpegBatch, and through them ReadFrames and ReadBatch), for local and
// remote datasets alike:
//
//   1. one short read transaction looks up every request's video record
//      (and, locally, opens its chunk file through the dataset's cache);
//   2. each selection is resolved and its frames grouped into runs that are
//      adjacent in their chunk;
//   3. every run of every request is read: one pread per run from a local
//      chunk file, or one HTTP range request per run from a remote chunk
//      object, all runs of the call issued at once over the store's kept-alive
//      connections (remote::S3Client::GetRanges);
//   4. frames are checked against their stored CRC-32C, on the bytes just
//      read and before anything decodes them: every frame of a local read
//      (each run as soon as its pread returns, while it is in cache) unless
//      the dataset was opened with OpenOptions::verify_checksums = false,
//      and always for a remote dataset (bytes that crossed a network; frames
//      that fail and came from the node's frame cache are dropped from it and
//      read again from the store once, ChunkSource::Forget), for a
//      stored H.264 stream handed out whole, and for Verify::kAlways (work
//      that writes what it reads under new checksums or a new form: merge,
//      compaction, export). An H.264 decoded read checks every packet it
//      feeds the decoder, the ones before the selected frames included: a
//      damaged packet damages every frame decoded after it. A video stored
//      without checksums (a dataset made with checksums off) is read
//      unverified.
//
// A remote read never asks for a byte past its chunk's committed length in
// the manifest: a frame that would need one is a CorruptionError.
//
// Thread safety: as Dataset (any number of threads at once).
#ifndef GULPDB_ENGINE_CORE_CHUNK_READER_H_
#define GULPDB_ENGINE_CORE_CHUNK_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/chunk_bytes.h"
#include "engine/core/dataset_impl.h"

namespace gulpdb::engine {

struct StoredFramesRequest {
  std::string_view id;
  const Selection* selection = nullptr;  // must outlive the call
};

// Whether a read checks frames against their CRC-32C (see step 4 above).
enum class Verify {
  kAsOpened,  // as the dataset was opened (OpenOptions::verify_checksums)
  kAlways,    // whatever the dataset was opened with
};

// The JPEG bytes of every request, in request order. Throws as
// Dataset::ReadJpegs: IdNotFoundError for a missing id, OutOfRangeError for a
// bad frame index (before any byte is read), CorruptionError for a frame
// whose bytes or checksum are wrong (naming the id, the frame, the file, the
// offset and both checksums), IoError (AccessDeniedError for HTTP 403) when
// the file system or the object store fails.
// On an h264 dataset: InvalidArgumentError (its frames are not JPEGs).
std::vector<StoredFrames> ReadJpegRequests(const DatasetImpl& impl,
                                           const std::vector<StoredFramesRequest>& requests,
                                           Verify verify = Verify::kAsOpened);

// Dataset::Prefetch: plans the reads of `requests` as ReadJpegRequests
// (or, on an h264 dataset, the packets decoding needs) and hands their
// ranges to the remote source's read-ahead (ChunkSource::Prefetch). Throws
// as ReadJpegRequests for a missing id or a bad selection; nothing for a
// local dataset.
void PrefetchRequests(const DatasetImpl& impl, const std::vector<StoredFramesRequest>& requests);

// The stored bytes of an H.264 video's frames (its packets), for the reads
// that decode them and for Dataset::ReadH264Stream, through the same path as
// JPEG bytes (local preads or remote ranges, one per run of adjacent packets,
// the same checks of committed lengths and CRC-32Cs).
struct StoredPackets {
  StoredFrames bytes;              // the packets read, in bytes.indices() order (ascending)
  index::VideoRecord record;       // frames, checksums, keyframes and parameters
  std::vector<uint32_t> selected;  // the selection's frames, in its order
};
enum class PacketScope {
  // The packets decoding the selection needs: for each group of pictures it
  // touches, from its keyframe through the last frame selected in it.
  kDecode,
  // Every packet, CRC-32Cs always checked (the stored stream).
  kStream,
};
// Throws as ReadJpegRequests, and InvalidArgumentError on a JPEG dataset;
// CorruptionError for a record that is not an H.264 video's.
std::vector<StoredPackets> ReadPacketRequests(const DatasetImpl& impl,
                                              const std::vector<StoredFramesRequest>& requests,
                                              PacketScope scope, Verify verify = Verify::kAsOpened);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_CHUNK_READER_H_
