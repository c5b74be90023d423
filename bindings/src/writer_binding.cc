// _gulpdb.NativeWriter: a Writer (gulpdb/dataset.h) for the Python layer's
// gulpdb.Writer (python/gulpdb/_dataset.py), and NativeDataset.writer(),
// which starts one. Frames given as images are encoded in parallel, outside
// the writer's mutex, before the append.
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings/src/bindings.h"
#include "gulpdb/error.h"
#include "util/thread_pool.h"

namespace gulpdb::python {
namespace {

// Owns a Writer and keeps its Dataset alive. Calls from several Python
// threads are serialised by a mutex (a Writer belongs to one thread at a
// time); the frames of concurrent appends are still encoded in parallel,
// before the mutex is taken.
class WriterHandle {
 public:
  WriterHandle(std::shared_ptr<Dataset> dataset, std::unique_ptr<Writer> writer,
               EncodeOptions encode, size_t encode_threads)
      : dataset_(std::move(dataset)),
        writer_(std::move(writer)),
        encode_(encode),
        encode_threads_(encode_threads) {}

  ~WriterHandle() {
    if (guard_.InOwnerProcess()) {
      // Rolls back an open batch (truncating chunk files: I/O, without the GIL).
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      writer_.reset();
    } else {
      // The parent owns this writer's lock and pending bytes: never roll them back here.
      ForkGuard::Abandon(std::move(writer_));
      ForkGuard::Abandon(std::move(dataset_));
    }
  }
  WriterHandle(const WriterHandle&) = delete;
  WriterHandle& operator=(const WriterHandle&) = delete;

  // Runs fn(writer) under the mutex, without the GIL.
  template <typename Fn>
  auto WithWriter(Fn&& fn) {
    CheckUsable();
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!writer_) throw py::value_error("the writer is closed");
    return fn(*writer_);
  }

  void Close() {
    if (!guard_.InOwnerProcess()) return;
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    writer_.reset();
    // A closed writer must not keep the dataset (and its index mapping) open.
    dataset_.reset();
    closed_ = true;
  }

  bool closed() const { return closed_; }
  Codec codec() const { return dataset_->codec(); }  // after CheckUsable()
  const std::string dir() const { return dataset_->dir(); }
  const EncodeOptions& encode() const { return encode_; }
  size_t encode_threads() const { return encode_threads_; }

  void CheckUsable() const {
    if (!guard_.InOwnerProcess()) {
      throw std::runtime_error(
          "this writer belongs to another process (it was started before a fork)");
    }
    if (closed_) throw py::value_error("the writer is closed");
  }

