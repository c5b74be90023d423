// The dataset viewer: `gulpdb view` and Python's gulpdb.view. A read-only
// web page over an opened dataset (a grid of playing thumbnails at any
// dataset size, a filter, splits, charts, a video page with its frames and
// their check status), served by a small HTTP server on a local address and
// guarded by a random token; and the static report, the same contact sheet
// written as files (docs/view.md says what the page shows and what the
// server refuses).
//
// The server reads the dataset only through its public API: every request
// runs its own short reads (no read transaction is held between requests),
// so commits made while it runs show on the next request. Nothing it does
// writes to the dataset. Ids arrive as query parameters and are looked up
// in the index; nothing a client sends becomes a path.
//
// Thread safety: a Server serves from threads of its own; Stop may be called
// from any thread, and more than once. WriteStaticReport may run in any
// thread.
#ifndef GULPDB_VIEW_VIEW_H_
#define GULPDB_VIEW_VIEW_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gulpdb/dataset.h"

namespace gulpdb::view {

// How the grid and the report show a video: its label is the first meta
// entry's value of `label_key`, its thumbnail the middle frame made no
// larger than `thumb_side` (Dataset::ReadThumbnails).
struct ShowOptions {
  std::string label_key = "label";
  int thumb_side = 160;  // kMinThumbSide..kMaxThumbSide
};
inline constexpr int kMinThumbSide = 16;
inline constexpr int kMaxThumbSide = 1024;

struct ServerOptions {
  // Where to listen: an IPv4 or IPv6 address, or a host name. Anything other
  // than a loopback address (IsLoopbackHost) reaches other machines: the
  // token still guards every request, but the caller should warn.
  std::string host = "127.0.0.1";
  int port = 0;  // 0: a free port chosen by the system
  ShowOptions show;
  // Threads that answer requests (a browser opens about six connections).
  int threads = 8;
};

class Server {
 public:
  // Serves `dataset` (opened read-only; shared, so that it lives while the
  // server does) on options.host and options.port, from threads of its own,
  // and returns once it listens. The token is 256 bits from the kernel's
  // random source. Throws InvalidArgumentError for a port outside 0..65535,
  // a number of threads outside 1..256, a thumbnail side outside
  // kMinThumbSide..kMaxThumbSide, an empty label key or host, or a
  // read-write dataset, and IoError
  // naming the address when it cannot be bound (in use, not an address of
  // this machine).
  static std::unique_ptr<Server> Start(std::shared_ptr<const Dataset> dataset,
                                       const ServerOptions& options);
  // Stops it (Stop).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // "http://HOST:PORT/?token=TOKEN": the page, with the token that opens it.
  const std::string& url() const;
  const std::string& token() const;
  int port() const;

  // Stops listening, lets the requests in flight finish (an idle kept-alive
  // connection is closed within two seconds) and stops the chart scan.
  // Returns when every thread of the server has ended.
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True for an address that only this machine reaches: 127.0.0.0/8, ::1,
// "localhost".
bool IsLoopbackHost(std::string_view host);

struct StaticReportOptions {
  // The filter's text, as the page's filter box takes it (empty: every
  // video); the videos shown are the first `limit` that match.
  std::string where;
  uint64_t limit = 200;
  ShowOptions show;
};

struct StaticReport {
  uint64_t matched = 0;  // videos that match the filter
  uint64_t shown = 0;    // of them, on the sheet
  uint64_t damaged = 0;  // shown videos whose thumbnail could not be made
};

// Writes the contact sheet of `dataset` into `out`: out/index.html (inline
// CSS, the label chart as inline SVG, no reference to any network address)
// and out/thumbs/<n>.jpg, one per video shown, named by its place on the
// sheet (never by its id). It opens from disk without a server. `out` must
// not exist, or be an empty directory; its parent must exist. Everything is
// written into a new directory beside `out` and renamed into place last, so
// a failure leaves `out` as it was and nothing beside it. A video whose
// thumbnail cannot be made is shown as damaged, with the error. Throws
// InvalidArgumentError for an `out` that exists and is not an empty
// directory, a bad filter or a limit of 0; NotFoundError for a missing
// parent; what reading the dataset and writing the files throw otherwise.
StaticReport WriteStaticReport(const Dataset& dataset, const std::string& out,
                               const StaticReportOptions& options);

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_VIEW_H_
