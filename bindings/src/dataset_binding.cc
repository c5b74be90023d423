// _gulpdb.NativeDataset and _gulpdb.NativeWriter: Dataset and Writer
// (gulpdb/dataset.h) for the Python layer in python/gulpdb/_dataset.py, which
// adds JSON meta handling, fork-aware reopening and pickling.
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings/src/bindings.h"
#include "gulpdb/error.h"

namespace gulpdb::python {

// ---- DatasetHandle -------------------------------------------------------------

DatasetHandle::DatasetHandle(std::shared_ptr<Dataset> dataset) : dataset_(std::move(dataset)) {}

DatasetHandle::~DatasetHandle() {
  if (dataset_ && !guard_.InOwnerProcess()) ForkGuard::Abandon(std::move(dataset_));
}

std::shared_ptr<Dataset> DatasetHandle::Get() const {
  if (!guard_.InOwnerProcess()) {
    throw std::runtime_error(
        "this NativeDataset was opened in another process (before a fork); open the "
        "dataset again in this process (gulpdb.Dataset does so by itself)");
  }
  if (!dataset_) throw py::value_error("I/O operation on a closed dataset");
  return dataset_;
}

void DatasetHandle::Close() {
  if (!dataset_) return;
  if (guard_.InOwnerProcess()) {
    dataset_.reset();
  } else {
    ForkGuard::Abandon(std::move(dataset_));
  }
}

namespace {

// ---- WriterHandle --------------------------------------------------------------

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