 private:
  // Declared before writer_ so that the Writer is destroyed first.
  std::shared_ptr<Dataset> dataset_;
  std::unique_ptr<Writer> writer_;
  EncodeOptions encode_;
  size_t encode_threads_;
  std::mutex mutex_;
  std::atomic<bool> closed_{false};
  ForkGuard guard_;
};

// One frame handed to append: JPEG bytes to store as they are, or pixels to encode.
struct FrameSource {
  const char* jpeg = nullptr;  // into a bytes object kept alive by the caller, or null
  size_t jpeg_size = 0;
  const uint8_t* pixels = nullptr;  // C-contiguous H×W×C uint8, kept alive by the caller
  int height = 0;
  int width = 0;
  int channels = 0;
};

int Dimension(py::ssize_t n, const char* what) {
  if (n < 1 || n > 65500) {
    throw py::value_error(std::string("frame ") + what + " must be in 1..65500, not " +
                          std::to_string(n));
  }
  return static_cast<int>(n);
}

// Accepts one image: a uint8 array (or anything NumPy turns into one) that is
// H×W or H×W×C with C in {1, 3}.
FrameSource PixelSource(const py::handle& item, std::vector<py::object>* keep_alive) {
  py::array any = py::array::ensure(item);
  if (!any) {
    PyErr_Clear();
    throw py::type_error(std::string("a frame must be JPEG bytes or a uint8 image array, not ") +
                         Py_TYPE(item.ptr())->tp_name);
  }
  if (any.dtype().kind() != 'u' || any.itemsize() != 1) {
    throw py::type_error("frame arrays must have dtype uint8, not " +
                         py::str(any.dtype()).cast<std::string>());
  }
  auto array = py::array_t<uint8_t, py::array::c_style>::ensure(any);  // copies if strided
  if (!array) throw py::error_already_set();
  FrameSource s;
  if (array.ndim() == 2) {
    s.channels = 1;
  } else if (array.ndim() == 3) {
    const py::ssize_t c = array.shape(2);
    if (c != 1 && c != 3) {
      throw py::value_error("frames must have 1 (gray) or 3 (RGB) channels, not " +
                            std::to_string(c));
    }
    s.channels = static_cast<int>(c);
  } else {
    throw py::value_error("a frame array must be H×W or H×W×C, not " +
                          std::to_string(array.ndim()) + "-D");
  }
  s.height = Dimension(array.shape(0), "height");
  s.width = Dimension(array.shape(1), "width");
  s.pixels = array.data();
  keep_alive->push_back(std::move(array));
  return s;
}

// The frames argument of append: a sequence whose items are JPEG bytes or
// images, or one N×H×W×C (or N×H×W gray) uint8 array.
std::vector<FrameSource> FrameSources(const py::handle& frames, std::vector<py::object>* keep_alive,
                                      std::deque<std::string>* copies) {
  std::vector<FrameSource> out;
  if (py::isinstance<py::array>(frames)) {
    const auto array = py::reinterpret_borrow<py::array>(frames);
    if (array.ndim() != 3 && array.ndim() != 4) {
      throw py::value_error(
          "an array of frames must be N×H×W×C or N×H×W (gray); pass a list for a single "
          "image");
    }
    for (py::ssize_t i = 0; i < array.shape(0); ++i) {
      out.push_back(PixelSource(frames[py::int_(i)], keep_alive));
    }
    return out;
  }
  if (py::isinstance<py::str>(frames) || py::isinstance<py::bytes>(frames) ||
      !py::isinstance<py::iterable>(frames)) {
    throw py::type_error("frames must be a sequence of JPEG bytes or uint8 arrays, or an array");
  }
  for (const py::handle& item : frames) {
    FrameSource s;
    if (py::isinstance<py::bytes>(item)) {
      char* data = nullptr;
      Py_ssize_t size = 0;
      if (PyBytes_AsStringAndSize(item.ptr(), &data, &size) != 0) throw py::error_already_set();
      s.jpeg = data;
      s.jpeg_size = static_cast<size_t>(size);
      keep_alive->push_back(py::reinterpret_borrow<py::object>(item));
    } else if (py::isinstance<py::bytearray>(item) || PyMemoryView_Check(item.ptr())) {
      // Mutable buffers are copied: another thread could change them while
      // the GIL is released.
      copies->push_back(CopyBuffer(item));
      s.jpeg = copies->back().data();
      s.jpeg_size = copies->back().size();
    } else {
      s = PixelSource(item, keep_alive);
    }
    out.push_back(s);
  }
  return out;
}

bool Append(WriterHandle& h, const py::handle& id_object, const py::handle& frames,
            const std::string& meta_json) {
  h.CheckUsable();
  const std::string id = ToId(id_object);
  std::vector<py::object> keep_alive;
  std::deque<std::string> copies;  // a deque: pointers into earlier strings stay valid
  const std::vector<FrameSource> sources = FrameSources(frames, &keep_alive, &copies);
  if (h.codec() != Codec::kJpeg) {  // before any frame is encoded for nothing
    size_t images = 0;
    for (const FrameSource& s : sources) images += s.pixels != nullptr ? 1 : 0;
    const std::string given = images == 0                ? "JPEG bytes"
                              : images == sources.size() ? "uint8 images"
                                                         : "uint8 images and JPEG bytes";
    throw InvalidArgumentError(
        "append '" + id + "' to " + h.dir() + ": the dataset's codec is " + CodecName(h.codec()) +
        " (each video one H.264 stream), and append() takes frames (here " + given +
        ") for a JPEG dataset: give the video to append_h264() as an Annex-B H.264 stream "
        "(ffmpeg ... -c:v libx264 -bf 0 -f h264), or append the frames to a dataset created "
        "with codec='jpeg'");
  }

  std::vector<size_t> to_encode;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].pixels != nullptr) to_encode.push_back(i);
  }
  std::vector<std::string> encoded(sources.size());
  const EncodeOptions encode = h.encode();
  {
    py::gil_scoped_release release;
    util::ParallelFor(to_encode.size(), h.encode_threads(), [&](size_t k) {
      const FrameSource& s = sources[to_encode[k]];
      encoded[to_encode[k]] =
          ThreadLocalEncoder().Encode(s.pixels, s.width, s.height, s.channels, encode);
    });
  }
  std::vector<std::string_view> jpegs;
  jpegs.reserve(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    jpegs.push_back(sources[i].pixels != nullptr
                        ? std::string_view(encoded[i])
                        : std::string_view(sources[i].jpeg, sources[i].jpeg_size));
  }
  return h.WithWriter([&](Writer& w) { return w.Append(id, jpegs, meta_json); });
}

