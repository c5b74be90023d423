// Decoded reads: JPEG bytes from the chunk files, then TurboJPEG into one
// buffer per request, frames decoded in parallel on the dataset's pool.
#include <cstdlib>

#include "engine/dataset_impl.h"
#include "gulpdb/error.h"

namespace gulpdb {

void DecodedFrames::Free::operator()(uint8_t* p) const { std::free(p); }

bool DecodedFrames::uniform() const {
  if (shapes_.empty()) return false;
  for (const ImageShape& s : shapes_) {
    if (s != shapes_.front()) return false;
  }
  return true;
}

engine::ThreadPool& Dataset::Impl::DecodePool() const {
  std::call_once(pool_once_, [this] {
    const size_t n = options.decode_threads == 0 ? engine::ThreadPool::DefaultSize()
                                                 : options.decode_threads;
    pool_ = std::make_unique<engine::ThreadPool>(n);
  });
  return *pool_;
}

std::vector<JpegFrames> Dataset::ReadJpegBatch(const std::vector<FrameRequest>& requests) const {
  std::vector<JpegFrames> out;
  out.reserve(requests.size());
  for (const FrameRequest& r : requests) out.push_back(ReadJpegs(r.id, r.selection));
  return out;
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
  const std::vector<JpegFrames> jpegs = ReadJpegBatch(requests);
  // Rethrows a codec error with the frame it belongs to.
  const auto with_context = [&](size_t request, size_t frame, const Error& e) {
    ThrowError(e.code(), "decode id '" + requests[request].id + "' frame " +
                             std::to_string(jpegs[request].indices()[frame]) + " in " +
                             impl_->dir + ": " + e.what());
  };
  std::vector<DecodedFrames> out(requests.size());
  std::vector<std::pair<size_t, size_t>> jobs;  // (request, frame)
  JpegDecoder& header_reader = ThreadLocalDecoder();
  for (size_t r = 0; r < requests.size(); ++r) {
    DecodedFrames& d = out[r];
    d.indices_ = jpegs[r].indices();
    d.shapes_.reserve(jpegs[r].size());
    d.offsets_.reserve(jpegs[r].size());
    for (size_t i = 0; i < jpegs[r].size(); ++i) {
      const std::string_view jpeg = jpegs[r][i];
      try {
        d.shapes_.push_back(header_reader.OutputShape(
            reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size(), options));
      } catch (const Error& e) {
        with_context(r, i, e);
      }
      d.offsets_.push_back(d.byte_size_);
      d.byte_size_ += d.shapes_.back().bytes();
      jobs.emplace_back(r, i);
    }
    d.buffer_.reset(static_cast<uint8_t*>(std::malloc(d.byte_size_ == 0 ? 1 : d.byte_size_)));
    if (!d.buffer_) {
      throw ResourceExhaustedError("decode id '" + requests[r].id + "': cannot allocate " +
                                   std::to_string(d.byte_size_) + " bytes");
    }
  }
  impl_->DecodePool().ParallelFor(jobs.size(), [&](size_t j) {
    const auto [r, i] = jobs[j];
    const std::string_view jpeg = jpegs[r][i];
    DecodedFrames& d = out[r];
    try {
      ThreadLocalDecoder().DecodeInto(reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size(),
                                      options, d.mutable_data(i), d.shapes_[i].bytes());
    } catch (const Error& e) {
      with_context(r, i, e);
    }
  });
  return out;
}

}  // namespace gulpdb
