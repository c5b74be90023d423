// _gulpdb.NativeDataset: a Dataset (gulpdb/dataset.h) for the Python layer in
// python/gulpdb/_dataset.py, which adds JSON meta handling, fork-aware
// reopening and pickling. Its writer() and NativeWriter are in
// writer_binding.cc, select and the meta index calls in query_binding.cc.
#include <pybind11/stl.h>

#include <cstdint>
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

std::unique_ptr<DatasetHandle> Wrap(std::unique_ptr<Dataset> dataset) {
  return std::make_unique<DatasetHandle>(std::shared_ptr<Dataset>(std::move(dataset)));
}

std::unique_ptr<DatasetHandle> OpenDataset(
    const std::string& path, bool read_only, size_t max_open_chunk_files, bool verify_checksums,
    size_t decode_threads, const std::string& index_dir, bool verify_index, uint64_t generation,
    bool allow_network_index, const std::string& expected_snapshot_sha256,
    const std::string& expected_dataset_uuid, const std::string& version) {
  OpenOptions options;
  options.version = version;
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
  } catch (const NameNotFoundError&) {
    throw;  // an unknown tag (OpenOptions::version): KeyError
  } catch (const NotFoundError& e) {
    RaiseFileNotFound(e.what());
  }
  return Wrap(std::move(dataset));
}

std::unique_ptr<DatasetHandle> CreateDataset(const std::string& path, uint32_t videos_per_chunk,
                                             uint64_t bytes_per_chunk, bool checksums,
                                             const std::string& index_dir,
                                             const std::string& codec) {
  CreateOptions options;
  const std::optional<Codec> parsed = CodecFromName(codec);
  if (!parsed) {
    throw py::value_error("create dataset " + path + ": unknown codec '" + codec +
                          "' (jpeg or h264)");
  }
  options.codec = *parsed;
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

// Checks the Python layer shares with the native calls.
void BindArgumentHelpers(py::module_& m) {
  m.def("_as_id", &ToId, py::arg("id"),
        "A video id as the native API takes it: a str as it is, an int as its decimal string; "
        "TypeError for anything else.");
  m.def(
      "_as_id_list",
      [](const py::handle& ids, const std::string& what) { return ToIdList(ids, what.c_str()); },
      py::arg("ids"), py::arg("what") = "ids",
      "A collection of video ids as a list of str (each as _as_id); TypeError for a bare str or "
      "bytes, whose characters would otherwise be taken for ids.");
  m.def(
      "ids_digest",
      [](const py::handle& ids_object) {
        const std::vector<std::string> ids = ToIdList(ids_object, "ids");
        py::gil_scoped_release release;
        return IdsDigestOf(ids);
      },
      py::arg("ids"),
      "The digest NativeDataset.ids_digest gives, of any list of ids in their order (each as "
      "_as_id).");
}

// What the index knows: VideoInfo, ChunkInfo, DatasetStats.
void BindRecords(py::module_& m) {
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
      .def_readonly("unverified_videos", &DatasetStats::unverified_videos,
                    "Videos stored without a CRC-32C (read unverified); None when only a walk "
                    "of every record (gulpdb.check) can count them.")
      .def_readonly("unverified_chunks", &DatasetStats::unverified_chunks,
                    "Chunks holding such videos; None as unverified_videos.")
      .def_property_readonly(
          "codec", [](const DatasetStats& s) { return std::string(CodecName(s.codec)); },
          "How frames are stored: 'jpeg' or 'h264'.")
      .def_readonly("uuid", &DatasetStats::uuid,
                    "The dataset's identity (a UUID made at creation; kept by copies).")
      .def("__repr__", [](const DatasetStats& s) {
        return "DatasetStats(videos=" + std::to_string(s.videos) +
               ", frames=" + std::to_string(s.frames) + ", chunks=" + std::to_string(s.chunks) +
               ", live_bytes=" + std::to_string(s.live_bytes) + ")";
      });
}

// NativeDataset itself: opening, creating, closing.
py::class_<DatasetHandle> BindDatasetClass(py::module_& m) {
  py::class_<DatasetHandle> cls(m, "NativeDataset",
                                "A gulpdb dataset (gulpdb::Dataset). Use gulpdb.Dataset.");
  cls.def_static("open", &OpenDataset, py::arg("path"), py::arg("read_only") = true,
                 py::arg("max_open_chunk_files") = 256, py::arg("verify_checksums") = true,
                 py::arg("decode_threads") = 0, py::arg("index_dir") = "",
                 py::arg("verify_index") = false, py::arg("generation") = 0,
                 py::arg("allow_network_index") = false, py::arg("expected_snapshot_sha256") = "",
                 py::arg("expected_dataset_uuid") = "", py::arg("version") = "",
                 "Opens an existing dataset (a directory, or an s3:// URL read-only); "
                 "FileNotFoundError if there is none.")
      .def_static("create", &CreateDataset, py::arg("path"), py::arg("videos_per_chunk") = 100,
                  py::arg("bytes_per_chunk") = 0, py::arg("checksums") = true,
                  py::arg("index_dir") = "", py::arg("codec") = "jpeg",
                  "Creates a dataset and returns it opened read-write; ValueError if one exists. "
                  "codec: 'jpeg' (GulpIO's layout) or 'h264'.")
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
      .def_property_readonly(
          "codec", [](const DatasetHandle& h) { return std::string(CodecName(h.Get()->codec())); },
          "How frames are stored: 'jpeg' or 'h264'.")
      .def(
          "read_h264_stream",
          [](const DatasetHandle& h, const py::handle& id_object) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            std::string stream;
            {
              py::gil_scoped_release release;
              stream = ds->ReadH264Stream(id);
            }
            return py::bytes(stream);
          },
          py::arg("id"),
          "The video's stored H.264 stream (Annex-B, ffmpeg -f h264); ValueError on a JPEG "
          "dataset.")
      .def_property_readonly("closed", &DatasetHandle::closed, "True after close().")
      .def_property_readonly("in_owner_process", &DatasetHandle::in_owner_process,
                             "False in a child forked after this object was opened.")
      .def("close", &DatasetHandle::Close, "Closes the dataset (reads in flight finish first).");
  return cls;
}

