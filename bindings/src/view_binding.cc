// _gulpdb.ViewServer: the dataset viewer's server (view/view.h) for
// gulpdb.view (python/gulpdb/_view.py). The server answers from C++ threads
// of its own, which never touch Python: the GIL is released while it
// starts and stops, and held by nobody while it serves.
#include <memory>
#include <string>
#include <utility>

#include "bindings/src/bindings.h"
#include "view/view.h"

namespace gulpdb::python {
namespace {

// Owns a running server. A server created before fork() is never stopped by
// the child (its threads do not exist there): the child leaks it instead.
class ViewHandle {
 public:
  explicit ViewHandle(std::unique_ptr<view::Server> server) : server_(std::move(server)) {}
  ~ViewHandle() {
    if (!guard_.InOwnerProcess()) {
      ForkGuard::Abandon(std::move(server_));
      return;
    }
    py::gil_scoped_release release;
    server_->Stop();
  }
  ViewHandle(const ViewHandle&) = delete;
  ViewHandle& operator=(const ViewHandle&) = delete;

  const view::Server& server() const { return *server_; }
  void Close() {
    if (!guard_.InOwnerProcess())
      throw py::value_error("close a viewer in the process that started it");
    closed_ = true;
    py::gil_scoped_release release;
    server_->Stop();
  }
  bool closed() const { return closed_; }

 private:
  std::unique_ptr<view::Server> server_;
  ForkGuard guard_;
  bool closed_ = false;
};

}  // namespace

void BindView(py::module_& m) {
  py::class_<ViewHandle>(m, "ViewServer",
                         "A running dataset viewer (gulpdb.view): a read-only web page served "
                         "from C++ threads.")
      .def(py::init([](const DatasetHandle& dataset, const std::string& host, int port,
                       const std::string& label_key, int thumb_size) {
             view::ServerOptions options;
             options.host = host;
             options.port = port;
             options.show.label_key = label_key;
             options.show.thumb_side = thumb_size;
             std::shared_ptr<const Dataset> ds = dataset.Get();
             std::unique_ptr<view::Server> server;
             {
               py::gil_scoped_release release;
               server = view::Server::Start(std::move(ds), options);
             }
             return std::make_unique<ViewHandle>(std::move(server));
           }),
           py::arg("dataset"), py::arg("host"), py::arg("port"), py::arg("label_key"),
           py::arg("thumb_size"))
      .def_property_readonly("url", [](const ViewHandle& h) { return h.server().url(); })
      .def_property_readonly("token", [](const ViewHandle& h) { return h.server().token(); })
      .def_property_readonly("port", [](const ViewHandle& h) { return h.server().port(); })
      .def_property_readonly("closed", &ViewHandle::closed)
      .def("close", &ViewHandle::Close,
           "Stops the server: requests in flight finish, idle connections close (within 2 s).");
}

}  // namespace gulpdb::python