// NativeDataset.writer(): starts a write transaction on the handle's dataset.
std::unique_ptr<WriterHandle> StartWriter(const DatasetHandle& h, const std::string& on_duplicate,
                                          double lock_timeout, bool check_jpeg_markers, int quality,
                                          const std::string& subsampling, size_t encode_threads,
                                          bool rollover) {
  if (encode_threads > kMaxThreads) {
    throw InvalidArgumentError("encode_threads " + std::to_string(encode_threads) +
                               " is more than " + std::to_string(kMaxThreads));
  }
  auto ds = h.Get();
  WriterOptions options;
  options.on_duplicate = ToOnDuplicate(on_duplicate);
  if (!(lock_timeout >= 0)) throw py::value_error("lock_timeout must be >= 0");
  options.lock_timeout = std::chrono::milliseconds(static_cast<int64_t>(lock_timeout * 1000));
  options.check_jpeg_markers = check_jpeg_markers;
  options.rollover = rollover;
  const EncodeOptions encode = ToEncodeOptions(quality, subsampling);
  std::unique_ptr<Writer> writer;
  {
    py::gil_scoped_release release;
    writer = ds->NewWriter(options);
  }
  return std::make_unique<WriterHandle>(std::move(ds), std::move(writer), encode, encode_threads);
}

}  // namespace

