#include "view/api.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <new>
#include <utility>
#include <vector>

#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/remote.h"
#include "view/text.h"

namespace gulpdb::view {
namespace {

// What the grid and the video page show of a video: a JSON object's
// opening and members, without its closing brace (callers add members).
std::string VideoFields(const VideoInfo& v) {
  std::string out = "{\"id\": " + JsonString(v.id) + ", \"q\": " + JsonString(PercentEncode(v.id)) +
                    ", \"frames\": " + std::to_string(v.frames.size()) +
                    ", \"chunk\": " + std::to_string(v.chunk) +
                    ", \"seq\": " + std::to_string(v.seq);
  // The meta as its JSON text in a string: a record whose meta does not parse
  // shows as text instead of breaking the answer.
  out += ", \"meta\": " + JsonString(v.meta_data);
  return out;
}

// Seconds since the epoch with their milliseconds (VersionInfo::created).
std::string SecondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", seconds);
  return text;
}

int StatusOf(const Error& e) {
  if (dynamic_cast<const OutOfRangeError*>(&e) != nullptr) return 404;  // no such frame
  switch (e.code()) {
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kCorruption:
      return 500;
    case ErrorCode::kIoError:
      return 502;
    case ErrorCode::kBusy:
    case ErrorCode::kResourceExhausted:
      return 503;
  }
  return 500;
}

// A parameter the answer cannot do without.
std::string Required(const Api::Params& params, const char* name) {
  std::optional<std::string> value = params(name);
  if (!value || value->empty()) {
    throw InvalidArgumentError(std::string("the parameter '") + name + "' is missing or empty");
  }
  return std::move(*value);
}

uint64_t CountParam(const Api::Params& params, const char* name, uint64_t fallback, uint64_t min,
                    uint64_t max) {
  const std::optional<std::string> text = params(name);
  if (!text) return fallback;
  const std::optional<uint64_t> value = ParseCount(*text, max);
  if (!value || *value < min) {
    throw InvalidArgumentError(std::string("the parameter '") + name +
                               "' must be a whole number in " + std::to_string(min) + ".." +
                               std::to_string(max) + ", not '" + Shorten(*text, 40) + "'");
  }
  return *value;
}

}  // namespace

Reply ErrorReply(int status, std::string_view kind, std::string_view text) {
  Reply reply;
  reply.status = status;
  reply.body = "{\"error\": " + JsonString(text) + ", \"kind\": " + JsonString(kind) + "}";
  return reply;
}

namespace {

VersionOpener DefaultOpener(const std::string& dir) {
  return [dir](const std::string& name) -> std::shared_ptr<const Dataset> {
    OpenOptions options;
    options.read_only = true;
    options.verify_checksums = true;
    options.version = name;
    return Dataset::Open(dir, options);
  };
}

}  // namespace

Api::Api(std::shared_ptr<const Dataset> dataset, ShowOptions show, std::string version,
         VersionOpener open)
    : show_(std::move(show)),
      versions_(dataset, std::move(version), open ? std::move(open) : DefaultOpener(dataset->dir()),
                show_.label_key) {}

void Api::Stop() { versions_.Stop(); }