// Ids, index entries and meta of single videos.
void BindLookups(py::class_<DatasetHandle>& cls) {
  cls.def("__len__",
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
          "id_at",
          [](const DatasetHandle& h, uint64_t position) {
            auto ds = h.Get();
            py::gil_scoped_release release;
            return ds->IdAt(position);
          },
          py::arg("position"), "The id at a position of the order ids() lists.")
      .def(
          "ids_at",
          [](const DatasetHandle& h, uint64_t start, uint64_t count) {
            auto ds = h.Get();
            std::vector<std::string> ids;
            {
              py::gil_scoped_release release;
              ids = ds->IdsAt(start, count);
            }
            return ids;
          },
          py::arg("start"), py::arg("count"),
          "The ids at positions [start, start + count), clipped at the end.")
      .def(
          "order_blocks",
          [](const DatasetHandle& h) {
            auto ds = h.Get();
            py::gil_scoped_release release;
            return ds->OrderBlocks();
          },
          "The first position of each block of the order stored together.")
      .def(
          "ids_digest",
          [](const DatasetHandle& h, uint64_t count) {
            auto ds = h.Get();
            py::gil_scoped_release release;
            return ds->IdsDigest(count);
          },
          py::arg("count"),
          "SHA-256 (hex) of the ids at positions [0, count), each length-prefixed; IndexError "
          "past the end.")
      .def_property_readonly(
          "uuid",
          [](const DatasetHandle& h) {
            auto ds = h.Get();
            py::gil_scoped_release release;
            return ds->Uuid();
          },
          "The dataset's identity (a UUID; empty for an index made before gulpdb recorded one).")
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
          py::arg("id"));
}