void BindWriter(py::module_& m) {
  py::class_<WriterHandle>(m, "NativeWriter",
                           "A write transaction (gulpdb::Writer). Use gulpdb.Dataset.writer().")
      .def("append", &Append, py::arg("id"), py::arg("frames"), py::arg("meta_json") = "{}",
           "Appends a video; frames are JPEG bytes (stored as they are) or uint8 images "
           "(encoded in parallel). Returns False if the id exists and duplicates are skipped.")
      .def(
          "append_h264",
          [](WriterHandle& h, const py::handle& id_object, const py::bytes& stream,
             const std::string& meta_json) {
            const std::string id = ToId(id_object);
            const std::string_view bytes = stream;  // the bytes object outlives the call
            return h.WithWriter([&](Writer& w) { return w.AppendH264(id, bytes, meta_json); });
          },
          py::arg("id"), py::arg("stream"), py::arg("meta_json") = "{}",
          "Appends a video given as a raw Annex-B H.264 stream (ffmpeg -f h264, no B-frames) "
          "to an h264 dataset. Returns False if the id exists and duplicates are skipped.")
      .def(
          "remove",
          [](WriterHandle& h, const py::handle& id_object) {
            const std::string id = ToId(id_object);
            return h.WithWriter([&](Writer& w) { return w.Remove(id); });
          },
          py::arg("id"), "Removes a committed or pending video; False if it does not exist.")
      .def(
          "update_meta",
          [](WriterHandle& h, const py::handle& id_object, const std::string& patch_json) {
            const std::string id = ToId(id_object);
            return h.WithWriter([&](Writer& w) { return w.UpdateMeta(id, patch_json); });
          },
          py::arg("id"), py::arg("patch_json"),
          "Merges a JSON object into the video's meta (null deletes a key) in this batch.")
      .def(
          "set_meta",
          [](WriterHandle& h, const py::handle& id_object, const std::string& meta_json) {
            const std::string id = ToId(id_object);
            return h.WithWriter([&](Writer& w) { return w.SetMeta(id, meta_json); });
          },
          py::arg("id"), py::arg("meta_json"), "Replaces the video's meta in this batch.")
      .def(
          "start_chunk",
          [](WriterHandle& h) { return h.WithWriter([](Writer& w) { return w.StartChunk(); }); },
          "Creates a new, empty chunk now and sends the next appends to it; returns its number.")
      .def(
          "set_split",
          [](WriterHandle& h, const std::string& name, const py::handle& ids_object) {
            const std::vector<std::string> ids = ToIdList(ids_object, "ids");
            h.WithWriter([&](Writer& w) { w.SetSplit(name, ids); });
          },
          py::arg("name"), py::arg("ids"),
          "Sets split `name` to `ids` (in that order) when the batch commits; KeyError listing "
          "the ids that do not exist.")
      .def(
          "remove_split",
          [](WriterHandle& h, const std::string& name) {
            return h.WithWriter([&](Writer& w) { return w.RemoveSplit(name); });
          },
          py::arg("name"), "Removes split `name` when the batch commits; False if there is none.")
      .def(
          "commit", [](WriterHandle& h) { h.WithWriter([](Writer& w) { w.Commit(); }); },
          "Makes the batch durable and visible.")
      .def(
          "commit_last", [](WriterHandle& h) { h.WithWriter([](Writer& w) { w.CommitLast(); }); },
          "commit(), for the batch a `with` block ends with: the fewest syncs when the writer "
          "closes next.")
      .def(
          "rollback", [](WriterHandle& h) { h.WithWriter([](Writer& w) { w.Rollback(); }); },
          "Discards the batch.")
      .def_property_readonly(
          "pending_videos",
          [](WriterHandle& h) {
            return h.WithWriter([](Writer& w) { return w.pending_videos(); });
          },
          "Videos appended since the last commit or rollback.")
      .def("close", &WriterHandle::Close, "Rolls back an open batch and releases the writer lock.")
      .def_property_readonly("closed", &WriterHandle::closed, "True after close().");

  auto dataset = py::reinterpret_borrow<py::class_<DatasetHandle>>(m.attr("NativeDataset"));
  const WriterOptions writer_defaults;
  const EncodeOptions encode_defaults;
  dataset.def(
      "writer", &StartWriter,
      py::arg("on_duplicate") = std::string(OnDuplicateName(writer_defaults.on_duplicate)),
      py::arg("lock_timeout") = std::chrono::duration<double>(writer_defaults.lock_timeout).count(),
      py::arg("check_jpeg_markers") = writer_defaults.check_jpeg_markers,
      py::arg("quality") = encode_defaults.quality,
      py::arg("subsampling") = std::string(SubsamplingText(encode_defaults.subsampling)),
      py::arg("encode_threads") = 0, py::arg("rollover") = writer_defaults.rollover,
      "Starts a write transaction; BusyError if another writer is active. With rollover "
      "false, a new chunk starts only at start_chunk() (GulpIO's writers).");
}

}  // namespace gulpdb::python