Reply Api::Handle(std::string_view path, const Params& params) {
  try {
    static const char* const kPaths[] = {"/api/info",  "/api/videos", "/api/video",
                                         "/api/frame", "/api/check",  "/api/charts"};
    if (std::find(std::begin(kPaths), std::end(kPaths), path) == std::end(kPaths)) {
      return ErrorReply(404, "not found", "no such page");
    }
    const std::shared_ptr<ShownVersion> shown = versions_.Get(params("version"));
    const Dataset& dataset = *shown->dataset;
    if (path == "/api/info") return Info(*shown);
    if (path == "/api/videos") return Videos(*shown, params);
    if (path == "/api/video") return Video(dataset, params);
    if (path == "/api/frame") return Frame(dataset, params);
    if (path == "/api/check") return Check(dataset, params);
    return Charts(*shown);
  } catch (const Error& e) {
    return ErrorReply(StatusOf(e), ErrorCodeName(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return ErrorReply(503, "resource exhausted", "out of memory");
  } catch (const std::exception& e) {
    return ErrorReply(500, "error", e.what());
  }
}

Reply Api::Info(const ShownVersion& shown) {
  const Dataset& ds = *shown.dataset;
  std::string splits = "[";
  std::string splits_note;
  try {
    for (const SplitInfo& s : ds.Splits()) {
      if (splits.size() > 1) splits += ", ";
      splits +=
          "{\"name\": " + JsonString(s.name) + ", \"count\": " + std::to_string(s.count) + "}";
    }
  } catch (const InvalidArgumentError& e) {
    splits_note = e.what();  // an index snapshot that left them out
  }
  splits += "]";
  std::string indexes = "[";
  for (const std::string& key : ds.MetaIndexes()) {
    if (indexes.size() > 1) indexes += ", ";
    indexes += JsonString(key);
  }
  indexes += "]";
  // The selector's versions: HEAD and the tags (none on a dataset in an
  // object store: push does not publish tags).
  std::string tags = "[";
  std::string tags_note;
  try {
    for (const VersionInfo& tag : versions_.Tags()) {
      if (tags.size() > 1) tags += ", ";
      tags += "{\"name\": " + JsonString(tag.name) + ", \"created\": " + SecondsText(tag.created) +
              ", \"videos\": " + std::to_string(tag.videos) +
              ", \"frames\": " + std::to_string(tag.frames) +
              ", \"message\": " + JsonString(tag.message) + "}";
    }
  } catch (const Error& e) {
    tags_note = e.what();  // a damaged tag file: the page says so, HEAD still shows
  }
  tags += "]";
  Reply reply;
  reply.body = "{\"dir\": " + JsonString(ds.dir()) + ", \"videos\": " + std::to_string(ds.Count()) +
               ", \"version\": " + JsonString(shown.name) +
               ", \"served_version\": " + JsonString(versions_.served_name()) +
               ", \"versions\": " + tags + ", \"versions_note\": " + JsonString(tags_note) +
               ", \"codec\": " + JsonString(CodecName(ds.codec())) +
               ", \"remote\": " + (IsRemoteUrl(ds.dir()) ? "true" : "false") +
               ", \"splits\": " + splits + ", \"splits_note\": " + JsonString(splits_note) +
               ", \"meta_indexes\": " + indexes +
               ", \"label_key\": " + JsonString(show_.label_key) +
               ", \"thumb_side\": " + std::to_string(show_.thumb_side) +
               ", \"page\": 60, \"max_page\": " + std::to_string(kMaxPage) + "}";
  return reply;
}

Reply Api::Videos(ShownVersion& shown, const Params& params) {
  const uint64_t start = CountParam(params, "start", 0, 0, uint64_t{1} << 62);
  const uint64_t count = CountParam(params, "count", 60, 1, kMaxPage);
  const std::string filter = params("filter").value_or("");
  const std::string split = params("split").value_or("");
  const bool thumbs = params("thumbs").value_or("") == "1";
  const Listing::Page page = shown.listing.Get(filter, split, start, count);
  std::vector<VideoInfo> found;
  for (const std::string& id : page.ids) {
    // A video removed since the page's ids were read is left out.
    if (std::optional<VideoInfo> video = shown.dataset->Find(id)) {
      found.push_back(std::move(*video));
    }
  }
  const std::vector<Thumbnail> made =
      thumbs ? Thumbnails(*shown.dataset, found) : std::vector<Thumbnail>(found.size());
  std::string videos = "[";
  for (size_t i = 0; i < found.size(); ++i) {
    if (videos.size() > 1) videos += ", ";
    videos += VideoFields(found[i]);
    if (!made[i].jpeg.empty()) videos += ", \"thumb\": \"" + Base64(made[i].jpeg) + "\"";
    if (!made[i].error.empty()) videos += ", \"thumb_error\": " + JsonString(made[i].error);
    videos += "}";
  }
  videos += "]";
  Reply reply;
  reply.body = "{\"total\": " + std::to_string(page.total) +
               ", \"start\": " + std::to_string(page.start) + ", \"videos\": " + videos + "}";
  return reply;
}

std::vector<Api::Thumbnail> Api::Thumbnails(const Dataset& dataset,
                                            const std::vector<VideoInfo>& videos) const {
  std::vector<FrameRequest> requests;
  std::vector<size_t> which;  // the video of each request
  for (size_t i = 0; i < videos.size(); ++i) {
    if (videos[i].frames.empty()) continue;
    FrameRequest r;
    r.id = videos[i].id;
    r.selection = Selection::Indices({static_cast<int64_t>(videos[i].frames.size() / 2)});
    requests.push_back(std::move(r));
    which.push_back(i);
  }
  ThumbnailOptions options;
  options.max_side = show_.thumb_side;
  std::vector<Thumbnail> out(videos.size());
  try {
    const std::vector<StoredFrames> batch = dataset.ReadThumbnailBatch(requests, options);
    for (size_t r = 0; r < batch.size(); ++r) out[which[r]].jpeg = std::string(batch[r][0]);
    return out;
  } catch (const Error&) {
    // One video failed the whole batch: each alone, so that the others show
    // and the failing one says why.
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    try {
      out[which[r]].jpeg =
          std::string(dataset.ReadThumbnails(requests[r].id, requests[r].selection, options)[0]);
    } catch (const Error& e) {
      out[which[r]].error = e.what();
    }
  }
  return out;
}

Reply Api::Video(const Dataset& dataset, const Params& params) {
  const VideoInfo v = dataset.Get(Required(params, "id"));
  uint64_t bytes = 0;
  for (const FrameInfo& f : v.frames) bytes += f.jpeg_size();
  Reply reply;
  reply.body = VideoFields(v) + ", \"bytes\": " + std::to_string(bytes) +
               ", \"codec\": " + JsonString(CodecName(dataset.codec())) +
               ", \"checksums\": " + (v.checksums.empty() ? "false" : "true") +
               ", \"keyframes\": " + std::to_string(v.keyframes.size()) + "}";
  return reply;
}

Reply Api::Frame(const Dataset& dataset, const Params& params) {
  const std::string id = Required(params, "id");
  const uint64_t frame = CountParam(params, "frame", 0, 0, UINT32_MAX);
  ThumbnailOptions options;
  options.max_side = static_cast<int>(
      CountParam(params, "max", static_cast<uint64_t>(show_.thumb_side), 0, kMaxFrameSide));
  const StoredFrames jpegs =
      dataset.ReadThumbnails(id, Selection::Indices({static_cast<int64_t>(frame)}), options);
  Reply reply;
  reply.content_type = "image/jpeg";
  reply.body = std::string(jpegs[0]);
  // The page's address of a frame names the video's insertion sequence,
  // which a replacement changes: the same address is the same image.
  reply.cache_control = "private, max-age=3600";
  return reply;
}

Reply Api::Check(const Dataset& dataset, const Params& params) {
  const VideoCheckReport report = CheckVideo(dataset, Required(params, "id"));
  std::string problems = "[";
  for (const FrameProblem& p : report.frame_problems) {
    if (problems.size() > 1) problems += ", ";
    problems +=
        "{\"frame\": " + std::to_string(p.frame) + ", \"what\": " + JsonString(p.what) + "}";
  }
  for (const std::string& p : report.problems) {
    if (problems.size() > 1) problems += ", ";
    problems += "{\"frame\": null, \"what\": " + JsonString(p) + "}";
  }
  problems += "]";
  Reply reply;
  reply.body = "{\"id\": " + JsonString(report.id) +
               ", \"frames\": " + std::to_string(report.frames) +
               ", \"checksums\": " + (report.checksums ? "true" : "false") +
               ", \"healthy\": " + (report.healthy() ? "true" : "false") +
               ", \"problems\": " + problems + "}";
  return reply;
}

Reply Api::Charts(ShownVersion& shown) {
  const ChartScan::Status status = shown.charts.Poll();
  const ChartData& data = status.data;
  // Nothing counted yet: no chart rather than an empty one.
  const bool none = status.running && data.scanned == 0 && data.labels.empty();
  Reply reply;
  reply.body =
      std::string("{\"running\": ") + (status.running ? "true" : "false") +
      ", \"error\": " + JsonString(status.error) +
      ", \"scanned\": " + std::to_string(data.scanned) +
      ", \"total\": " + std::to_string(data.total) +
      ", \"sampled\": " + (data.sampled ? "true" : "false") +
      ", \"labels_from_index\": " + (data.labels_from_index ? "true" : "false") +
      ", \"labels_svg\": " + JsonString(none ? "" : LabelChartSvg(data, show_.label_key, 24)) +
      ", \"frames_svg\": " +
      JsonString(status.running && data.scanned == 0 ? "" : FramesChartSvg(data)) + "}";
  return reply;
}

}  // namespace gulpdb::view
