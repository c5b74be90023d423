// The viewer's HTTP server: cpp-httplib (the one file that includes it),
// the token check in front of every route, the page's files and the API
// (api.h) behind it.
#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "gulpdb/error.h"
#include "view/api.h"
#include "view/token.h"
#include "view/view.h"
#include "view/web_assets.h"

namespace gulpdb::view {
namespace {

// An idle kept-alive connection is closed after this long, which bounds how
// long Stop waits for a browser that keeps its connections open.
constexpr time_t kKeepAliveSeconds = 2;

// Every answer goes out as a content provider of known length, which httplib
// never compresses: as Debian builds it, it would otherwise brotli-compress
// every text answer (JSON, the page's files) at brotli's slowest quality,
// which costs far more than it saves on loopback (measured: a page of the
// grid waited 1.3 s in Chromium for 60 ms of work).
void SendBytes(httplib::Response& res, std::string_view bytes, const std::string& type,
               std::shared_ptr<const std::string> owner = nullptr) {
  res.set_content_provider(bytes.size(), type,
                           [bytes, owner](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(bytes.data() + offset, length);
                           });
}

void Send(Reply reply, httplib::Response& res) {
  res.status = reply.status;
  res.set_header("Cache-Control", reply.cache_control);
  auto body = std::make_shared<const std::string>(std::move(reply.body));
  SendBytes(res, *body, reply.content_type, body);
}

}  // namespace

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  // 127.0.0.0/8, written as a dotted quad.
  if (host.substr(0, 4) != "127.") return false;
  int parts = 1;
  for (const char c : host) {
    if (c == '.') {
      ++parts;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return parts == 4;
}

struct Server::Impl {
  std::shared_ptr<const Dataset> dataset;
  std::string token;
  std::string url;
  int port = 0;
  std::unique_ptr<Api> api;
  httplib::Server http;
  std::thread listener;
  std::atomic<bool> listen_ended{false};
  std::mutex stop_mutex;
  bool stopped = false;

  // Whether `req` carries the token, in its query (the page's first
  // address) or in the cookie that answer set. Sets the cookie when it came
  // in the query.
  bool Allowed(const httplib::Request& req, httplib::Response& res) const {
    if (req.has_param("token") && TokenMatches(req.get_param_value("token"), token)) {
      res.set_header("Set-Cookie", SetCookieValue(port, token));
      return true;
    }
    return TokenMatches(CookieValue(req.get_header_value("Cookie"), CookieName(port)), token);
  }

  void Route(const httplib::Request& req, httplib::Response& res) {
    const std::string& path = req.path;
    if (path.compare(0, 5, "/api/") == 0) {
      Reply reply = api->Handle(path, [&](const char* name) -> std::optional<std::string> {
        if (!req.has_param(name)) return std::nullopt;
        return req.get_param_value(name);
      });
      Send(std::move(reply), res);
      return;
    }
    const WebAsset* asset = FindWebAsset(path == "/" ? "/index.html" : path);
    if (asset == nullptr) {
      Send(ErrorReply(404, "not found", "no such page"), res);
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    SendBytes(res, asset->bytes, std::string(asset->content_type));  // compiled in: lives forever
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

const std::string& Server::url() const { return impl_->url; }
const std::string& Server::token() const { return impl_->token; }
int Server::port() const { return impl_->port; }

std::unique_ptr<Server> Server::Start(std::shared_ptr<const Dataset> dataset,
                                      const ServerOptions& options) {
  const std::string where = "view " + (dataset ? dataset->dir() : std::string("(no dataset)"));
  if (!dataset) throw InvalidArgumentError(where + ": no dataset");
  if (!dataset->read_only()) {
    throw InvalidArgumentError(where + ": the viewer serves a dataset opened read-only");
  }
  if (options.port < 0 || options.port > 65535) {
    throw InvalidArgumentError(where + ": port " + std::to_string(options.port) +
                               " is outside 0..65535");
  }
  if (options.threads < 1 || options.threads > 256) {
    throw InvalidArgumentError(where + ": threads " + std::to_string(options.threads) +
                               " is outside 1..256");
  }
  if (options.show.thumb_side < kMinThumbSide || options.show.thumb_side > kMaxThumbSide) {
    throw InvalidArgumentError(
        where + ": thumbnail side " + std::to_string(options.show.thumb_side) + " is outside " +
        std::to_string(kMinThumbSide) + ".." + std::to_string(kMaxThumbSide));
  }
  if (options.host.empty()) throw InvalidArgumentError(where + ": empty host");
  if (options.show.label_key.empty()) throw InvalidArgumentError(where + ": empty label key");
  auto impl = std::make_unique<Impl>();
  Impl* self = impl.get();
  impl->dataset = dataset;
  impl->token = NewToken();
  impl->api = std::make_unique<Api>(dataset, options.show);
  // The first page's positions: where each chunk's videos start in the
  // order is read once per snapshot (O(chunks) records, engine/core), so
  // it is read now rather than inside the page's first request.
  try {
    dataset->IdsAt(0, 1);
  } catch (const Error&) {
    // The page's own request reports it.
  }
  httplib::Server& http = impl->http;
  const auto threads = static_cast<size_t>(options.threads);
  // httplib owns the queue it is handed (it deletes it when listening ends).
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, with which
  // a second server (another viewer, anything of the same user) could listen
  // on the same port and take half of the connections.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http.set_keep_alive_timeout(kKeepAliveSeconds);
  // A page asks for dozens of thumbnails over the browser's six connections:
  // keep them (httplib's default closes one after 5 requests).
  http.set_keep_alive_max_count(1000);
  http.set_read_timeout(10);
  http.set_write_timeout(30);
  http.set_payload_max_length(64 << 10);  // the page only sends GETs
  http.set_default_headers({
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
  });
  http.set_pre_routing_handler([self](const httplib::Request& req, httplib::Response& res) {
    if (self->Allowed(req, res)) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 403;
    res.set_header("Cache-Control", "no-store");
    SendBytes(res,
              "403 forbidden: open the address `gulpdb view` printed (it carries the access "
              "token)\n",
              "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  });
  http.Get(".*",
           [self](const httplib::Request& req, httplib::Response& res) { self->Route(req, res); });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
        std::string what = "unexpected error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        Send(ErrorReply(500, "error", what), res);
      });

  errno = 0;
  int port = options.port;
  const bool bound = port == 0 ? (port = http.bind_to_any_port(options.host)) > 0
                               : http.bind_to_port(options.host, port);
  if (!bound) {
    const int err = errno;
    throw IoError(
        where + ": cannot listen on " + options.host + " port " + std::to_string(options.port) +
        ": " +
        (err != 0 ? std::strerror(err) : "not an address of this machine, or the port is in use"));
  }
  impl->port = port;
  const bool ipv6 = options.host.find(':') != std::string::npos && options.host.front() != '[';
  impl->url = "http://" + (ipv6 ? "[" + options.host + "]" : options.host) + ":" +
              std::to_string(port) + "/?token=" + impl->token;
  impl->listener = std::thread([self] {
    self->http.listen_after_bind();
    self->listen_ended = true;
  });
  // stop() does nothing before the server runs: wait until it does.
  while (!http.is_running()) {
    if (self->listen_ended) {
      impl->listener.join();
      throw IoError(where + ": the server stopped before it listened");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::Stop() {
  std::lock_guard<std::mutex> lock(impl_->stop_mutex);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->api->Stop();
  impl_->http.stop();
  if (impl_->listener.joinable()) impl_->listener.join();
}

}  // namespace gulpdb::view
