// The read API of Dataset (gulpdb/dataset.h): stored bytes (ReadJpegs,
// ReadJpegBatch, ReadH264Stream) through the chunk reader
// (engine/core/chunk_reader.h), and decoded reads (engine/core/decoded_read.h):
// JPEG bytes from the chunk files, then TurboJPEG into one buffer per
// request, frames decoded in parallel on the dataset's pool.
#include "engine/core/decoded_read.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/codec/frame_geometry.h"
#include "engine/codec/jpeg_codec.h"
#include "engine/core/buffer_pool.h"
#include "engine/core/chunk_reader.h"
#include "engine/core/dataset_impl.h"
#include "engine/core/h264_read.h"
#include "gulpdb/error.h"

namespace gulpdb {

void StoredFrames::Free::operator()(char* p) const {
  if (p == nullptr) return;
  uint8_t* block = reinterpret_cast<uint8_t*>(p) - engine::kJpegBufferHeader;
  size_t capacity = 0;
  std::memcpy(&capacity, block, sizeof(capacity));
  engine::BufferPool::Get().Give(block, capacity);
}

StoredFrames Dataset::ReadJpegs(std::string_view id, const Selection& selection) const {
  // One pread (or ranged GET) per run of adjacent frames: engine/core/chunk_reader.h.
  return std::move(
      engine::ReadJpegRequests(*impl_, {engine::StoredFramesRequest{id, &selection}}).front());
}

std::string Dataset::ReadH264Stream(std::string_view id) const {
  return engine::ReadH264StreamOf(*impl_, id);
}

void DecodedFrames::Free::operator()(uint8_t* p) const {
  engine::BufferPool::Get().Give(p, capacity);
}

bool DecodedFrames::uniform() const {
  if (shapes_.empty()) return false;
  for (const ImageShape& s : shapes_) {
    if (s != shapes_.front()) return false;
  }
  return true;
}

util::ThreadPool& Dataset::Impl::DecodePool() const {
  std::call_once(pool_once_, [this] {
    const size_t n =
        options.decode_threads == 0 ? util::ThreadPool::DefaultSize() : options.decode_threads;
    pool_ = std::make_unique<util::ThreadPool>(n);
  });
  return *pool_;
}

std::vector<StoredFrames> Dataset::ReadJpegBatch(const std::vector<FrameRequest>& requests) const {
  // Every run of every request at once (concurrently for a remote dataset):
  // engine/core/chunk_reader.h.
  std::vector<engine::StoredFramesRequest> views;
  views.reserve(requests.size());
  for (const FrameRequest& r : requests)
    views.push_back(engine::StoredFramesRequest{r.id, &r.selection});
  return engine::ReadJpegRequests(*impl_, views);
}

void Dataset::Prefetch(const std::vector<FrameRequest>& requests) const {
  std::vector<engine::StoredFramesRequest> views;
  views.reserve(requests.size());
  for (const FrameRequest& r : requests)
    views.push_back(engine::StoredFramesRequest{r.id, &r.selection});
  engine::PrefetchRequests(*impl_, views);
}

void Dataset::CheckDecodeOptions(const DecodeOptions& options) const {
  if (impl_->codec == Codec::kH264) engine::CheckH264Options(*impl_, options);
  engine::CheckOutputOptions(options);
}

DecodedFrames Dataset::ReadFrames(std::string_view id, const Selection& selection,
                                  const DecodeOptions& options) const {
  std::vector<FrameRequest> one(1);
  one[0].id = std::string(id);
  one[0].selection = selection;
  return std::move(ReadBatch(one, options).front());
}

std::vector<DecodedFrames> Dataset::ReadBatch(const std::vector<FrameRequest>& requests,
                                              const DecodeOptions& options) const {
  return ReadDecoded(requests, options, /*always_verify=*/false);
}

std::vector<DecodedFrames> Dataset::ReadDecoded(const std::vector<FrameRequest>& requests,
                                                const DecodeOptions& options,
                                                bool always_verify) const {
  return engine::DecodedRead::Run(
      *impl_, requests, options,
      always_verify ? engine::Verify::kAlways : engine::Verify::kAsOpened);
}

std::vector<DecodedFrames> engine::DecodedRead::Run(const DatasetImpl& ds,
                                                    const std::vector<FrameRequest>& requests,
                                                    const DecodeOptions& options, Verify verify) {
  // A random crop takes one window position per request (jpeg.h).
  std::vector<DecodeOptions> request_options(requests.size(), options);
  if (options.crop == CropMode::kRandom) {
    for (size_t r = 0; r < requests.size(); ++r) {
      request_options[r].crop_seed = engine::RequestCropSeed(options.crop_seed, r);
    }
  }
  std::vector<DecodedFrames> out(requests.size());
  // Lays out request r's frames of the shapes out[r] lists, one after
  // another, in a buffer from the pool (the old one going back first, for a
  // request laid out again).
  const auto lay_out = [&](size_t r) {
    DecodedFrames& d = out[r];
    d.offsets_.clear();
    d.offsets_.reserve(d.shapes_.size());
    d.byte_size_ = 0;
    for (const ImageShape& shape : d.shapes_) {
      d.offsets_.push_back(d.byte_size_);
      d.byte_size_ += shape.bytes();
    }
    d.buffer_.reset();
    DecodedFrames::Free deleter;
    uint8_t* buffer = engine::BufferPool::Get().Take(d.byte_size_, &deleter.capacity);
    if (buffer == nullptr) {
      throw OutOfMemoryError("decode id '" + requests[r].id + "': cannot allocate " +
                             std::to_string(d.byte_size_) + " bytes");
    }
    d.buffer_ = std::unique_ptr<uint8_t, DecodedFrames::Free>(buffer, deleter);
  };
  if (ds.codec == Codec::kH264) {
    // engine/core/h264_read.h: packets read as JPEG frames are, decoded by
    // group of pictures, laid out here as JPEG frames are.
    engine::DecodedSink sink;
    sink.lay_out = [&](size_t r, const std::vector<uint32_t>& indices, const ImageShape& shape) {
      out[r].indices_ = indices;
      out[r].shapes_.assign(indices.size(), shape);
      lay_out(r);
    };
    sink.data = [&](size_t r, size_t i) { return out[r].mutable_data(i); };
    engine::ReadH264Batch(ds, requests, request_options, sink, verify);
    return out;
  }
  std::vector<engine::StoredFramesRequest> views;
  views.reserve(requests.size());
  for (const FrameRequest& r : requests)
    views.push_back(engine::StoredFramesRequest{r.id, &r.selection});
  const std::vector<StoredFrames> jpegs = engine::ReadJpegRequests(ds, views, verify);
  // Rethrows a codec error, of its own type, with the frame it belongs to.
  const auto with_context = [&](size_t request, size_t frame, const Error& e) {
    e.ThrowWithContext("decode id '" + requests[request].id + "' frame " +
                       std::to_string(jpegs[request].indices()[frame]) + " in " + ds.dir + ": ");
  };
  // The frames of a video nearly always share one shape. So each request is
  // laid out as if all its frames had the shape of its first, and each frame
  // is decoded straight into place, reading its header once
  // (engine::DecodeIntoIfShape); a request with a frame of another shape is
  // laid out again from every frame's header and decoded again (below).
  // Against a separate header pass over every frame this saves, per frame, a
  // TurboJPEG instance and a header parse (about 14,000 of 3.15 million
  // instructions for a 320x240 frame, callgrind) and, per call, one hand-off
  // to the decode threads and back (bench/README.md, "Decoding").
  const auto frame_bytes = [&](size_t r, size_t i) {
    return reinterpret_cast<const uint8_t*>(jpegs[r][i].data());
  };
  std::vector<std::pair<size_t, size_t>> jobs;  // (request, frame)
  for (size_t r = 0; r < requests.size(); ++r) {
    DecodedFrames& d = out[r];
    d.indices_ = jpegs[r].indices();
    if (!jpegs[r].empty()) {
      try {
        const ImageShape first = ThreadLocalDecoder().OutputShape(
            frame_bytes(r, 0), jpegs[r][0].size(), request_options[r]);
        d.shapes_.assign(jpegs[r].size(), first);
      } catch (const Error& e) {
        with_context(r, 0, e);
      }
    }
    lay_out(r);
    for (size_t i = 0; i < jpegs[r].size(); ++i) jobs.emplace_back(r, i);
  }
  util::ThreadPool& pool = ds.DecodePool();
  const std::unique_ptr<std::atomic<bool>[]> other_shape(new std::atomic<bool>[requests.size()]());
  pool.ParallelFor(jobs.size(), [&](size_t j) {
    const auto [r, i] = jobs[j];
    if (other_shape[r].load(std::memory_order_relaxed)) return;  // decoded again below
    DecodedFrames& d = out[r];
    try {
      if (!engine::DecodeIntoIfShape(frame_bytes(r, i), jpegs[r][i].size(), request_options[r],
                                     d.shapes_[i], d.mutable_data(i))) {
        other_shape[r].store(true, std::memory_order_relaxed);
      }
    } catch (const Error& e) {
      with_context(r, i, e);
    }
  });

  // Requests whose frames differ in shape: every header first, then the pixels.
  jobs.clear();
  for (size_t r = 0; r < requests.size(); ++r) {
    if (!other_shape[r].load()) continue;
    for (size_t i = 0; i < jpegs[r].size(); ++i) jobs.emplace_back(r, i);
  }
  if (jobs.empty()) return out;
  pool.ParallelFor(jobs.size(), [&](size_t j) {
    const auto [r, i] = jobs[j];
    try {
      out[r].shapes_[i] = ThreadLocalDecoder().OutputShape(frame_bytes(r, i), jpegs[r][i].size(),
                                                           request_options[r]);
    } catch (const Error& e) {
      with_context(r, i, e);
    }
  });
  for (size_t r = 0; r < requests.size(); ++r) {
    if (other_shape[r].load()) lay_out(r);
  }
  pool.ParallelFor(jobs.size(), [&](size_t j) {
    const auto [r, i] = jobs[j];
    DecodedFrames& d = out[r];
    try {
      ThreadLocalDecoder().DecodeInto(frame_bytes(r, i), jpegs[r][i].size(), request_options[r],
                                      d.mutable_data(i), d.shapes_[i].bytes());
    } catch (const Error& e) {
      with_context(r, i, e);
    }
  });
  return out;
}

}  // namespace gulpdb
