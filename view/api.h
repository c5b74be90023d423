// The JSON and image answers of the viewer's API (docs/view.md, "The API"),
// apart from HTTP: the server (server.cc) checks the token, then hands the
// path and the query parameters here. Every answer reads the dataset in
// short reads of its own (no read transaction outlives a request); ids are
// looked up in the index, never used as paths.
//
//   /api/info     the dataset: videos, codec, splits, meta indexes
//   /api/videos   a page of the grid: start, count, filter, split; with
//                 thumbs=1 each video's thumbnail too (its middle frame, as
//                 /api/frame makes it, base64), all made as one batch
//   /api/video    one video's record: id
//   /api/frame    one frame as a JPEG: id, frame, max (longest side; 0: own size)
//   /api/check    the check status of one video's frames: id
//   /api/charts   the charts, counted in the background (poll until done)
//
// Errors are JSON {"error": text, "kind": gulpdb's error kind} with 400 (a
// bad parameter, a bad filter), 404 (no such id, frame, split or path), 500
// (damaged data: the text says what and where), 502 (the object store
// failed) or 503 (out of memory).
//
// Thread safety: Handle may be called from any number of threads at once.
#ifndef GULPDB_VIEW_API_H_
#define GULPDB_VIEW_API_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/dataset.h"
#include "view/charts.h"
#include "view/listing.h"
#include "view/view.h"

namespace gulpdb::view {

struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string cache_control = "no-store";
};

// The largest page of the grid one request may ask for.
inline constexpr uint64_t kMaxPage = 500;
// The largest side a frame may be asked for at (0 asks for its own size).
inline constexpr uint64_t kMaxFrameSide = 4096;

class Api {
 public:
  Api(std::shared_ptr<const Dataset> dataset, ShowOptions show);

  // The value of query parameter `name`, or nullopt when the request has none.
  using Params = std::function<std::optional<std::string>(const char* name)>;
  // The answer to a GET of `path` (below /api/); 404 for any other path.
  Reply Handle(std::string_view path, const Params& params);

  // Stops the chart count (the server's shutdown).
  void Stop();

 private:
  Reply Info();
  Reply Videos(const Params& params);
  Reply Video(const Params& params);
  Reply Frame(const Params& params);
  Reply Check(const Params& params);
  Reply Charts();
  // The thumbnails of the grid's cells: the middle frame of each video, in
  // one batch (Dataset::ReadThumbnailBatch: concurrent range requests for a
  // dataset in an object store, every decode in parallel). A video whose
  // thumbnail cannot be made gets its error's text instead.
  struct Thumbnail {
    std::string jpeg;
    std::string error;
  };
  std::vector<Thumbnail> Thumbnails(const std::vector<VideoInfo>& videos) const;

  std::shared_ptr<const Dataset> dataset_;
  ShowOptions show_;
  Listing listing_;
  ChartScan charts_;
};

// The JSON error answer for `status`.
Reply ErrorReply(int status, std::string_view kind, std::string_view text);

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_API_H_
