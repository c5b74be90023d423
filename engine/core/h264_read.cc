#include "engine/core/h264_read.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "engine/codec/frame_geometry.h"
#include "engine/codec/resample.h"
#include "engine/core/chunk_reader.h"
#include "gulpdb/error.h"
#ifdef GULPDB_HAVE_H264
#include "engine/video/gop_decoder.h"
#endif

namespace gulpdb::engine {

std::string ReadH264StreamOf(const DatasetImpl& impl, std::string_view id) {
  const Selection all = Selection::All();
  std::vector<StoredPackets> read =
      ReadPacketRequests(impl, {StoredFramesRequest{id, &all}}, PacketScope::kStream);
  const StoredFrames& packets = read.front().bytes;
  size_t total = 0;
  for (size_t i = 0; i < packets.size(); ++i) total += packets[i].size();
  std::string out;
  out.reserve(total);
  for (size_t i = 0; i < packets.size(); ++i) out.append(packets[i]);
  return out;
}

// The JPEG-only options, refused before anything is read.
void CheckH264Options(const DatasetImpl& impl, const DecodeOptions& options) {
  const std::string where = "read frames in " + impl.dir + ": ";
  if (options.dct != DecodeOptions().dct) {
    throw InvalidArgumentError(where +
                               "the dataset's codec is h264; a DCT method (dct=) only means "
                               "something for JPEG frames");
  }
  if (options.scale_denom != 1) {
    throw InvalidArgumentError(where +
                               "the dataset's codec is h264; a decode-time downscale "
                               "(scale_denom, downscale=) only means something for JPEG frames; "
                               "ask for an output size instead");
  }
  if (options.format == PixelFormat::kGray) {
    throw InvalidArgumentError(where +
                               "the dataset's codec is h264, whose frames decode to RGB; "
                               "grayscale output is not supported for it");
  }
}

#ifdef GULPDB_HAVE_H264

namespace {

// Where one request's decoded frames go, and how they get there.
struct RequestPlan {
  video::VideoParams params;
  video::VideoPackets packets;
  ImageShape shape;         // of every output frame
  bool fixed_size = false;  // resize/crop/pad from the decoded frame
  FrameGeometry geometry;   // when fixed_size
  bool bgr = false;
};

// One group of pictures of one request: decoded in one go, on one thread.
struct Job {
  size_t request = 0;
  std::vector<size_t> positions;  // output frames whose frame lies in this GOP
};

// Writes the decoded RGB frame `rgb` (the video's size) into `out` as
// `plan` says (the JPEG path's geometry, jpeg.h "Fixed-size output").
void Place(const RequestPlan& plan, const uint8_t* rgb, uint8_t* out) {
  PlaceFrame(rgb, plan.params.width, plan.params.height, 3, plan.geometry, plan.shape, out);
}

void SwapRedBlue(uint8_t* pixels, size_t bytes) {
  for (size_t i = 0; i + 2 < bytes; i += 3) std::swap(pixels[i], pixels[i + 2]);
}

}  // namespace

void ReadH264Batch(const DatasetImpl& impl, const std::vector<FrameRequest>& requests,
                   const std::vector<DecodeOptions>& request_options, const DecodedSink& sink,
                   Verify verify) {
  for (const DecodeOptions& o : request_options) {
    CheckH264Options(impl, o);
    CheckOutputOptions(o);  // bad sizes before any byte is read
  }
  std::vector<StoredFramesRequest> views;
  views.reserve(requests.size());
  for (const FrameRequest& r : requests) views.push_back(StoredFramesRequest{r.id, &r.selection});
  const std::vector<StoredPackets> stored =
      ReadPacketRequests(impl, views, PacketScope::kDecode, verify);

  std::vector<RequestPlan> plans(requests.size());
  std::vector<Job> jobs;
  for (size_t r = 0; r < requests.size(); ++r) {
    const StoredPackets& s = stored[r];
    RequestPlan& plan = plans[r];
    const index::H264Params& p = *s.record.h264;
    plan.params.extradata = p.extradata;
    plan.params.width = static_cast<int>(p.width);
    plan.params.height = static_cast<int>(p.height);
    plan.params.chroma = p.chroma == 1 ? video::ChromaFormat::k444 : video::ChromaFormat::k420;
    plan.packets.id = requests[r].id;
    plan.packets.params = &plan.params;
    plan.packets.frames.resize(s.record.frames.size());
    for (uint32_t k : s.record.keyframes) plan.packets.frames[k].keyframe = true;
    const std::vector<uint32_t>& loaded = s.bytes.indices();
    for (size_t j = 0; j < loaded.size(); ++j) plan.packets.frames[loaded[j]].bytes = s.bytes[j];

    const DecodeOptions& options = request_options[r];
    plan.bgr = options.format == PixelFormat::kBGR;
    plan.fixed_size = CheckOutputOptions(options);
    if (plan.fixed_size) {
      plan.geometry = PlanFrameGeometry(plan.params.height, plan.params.width, options);
      plan.shape = ImageShape{options.out_height, options.out_width, 3};
      // Already the output size: no resampling (as a JPEG frame of that size).
      if (plan.geometry.scaled_height == plan.params.height &&
          plan.geometry.scaled_width == plan.params.width &&
          plan.shape.height == plan.params.height && plan.shape.width == plan.params.width) {
        plan.fixed_size = false;
      }
    } else {
      plan.shape = ImageShape{plan.params.height, plan.params.width, 3};
    }
    sink.lay_out(r, s.selected, plan.shape);

    // One job per group of pictures the selection touches.
    const std::vector<uint32_t>& keys = s.record.keyframes;
    std::vector<size_t> job_of_gop(keys.size(), SIZE_MAX);
    for (size_t i = 0; i < s.selected.size(); ++i) {
      const size_t g =
          static_cast<size_t>(std::upper_bound(keys.begin(), keys.end(), s.selected[i]) -
                              keys.begin()) -
          1;
      if (job_of_gop[g] == SIZE_MAX) {
        job_of_gop[g] = jobs.size();
        jobs.push_back(Job{r, {}});
      }
      jobs[job_of_gop[g]].positions.push_back(i);
    }
  }

  impl.DecodePool().ParallelFor(jobs.size(), [&](size_t j) {
    const Job& job = jobs[j];
    const RequestPlan& plan = plans[job.request];
    const std::vector<uint32_t>& selected = stored[job.request].selected;
    const size_t n = job.positions.size();
    std::vector<int64_t> frames(n);
    std::vector<uint8_t*> outs(n);
    // Frames to resize are decoded into a scratch buffer first.
    thread_local std::vector<uint8_t> scratch;
    const size_t frame_bytes =
        static_cast<size_t>(plan.params.width) * static_cast<size_t>(plan.params.height) * 3;
    if (plan.fixed_size && scratch.size() < n * frame_bytes) scratch.resize(n * frame_bytes);
    for (size_t i = 0; i < n; ++i) {
      frames[i] = selected[job.positions[i]];
      outs[i] = plan.fixed_size ? scratch.data() + i * frame_bytes
                                : sink.data(job.request, job.positions[i]);
    }
    try {
      video::GopDecoder::ForThisThread().DecodeInto(plan.packets, frames.data(), n, outs.data());
    } catch (const Error& e) {
      e.ThrowWithContext("read id '" + requests[job.request].id + "' in " + impl.dir + ": ");
    }
    for (size_t i = 0; i < n; ++i) {
      uint8_t* out = sink.data(job.request, job.positions[i]);
      if (plan.fixed_size) Place(plan, outs[i], out);
      if (plan.bgr) SwapRedBlue(out, plan.shape.bytes());
    }
    if (scratch.capacity() > (size_t{64} << 20)) std::vector<uint8_t>().swap(scratch);
  });
}

#else  // !GULPDB_HAVE_H264

void ReadH264Batch(const DatasetImpl& impl, const std::vector<FrameRequest>& /*requests*/,
                   const std::vector<DecodeOptions>& request_options, const DecodedSink& /*sink*/,
                   Verify /*verify*/) {
  for (const DecodeOptions& o : request_options) CheckH264Options(impl, o);
  // Not reached: opening an h264 dataset fails in such a build.
  throw InvalidArgumentError("read frames in " + impl.dir +
                             ": this build of gulpdb has no H.264 support");
}

#endif  // GULPDB_HAVE_H264

}  // namespace gulpdb::engine