// Decoded frames and JPEG bytes, of one video or many.
void BindReads(py::class_<DatasetHandle>& cls) {
  cls.def(
         "read",
         [](const DatasetHandle& h, const py::handle& id_object, const py::handle& frames,
            const PyDecodeOptions& decode, bool as_list, const py::handle& crop_seed) {
           auto ds = h.Get();
           const std::string id = ToId(id_object);
           const Selection selection = ToSelection(frames, *ds, id);
           DecodeOptions options = decode.options;
           SetCropSeed(crop_seed, &options);
           DecodedFrames decoded;
           {
             py::gil_scoped_release release;
             decoded = ds->ReadFrames(id, selection, options);
           }
           return ToArrays(std::move(decoded), options.format, as_list);
         },
         py::arg("id"), py::arg("frames") = py::none(), py::arg("decode") = PyDecodeOptions(),
         py::arg("as_list") = false, py::arg("crop_seed") = py::none(),
         "Decoded frames of one video (zero-copy NumPy views), at their own size or resized "
         "to `size`.")
      .def(
          "check_decode_options",
          [](const DatasetHandle& h, const PyDecodeOptions& decode) {
            h.Get()->CheckDecodeOptions(decode.options);
          },
          py::arg("decode"),
          "Raises the ValueError `read` would raise for `decode` on this dataset (options its "
          "codec cannot honour), reading nothing.")
      .def(
          "read_batch",
          [](const DatasetHandle& h, const py::handle& ids, const py::handle& frames,
             const PyDecodeOptions& decode, bool as_list, const py::handle& crop_seed) {
            auto ds = h.Get();
            const std::vector<FrameRequest> requests = ToRequests(ids, frames, *ds);
            DecodeOptions options = decode.options;
            SetCropSeed(crop_seed, &options);
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
          py::arg("ids"), py::arg("frames") = py::none(), py::arg("decode") = PyDecodeOptions(),
          py::arg("as_list") = false, py::arg("crop_seed") = py::none(),
          "Decoded frames of many videos, all frames decoded in parallel. `frames` is None or "
          "one selection per id. A random crop takes one window per id.")
      .def(
          "read_jpegs",
          [](const DatasetHandle& h, const py::handle& id_object, const py::handle& frames) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            const Selection selection = ToSelection(frames, *ds, id);
            StoredFrames jpegs;
            {
              py::gil_scoped_release release;
              jpegs = ds->ReadJpegs(id, selection);
            }
            return ToBytesList(jpegs);
          },
          py::arg("id"), py::arg("frames") = py::none(), "JPEG bytes of the selected frames.")
      .def(
          "read_thumbnails",
          [](const DatasetHandle& h, const py::handle& id_object, const py::handle& frames,
             int max_side, int quality) {
            auto ds = h.Get();
            const std::string id = ToId(id_object);
            const Selection selection = ToSelection(frames, *ds, id);
            ThumbnailOptions options;
            options.max_side = max_side;
            options.quality = quality;
            StoredFrames jpegs;
            {
              py::gil_scoped_release release;
              jpegs = ds->ReadThumbnails(id, selection, options);
            }
            return ToBytesList(jpegs);
          },
          py::arg("id"), py::arg("frames") = py::none(), py::arg("max_side") = 0,
          py::arg("quality") = 85,
          "The selected frames as JPEG images no larger than max_side (Dataset::ReadThumbnails).")
      .def(
          "read_jpeg_batch",
          [](const DatasetHandle& h, const py::handle& ids, const py::handle& frames) {
            auto ds = h.Get();
            const std::vector<FrameRequest> requests = ToRequests(ids, frames, *ds);
            std::vector<StoredFrames> jpegs;
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
          "prefetch",
          [](const DatasetHandle& h, const py::handle& ids, const py::handle& frames) {
            auto ds = h.Get();
            const std::vector<FrameRequest> requests = ToRequests(ids, frames, *ds);
            py::gil_scoped_release release;
            ds->Prefetch(requests);
          },
          py::arg("ids"), py::arg("frames") = py::none(),
          "Starts fetching what reading the requests needs, in the background.");
}

// Chunks, stats, and removing videos.
void BindChunksAndRemoval(py::class_<DatasetHandle>& cls) {
  cls.def(
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
          py::arg("ids"), "Removes ids in one transaction; returns how many existed.");
}

}  // namespace

void BindDataset(py::module_& m) {
  BindArgumentHelpers(m);
  BindRecords(m);
  py::class_<DatasetHandle> cls = BindDatasetClass(m);
  BindLookups(cls);
  BindReads(cls);
  BindChunksAndRemoval(cls);
}

}  // namespace gulpdb::python