  std::vector<size_t> to_encode;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].pixels != nullptr) to_encode.push_back(i);
  }
  std::vector<std::string> encoded(sources.size());
  const EncodeOptions encode = h.encode();
  {
    py::gil_scoped_release release;
    ParallelFor(to_encode.size(), h.encode_threads(), [&](size_t k) {
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

OnDuplicate ToOnDuplicate(const std::string& text) {
  if (text == "error") return OnDuplicate::kError;
  if (text == "skip") return OnDuplicate::kSkip;
  if (text == "replace") return OnDuplicate::kReplace;
  throw py::value_error("on_duplicate must be 'error', 'skip' or 'replace', not '" + text + "'");
}

std::unique_ptr<DatasetHandle> Wrap(std::unique_ptr<Dataset> dataset) {
  return std::make_unique<DatasetHandle>(std::shared_ptr<Dataset>(std::move(dataset)));
}

std::unique_ptr<DatasetHandle> OpenDataset(const std::string& path, bool read_only,
                                           size_t max_open_chunk_files, bool verify_checksums,
                                           size_t decode_threads, const std::string& index_dir,
                                           bool verify_index, uint64_t generation,
                                           bool allow_network_index,
                                           const std::string& expected_snapshot_sha256,
                                           const std::string& expected_dataset_uuid) {
  OpenOptions options;
  options.generation = generation;
  options.expected_snapshot_sha256 = expected_snapshot_sha256;
  options.expected_dataset_uuid = expected_dataset_uuid;
  options.allow_network_index = allow_network_index;
  options.read_only = read_only;
  options.max_open_chunk_files = max_open_chunk_files;
  options.verify_checksums = verify_checksums;
  options.decode_threads = decode_threads;
  options.index_dir = index_dir;
  options.verify_index = verify_index;
  std::unique_ptr<Dataset> dataset;
  try {
    py::gil_scoped_release release;
    dataset = Dataset::Open(path, options);
  } catch (const NotFoundError& e) {
    RaiseFileNotFound(e.what());
  }
  return Wrap(std::move(dataset));
}

std::unique_ptr<DatasetHandle> CreateDataset(const std::string& path, uint32_t videos_per_chunk,
                                             uint64_t bytes_per_chunk, bool checksums,
                                             const std::string& index_dir) {
  CreateOptions options;
  options.videos_per_chunk = videos_per_chunk;
  options.bytes_per_chunk = bytes_per_chunk;
  options.checksums = checksums;
  options.index_dir = index_dir;
  std::unique_ptr<Dataset> dataset;
  try {
    py::gil_scoped_release release;
    dataset = Dataset::Create(path, options);
  } catch (const NotFoundError& e) {
    RaiseFileNotFound(e.what());
  }
  return Wrap(std::move(dataset));
}

// The requests of a batch read: `ids` (see ToIdList) and `frames`, None or
// one selection per id.
std::vector<FrameRequest> ToRequests(const py::handle& ids_object, const py::handle& frames,
                                     const Dataset& ds) {
  const std::vector<std::string> ids = ToIdList(ids_object, "ids");
  std::vector<FrameRequest> requests(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) requests[i].id = ids[i];
  if (frames.is_none()) return requests;
  if (PyUnicode_Check(frames.ptr()) || PyBytes_Check(frames.ptr()) ||
      !py::isinstance<py::iterable>(frames)) {
    throw py::type_error(std::string("frames must be None or a list of one frame selection per "
                                     "id, not ") +
                         Py_TYPE(frames.ptr())->tp_name);
  }
  size_t n = 0;
  for (const py::handle& f : frames) {
    if (n < requests.size()) requests[n].selection = ToSelection(f, ds, requests[n].id);
    ++n;
  }
  if (n != requests.size()) {
    throw py::value_error("got " + std::to_string(requests.size()) + " ids but " +
                          std::to_string(n) + " frame selections");
  }
  return requests;
}

py::list FrameInfoList(const std::vector<FrameInfo>& frames) {
  py::list out(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    out[i] = py::make_tuple(frames[i].offset, frames[i].pad, frames[i].length);
  }
  return out;
}

std::string Quote(const std::string& text) { return py::repr(py::str(text)).cast<std::string>(); }

}  // namespace

void BindDataset(py::module_& m) {
  m.def("_as_id", &ToId, py::arg("id"),
        "A video id as the native API takes it: a str as it is, an int as its decimal string; "
        "TypeError for anything else.");
  m.def(
      "_check_output_size",
      [](const py::handle& size, const py::handle& resize, const py::handle& crop,
         int downscale) -> py::object {
        DecodeOptions options;
        if (downscale != 1 && downscale != 2 && downscale != 4 && downscale != 8) {
          throw py::value_error("downscale must be 1, 2, 4 or 8, not " + std::to_string(downscale));
        }
        options.scale_denom = downscale;
        ApplyOutputSize(size, resize, crop, py::none(), &options);
        if (options.out_height == 0) return py::none();
        return py::make_tuple(options.out_height, options.out_width);
      },
      py::arg("size"), py::arg("resize") = "short_edge", py::arg("crop") = "center",
      py::arg("downscale") = 1,
      "Checks the fixed-size arguments of a read as read() does (TypeError, ValueError); "
      "returns size as a (height, width) tuple of ints, or None.");
  m.def(
      "_as_id_list",
      [](const py::handle& ids, const std::string& what) { return ToIdList(ids, what.c_str()); },
      py::arg("ids"), py::arg("what") = "ids",
      "A collection of video ids as a list of str (each as _as_id); TypeError for a bare str or "
      "bytes, whose characters would otherwise be taken for ids.");
  py::class_<VideoInfo>(m, "VideoInfo", "What the index knows of one video.")
      .def_readonly("id", &VideoInfo::id, "The video id.")
      .def_readonly("chunk", &VideoInfo::chunk, "The number of the chunk holding its frames.")
      .def_readonly("seq", &VideoInfo::seq, "Insertion sequence number.")
      .def_property_readonly(
          "frame_info", [](const VideoInfo& v) { return FrameInfoList(v.frames); },
          "GulpIO's frame_info: a list of (offset, pad, length) tuples.")
      .def_readonly("checksums", &VideoInfo::checksums, "CRC-32C of each frame, or an empty list.")
      .def_readonly("meta_data", &VideoInfo::meta_data,
                    "The meta_data JSON list as stored (text), one entry per append.")
      .def_property_readonly(
          "frame_count", [](const VideoInfo& v) { return v.frames.size(); }, "Number of frames.")
      .def("__repr__", [](const VideoInfo& v) {
        return "VideoInfo(id=" + Quote(v.id) + ", chunk=" + std::to_string(v.chunk) +
               ", frames=" + std::to_string(v.frames.size()) + ")";
      });

  py::class_<ChunkInfo>(m, "ChunkInfo", "One chunk file of a dataset.")
      .def_readonly("number", &ChunkInfo::number, "The chunk number (GulpIO's chunk id).")
      .def_readonly("file_name", &ChunkInfo::file_name,
                    "The .gulp file, relative to the dataset directory.")
      .def_readonly("committed_length", &ChunkInfo::committed_length,
                    "Bytes of the file that committed writes cover.")
      .def_readonly("appended_videos", &ChunkInfo::appended_videos,
                    "Videos ever appended to the chunk.")
      .def_readonly("live_videos", &ChunkInfo::live_videos, "Videos the index still points to.")
      .def_readonly("live_bytes", &ChunkInfo::live_bytes, "Bytes of those videos' frames.")
      .def_readonly("full", &ChunkInfo::full, "True once no more videos go to this chunk.")
      .def_readonly("meta_file", &ChunkInfo::meta_file,
                    "The .gmeta the chunk was imported from, or ''.")
      .def("__repr__", [](const ChunkInfo& c) {
        return "ChunkInfo(number=" + std::to_string(c.number) +
               ", file_name=" + Quote(c.file_name) +
               ", live_videos=" + std::to_string(c.live_videos) + ")";
      });

  py::class_<DatasetStats>(m, "DatasetStats", "Counts and sizes of a dataset.")
      .def_readonly("format_version", &DatasetStats::format_version,
                    "Version of the on-disk format.")
      .def_readonly("creator", &DatasetStats::creator, "What created the dataset.")
      .def_readonly("videos", &DatasetStats::videos, "Number of videos.")
      .def_readonly("frames", &DatasetStats::frames, "Number of frames.")
      .def_readonly("chunks", &DatasetStats::chunks, "Number of chunk files.")
      .def_readonly("committed_bytes", &DatasetStats::committed_bytes,
                    "Sum of the chunks' committed lengths.")
      .def_readonly("live_bytes", &DatasetStats::live_bytes, "Bytes of frames the index points to.")
      .def_readonly("garbage_bytes", &DatasetStats::garbage_bytes,
                    "Committed bytes of removed or replaced videos.")
      .def_readonly("index_bytes", &DatasetStats::index_bytes, "Size of the LMDB data in use.")
      .def_readonly("videos_per_chunk", &DatasetStats::videos_per_chunk,
                    "A new chunk starts after this many videos.")
      .def_readonly("bytes_per_chunk", &DatasetStats::bytes_per_chunk,
                    "A new chunk starts past this size (0: no limit).")
      .def_readonly("checksums", &DatasetStats::checksums, "Whether a CRC-32C is stored per frame.")
      .def_readonly("uuid", &DatasetStats::uuid,
                    "The dataset's identity (a UUID made at creation; kept by copies).")
      .def("__repr__", [](const DatasetStats& s) {
        return "DatasetStats(videos=" + std::to_string(s.videos) +
               ", frames=" + std::to_string(s.frames) + ", chunks=" + std::to_string(s.chunks) +
               ", live_bytes=" + std::to_string(s.live_bytes) + ")";
      });

  py::class_<WriterHandle>(m, "NativeWriter",
                           "A write transaction (gulpdb::Writer). Use gulpdb.Dataset.writer().")
      .def("append", &Append, py::arg("id"), py::arg("frames"), py::arg("meta_json") = "{}",
           "Appends a video; frames are JPEG bytes (stored as they are) or uint8 images "
           "(encoded in parallel). Returns False if the id exists and duplicates are skipped.")
      .def(
          "remove",
          [](WriterHandle& h, const py::handle& id_object) {
            const std::string id = ToId(id_object);
            return h.WithWriter([&](Writer& w) { return w.Remove(id); });
          },
          py::arg("id"), "Removes a committed or pending video; False if it does not exist.")
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

  py::class_<DatasetHandle>(m, "NativeDataset",
                            "A gulpdb dataset (gulpdb::Dataset). Use gulpdb.Dataset.")
      .def_static("open", &OpenDataset, py::arg("path"), py::arg("read_only") = true,
                  py::arg("max_open_chunk_files") = 256, py::arg("verify_checksums") = false,
                  py::arg("decode_threads") = 0, py::arg("index_dir") = "",
                  py::arg("verify_index") = false, py::arg("generation") = 0,
                  py::arg("allow_network_index") = false, py::arg("expected_snapshot_sha256") = "",
                  py::arg("expected_dataset_uuid") = "",
                  "Opens an existing dataset (a directory, or an s3:// URL read-only); "
                  "FileNotFoundError if there is none.")
      .def_static("create", &CreateDataset, py::arg("path"), py::arg("videos_per_chunk") = 100,
                  py::arg("bytes_per_chunk") = 0, py::arg("checksums") = true,
                  py::arg("index_dir") = "",
                  "Creates a dataset and returns it opened read-write; ValueError if one exists.")
      .def_static(
          "exists",
          [](const std::string& path, const std::string& index_dir) {
            py::gil_scoped_release release;
            return Dataset::Exists(path, index_dir);
          },
          py::arg("path"), py::arg("index_dir") = "", "True if `path` holds a gulpdb index.")
      .def_property_readonly(
          "path", [](const DatasetHandle& h) { return h.Get()->dir(); }, "The dataset directory.")
      .def_property_readonly(
          "read_only", [](const DatasetHandle& h) { return h.Get()->read_only(); },
          "True when opened read-only.")
      .def_property_readonly("closed", &DatasetHandle::closed, "True after close().")
      .def_property_readonly("in_owner_process", &DatasetHandle::in_owner_process,
                             "False in a child forked after this object was opened.")
      .def("close", &DatasetHandle::Close, "Closes the dataset (reads in flight finish first).")
      .def("__len__",
           [](const DatasetHandle& h) {
             auto ds = h.Get();
             py::gil_scoped_release release;
             return static_cast<size_t>(ds->Count());
           })
      .def(
          "__contains__",
          [](const DatasetHandle& h, const py::handle& id_object) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            py::gil_scoped_release release;
            return ds->Contains(id);
          },
          py::arg("id"))
      .def(
          "ids",
          [](const DatasetHandle& h) {
            auto ds = h.Get();
            std::vector<std::string> ids;
            {
              py::gil_scoped_release release;
              ids = ds->Ids();
            }
            return ids;
          },
          "Every id in (chunk, insertion) order.")
      .def(
          "find",
          [](const DatasetHandle& h, const py::handle& id_object) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            py::gil_scoped_release release;
            return ds->Find(id);
          },
          py::arg("id"), "The video's index entry, or None.")
      .def(
          "info",
          [](const DatasetHandle& h, const py::handle& id_object) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            py::gil_scoped_release release;
            return ds->Get(id);
          },
          py::arg("id"), "The video's index entry; KeyError if absent.")
      .def(
          "meta_json",
          [](const DatasetHandle& h, const py::handle& id_object) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            std::string meta;
            {
              py::gil_scoped_release release;
              meta = ds->Get(id).meta_data;
            }
            return meta;
          },
          py::arg("id"), "The stored meta_data JSON list text; KeyError if absent.")
      .def(
          "frame_count",
          [](const DatasetHandle& h, const py::handle& id_object) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            py::gil_scoped_release release;
            return ds->FrameCount(id);
          },
          py::arg("id"))
      .def(
          "read",
          [](const DatasetHandle& h, const py::handle& id_object, const py::handle& frames,
             const std::string& colorspace, const std::string& dct, int downscale, bool lenient,
             bool as_list, const py::handle& size, const py::handle& resize, const py::handle& crop,
             const py::handle& crop_seed) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            const Selection selection = ToSelection(frames, *ds, id);
            DecodeOptions options = ToDecodeOptions(colorspace, dct, downscale, lenient);
            ApplyOutputSize(size, resize, crop, crop_seed, &options);
            DecodedFrames decoded;
            {
              py::gil_scoped_release release;
              decoded = ds->ReadFrames(id, selection, options);
            }
            return ToArrays(std::move(decoded), options.format, as_list);
          },
          py::arg("id"), py::arg("frames") = py::none(), py::arg("colorspace") = "rgb",
          py::arg("dct") = "fast", py::arg("downscale") = 1, py::arg("lenient") = false,
          py::arg("as_list") = false, py::arg("size") = py::none(),
          py::arg("resize") = "short_edge", py::arg("crop") = "center",
          py::arg("crop_seed") = py::none(),
          "Decoded frames of one video (zero-copy NumPy views), at their own size or resized "
          "to `size`.")
      .def(
          "read_batch",
          [](const DatasetHandle& h, const py::handle& ids, const py::handle& frames,
             const std::string& colorspace, const std::string& dct, int downscale, bool lenient,
             bool as_list, const py::handle& size, const py::handle& resize, const py::handle& crop,
             const py::handle& crop_seed) {
            auto ds = h.Get();
            const std::vector<FrameRequest> requests = ToRequests(ids, frames, *ds);
            DecodeOptions options = ToDecodeOptions(colorspace, dct, downscale, lenient);
            ApplyOutputSize(size, resize, crop, crop_seed, &options);
            std::vector<DecodedFrames> decoded;
            {
              py::gil_scoped_release release;
              decoded = ds->ReadBatch(requests, options);
            }
            py::list out(decoded.size());
            for (size_t i = 0; i < decoded.size(); ++i) {
              out[i] = ToArrays(std::move(decoded[i]), options.format, as_list);
            }
            return out;
          },
          py::arg("ids"), py::arg("frames") = py::none(), py::arg("colorspace") = "rgb",
          py::arg("dct") = "fast", py::arg("downscale") = 1, py::arg("lenient") = false,
          py::arg("as_list") = false, py::arg("size") = py::none(),
          py::arg("resize") = "short_edge", py::arg("crop") = "center",
          py::arg("crop_seed") = py::none(),
          "Decoded frames of many videos, all frames decoded in parallel. `frames` is None or "
          "one selection per id. A random crop takes one window per id.")
      .def(
          "read_jpegs",
          [](const DatasetHandle& h, const py::handle& id_object, const py::handle& frames) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            const Selection selection = ToSelection(frames, *ds, id);
            JpegFrames jpegs;
            {
              py::gil_scoped_release release;
              jpegs = ds->ReadJpegs(id, selection);
            }
            return ToBytesList(jpegs);
          },
          py::arg("id"), py::arg("frames") = py::none(), "JPEG bytes of the selected frames.")
      .def(
          "read_jpeg_batch",
          [](const DatasetHandle& h, const py::handle& ids, const py::handle& frames) {
            auto ds = h.Get();
            const std::vector<FrameRequest> requests = ToRequests(ids, frames, *ds);
            std::vector<JpegFrames> jpegs;
            {
              py::gil_scoped_release release;
              jpegs = ds->ReadJpegBatch(requests);
            }
            py::list out(jpegs.size());
            for (size_t i = 0; i < jpegs.size(); ++i) out[i] = ToBytesList(jpegs[i]);
            return out;
          },
          py::arg("ids"), py::arg("frames") = py::none(),
          "JPEG bytes of many videos. `frames` is None or one selection per id.")
      .def(
          "chunks",
          [](const DatasetHandle& h) {
            auto ds = h.Get();
            py::gil_scoped_release release;
            return ds->Chunks();
          },
          "Every chunk, by number.")
      .def(
          "chunk_videos",
          [](const DatasetHandle& h, uint32_t chunk) {
            auto ds = h.Get();
            std::vector<VideoInfo> videos;
            {
              py::gil_scoped_release release;
              ds->ForEachInChunk(chunk, [&](const VideoInfo& v) {
                videos.push_back(v);
                return true;
              });
            }
            return videos;
          },
          py::arg("chunk"), "The videos of one chunk in insertion order.")
      .def(
          "chunk_ids",
          [](const DatasetHandle& h, uint32_t chunk) {
            auto ds = h.Get();
            std::vector<std::string> ids;
            {
              py::gil_scoped_release release;
              ds->ForEachInChunk(chunk, [&](const VideoInfo& v) {
                ids.push_back(v.id);
                return true;
              });
            }
            return ids;
          },
          py::arg("chunk"), "The ids of one chunk in insertion order.")
      .def("stats",
           [](const DatasetHandle& h) {
             auto ds = h.Get();
             py::gil_scoped_release release;
             return ds->Stats();
           })
      .def(
          "remove",
          [](const DatasetHandle& h, const py::handle& ids_object) {
            auto ds = h.Get();
            const std::vector<std::string> ids = ToIdList(ids_object, "ids");
            py::gil_scoped_release release;
            return ds->Remove(ids);
          },
          py::arg("ids"), "Removes ids in one transaction; returns how many existed.")
      .def(
          "writer",
          [](const DatasetHandle& h, const std::string& on_duplicate, double lock_timeout,
             bool check_jpeg_markers, int quality, const std::string& subsampling,
             size_t encode_threads, bool rollover) {
            auto ds = h.Get();
            WriterOptions options;
            options.on_duplicate = ToOnDuplicate(on_duplicate);
            if (!(lock_timeout >= 0)) throw py::value_error("lock_timeout must be >= 0");
            options.lock_timeout =
                std::chrono::milliseconds(static_cast<int64_t>(lock_timeout * 1000));
            options.check_jpeg_markers = check_jpeg_markers;
            options.rollover = rollover;
            const EncodeOptions encode = ToEncodeOptions(quality, subsampling);
            std::unique_ptr<Writer> writer;
            {
              py::gil_scoped_release release;
              writer = ds->NewWriter(options);
            }
            return std::make_unique<WriterHandle>(std::move(ds), std::move(writer), encode,
                                                  encode_threads);
          },
          py::arg("on_duplicate") = "error", py::arg("lock_timeout") = 0.0,
          py::arg("check_jpeg_markers") = true, py::arg("quality") = 90,
          py::arg("subsampling") = "444", py::arg("encode_threads") = 0, py::arg("rollover") = true,
          "Starts a write transaction; BusyError if another writer is active. With rollover "
          "false, a new chunk starts only at start_chunk() (GulpIO's writers).");
}

}  // namespace gulpdb::python
